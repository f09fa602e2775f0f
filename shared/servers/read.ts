import * as accessPatterns from '../db/access-patterns.ts';
import type { Page } from '../db/access-patterns.ts';
import type { ServerItem } from '../db/items.ts';
import { notFound } from '../errors.ts';
import { filteredPage, type ListRequest } from './filters.ts';
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

/** The account's servers, newest first; filters read the account's partition in bounded pages (a short page carries a cursor). */
export async function listServers(accountId: string, page: ListRequest): Promise<Page<ServerView>> {
  const { bound, filter } = filteredPage(page);
  const result = await accessPatterns.serversOfAccount(accountId, bound, filter);
  return { data: result.data.map(toServerView), nextCursor: result.nextCursor };
}

/** Every account's servers (the sharded listing), or one account's (its own partition: cheaper) when `accountId` is given. */
export async function listAllServers(page: ListRequest): Promise<Page<AdminServerView>> {
  const { bound, filter } = filteredPage(page);
  const result = page.accountId
    ? await accessPatterns.serversOfAccount(page.accountId, bound, filter)
    : await accessPatterns.allServers(bound, filter);
  return {
    data: result.data.map((item) => ({ ...toServerView(item), accountId: item.accountId })),
    nextCursor: result.nextCursor,
  };
}
