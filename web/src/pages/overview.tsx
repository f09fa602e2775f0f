import { api, ok } from '../api.ts';
import { bytes, cents, dateTime, millicents, relative, runwayHours } from '../format.ts';
import { href } from '../router.ts';
import { useSession } from '../session.ts';
import { DebtNotice } from '../billing/debt.tsx';
import { Loading, Notice, Page, useLoad } from '../ui.tsx';
import { StatusBadge } from '../status-badges.tsx';
import type { Schema } from '../api.ts';

/** Balance, burn, runway, funded-until and when suspension would come, the warnings, and the servers at a glance. */
export default function Overview() {
  const { account } = useSession();
  const servers = useLoad(() => ok(api().GET('/v1/servers', { params: { query: { limit: 5 } } })));
  const hourly = account.burnMillicentsPerHour;
  const runway = account.runwayHours;
  const low = hourly > 0 && runway !== null && runway < 24;
  return (
    <Page
      title="Overview"
      actions={
        <>
          <a class="btn primary" href={href('/deploy')}>
            Deploy a server
          </a>
          <a class="btn" href={href('/billing')}>
            Top up
          </a>
        </>
      }
    >
      {account.balanceCents <= 0 && account.suspendAt ? (
        // The operator's grace: servers still run at or below zero, until suspendAt.
        <Notice kind="warning">
          Your credit has run out: your servers keep running until {dateTime(account.suspendAt)} ({relative(account.suspendAt)}), then they
          are suspended. <a href={href('/billing')}>Top up</a> to keep them running.
        </Notice>
      ) : null}
      {account.debtCents > 0 ? (
        <DebtNotice debtCents={account.debtCents} />
      ) : account.balanceCents <= 0 ? (
        account.suspendAt ? null : (
          <Notice kind="warning">
            Your balance is {cents(account.balanceCents)}: servers are suspended until you <a href={href('/billing')}>top up</a>.
          </Notice>
        )
      ) : low ? (
        <Notice kind="warning">
          Low balance: at the current rate your credit runs out {relative(account.fundedUntil)}
          {account.suspendAt && account.suspendAt !== account.fundedUntil
            ? ` and your servers are suspended ${relative(account.suspendAt)}`
            : ''}
          . <a href={href('/billing')}>Top up</a> to keep your servers running.
        </Notice>
      ) : null}
      <dl class="cards">
        <div class="stat">
          <dt>Balance</dt>
          <dd data-testid="balance">{cents(account.balanceCents)}</dd>
        </div>
        <div class="stat">
          <dt>Burn per hour</dt>
          <dd>{millicents(hourly)}</dd>
        </div>
        <div class="stat">
          <dt>Runway</dt>
          <dd data-testid="runway">{runway === null ? 'No running costs' : runwayHours(runway)}</dd>
        </div>
        <div class="stat">
          <dt>Funded until</dt>
          <dd>{account.fundedUntil ? dateTime(account.fundedUntil) : '—'}</dd>
        </div>
        <div class="stat">
          <dt>Servers suspended at</dt>
          <dd data-testid="suspend-at">{account.suspendAt ? dateTime(account.suspendAt) : '—'}</dd>
        </div>
      </dl>
      <h2>Servers</h2>
      <Loading state={servers}>
        {(page) =>
          page.data.length === 0 ? (
            <p>
              No servers yet. <a href={href('/deploy')}>Deploy your first one</a>.
            </p>
          ) : (
            <ServerCards servers={page.data} />
          )
        }
      </Loading>
    </Page>
  );
}

/**
 * The servers as cards: state, address and the latest kept usage sample (GET …/usage/history, read
 * from the table: the overview costs the panel no call, however many servers it shows).
 */
function ServerCards({ servers }: { servers: Schema<'Server'>[] }) {
  return (
    <ul class="server-cards" data-testid="server-cards">
      {servers.map((s) => (
        <li key={s.id} class="card">
          <h3>
            <a href={href(`/servers/${s.id}`)}>{s.name}</a>
          </h3>
          <StatusBadge status={s.status} reason={s.suspendedReason} />
          <p>{s.address ? <code>{`${s.address.host}:${s.address.port}`}</code> : <span class="muted">No address recorded</span>}</p>
          <LatestUsage serverId={s.id} active={s.status === 'active'} />
        </li>
      ))}
    </ul>
  );
}

function LatestUsage({ serverId, active }: { serverId: string; active: boolean }) {
  const history = useLoad(
    () =>
      active
        ? ok(api().GET('/v1/servers/{id}/usage/history', { params: { path: { id: serverId }, query: { window: 'hour' } } }))
        : Promise.resolve(null),
    [serverId, active],
  );
  const last = history.data?.points.at(-1);
  if (!active) return null;
  if (history.loading && !history.data) return <p class="muted">Reading usage…</p>;
  if (!last) return <p class="muted">No usage in the last hour</p>;
  return (
    <p class="muted" data-testid="server-card-usage">
      CPU {last.cpuAbsolute.toFixed(1)} % · memory {bytes(last.memoryBytes)}
    </p>
  );
}
