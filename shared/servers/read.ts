import { accessPatterns, type Page, type PageRequest } from '../db/access-patterns.ts';
import type { ServerItem } from '../db/items.ts';
import { notFound } from '../errors.ts';
import { type AdminServerView, type ServerView, toServerView } from './views.ts';

/*
 * Reads of stored records only: nothing here asks a panel, so the admin listing loads without the
 * panel client (live.ts holds the read with live state).
 */

/** The caller's server; another account's server is 404 exactly like an unknown id. */
export async function getOwnedServer(accountId: string, serverId: string): Promise<ServerItem> {
  const item = await accessPatterns.serverOfAccount(accountId, serverId);
  if (!item) throw notFound('Server');
  return item;
}

export async function listServers(accountId: string, page: PageRequest): Promise<Page<ServerView>> {
  const result = await accessPatterns.serversOfAccount(accountId, page);
  return { data: result.data.map(toServerView), nextCursor: result.nextCursor };
}

export async function listAllServers(page: PageRequest): Promise<Page<AdminServerView>> {
  const result = await accessPatterns.allServers(page);
  return {
    data: result.data.map((item) => ({ ...toServerView(item), accountId: item.accountId })),
    nextCursor: result.nextCursor,
  };
}
