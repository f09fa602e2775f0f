import { useState } from 'preact/hooks';
import { api, ok } from '../../api.ts';
import { cents, dateTime, millicents } from '../../format.ts';
import { href } from '../../router.ts';
import { Badge, Field, Loading, Page } from '../../ui.tsx';
import { Pager, useCursorList } from './common.tsx';

/**
 * Every account (GET /v1/admin/users, newest first, 50 a page). The route takes no search, so the
 * filter narrows the page shown, and says so.
 */
export default function Accounts() {
  const list = useCursorList((cursor) => ok(api().GET('/v1/admin/users', { params: { query: { limit: 50, cursor } } })), []);
  const [filter, setFilter] = useState('');
  const needle = filter.trim().toLowerCase();
  return (
    <Page title="Accounts">
      <Field
        id="accounts-filter"
        label="Filter this page by e-mail"
        hint="The API has no account search: this narrows only the accounts of the page shown."
      >
        <input
          id="accounts-filter"
          type="search"
          value={filter}
          onInput={(e) => setFilter(e.currentTarget.value)}
          aria-describedby="accounts-filter-hint"
        />
      </Field>
      <Loading state={list.state} label="Loading the accounts…">
        {(page) => {
          const rows = needle ? page.data.filter((a) => a.email.toLowerCase().includes(needle)) : page.data;
          return (
            <>
              <div class="table-wrap">
                <table>
                  <caption class="visually-hidden">Accounts, newest first</caption>
                  <thead>
                    <tr>
                      <th scope="col">E-mail</th>
                      <th scope="col" class="num">
                        Balance
                      </th>
                      <th scope="col" class="num">
                        Burn an hour
                      </th>
                      <th scope="col" class="num">
                        Servers
                      </th>
                      <th scope="col">Kind</th>
                      <th scope="col">Created</th>
                    </tr>
                  </thead>
                  <tbody>
                    {rows.map((a) => (
                      <tr key={a.id} data-testid="account-row">
                        <td>
                          <a href={href(`/admin/accounts/${a.id}`)}>{a.email}</a>
                        </td>
                        <td class="num">{cents(a.balanceCents)}</td>
                        <td class="num">{millicents(a.burnMillicentsPerHour)}</td>
                        <td class="num">{a.serverCount}</td>
                        <td>{a.isAdmin ? <Badge tone="warn">admin</Badge> : 'customer'}</td>
                        <td>{dateTime(a.createdAt)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
              {rows.length === 0 ? <p>{needle ? `No account on this page matches “${filter.trim()}”.` : 'No accounts yet.'}</p> : null}
            </>
          );
        }}
      </Loading>
      <Pager list={list} label="Accounts" />
    </Page>
  );
}
