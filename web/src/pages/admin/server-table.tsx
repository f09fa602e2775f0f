import type { Schema } from '../../api.ts';
import { dateTime, mb, millicents } from '../../format.ts';
import { href } from '../../router.ts';
import { Badge } from '../../ui.tsx';
import { shortId, ScrollRegion } from './common.tsx';

type AdminServer = Schema<'AdminServer'>;

const TONE = { active: 'ok', suspended: 'warn', deleted: 'neutral' } as const;

/** Servers of any account as GET /v1/admin/servers gives them; `account` adds the owner's column. */
export function ServerTable(props: { servers: AdminServer[]; instances: Map<string, string>; account?: boolean; caption: string }) {
  return (
    <ScrollRegion label={props.caption}>
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
          </tr>
        </thead>
        <tbody>
          {props.servers.map((s) => (
            <tr key={s.id} data-testid="admin-server-row">
              <td>
                {s.name}
                <br />
                <span class="muted mono" title={s.id}>
                  {s.identifier}
                </span>
              </td>
              <td>
                <Badge tone={TONE[s.status]}>{s.status}</Badge>
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
                {Object.entries(s.labels).map(([k, v]) => (
                  <span key={k} class="label-chip mono">
                    {k}={v}
                  </span>
                ))}
              </td>
              <td>{dateTime(s.createdAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollRegion>
  );
}
