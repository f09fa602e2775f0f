import { api, ok } from '../api.ts';
import { cents, dateTime, millicents, relative, runwayHours } from '../format.ts';
import { href } from '../router.ts';
import { useSession } from '../session.ts';
import { DebtNotice } from '../billing/debt.tsx';
import { Loading, Notice, Page, useLoad } from '../ui.tsx';

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
