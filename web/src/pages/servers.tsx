import { useEffect, useRef, useState } from 'preact/hooks';
import { api, fieldIssues, ok, type Schema } from '../api.ts';
import { dateTime, mb, millicents, relative } from '../format.ts';
import { LabelChips } from '../labels.tsx';
import { href, navigate, useLocation } from '../router.ts';
import { StatusBadge } from '../server-status.tsx';
import { Button, ErrorNotice, Field, Page, Spinner, useLoad, TableWrap } from '../ui.tsx';

/**
 * Your servers (GET /v1/servers), newest first, filtered by the API's own query parameters. The
 * filters live in the URL (`/servers?status=active&label_selector=env%3Dprod`), so a filter is a
 * link; "Load more" follows the cursor. A filtered page may come back empty with a cursor (the API
 * reads a bounded number of servers per page): such pages are followed at once.
 */
type Server = Schema<'Server'>;
type Status = Schema<'ServerStatus'>;

const FILTERS = ['name_prefix', 'status', 'region', 'instanceId', 'label_selector'] as const;
type FilterName = (typeof FILTERS)[number];
type Filters = Partial<Record<FilterName, string>>;

const PAGE_SIZE = 25;
/** Empty filtered pages followed in a row before asking the user ("Load more"). */
const MAX_EMPTY_PAGES = 8;

function filtersFrom(query: URLSearchParams): Filters {
  const filters: Filters = {};
  for (const name of FILTERS) {
    const value = query.get(name)?.trim();
    if (value) filters[name] = value;
  }
  return filters;
}

function listQuery(filters: Filters, cursor: string | null) {
  return {
    limit: PAGE_SIZE,
    ...(cursor ? { cursor } : {}),
    ...(filters.name_prefix ? { name_prefix: filters.name_prefix } : {}),
    ...(filters.status ? { status: filters.status as Status } : {}),
    ...(filters.region ? { region: filters.region } : {}),
    ...(filters.instanceId ? { instanceId: filters.instanceId } : {}),
    ...(filters.label_selector ? { label_selector: filters.label_selector } : {}),
  };
}

/** The rows loaded so far under one set of filters, and the cursor to the next page. */
function useServerPages(filters: Filters, key: string) {
  const [state, setState] = useState<{ rows: Server[]; cursor: string | null; loading: boolean; error: unknown; started: boolean }>({
    rows: [],
    cursor: null,
    loading: true,
    error: undefined,
    started: false,
  });
  const run = useRef(0);
  const load = async (cursor: string | null, rows: Server[]) => {
    const mine = ++run.current;
    setState({ rows, cursor, loading: true, error: undefined, started: true });
    try {
      let next = cursor;
      let got: Server[] = [];
      for (let empty = 0; ; empty++) {
        const page = await ok(api().GET('/v1/servers', { params: { query: listQuery(filters, next) } }));
        got = page.data;
        next = page.nextCursor;
        if (got.length > 0 || next === null || empty >= MAX_EMPTY_PAGES) break;
      }
      if (mine === run.current) setState({ rows: [...rows, ...got], cursor: next, loading: false, error: undefined, started: true });
    } catch (error) {
      if (mine === run.current) setState({ rows, cursor, loading: false, error, started: true });
    }
  };
  useEffect(() => {
    void load(null, []);
  }, [key]);
  return { ...state, more: () => load(state.cursor, state.rows) };
}

/** The API's complaint about one query field (`query.label_selector`), shown next to it. */
const issueFor = (error: unknown, field: string): string | undefined => fieldIssues(error)[`query.${field}`];

export default function Servers() {
  const { query } = useLocation();
  const filters = filtersFrom(query);
  const key = JSON.stringify(filters);
  const list = useServerPages(filters, key);
  const catalog = useLoad(
    () =>
      Promise.all([ok(api().GET('/v1/regions')), ok(api().GET('/v1/instances'))]).then(([r, i]) => ({
        regions: r.data,
        instances: i.data,
      })),
    [],
  );
  const instanceName = (id: string) => catalog.data?.instances.find((i) => i.id === id)?.name ?? id.slice(0, 8);
  const manyInstances = (catalog.data?.instances.length ?? 0) > 1;
  const filtered = Object.keys(filters).length > 0;

  return (
    <Page
      title="Servers"
      actions={
        <a class="btn primary" href={href('/deploy')}>
          Deploy a server
        </a>
      }
    >
      <FilterForm
        key={key}
        filters={filters}
        regions={catalog.data?.regions.map((r) => r.region) ?? []}
        instances={catalog.data?.instances ?? []}
        error={list.error}
      />
      {list.error ? <ErrorNotice error={list.error} /> : null}
      {!list.started || (list.loading && list.rows.length === 0) ? (
        <Spinner label="Loading servers…" />
      ) : list.rows.length === 0 && !list.error ? (
        <div class="card" data-testid="servers-empty">
          {filtered ? (
            <p>
              No servers match these filters{list.cursor ? ' in the servers read so far' : ''}.{' '}
              <a href={href('/servers')}>Show all servers</a>.
            </p>
          ) : (
            <p>
              You have no servers yet. <a href={href('/deploy')}>Deploy your first server</a>.
            </p>
          )}
        </div>
      ) : list.rows.length > 0 ? (
        <TableWrap label="Servers table">
          <table class="servers-table">
            <caption class="visually-hidden">Your servers{filtered ? ' (filtered)' : ''}, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Region</th>
                {manyInstances ? <th scope="col">Panel</th> : null}
                <th scope="col" class="num">
                  RAM
                </th>
                <th scope="col" class="num">
                  CPU
                </th>
                <th scope="col" class="num">
                  Disk
                </th>
                <th scope="col" class="num">
                  Price / hour
                </th>
                <th scope="col">Labels</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {list.rows.map((s) => (
                <tr key={s.id} data-testid="server-row" data-server-id={s.id}>
                  <th scope="row">
                    <a href={href(`/servers/${s.id}`)}>{s.name}</a>
                  </th>
                  <td>
                    <StatusBadge status={s.status} reason={s.suspendedReason} />
                  </td>
                  <td>{s.region ?? <span class="muted">—</span>}</td>
                  {manyInstances ? <td>{instanceName(s.instanceId)}</td> : null}
                  <td class="num">{mb(s.resources.ramMb)}</td>
                  <td class="num">{s.resources.cpuPercent} %</td>
                  <td class="num">{mb(s.resources.diskMb)}</td>
                  <td class="num">{s.status === 'active' ? millicents(s.priceMillicentsPerHour) : <span class="muted">—</span>}</td>
                  <td>
                    <LabelChips labels={s.labels} filterPath="/servers" />
                  </td>
                  <td>
                    <time dateTime={s.createdAt} title={dateTime(s.createdAt)}>
                      {relative(s.createdAt)}
                    </time>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
      <div class="actions">
        <p class="muted" role="status" data-testid="servers-count">
          {list.started && !(list.loading && list.rows.length === 0) && !(list.error && list.rows.length === 0)
            ? `${list.rows.length} server${list.rows.length === 1 ? '' : 's'} shown${list.cursor ? ', more to load' : ''}.`
            : ''}
        </p>
        {list.cursor ? (
          <Button busy={list.loading} onClick={() => void list.more()}>
            {list.loading ? 'Loading more…' : 'Load more'}
          </Button>
        ) : null}
      </div>
    </Page>
  );
}

/** The filters as a form: submitting it puts them in the URL, which loads the list again. */
function FilterForm(props: { filters: Filters; regions: string[]; instances: Schema<'PublicInstance'>[]; error: unknown }) {
  const [values, setValues] = useState<Filters>(props.filters);
  const set = (name: FilterName) => (event: Event) =>
    setValues((v) => ({ ...v, [name]: (event.currentTarget as HTMLInputElement | HTMLSelectElement).value }));
  const submit = (event: Event) => {
    event.preventDefault();
    const query = new URLSearchParams();
    for (const name of FILTERS) {
      const value = values[name]?.trim();
      if (value) query.set(name, value);
    }
    const search = query.toString();
    navigate(`/servers${search ? `?${search}` : ''}`);
  };
  const regions = [...new Set([...props.regions, ...(props.filters.region ? [props.filters.region] : [])])].sort();
  const selectorIssue = issueFor(props.error, 'label_selector');
  const nameIssue = issueFor(props.error, 'name_prefix');
  return (
    <form id="server-filters" class="card filters" aria-label="Filter servers" onSubmit={submit}>
      <Field id="filter-name" label="Name starts with" error={nameIssue}>
        {(control) => (
          <input {...control} name="name_prefix" value={values.name_prefix ?? ''} onInput={set('name_prefix')} maxLength={60} />
        )}
      </Field>
      <Field id="filter-status" label="Status">
        {(control) => (
          <select {...control} name="status" value={values.status ?? ''} onChange={set('status')}>
            <option value="">Any</option>
            <option value="active">Active</option>
            <option value="suspended">Suspended</option>
            <option value="deleted">Deleted</option>
          </select>
        )}
      </Field>
      <Field id="filter-region" label="Region">
        {(control) => (
          <select {...control} name="region" value={values.region ?? ''} onChange={set('region')}>
            <option value="">Any</option>
            {regions.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        )}
      </Field>
      {props.instances.length > 1 || props.filters.instanceId ? (
        <Field id="filter-instance" label="Panel">
          {(control) => (
            <select {...control} name="instanceId" value={values.instanceId ?? ''} onChange={set('instanceId')}>
              <option value="">Any</option>
              {props.instances.map((i) => (
                <option key={i.id} value={i.id}>
                  {i.name}
                </option>
              ))}
              {props.filters.instanceId && !props.instances.some((i) => i.id === props.filters.instanceId) ? (
                <option value={props.filters.instanceId}>{props.filters.instanceId}</option>
              ) : null}
            </select>
          )}
        </Field>
      ) : null}
      <Field
        id="filter-labels"
        label="Labels"
        hint={
          selectorIssue ? undefined : (
            <>
              For example <code>env=prod,!temp</code> (<code>k=v</code>, <code>k!=v</code>, <code>k</code>, <code>!k</code>)
            </>
          )
        }
        error={selectorIssue}
      >
        {(control) => (
          <input
            {...control}
            name="label_selector"
            value={values.label_selector ?? ''}
            onInput={set('label_selector')}
            spellcheck={false}
            autoComplete="off"
          />
        )}
      </Field>
      <div class="actions filter-actions">
        <Button type="submit" kind="primary">
          Apply filters
        </Button>
        {Object.keys(props.filters).length > 0 ? (
          <a class="btn" href={href('/servers')}>
            Clear filters
          </a>
        ) : null}
      </div>
    </form>
  );
}
