import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, ok, type Schema } from '../api.ts';
import { href, useLocation } from '../router.ts';
import { Button, ErrorNotice, Notice, Page, Spinner, useAction, useLoad } from '../ui.tsx';
import { PowerBadge, StatusBadge } from '../status-badges.tsx';
import { age, useNow } from './server/parts.tsx';
import type { TabProps } from './server/tab.ts';

/**
 * One server (GET /v1/servers/:id): its name, status line (status, power, how old the live state
 * is), and tabs as links (`?tab=console`, so a tab survives a reload and can be shared). Each tab
 * is its own chunk: the console's terminal is loaded only by whoever opens it. While the server
 * installs (or starts or stops), it is read again every 2.5 s until that ends.
 */
const TABS: {
  id: string;
  label: string;
  load: () => Promise<{ default: ComponentType<TabProps> }>;
  /** On a server shared with you: the permission the tab needs (`owner`: never shown). */
  needs: Schema<'ServerPermission'> | 'owner';
}[] = [
  { id: 'overview', label: 'Overview', load: () => import('./server/overview.tsx'), needs: 'read-only' },
  { id: 'console', label: 'Console', load: () => import('./server/console.tsx'), needs: 'console' },
  { id: 'files', label: 'Files', load: () => import('./server/files.tsx'), needs: 'files' },
  { id: 'backups', label: 'Backups', load: () => import('./server/backups.tsx'), needs: 'backups' },
  { id: 'schedules', label: 'Schedules', load: () => import('./server/schedules.tsx'), needs: 'schedules' },
  { id: 'databases', label: 'Databases', load: () => import('./server/databases.tsx'), needs: 'databases' },
  { id: 'network', label: 'Network', load: () => import('./server/network.tsx'), needs: 'read-only' },
  { id: 'startup', label: 'Startup', load: () => import('./server/startup.tsx'), needs: 'startup' },
  { id: 'activity', label: 'Activity', load: () => import('./server/activity.tsx'), needs: 'read-only' },
  { id: 'users', label: 'Users', load: () => import('./server/users.tsx'), needs: 'owner' },
  { id: 'settings', label: 'Settings', load: () => import('./server/settings.tsx'), needs: 'owner' },
];

/** The tabs a server's page offers: all to its owner; to an invitee those its permissions reach (the API enforces them). */
const tabsOf = (s: Schema<'ServerWithLive'> | undefined) =>
  s?.shared ? TABS.filter((t) => t.needs === 'read-only' || (t.needs !== 'owner' && (s.permissions ?? []).includes(t.needs))) : TABS;

const INSTALL_POLL_MS = 2500;

const UNAVAILABLE: Record<string, string> = {
  panel_busy: 'the panel is busy',
  panel_unreachable: 'the panel did not answer',
  panel_error: 'the panel refused the request',
  refreshing: 'it is being refreshed',
  deleted: 'the server is deleted',
};

export default function ServerPage({ params }: { params: Record<string, string> }) {
  const id = params.id ?? '';
  const { query } = useLocation();
  const server = useLoad(() => ok(api().GET('/v1/servers/{id}', { params: { path: { id } } })), [id]);
  const s = server.data;
  const tabs = tabsOf(s);
  const tab = tabs.find((t) => t.id === query.get('tab')) ?? tabs[0]!;
  const installing = s?.live.installStatus === 'installing';
  const refreshing = s?.live.available === false && s.live.reason === 'refreshing';
  const moving = s?.live.powerState === 'starting' || s?.live.powerState === 'stopping';
  useEffect(() => {
    if (!installing && !refreshing && !moving) return;
    const timer = setTimeout(() => void server.reload(), INSTALL_POLL_MS);
    return () => clearTimeout(timer);
  }, [s, installing, refreshing, moving]);

  if (!s) {
    return <Page title="Server">{server.error ? <ErrorNotice error={server.error} /> : <Spinner label="Loading the server…" />}</Page>;
  }
  return (
    <Page title={s.name}>
      <p class="server-crumbs">
        <a href={href('/servers')}>Servers</a> / <span>{s.name}</span>
      </p>
      <StatusLine server={s} reload={server.reload} />
      {s.addresses.length ? (
        <p class="server-addresses" data-testid="server-addresses">
          <span class="muted">{s.addresses.length === 1 ? 'Address' : 'Addresses'}:</span>{' '}
          {s.addresses.map((a) => (
            <code key={a.id} class="port">
              {a.host}:{a.port}
            </code>
          ))}
        </p>
      ) : null}
      {server.error ? <ErrorNotice error={server.error} /> : null}
      <Conditions server={s} />
      {s.shared ? <SharedNotice server={s} /> : null}
      <nav class="tabs" aria-label="Server sections">
        {tabs.map((t) => (
          <a key={t.id} href={href(`/servers/${encodeURIComponent(id)}?tab=${t.id}`)} aria-current={t.id === tab.id ? 'page' : undefined}>
            {t.label}
          </a>
        ))}
      </nav>
      <TabView key={tab.id} load={tab.load} server={s} reload={server.reload} />
    </Page>
  );
}

/** On a server shared with you: whose it is, what you may do, and a way to give the access up. */
function SharedNotice({ server }: { server: Schema<'ServerWithLive'> }) {
  const leave = useAction(async () => {
    await ok(api().POST('/v1/servers/{id}/leave', { params: { path: { id: server.id } } }));
    location.assign(href('/servers'));
  });
  return (
    <Notice>
      <span data-testid="shared-notice">
        Shared with you by {server.sharedBy ?? 'its owner'}: {(server.permissions ?? []).join(', ')}. Billing, deleting and resizing stay
        the owner’s.
      </span>{' '}
      <Button busy={leave.busy} onClick={() => void leave.run()}>
        Leave this server
      </Button>
      <ErrorNotice error={leave.error} onDismiss={leave.clearError} />
    </Notice>
  );
}

function StatusLine({ server, reload }: TabProps) {
  const now = useNow();
  const refresh = useAction(reload);
  const live = server.live;
  const install = live.installStatus;
  return (
    <div class="status-line">
      <span>
        Status <StatusBadge status={server.status} />
      </span>
      <span>
        Power <PowerBadge state={live.powerState} />
      </span>
      <span data-testid="install-state" data-install={install ?? 'unknown'}>
        {install === 'installing' ? (
          <span role="status">
            <span class="spin" aria-hidden="true" /> Installing…
          </span>
        ) : install === 'install_failed' ? (
          <strong class="bad-text">Install failed</strong>
        ) : install === 'installed' ? (
          'Installed'
        ) : (
          'Install state unknown'
        )}
      </span>
      <span class="muted" data-testid="live-age">
        {live.available
          ? `State as of ${age(live.asOf, now)}`
          : `Live state unavailable (${UNAVAILABLE[live.reason ?? ''] ?? live.reason}); last known ${age(live.asOf, now)}`}
      </span>
      <Button busy={refresh.busy} onClick={() => void refresh.run()}>
        Refresh
      </Button>
    </div>
  );
}

/** What keeps the server from working, said in words with what to do. */
function Conditions({ server }: { server: Schema<'ServerWithLive'> }) {
  if (server.status === 'deleted')
    return (
      <Notice kind="warning">This server was deleted {server.deletedAt ? `on ${new Date(server.deletedAt).toLocaleString()}` : ''}.</Notice>
    );
  if (server.status === 'suspended') {
    return (
      <Notice kind="warning">
        This server is suspended
        {server.suspendedReason === 'balance' ? (
          <>
            : your balance ran out. <a href={href('/billing')}>Top up</a> to bring it back.
          </>
        ) : server.suspendedReason === 'budget' ? (
          <>
            : the monthly budget was reached. <a href={href('/billing')}>Change the budget</a> to bring it back.
          </>
        ) : server.suspendedReason === 'admin' ? (
          ' by the operator: a top-up does not lift it; contact support.'
        ) : (
          '.'
        )}
      </Notice>
    );
  }
  if (server.live.installStatus === 'install_failed') {
    return (
      <div class="notice error" role="alert" data-testid="install-failed">
        <p>
          <strong>The install failed.</strong> The game server could not be set up. Reinstall it from the Settings tab, or delete it (you
          are charged only while it exists).
        </p>
      </div>
    );
  }
  return null;
}

/** A tab's chunk, loaded on first view (the console brings its terminal with it). */
function TabView(props: TabProps & { load: () => Promise<{ default: ComponentType<TabProps> }> }) {
  const [Tab, setTab] = useState<ComponentType<TabProps> | null>(null);
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    let live = true;
    props.load().then(
      (m) => live && setTab(() => m.default),
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [props.load]);
  if (error) return <ErrorNotice error={error} />;
  if (!Tab) return <Spinner />;
  return <Tab server={props.server} reload={props.reload} />;
}
