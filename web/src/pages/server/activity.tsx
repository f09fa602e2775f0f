import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../../api.ts';
import { usePaged } from '../../paged.tsx';
import { Ago, type Columns, PagedTable } from '../../table.tsx';
import { Notice } from '../../ui.tsx';
import type { TabProps } from './tab.ts';

type Entry = Schema<'ServerActivityEntry'>;
type PanelState = Schema<'ServerActivityPanelState'>;

/** A page's worth: the panel's part is read once per page, so 25 keeps each page one panel call. */
const PAGE = 25;

const CREDENTIAL: Record<Entry['credential']['kind'], string> = {
  api_key: 'API key',
  session: 'Dashboard session',
  system: 'The platform',
  panel_api_key: "Platform's panel key",
  panel_session: 'Panel session',
  sftp: 'SFTP',
  none: 'None',
};

/** Who: the account's e-mail for ours (the real actor, an invitee or an admin included), the panel user for the panel's. */
function who(e: Entry): string {
  switch (e.actor.kind) {
    case 'account':
      return e.actor.email ?? 'An account';
    case 'system':
      return `The platform (${e.actor.name ?? 'system'})`;
    case 'panel_user':
      return `Panel user ${e.actor.name ?? ''}`.trim();
    case 'platform':
      return 'The platform, for you';
    default:
      return 'The panel';
  }
}

function credential(e: Entry): string {
  const c = e.credential;
  if (c.kind === 'api_key') return `API key ${c.name ?? ''} (${(c.id ?? '').slice(0, 8)}…)`.replace('  ', ' ');
  return CREDENTIAL[c.kind];
}

const COLUMNS: Columns<Entry> = [
  { header: 'When', class: 'nowrap', cell: (e) => <Ago at={e.at} /> },
  {
    header: 'What',
    rowHeader: true,
    cell: (e) => (
      <>
        {e.summary}
        <br />
        <span class="muted">
          <code>{e.action}</code>
          {e.result === 'failure' ? ' · failed' : ''}
        </span>
      </>
    ),
  },
  { header: 'Who', cell: who },
  { header: 'Credential', cell: credential },
  { header: 'Source', cell: (e) => (e.source === 'api' ? 'API' : 'Panel') },
];

/**
 * The server's activity (GET /v1/servers/:id/activity): our calls and the panel's events, newest
 * first, a page at a time. When the panel did not answer, the page says so: it then lists ours only.
 */
export default function ActivityTab({ server }: TabProps) {
  const id = server.id;
  const [panel, setPanel] = useState<PanelState | null>(null);
  const list = usePaged(
    async (cursor) => {
      const page = await ok(api().GET('/v1/servers/{id}/activity', { params: { path: { id }, query: { limit: PAGE, cursor } } }));
      setPanel(page.panel);
      return page;
    },
    [id],
  );
  return (
    <section aria-labelledby="activity-heading">
      <h2 id="activity-heading">Activity</h2>
      <p class="muted">
        Who did what to this server, from which credential, and when: calls to this API and the panel's own log (SFTP, schedules).
      </p>
      {panel && panel.status === 'unavailable' ? (
        <Notice kind="warning">
          The panel did not answer{panel.code === 'panel_timeout' ? ' in time' : ''}: this page shows this API's entries only. The panel's
          follow when it answers.
        </Notice>
      ) : null}
      {panel && panel.status === 'not_read' ? <Notice>The panel's log is not available for this server now: {panel.message}</Notice> : null}
      <PagedTable
        list={list}
        what="activity"
        empty={<p>No activity yet.</p>}
        moreLabel="Older activity"
        label="Activity table"
        caption="Server activity, newest first"
        rowKey={(e) => e.id}
        rowProps={(e) => ({ 'data-testid': 'activity-row', 'data-source': e.source })}
        columns={COLUMNS}
      />
    </section>
  );
}
