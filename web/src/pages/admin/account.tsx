import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../../api.ts';
import { cents, dateTime, millicents, runwayHours } from '../../format.ts';
import { href } from '../../router.ts';
import { Badge, type Loaded, Loading, Page, useLoad } from '../../ui.tsx';
import { type ListPage, Pager } from './common.tsx';
import { CreditForm } from './credit-form.tsx';
import { LimitsForm } from './limits-form.tsx';
import { ServerTable } from './server-table.tsx';

/**
 * One account, as GET /v1/admin/users/:id gives it: profile, balance, trial, limits with the
 * overrides (saved with PUT …/limits), the keys it holds and its newest 10 servers (the next pages
 * from GET /v1/admin/servers?accountId=, with the cursor the account view hands over). Also its
 * low-balance alert (GET …/alerts), a grant or deduction of credit (POST …/credits), and the
 * operator's actions on each server.
 */
export default function Account(props: { params: Record<string, string> }) {
  const id = props.params.id ?? '';
  const detail = useLoad(() => ok(api().GET('/v1/admin/users/{id}', { params: { path: { id } } })), [id]);
  const alerts = useLoad(() => ok(api().GET('/v1/admin/users/{id}/alerts', { params: { path: { id } } })), [id]);
  const instances = useLoad(() => ok(api().GET('/v1/admin/instances')).catch(() => undefined));
  const servers = useAccountServers(id, detail);
  const names = new Map((instances.data?.data ?? []).map((i) => [i.id, i.name]));
  return (
    <Page title={detail.data?.account.email ?? 'Account'} actions={<a href={href('/admin/accounts')}>All accounts</a>}>
      <Loading state={detail} label="Loading the account…">
        {({ account, limits, trial, servers: owned }) => (
          <>
            <dl class="cards">
              <div class="stat">
                <dt>Balance</dt>
                <dd data-testid="account-balance">{cents(account.balanceCents)}</dd>
              </div>
              {account.debtCents > 0 ? (
                <div class="stat">
                  <dt>Owed (debt)</dt>
                  <dd data-testid="account-debt">{cents(account.debtCents)}</dd>
                </div>
              ) : null}
              <div class="stat">
                <dt>Burn an hour</dt>
                <dd>{millicents(account.burnMillicentsPerHour)}</dd>
              </div>
              <div class="stat">
                <dt>Runway</dt>
                <dd>{account.runwayHours === null ? 'No running costs' : runwayHours(account.runwayHours)}</dd>
              </div>
              <div class="stat">
                <dt>Low-balance alert</dt>
                <dd>
                  {alerts.data ? (
                    <>
                      {cents(alerts.data.lowBalanceThresholdCents)}{' '}
                      <span class="muted">{alerts.data.override === null ? '(platform)' : '(override)'}</span>
                    </>
                  ) : (
                    '—'
                  )}
                </dd>
              </div>
            </dl>
            <dl class="props card">
              <dt>E-mail</dt>
              <dd>
                {account.email} {account.isAdmin ? <Badge tone="warn">admin</Badge> : null}
              </dd>
              <dt>Account id</dt>
              <dd class="mono">{account.id}</dd>
              <dt>Created</dt>
              <dd>{dateTime(account.createdAt)}</dd>
              <dt>Trial</dt>
              <dd data-testid="account-trial">
                {trial.active ? <Badge tone="warn">trial: no top-up or grant yet</Badge> : 'ended'}
                {trial.granted ? ' · trial credit given at sign-up' : ' · no trial credit'}
                {trial.paidAt ? ` · first paid ${dateTime(trial.paidAt)}` : ''}
              </dd>
              <dt>Servers</dt>
              <dd data-testid="account-servers">
                {owned.count} active or suspended of {limits.effective.maxServers} allowed
              </dd>
              <dt>API keys</dt>
              <dd data-testid="account-keys">
                {limits.apiKeyCount} held of {limits.effective.maxApiKeys} allowed
              </dd>
              <dt>Funded until</dt>
              <dd>{dateTime(account.fundedUntil)}</dd>
              <dt>Below a cent</dt>
              <dd>{account.accruedMillicents} millicents carried to the next charge</dd>
              <dt>Balance alert</dt>
              <dd>
                {alerts.data
                  ? alerts.data.armed
                    ? 'armed: fires when the balance falls below the threshold'
                    : 'fired: re-arms once the balance is back above it'
                  : '—'}
              </dd>
            </dl>
            <CreditForm
              accountId={id}
              email={account.email}
              balanceCents={account.balanceCents}
              onDone={async () => {
                await Promise.all([detail.reload(), alerts.reload()]);
              }}
            />
            <LimitsForm key={limits.accountId} limits={limits} serverCount={owned.count} onSaved={() => void detail.reload()} />
          </>
        )}
      </Loading>
      {detail.data ? (
        <>
          <h2>Servers</h2>
          <Loading state={servers.state} label="Loading the servers…">
            {(page) =>
              page.data.length === 0 ? (
                <p>No servers.</p>
              ) : (
                <ServerTable servers={page.data} instances={names} caption="Servers of this account" onChanged={servers.changed} />
              )
            }
          </Loading>
          <Pager list={servers} label="Servers" />
          <p>
            <a href={href(`/admin/servers?accountId=${encodeURIComponent(id)}`)}>This account's servers with filters</a>
          </p>
        </>
      ) : null}
    </Page>
  );
}

type ServerPage = ListPage<Schema<'AdminServer'>>;

/**
 * The account's servers, 10 a page: the first page is the account view's, the next ones follow its
 * cursor through GET /v1/admin/servers?accountId= (as the view's `nextCursor` says). `changed`
 * (after an action) reads the account again, and the page shown if it is a later one.
 */
function useAccountServers(id: string, detail: Loaded<{ servers: ServerPage }>) {
  const [nav, setNav] = useState<{ id: string; cursors: string[] }>({ id, cursors: [] });
  const cursors = nav.id === id ? nav.cursors : [];
  const cursor = cursors.at(-1);
  const later = useLoad(async () => {
    if (!cursor) return undefined;
    return { cursor, page: await ok(api().GET('/v1/admin/servers', { params: { query: { accountId: id, limit: 10, cursor } } })) };
  }, [id, cursor]);
  // A later page is shown only once it is the one asked for (never the page before it, while loading).
  const page = cursor ? (later.data?.cursor === cursor ? later.data.page : undefined) : detail.data?.servers;
  const loading = cursor ? later.loading || (page === undefined && !later.error) : detail.loading;
  const state: Loaded<ServerPage> = {
    data: page,
    error: cursor ? later.error : detail.error,
    loading,
    reload: cursor ? later.reload : detail.reload,
  };
  const nextCursor = page?.nextCursor;
  return {
    state,
    page: cursors.length + 1,
    next: nextCursor && !loading ? () => setNav({ id, cursors: [...cursors, nextCursor] }) : undefined,
    previous: cursors.length > 0 && !loading ? () => setNav({ id, cursors: cursors.slice(0, -1) }) : undefined,
    changed: () => Promise.all([detail.reload(), cursor ? later.reload() : undefined]),
  };
}
