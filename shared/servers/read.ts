import type { z } from 'zod';
import type { LiveState } from '../api/schemas.ts';
import { accessPatterns, type Page, type PageRequest } from '../db/access-patterns.ts';
import type { ServerItem } from '../db/items.ts';
import { ApiError, notFound } from '../errors.ts';
import { getInstance, panelClientFor } from '../instances/index.ts';
import { errorFields, logger } from '../observability/logger.ts';
import { type AdminServerView, type ServerView, toServerView } from './views.ts';

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

/** The stored server plus what the panel says now; an unreachable panel marks the live part unavailable. */
export async function getServerWithLive(accountId: string, serverId: string): Promise<ServerView & { live: z.infer<typeof LiveState> }> {
  const item = await getOwnedServer(accountId, serverId);
  const view = toServerView(item);
  const unavailable = (reason: string) => ({
    available: false,
    reason,
    installStatus: null,
    powerState: null,
    suspendedOnPanel: null,
    resources: null,
  });
  if (view.status === 'deleted') return { ...view, live: unavailable('The server is deleted') };
  try {
    const instance = await getInstance(view.instanceId);
    const client = await panelClientFor(instance);
    const panel = await client.getServer(item.panelServerId);
    const installStatus =
      panel.status === 'installing'
        ? 'installing'
        : panel.status === 'install_failed' || panel.status === 'reinstall_failed'
          ? 'install_failed'
          : 'installed';
    let powerState: string | null = null;
    let resources: z.infer<typeof LiveState>['resources'] = null;
    if (client.hasClientKey && installStatus === 'installed' && !panel.suspended) {
      const stats = await client.getResources(view.identifier);
      powerState = stats.current_state;
      resources = {
        memoryBytes: stats.resources.memory_bytes,
        cpuAbsolute: stats.resources.cpu_absolute,
        diskBytes: stats.resources.disk_bytes,
        networkRxBytes: stats.resources.network_rx_bytes,
        networkTxBytes: stats.resources.network_tx_bytes,
        uptimeMs: stats.resources.uptime,
      };
    }
    return { ...view, live: { available: true, installStatus, powerState, suspendedOnPanel: panel.suspended, resources } };
  } catch (err) {
    logger.warn('server live state unavailable', { serverId, ...errorFields(err) });
    return { ...view, live: unavailable(err instanceof ApiError ? err.message : 'The panel could not be reached') };
  }
}
