import { api, ok } from '../api.ts';
import { cents, dateTime, millicents, relative } from '../format.ts';
import { href } from '../router.ts';
import { useSession } from '../session.ts';
import { DebtNotice } from '../billing/debt.tsx';
import { Loading, Notice, Page, useLoad } from '../ui.tsx';

/** Balance, burn, runway and funded-until, the low-balance warning, and the servers at a glance. */
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
      {account.debtCents > 0 ? (
        <DebtNotice debtCents={account.debtCents} />
      ) : account.balanceCents <= 0 ? (
        <Notice kind="warning">
          Your balance is {cents(account.balanceCents)}: servers are suspended until you <a href={href('/billing')}>top up</a>.
        </Notice>
      ) : low ? (
        <Notice kind="warning">
          Low balance: at the current rate your credit runs out {relative(account.fundedUntil)}. <a href={href('/billing')}>Top up</a> to
          keep your servers running.
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
          <dd>{runway === null ? 'No running costs' : `${Math.floor(runway)} h`}</dd>
        </div>
        <div class="stat">
          <dt>Funded until</dt>
          <dd>{account.fundedUntil ? dateTime(account.fundedUntil) : '—'}</dd>
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
            <ul>
              {page.data.map((s) => (
                <li key={s.id}>
                  <a href={href(`/servers/${s.id}`)}>{s.name}</a> <span class="muted">({s.status})</span>
                </li>
              ))}
            </ul>
          )
        }
      </Loading>
    </Page>
  );
}
