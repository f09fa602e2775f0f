import type { z } from 'zod';
import type { AdminServer, Server } from '../api/schemas.ts';
import type { ServerAllocation, ServerItem } from '../db/items.ts';
import { exactPriceOf, NO_ADDONS } from '../pricing/index.ts';
import { panelUserOf } from './panel-user.ts';
import { srvNameOf } from '../dns/names.ts';

export type ServerView = z.infer<typeof Server>;
export type AdminServerView = z.infer<typeof AdminServer>;

/** A stored server as the API shows it. */
export function toServerView(item: ServerItem): ServerView {
  return {
    id: item.serverId,
    instanceId: item.instanceId,
    identifier: item.identifier,
    uuid: item.uuid,
    name: item.name,
    eggId: item.eggId,
    region: item.region ?? null,
    address: item.address ?? null,
    ports: addressesOf(item)
      .filter((a) => !a.primary)
      .map(({ host, ip, alias, port }) => ({ host, ip, alias, port })),
    addresses: addressesOf(item),
    sftp: sftpOfServer(item),
    subdomain: subdomainOf(item),
    ...(item.planId ? { planId: item.planId } : {}),
    resources: item.resources,
    priceCentsPerHour: item.priceCentsPerHour,
    priceMillicentsPerHour: exactPriceOf(item),
    status: item.status,
    createdAt: item.createdAt,
    updatedAt: item.updatedAt,
    suspendedAt: item.suspendedAt ?? null,
    suspendedReason: item.status === 'suspended' ? (item.suspendedReason ?? null) : null,
    deletedAt: item.deletedAt ?? null,
    labels: item.labels ?? {},
    addons: item.addons ?? { ...NO_ADDONS },
  };
}

/** SFTP to the server: where (from the deploy's copy of the node), as whom (no panel call), and whether the login may open it. */
export function sftpOfServer(item: Pick<ServerItem, 'accountId' | 'identifier' | 'status' | 'sftp' | 'sftpGrantedAt'>): ServerView['sftp'] {
  return {
    host: item.sftp?.host ?? null,
    port: item.sftp?.port ?? null,
    username: `${panelUserOf(item.accountId).username}.${item.identifier}`,
    enabled: item.sftpGrantedAt !== undefined && item.status === 'active',
  };
}

/**
 * Every allocation of the server, the primary first, then by port: the stored list kept by
 * network.ts, else the deploy's primary alone (servers that never changed their ports).
 */
export function addressesOf(
  item: Pick<ServerItem, 'allocationId' | 'address' | 'allocations'>,
): Array<ServerAllocation & { primary: boolean }> {
  const stored: ServerAllocation[] = item.allocations ?? (item.address ? [{ ...item.address, id: item.allocationId, notes: null }] : []);
  return stored
    .map((a) => ({ ...a, primary: a.id === item.allocationId }))
    .sort((x, y) => Number(y.primary) - Number(x.primary) || x.port - y.port || x.id - y.id);
}

/** The server's name as the API shows it: the SRV record where the game has one, with the port it points at now. */
export function subdomainOf(item: Pick<ServerItem, 'subdomain' | 'address'>): ServerView['subdomain'] {
  const sub = item.subdomain;
  if (!sub) return null;
  const port = sub.published?.port ?? item.address?.port;
  return {
    name: sub.name,
    fqdn: sub.fqdn,
    srv: sub.srvService && port ? { name: srvNameOf(sub.srvService, sub.name, sub.zone), port } : null,
    status: sub.status,
  };
}
