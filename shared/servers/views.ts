import type { z } from 'zod';
import type { AdminServer, Server } from '../api/schemas.ts';
import type { ServerItem } from '../db/items.ts';
import { exactPriceOf } from '../pricing/index.ts';

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
    resources: item.resources,
    priceCentsPerHour: item.priceCentsPerHour,
    priceMillicentsPerHour: exactPriceOf(item),
    status: item.status,
    createdAt: item.createdAt,
    updatedAt: item.updatedAt,
    suspendedAt: item.suspendedAt ?? null,
    suspendedReason: item.status === 'suspended' ? (item.suspendedReason ?? null) : null,
    deletedAt: item.deletedAt ?? null,
  };
}
