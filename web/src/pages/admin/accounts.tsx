import { useEffect, useRef } from 'preact/hooks';
import { api, ok, type Schema } from '../../api.ts';
import { cents, dateTime, millicents } from '../../format.ts';
import { href, navigate, useLocation } from '../../router.ts';
import { type Columns, DataTable } from '../../table.tsx';
import { Field } from '../../form.tsx';
import { Badge, Button, Loading, Page } from '../../ui.tsx';
import { Pager, text, useCursorList } from './common.tsx';
import { byText, type SortOrder, useSort } from './sort.tsx';

const COLUMNS: Columns<Schema<'AdminAccount'>> = [
  { header: 'E-mail', cell: (a) => <a href={href(`/admin/accounts/${a.id}`)}>{a.email}</a> },
  { header: 'Balance', class: 'num', cell: (a) => cents(a.balanceCents) },
  { header: 'Burn an hour', class: 'num', cell: (a) => millicents(a.burnMillicentsPerHour) },
  { header: 'Servers', class: 'num', cell: (a) => a.serverCount },
  { header: 'Kind', cell: (a) => (a.isAdmin ? <Badge tone="warn">admin</Badge> : 'customer') },
  { header: 'Created', cell: (a) => dateTime(a.createdAt) },
];

type Account = Schema<'AdminAccount'>;
const ORDERS: SortOrder<Account>[] = [
  { value: 'newest', label: 'Newest first', compare: (a, b) => byText(b.createdAt, a.createdAt) },
  { value: 'oldest', label: 'Oldest first', compare: (a, b) => byText(a.createdAt, b.createdAt) },
  { value: 'balance-desc', label: 'Balance, highest first', compare: (a, b) => b.balanceCents - a.balanceCents },
  { value: 'balance-asc', label: 'Balance, lowest first', compare: (a, b) => a.balanceCents - b.balanceCents },
  { value: 'email', label: 'E-mail, A to Z', compare: (a, b) => byText(a.email, b.email) },
];

/** What an account id looks like (a uuid): typed in the search, it finds that one account. */
const ACCOUNT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Every account (GET /v1/admin/users, newest first, 50 a page), or a search the API runs across
 * every account: `?email=` (the start of an address) or `?accountId=` (typed as a uuid). The search
 * is in the page's address, so it can be linked and the back button returns to it. A page of an
 * e-mail search may hold fewer than 50, or none, and still have a next page: the API reads a fixed
 * number of accounts a page and returns those that match.
 */
export default function Accounts() {
  const { query } = useLocation();
  const email = query.get('email')?.trim() ?? '';
  const accountId = email ? '' : (query.get('accountId')?.trim() ?? '');
  const searched = email || accountId;
  const list = useCursorList(
    (cursor) =>
      ok(
        api().GET('/v1/admin/users', {
          params: { query: { limit: 50, cursor, ...(email ? { email } : {}), ...(accountId ? { accountId } : {}) } },
        }),
      ),
    [email, accountId],
  );
  // A new address (back, forward, a link) shows its own search in the field; the focus stays put.
  const field = useRef<HTMLInputElement>(null);
  const sort = useSort(ORDERS);
  useEffect(() => {
    if (field.current && field.current.value.trim() !== searched) field.current.value = searched;
  }, [searched]);
  return (
    <Page title="Accounts">
      <form
        id="accounts-search"
        class="actions accounts-search"
        onSubmit={(e) => {
          e.preventDefault();
          const value = text(new FormData(e.currentTarget), 'q');
          const param = ACCOUNT_ID.test(value) ? 'accountId' : 'email';
          navigate(value ? `/admin/accounts?${new URLSearchParams({ [param]: value })}` : '/admin/accounts');
        }}
      >
        <Field id="accounts-search-q" label="Search accounts" hint="The start of an e-mail address, or an account id.">
          {(control) => (
            <input {...control} ref={field} name="q" type="search" defaultValue={searched} maxLength={254} autoComplete="off" />
          )}
        </Field>
        <Button type="submit" kind="primary">
          Search
        </Button>
        {searched ? <Button onClick={() => navigate('/admin/accounts')}>All accounts</Button> : null}
      </form>
      <div class="actions">{sort.control}</div>
      <Loading state={list.state} label={searched ? `Searching for “${searched}”…` : 'Loading the accounts…'}>
        {(page) => (
          <div data-testid="account-results" data-search={searched}>
            {page.data.length === 0 ? (
              <p>
                {!searched
                  ? 'No accounts yet.'
                  : accountId
                    ? `No account has the id ${accountId}.`
                    : page.nextCursor
                      ? `No account on this page starts with “${email}”; the next page reads further.`
                      : `No account${list.page > 1 ? ' on this page' : ''} starts with “${email}”.`}
              </p>
            ) : (
              <DataTable
                label="Accounts table"
                caption={`${searched ? `Accounts matching “${searched}”` : 'Accounts'}, ${sort.order === ORDERS[0] ? 'newest first' : `this page by ${sort.order.label.toLowerCase()}`}`}
                rows={sort.sort(page.data)}
                rowKey={(a) => a.id}
                rowProps={() => ({ 'data-testid': 'account-row' })}
                columns={COLUMNS}
              />
            )}
          </div>
        )}
      </Loading>
      <Pager list={list} label="Accounts" />
    </Page>
  );
}
