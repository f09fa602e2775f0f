import type { Schema } from '../../api.ts';
import { dateTime, mb, millicents } from '../../format.ts';
import { LabelChips } from '../../labels.tsx';
import { STATUS_TONE } from '../../server-status.tsx';
import { href } from '../../router.ts';
import { Badge, TableWrap } from '../../ui.tsx';
import { shortId } from './common.tsx';
import { useServerActions } from './server-actions.tsx';

type AdminServer = Schema<'AdminServer'>;

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
      <TableWrap label={props.caption}>
        <table>
          <caption class="visually-hidden">{props.caption}</caption>
          <thead>
            <tr>
              <th scope="col">Server</th>
              <th scope="col">Status</th>
              {props.account ? <th scope="col">Account</th> : null}
              <th scope="col">Panel</th>
              <th scope="col">Region</th>
              <th scope="col">Resources</th>
              <th scope="col" class="num">
                Price an hour
              </th>
              <th scope="col">Labels</th>
              <th scope="col">Created</th>
              {props.onChanged ? <th scope="col">Actions</th> : null}
            </tr>
          </thead>
          <tbody>
            {props.servers.map(actions.shown).map((s) => (
              <tr key={s.id} data-testid="admin-server-row" data-status={s.status}>
                <td>
                  {s.name}
                  <br />
                  <span class="muted mono" title={s.id}>
                    {s.identifier}
                  </span>
                </td>
                <td>
                  <Badge tone={STATUS_TONE[s.status]}>{s.status}</Badge>
                  {s.suspendedReason ? <span class="muted"> ({s.suspendedReason})</span> : null}
                </td>
                {props.account ? (
                  <td>
                    <a href={href(`/admin/accounts/${s.accountId}`)} title={s.accountId}>
                      Account {shortId(s.accountId)}
                    </a>
                  </td>
                ) : null}
                <td>{props.instances.get(s.instanceId) ?? <span class="mono">{shortId(s.instanceId)}</span>}</td>
                <td>{s.region ?? '—'}</td>
                <td>
                  {mb(s.resources.ramMb)} RAM · {s.resources.cpuPercent} % CPU · {mb(s.resources.diskMb)} disk
                </td>
                <td class="num">{millicents(s.priceMillicentsPerHour)}</td>
                <td>
                  <LabelChips labels={s.labels} />
                </td>
                <td>{dateTime(s.createdAt)}</td>
                {props.onChanged ? <td>{actions.buttons(s)}</td> : null}
              </tr>
            ))}
          </tbody>
        </table>
      </TableWrap>
      {props.onChanged ? actions.dialog : null}
    </>
  );
}
