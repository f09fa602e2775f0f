import * as accessPatterns from '../db/access-patterns.ts';
import { panelClientFor, toInstanceView } from '../instances/index.ts';
import { withServerLease } from './lease.ts';
import { getOwnedServer } from './read.ts';
import { recordDeleted } from './records.ts';
import { releaseDeletedSubdomain } from './subdomain.ts';
import { toServerView } from './views.ts';
import { PanelRequestError } from '../panel/errors.ts';

/** How long a caller is told to wait when the server's node (Wings) did not answer the panel. */
export const WINGS_DOWN_RETRY_S = 60;

/**
 * The panel deletes a server on Wings first and, unless forced, stops there when Wings cannot be
 * reached: it answers 504 `DaemonConnectionException` and keeps the server (the panel's
 * ServerDeletionService). Nothing changed, so this is `panel_unavailable` with a Retry-After, not
 * a timeout whose outcome is unknown; the record stays live (and billed) until a delete succeeds.
 */
export function wingsUnreachable(err: unknown): unknown {
  return err instanceof PanelRequestError && err.panelStatus === 504 && err.panelErrors.some((e) => e.code === 'DaemonConnectionException')
    ? new PanelRequestError('panel_unavailable', "The server's node is down; nothing was deleted", 504, err.panelErrors, {
        retryAfterSeconds: WINGS_DOWN_RETRY_S,
      })
    : err;
}

/** Delete: the panel first, then the record (deleting twice answers with the first deletion). */
export async function deleteServer(accountId: string, serverId: string): Promise<{ id: string; status: 'deleted'; deletedAt: string }> {
  const first = await getOwnedServer(accountId, serverId);
  if (first.status === 'deleted') return { id: serverId, status: 'deleted', deletedAt: first.deletedAt ?? first.updatedAt };
  return withServerLease(serverId, 'delete', async () => {
    const item = await getOwnedServer(accountId, serverId);
    const server = toServerView(item);
    if (server.status === 'deleted') return { id: serverId, status: 'deleted' as const, deletedAt: server.deletedAt! };
    // An instance cannot be removed while it hosts servers, so it is there; if it is not, there is no panel to ask.
    const instanceItem = await accessPatterns.instanceById(server.instanceId);
    if (instanceItem)
      await (await panelClientFor(toInstanceView(instanceItem))).deleteServer(item.panelServerId).catch((err: unknown) => {
        throw wingsUnreachable(err);
      });
    const deletedAt = await recordDeleted({ accountId, serverId, instanceId: instanceItem ? server.instanceId : undefined });
    // The name's records go after the record: a provider failure waits on the repair pass, never undoes the delete.
    await releaseDeletedSubdomain(item);
    return { id: serverId, status: 'deleted' as const, deletedAt };
  });
}
