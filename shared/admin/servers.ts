import * as accessPatterns from '../db/access-patterns.ts';
import type { ServerItem } from '../db/items.ts';
import { notFound } from '../errors.ts';
import { deleteServer } from '../servers/delete.ts';
import { reinstallServer } from '../servers/reinstall.ts';
import { suspendByAdmin, unsuspendByAdmin } from '../servers/suspension.ts';
import { toServerView } from '../servers/views.ts';

/**
 * An operator's actions on any account's server (POST /v1/admin/servers/:id/…): the customer-side
 * domain functions, found by the server id alone (the `SERVERID#` pointer), each under the
 * server's lease as the customer's are.
 */
export async function serverForAdmin(serverId: string): Promise<ServerItem> {
  const item = await accessPatterns.serverById(serverId);
  if (!item) throw notFound('Server');
  return item;
}

const viewOf = async (serverId: string) => {
  const item = await serverForAdmin(serverId);
  return { ...toServerView(item), accountId: item.accountId };
};

export async function adminSuspend(serverId: string) {
  await suspendByAdmin(await serverForAdmin(serverId));
  return viewOf(serverId);
}

export async function adminUnsuspend(serverId: string) {
  await unsuspendByAdmin(await serverForAdmin(serverId));
  return viewOf(serverId);
}

/**
 * The customer's delete (the panel, then the record, under the lease). A server whose panel is no
 * longer registered has no panel to ask: its record is closed and the answer says `gone`.
 */
export async function adminDelete(serverId: string) {
  const item = await serverForAdmin(serverId);
  const panel = (await accessPatterns.instanceById(item.instanceId)) ? ('deleted' as const) : ('gone' as const);
  const result = await deleteServer(item.accountId, serverId);
  return { ...result, panel, accountId: item.accountId };
}

/** The customer's reinstall: a suspended or deleted server is 409 `conflict`, as for the customer. */
export async function adminReinstall(serverId: string) {
  const item = await serverForAdmin(serverId);
  return { ...(await reinstallServer(item.accountId, serverId)), accountId: item.accountId };
}
