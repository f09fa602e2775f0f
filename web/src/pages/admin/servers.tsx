import { api, ok, type Schema } from '../../api.ts';
import { navigate, useLocation } from '../../router.ts';
import { Field } from '../../form.tsx';
import { Button, Loading, Page, useLoad } from '../../ui.tsx';
import { Pager, text, useCursorList } from './common.tsx';
import { ServerTable } from './server-table.tsx';
import { byText, type SortOrder, useSort } from './sort.tsx';

const FILTERS = ['status', 'instanceId', 'accountId', 'region', 'name_prefix', 'label_selector'] as const;
type Filters = Partial<Record<(typeof FILTERS)[number], string>>;
const STATUSES = ['active', 'suspended', 'deleted'] as const;

type AdminServer = Schema<'AdminServer'>;
const ORDERS: SortOrder<AdminServer>[] = [
  { value: 'newest', label: 'Newest first', compare: (a, b) => byText(b.createdAt, a.createdAt) },
  { value: 'oldest', label: 'Oldest first', compare: (a, b) => byText(a.createdAt, b.createdAt) },
  { value: 'price-desc', label: 'Price, highest first', compare: (a, b) => b.priceMillicentsPerHour - a.priceMillicentsPerHour },
  { value: 'price-asc', label: 'Price, lowest first', compare: (a, b) => a.priceMillicentsPerHour - b.priceMillicentsPerHour },
  { value: 'status', label: 'Status', compare: (a, b) => byText(a.status, b.status) },
];

/**
 * Every server of every account (GET /v1/admin/servers), newest first, with the route's filters:
 * status, panel, account, region, name prefix and label selector. The filters live in the address
 * (`/admin/servers?accountId=…`), so a filtered view can be linked and the back button works.
 * Each row has the operator's actions: suspend or unsuspend, reinstall, delete (server-actions.tsx).
 */
export default function Servers() {
  const { query } = useLocation();
  const filters: Filters = {};
  for (const name of FILTERS) {
    const value = query.get(name)?.trim();
    if (value) filters[name] = value;
  }
  const instances = useLoad(() => ok(api().GET('/v1/admin/instances')).catch(() => undefined));
  const list = useCursorList(
    (cursor) =>
      ok(
        api().GET('/v1/admin/servers', {
          params: { query: { ...filters, status: filters.status as (typeof STATUSES)[number] | undefined, limit: 25, cursor } },
        }),
      ),
    [filters],
  );
  const sort = useSort(ORDERS);
  const names = new Map((instances.data?.data ?? []).map((i) => [i.id, i.name]));
  const apply = (form: HTMLFormElement) => {
    const data = new FormData(form);
    const params = new URLSearchParams();
    for (const name of FILTERS) if (text(data, name)) params.set(name, text(data, name));
    const search = params.toString();
    navigate(`/admin/servers${search ? `?${search}` : ''}`);
  };
  return (
    <Page title="All servers">
      <form
        id="server-filters"
        class="card admin-filters"
        aria-label="Filter servers"
        key={JSON.stringify(filters)}
        onSubmit={(e) => {
          e.preventDefault();
          apply(e.currentTarget);
        }}
      >
        <Field id="filter-status" label="Status">
          {(control) => (
            <select {...control} name="status">
              <option value="">Any</option>
              {STATUSES.map((s) => (
                <option key={s} value={s} selected={filters.status === s}>
                  {s}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field id="filter-instance" label="Panel">
          {(control) => (
            <select {...control} name="instanceId">
              <option value="">Any</option>
              {(instances.data?.data ?? []).map((i) => (
                <option key={i.id} value={i.id} selected={filters.instanceId === i.id}>
                  {i.name}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field id="filter-account" label="Account id">
          {(control) => <input {...control} name="accountId" defaultValue={filters.accountId ?? ''} autoComplete="off" />}
        </Field>
        <Field id="filter-region" label="Region tag">
          {(control) => <input {...control} name="region" defaultValue={filters.region ?? ''} maxLength={60} />}
        </Field>
        <Field id="filter-name" label="Name starts with">
          {(control) => <input {...control} name="name_prefix" defaultValue={filters.name_prefix ?? ''} maxLength={60} />}
        </Field>
        <Field id="filter-labels" label="Label selector" hint="Comma-joined terms, all must hold: k=v, k!=v, k, !k.">
          {(control) => <input {...control} name="label_selector" defaultValue={filters.label_selector ?? ''} />}
        </Field>
        <div class="actions">
          <Button type="submit" kind="primary">
            Apply filters
          </Button>
          <Button onClick={() => navigate('/admin/servers')}>Clear filters</Button>
        </div>
      </form>
      <div class="actions">{sort.control}</div>
      <Loading state={list.state} label="Loading the servers…">
        {(page) =>
          page.data.length === 0 ? (
            <p>No server matches.</p>
          ) : (
            <ServerTable
              servers={sort.sort(page.data)}
              instances={names}
              account
              caption={`Servers of all accounts, ${sort.order === ORDERS[0] ? 'newest first' : `this page by ${sort.order.label.toLowerCase()}`}`}
              onChanged={list.state.reload}
            />
          )
        }
      </Loading>
      <Pager list={list} label="Servers" />
    </Page>
  );
}
