import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ok, type Schema } from '../api.ts';
import { mb, millicents } from '../format.ts';
import { LabelChips } from '../labels.tsx';
import { loadRegions, RegionName } from '../regions.tsx';
import { href, useLocation } from '../router.ts';
import { StatusBadge } from '../status-badges.tsx';
import { Ago, type Column, DataTable } from '../table.tsx';
import { Badge, Button, ErrorNotice, Page, Spinner, useLoad } from '../ui.tsx';
import { FilterForm, type Filters, filtersFrom } from './servers/filters.tsx';

/**
 * Your servers (GET /v1/servers), newest first, filtered by the API's own query parameters. The
 * filters live in the URL (`/servers?status=active&label_selector=env%3Dprod`), so a filter is a
 * link; "Load more" follows the cursor. A filtered page may come back empty with a cursor (the API
 * reads a bounded number of servers per page): such pages are followed at once.
 */
type Server = Schema<'Server'>;
type Status = Schema<'ServerStatus'>;

const PAGE_SIZE = 25;
/** Empty filtered pages followed in a row before asking the user ("Load more"). */
const MAX_EMPTY_PAGES = 8;

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

const COLUMNS: Column<Server>[] = [
  { header: 'RAM', class: 'num', cell: (s) => mb(s.resources.ramMb) },
  { header: 'CPU', class: 'num', cell: (s) => `${s.resources.cpuPercent} %` },
  { header: 'Disk', class: 'num', cell: (s) => mb(s.resources.diskMb) },
  {
    header: 'Price / hour',
    class: 'num',
    cell: (s) => (s.status === 'active' ? millicents(s.priceMillicentsPerHour) : <span class="muted">—</span>),
  },
  { header: 'Labels', cell: (s) => <LabelChips labels={s.labels} filterPath="/servers" /> },
  { header: 'Created', cell: (s) => <Ago at={s.createdAt} /> },
];

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

export default function Servers() {
  const { query } = useLocation();
  const filters = filtersFrom(query);
  const key = JSON.stringify(filters);
  const list = useServerPages(filters, key);
  const catalog = useLoad(
    () =>
      Promise.all([loadRegions(), ok(api().GET('/v1/instances'))]).then(([regions, i]) => ({
        regions,
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
        regions={catalog.data?.regions ?? []}
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
        <DataTable
          label="Servers table"
          caption={`Your servers${filtered ? ' (filtered)' : ''}, newest first`}
          class="servers-table"
          rows={list.rows}
          rowKey={(s) => s.id}
          rowProps={(s) => ({ 'data-testid': 'server-row', 'data-server-id': s.id })}
          columns={[
            {
              header: 'Name',
              rowHeader: true,
              cell: (s) => (
                <>
                  <a href={href(`/servers/${s.id}`)}>{s.name}</a>
                  {s.shared ? (
                    <>
                      {' '}
                      <Badge>Shared by {s.sharedBy}</Badge>
                    </>
                  ) : null}
                </>
              ),
            },
            { header: 'Status', cell: (s) => <StatusBadge status={s.status} reason={s.suspendedReason} /> },
            { header: 'Region', cell: (s) => <RegionName tag={s.region} /> },
            manyInstances && { header: 'Panel', cell: (s) => instanceName(s.instanceId) },
            ...COLUMNS,
          ]}
        />
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
