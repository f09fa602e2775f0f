import type { Schema } from '../../api.ts';
import { dateTime, mb, millicents } from '../../format.ts';
import { LabelChips } from '../../labels.tsx';
import { STATUS_TONE } from '../../status-badges.tsx';
import { href } from '../../router.ts';
import { RegionName } from '../../regions.tsx';
import { type Column, DataTable } from '../../table.tsx';
import { Badge } from '../../ui.tsx';
import { shortId } from './common.tsx';
import { useServerActions } from './server-actions.tsx';

type AdminServer = Schema<'AdminServer'>;

const SERVER: Column<AdminServer> = {
  header: 'Server',
  cell: (s) => (
    <>
      {s.name}
      <br />
      <span class="muted mono" title={s.id}>
        {s.identifier}
      </span>
    </>
  ),
};

const STATUS: Column<AdminServer> = {
  header: 'Status',
  cell: (s) => (
    <>
      <Badge tone={STATUS_TONE[s.status]}>{s.status}</Badge>
      {s.suspendedReason ? <span class="muted"> ({s.suspendedReason})</span> : null}
    </>
  ),
};

const ACCOUNT: Column<AdminServer> = {
  header: 'Account',
  cell: (s) => (
    <a href={href(`/admin/accounts/${s.accountId}`)} title={s.accountId}>
      Account {shortId(s.accountId)}
    </a>
  ),
};

/** The columns after the panel's. */
const DETAILS: Column<AdminServer>[] = [
  { header: 'Region', cell: (s) => <RegionName tag={s.region} /> },
  {
    header: 'Resources',
    cell: (s) => `${mb(s.resources.ramMb)} RAM · ${s.resources.cpuPercent} % CPU · ${mb(s.resources.diskMb)} disk`,
  },
  { header: 'Price an hour', class: 'num', cell: (s) => millicents(s.priceMillicentsPerHour) },
  { header: 'Labels', cell: (s) => <LabelChips labels={s.labels} /> },
  { header: 'Created', cell: (s) => dateTime(s.createdAt) },
];

/**
 * Servers of any account as GET /v1/admin/servers gives them; `account` adds the owner's column,
 * `onChanged` the operator's actions (server-actions.tsx), called after one succeeded.
 */
export function ServerTable(props: {
  servers: AdminServer[];
  instances: Map<string, string>;
  account?: boolean;
  caption: string;
  onChanged?: () => unknown;
}) {
  const actions = useServerActions(props.onChanged ?? (() => undefined));
  return (
    <>
      {props.onChanged ? actions.notice : null}
      <DataTable
        label={props.caption}
        caption={props.caption}
        rows={props.servers.map(actions.shown)}
        rowKey={(s) => s.id}
        rowProps={(s) => ({ 'data-testid': 'admin-server-row', 'data-status': s.status })}
        columns={[
          SERVER,
          STATUS,
          props.account && ACCOUNT,
          { header: 'Panel', cell: (s) => props.instances.get(s.instanceId) ?? <span class="mono">{shortId(s.instanceId)}</span> },
          ...DETAILS,
          props.onChanged && { header: 'Actions', cell: actions.buttons },
        ]}
      />
      {props.onChanged ? actions.dialog : null}
    </>
  );
}
