import { accessPatterns } from '../db/access-patterns.ts';
import { panelClientFor, toInstanceView } from '../instances/index.ts';
import { withServerLease } from './lease.ts';
import { getOwnedServer } from './read.ts';
import { recordDeleted } from './records.ts';
import { toServerView } from './views.ts';

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
    if (instanceItem) await (await panelClientFor(toInstanceView(instanceItem))).deleteServer(item.panelServerId);
    const deletedAt = await recordDeleted({ accountId, serverId, instanceId: instanceItem ? server.instanceId : undefined });
    return { id: serverId, status: 'deleted' as const, deletedAt };
  });
}
