import { api, ok, type Schema } from '../../api.ts';
import { cents, dateTime, millicents } from '../../format.ts';
import { href } from '../../router.ts';
import { Badge, Loading, Page, useLoad } from '../../ui.tsx';
import { Pager, useCursorList } from './common.tsx';
import { CreditForm } from './credit-form.tsx';
import { LimitsForm } from './limits-form.tsx';
import { ServerTable } from './server-table.tsx';

/**
 * One account, from what the admin routes give about it: its entry in GET /v1/admin/users (there
 * is no single-account route, so the list is read page by page until the id turns up), its balance
 * and low-balance alert (GET …/alerts), its limits (GET/PUT …/limits), its servers
 * (GET /v1/admin/servers?accountId=), and a grant or deduction of credit (POST …/credits).
 */
export default function Account(props: { params: Record<string, string> }) {
  const id = props.params.id ?? '';
  const entry = useLoad(() => findAccount(id), [id]);
  const alerts = useLoad(() => ok(api().GET('/v1/admin/users/{id}/alerts', { params: { path: { id } } })), [id]);
  const limits = useLoad(() => ok(api().GET('/v1/admin/users/{id}/limits', { params: { path: { id } } })), [id]);
  const instances = useLoad(() => ok(api().GET('/v1/admin/instances')).catch(() => undefined));
  const servers = useCursorList(
    (cursor) => ok(api().GET('/v1/admin/servers', { params: { query: { accountId: id, limit: 25, cursor } } })),
    [id],
  );
  const account = entry.data ?? undefined;
  const names = new Map((instances.data?.data ?? []).map((i) => [i.id, i.name]));
  return (
    <Page title={account ? account.email : 'Account'} actions={<a href={href('/admin/accounts')}>All accounts</a>}>
      <Loading state={alerts} label="Loading the balance…">
        {(a) => (
          <dl class="cards">
            <div class="stat">
              <dt>Balance</dt>
              <dd data-testid="account-balance">{cents(a.balanceCents)}</dd>
            </div>
            <div class="stat">
              <dt>Burn an hour</dt>
              <dd>{account ? millicents(account.burnMillicentsPerHour) : '—'}</dd>
            </div>
            <div class="stat">
              <dt>Runway</dt>
              <dd>{account ? (account.runwayHours === null ? 'No running costs' : `${Math.floor(account.runwayHours)} h`) : '—'}</dd>
            </div>
            <div class="stat">
              <dt>Low-balance alert</dt>
              <dd>
                {cents(a.lowBalanceThresholdCents)} <span class="muted">{a.override === null ? '(platform)' : '(override)'}</span>
              </dd>
            </div>
          </dl>
        )}
      </Loading>
      <Loading state={entry} label="Finding the account…">
        {(found) =>
          found ? (
            <dl class="props card">
              <dt>E-mail</dt>
              <dd>
                {found.email} {found.isAdmin ? <Badge tone="warn">admin</Badge> : null}
              </dd>
              <dt>Account id</dt>
              <dd class="mono">{found.id}</dd>
              <dt>Created</dt>
              <dd>{dateTime(found.createdAt)}</dd>
              <dt>Servers</dt>
              <dd>{found.serverCount} active or suspended</dd>
              <dt>Funded until</dt>
              <dd>{dateTime(found.fundedUntil)}</dd>
              <dt>Below a cent</dt>
              <dd>{found.accruedMillicents} millicents carried to the next charge</dd>
              <dt>Balance alert</dt>
              <dd>
                {alerts.data
                  ? alerts.data.armed
                    ? 'armed: fires when the balance falls below the threshold'
                    : 'fired: re-arms once the balance is back above it'
                  : '—'}
              </dd>
            </dl>
          ) : (
            <p class="muted">This account is not in the account list (its e-mail is unknown here); the figures below come from its id.</p>
          )
        }
      </Loading>
      {alerts.data ? (
        <CreditForm
          accountId={id}
          email={account?.email}
          balanceCents={alerts.data.balanceCents}
          onDone={async () => {
            void entry.reload();
            await Promise.all([alerts.reload(), limits.reload()]);
          }}
        />
      ) : null}
      <Loading state={limits} label="Loading the limits…">
        {(l) => <LimitsForm key={JSON.stringify(l.overrides)} limits={l} onSaved={() => void limits.reload()} />}
      </Loading>
      <h2>Servers</h2>
      <Loading state={servers.state} label="Loading the servers…">
        {(page) =>
          page.data.length === 0 ? (
            <p>No servers.</p>
          ) : (
            <ServerTable servers={page.data} instances={names} caption="Servers of this account" />
          )
        }
      </Loading>
      <Pager list={servers} label="Servers" />
      <p>
        <a href={href(`/admin/servers?accountId=${encodeURIComponent(id)}`)}>This account's servers with filters</a>
      </p>
    </Page>
  );
}

/** The account's entry in the list, read page by page (100 a page); null when it is not there. */
async function findAccount(id: string): Promise<Schema<'AdminAccount'> | null> {
  for await (const account of api().paginate('/v1/admin/users', { query: { limit: 100 } })) {
    if (account.id === id) return account;
  }
  return null;
}
