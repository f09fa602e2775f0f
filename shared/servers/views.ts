import type { z } from 'zod';
import type { AdminServer, Server } from '../api/schemas.ts';
import type { ServerItem } from '../db/items.ts';
import { exactPriceOf } from '../pricing/index.ts';
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
    ports: [],
    sftp: sftpOfServer(item),
    subdomain: subdomainOf(item),
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
