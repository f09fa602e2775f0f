import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../../api.ts';
import { dateTime, mb, millicents } from '../../format.ts';
import { Button, ErrorNotice, SecretOnce, useAction, useLoad } from '../../ui.tsx';
import { CopyButton, PowerButtons } from './parts.tsx';
import type { TabProps } from './tab.ts';
import { RegionName } from '../../regions.tsx';
import { Usage } from './usage.tsx';
import { CostThisMonth, UsageGraphs } from './usage-graphs.tsx';

/**
 * Where to connect (game address, SFTP), what the server is (resources, price, labels, placement),
 * its live usage, and the power buttons.
 */
export default function OverviewTab({ server, reload }: TabProps) {
  // Unknown (null: another request is reading the panel, or the panel did not answer yet) is not
  // installed: asking for usage then could meet a server still installing, a 409 for nothing.
  const install = server.live.installStatus;
  // The time of the live state shown: the graphs read their history again as it moves on.
  const [liveAsOf, setLiveAsOf] = useState<string>();
  return (
    <>
      <h2>Power</h2>
      <PowerButtons serverId={server.id} onSent={() => setTimeout(() => void reload(), 1500)} />
      <div class="grid-2">
        <Connect server={server} />
        <Sftp server={server} reload={reload} />
      </div>
      <h2>Live usage</h2>
      {server.status !== 'active' ? (
        <p class="muted">No live usage while the server is {server.status}.</p>
      ) : install === 'installed' ? (
        <Usage serverId={server.id} ramMb={server.resources.ramMb} diskMb={server.resources.diskMb} onState={setLiveAsOf} />
      ) : install === null ? (
        <p class="muted">Live usage is shown once the panel has said the server is installed (Refresh reads it again).</p>
      ) : (
        <p class="muted">Live usage is shown once the server is installed.</p>
      )}
      {/* Issue 41 (usage history and cost): graphs from kept samples, cost from the ledger. */}
      <UsageGraphs serverId={server.id} liveAsOf={liveAsOf} />
      <CostThisMonth serverId={server.id} />
      <Plan server={server} />
    </>
  );
}

function Connect({ server }: { server: Schema<'ServerWithLive'> }) {
  const a = server.address;
  const address = a ? `${a.host}:${a.port}` : null;
  const others = server.ports.filter((p) => !a || p.port !== a.port || p.ip !== a.ip);
  return (
    <section class="card" aria-labelledby="connect-title">
      <h2 id="connect-title">Connect</h2>
      {address && a ? (
        <dl class="props">
          {server.subdomain ? <SubdomainRow subdomain={server.subdomain} port={a.port} /> : null}
          <dt>Address</dt>
          <dd class="copy-row">
            <code data-testid="server-address">{address}</code> <CopyButton value={address} label="Copy the address" />
          </dd>
          <dt>IP</dt>
          <dd>
            <code>
              {a.ip}:{a.port}
            </code>
          </dd>
          {a.alias ? (
            <>
              <dt>Alias</dt>
              <dd>
                <code>{a.alias}</code>
              </dd>
            </>
          ) : null}
          {others.length ? (
            <>
              <dt>Other ports</dt>
              <dd>
                {others.map((p) => (
                  <code key={`${p.ip}:${p.port}`} class="port">
                    {p.host}:{p.port}
                  </code>
                ))}
              </dd>
            </>
          ) : null}
        </dl>
      ) : (
        <p class="muted" data-testid="server-address">
          No address recorded for this server.
        </p>
      )}
    </section>
  );
}

/** The server's name: alone where the game reads its SRV record, else with the port. */
function SubdomainRow({ subdomain, port }: { subdomain: NonNullable<Schema<'ServerWithLive'>['subdomain']>; port: number }) {
  const value = subdomain.srv ? subdomain.fqdn : `${subdomain.fqdn}:${port}`;
  return (
    <>
      <dt>Name</dt>
      <dd class="copy-row">
        <code data-testid="server-subdomain">{value}</code> <CopyButton value={value} label="Copy the name" />
        {subdomain.status === 'active' ? null : (
          <span class="muted"> ({subdomain.status === 'failed' ? 'not published yet' : 'publishing'})</span>
        )}
      </dd>
    </>
  );
}

/** SFTP login; the password is the account's (one for all its servers), made and shown once. */
function Sftp({ server, reload }: TabProps) {
  const s = server.sftp;
  const [password, setPassword] = useState<string>();
  const set = useAction(async () => {
    const answer = await ok(api().POST('/v1/account/sftp-password', { body: {} }));
    setPassword(answer.password);
    await reload();
  });
  return (
    <section class="card" aria-labelledby="sftp-title">
      <h2 id="sftp-title">SFTP</h2>
      <dl class="props">
        <dt>Host</dt>
        <dd>
          <code>{s.host ?? '—'}</code>
        </dd>
        <dt>Port</dt>
        <dd>
          <code>{s.port ?? '—'}</code>
        </dd>
        <dt>Username</dt>
        <dd class="copy-row">
          <code data-testid="sftp-username">{s.username}</code> <CopyButton value={s.username} label="Copy the SFTP username" />
        </dd>
        <dt>Enabled</dt>
        <dd data-testid="sftp-enabled">{s.enabled ? 'Yes' : 'No: set a password to enable'}</dd>
      </dl>
      {password ? <SecretOnce label="SFTP password" value={password} /> : null}
      <p class="hint">One password for all your servers; setting a new one replaces it everywhere.</p>
      <Button busy={set.busy} onClick={() => void set.run()}>
        Set SFTP password
      </Button>
      <ErrorNotice error={set.error} onDismiss={set.clearError} />
    </section>
  );
}

function Plan({ server }: { server: Schema<'ServerWithLive'> }) {
  const instances = useLoad(() => ok(api().GET('/v1/instances')), []);
  const instance = instances.data?.data.find((i) => i.id === server.instanceId);
  const labels = Object.entries(server.labels);
  return (
    <section class="card" aria-labelledby="plan-title">
      <h2 id="plan-title">Plan and placement</h2>
      <dl class="props">
        <dt>Memory</dt>
        <dd>{mb(server.resources.ramMb)}</dd>
        <dt>CPU</dt>
        <dd>{server.resources.cpuPercent} % (100 % = one core)</dd>
        <dt>Disk</dt>
        <dd>{mb(server.resources.diskMb)}</dd>
        <dt>Price</dt>
        <dd data-testid="server-price">{millicents(server.priceMillicentsPerHour)} per hour</dd>
        <dt>Labels</dt>
        <dd>
          {labels.length ? (
            <ul class="labels">
              {labels.map(([k, v]) => (
                <li key={k}>
                  <code>{v ? `${k}=${v}` : k}</code>
                </li>
              ))}
            </ul>
          ) : (
            'None'
          )}
        </dd>
        <dt>Panel</dt>
        <dd>{instance?.name ?? <code>{server.instanceId}</code>}</dd>
        <dt>Region</dt>
        <dd data-testid="server-region">
          <RegionName tag={server.region} />
        </dd>
        <dt>Node</dt>
        <dd>{server.sftp.host ?? '—'}</dd>
        <dt>Identifier</dt>
        <dd>
          <code>{server.identifier}</code>
        </dd>
        <dt>Created</dt>
        <dd>{dateTime(server.createdAt)}</dd>
      </dl>
    </section>
  );
}
