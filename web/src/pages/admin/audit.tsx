import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../../api.ts';
import { dateTime } from '../../format.ts';
import { href } from '../../router.ts';
import { type Columns, DataTable } from '../../table.tsx';
import { Field } from '../../form.tsx';
import { Badge, Loading, Page } from '../../ui.tsx';
import { Pager, shortId, useCursorList } from './common.tsx';

type Entry = Schema<'ActivityEntry'>;

const CREDENTIAL: Record<Entry['credential']['kind'], string> = { api_key: 'API key', session: 'session', system: 'system' };

/**
 * The platform-wide audit log (GET /v1/admin/logs, newest first, 50 a page). The route takes no
 * filters, so the filter narrows the page shown, and says so. Details stay collapsed until opened.
 */
export default function Audit() {
  const list = useCursorList((cursor) => ok(api().GET('/v1/admin/logs', { params: { query: { limit: 50, cursor } } })), []);
  const [filter, setFilter] = useState('');
  const [failuresOnly, setFailuresOnly] = useState(false);
  const needle = filter.trim().toLowerCase();
  const shown = (e: Entry) =>
    (!failuresOnly || e.result === 'failure') &&
    (!needle || [e.action, e.actorEmail, e.target ?? '', e.accountId, e.requestId].some((v) => v.toLowerCase().includes(needle)));
  return (
    <Page title="Audit log">
      <div class="admin-filters">
        <Field
          id="audit-filter"
          label="Filter this page"
          hint="Action, actor, target, account or request id. The API has no log search: this narrows only the page shown."
        >
          {(control) => <input {...control} type="search" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} />}
        </Field>
        <div class="field check-field">
          <label>
            <input type="checkbox" checked={failuresOnly} onChange={(e) => setFailuresOnly(e.currentTarget.checked)} /> Failures only
          </label>
        </div>
      </div>
      <Loading state={list.state} label="Loading the audit log…">
        {(page) => {
          const rows = page.data.filter(shown);
          return (
            <>
              <DataTable
                label="Audit log table"
                caption="Audit log, newest first"
                rows={rows}
                rowKey={(e) => e.id}
                rowProps={() => ({ 'data-testid': 'audit-row' })}
                columns={COLUMNS}
              />
              {rows.length === 0 ? <p>{page.data.length ? 'No entry on this page matches.' : 'No entries yet.'}</p> : null}
            </>
          );
        }}
      </Loading>
      <Pager list={list} label="Audit log" />
    </Page>
  );
}

const COLUMNS: Columns<Entry> = [
  { header: 'Time', class: 'nowrap', cell: (e) => dateTime(e.at) },
  {
    header: 'Actor',
    cell: (e) => (
      <>
        {e.actorEmail}
        <br />
        <span class="muted">
          {CREDENTIAL[e.credential.kind]}
          {e.credential.kind === 'api_key' ? ` ${shortId(e.credential.id)}` : ''} ·{' '}
          <a href={href(`/admin/accounts/${e.accountId}`)} title={e.accountId}>
            account {shortId(e.accountId)}
          </a>
        </span>
      </>
    ),
  },
  { header: 'Action', class: 'mono', cell: (e) => e.action },
  { header: 'Target', class: 'mono', cell: (e) => target(e.target), cellProps: (e) => ({ title: e.target ?? undefined }) },
  {
    header: 'Result',
    cell: (e) => (
      <>
        <Badge tone={e.result === 'success' ? 'ok' : 'bad'}>{e.result}</Badge> <span class="muted">{e.status}</span>
        {e.errorCode ? (
          <>
            <br />
            <code>{e.errorCode}</code>
          </>
        ) : null}
      </>
    ),
  },
  {
    header: 'Details',
    class: 'audit-details',
    cell: (e) => (
      <details>
        <summary>Show details</summary>
        <dl class="props">
          <dt>Request id</dt>
          <dd class="mono">{e.requestId}</dd>
          <dt>Source IP</dt>
          <dd class="mono">{e.sourceIp ?? '—'}</dd>
        </dl>
        {e.details && Object.keys(e.details).length > 0 ? <pre class="json">{JSON.stringify(e.details, null, 2)}</pre> : null}
      </details>
    ),
  },
];

/** `account:46632ee6-…` as `account:46632ee6` (linked to the account page); other targets as they are. */
function target(value: string | null) {
  if (!value) return '—';
  const m = /^([a-z-]+):([0-9a-f]{8})-[0-9a-f-]{27}$/.exec(value);
  if (!m) return value;
  const id = value.slice(m[1]!.length + 1);
  return m[1] === 'account' ? <a href={href(`/admin/accounts/${id}`)}>account:{m[2]}</a> : `${m[1]}:${m[2]}`;
}
