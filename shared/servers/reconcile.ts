import { accessPatterns } from '../db/access-patterns.ts';
import type { ServerItem } from '../db/items.ts';
import { listInstances, panelClientFor, type InstanceView } from '../instances/index.ts';
import { recordSystemActivity } from '../audit/index.ts';
import { logger, errorFields } from '../observability/logger.ts';
import type { PanelServer } from '../panel/types.ts';
import type { PanelClient } from '../panel/client.ts';
import { recordDeleted } from './records.ts';
import { OperationInProgressError, withServerLease } from './lease.ts';
import { buildWith } from './resize.ts';

/**
 * The reconciler: makes each panel and our records agree, by the panel's `external_id` (our
 * server id). Runs every hour before the billing pass (AWS) and on demand (`POST /dev/reconcile`).
 *
 * - A panel server whose external id is one of ours but has no live record (a create whose answer
 *   was lost and never settled, a compensation that failed) runs unbilled: it is removed from the
 *   panel. Servers created in the last RECENT_MS are left alone (a deploy may still be recording).
 * - A live record whose server is gone from the panel (deleted by hand on the panel) is closed as
 *   deleted, so billing stops at that hour.
 * - A live record whose limits differ from the panel's (a resize whose answer was lost) gets the
 *   recorded limits applied again: the record is what the customer pays for.
 * Panel servers without a uuid-shaped external id are not ours and are never touched. One walk
 * over the records serves every instance, so a run costs one panel listing per instance plus one
 * read of the server listing.
 */
export const RECENT_MS = 10 * 60_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface ReconcileReport {
  instances: number;
  panelServers: number;
  orphansRemoved: number;
  recordsClosed: number;
  limitsRestored: number;
  errors: number;
}

export async function reconcileAll(now = Date.now()): Promise<ReconcileReport> {
  const report: ReconcileReport = { instances: 0, panelServers: 0, orphansRemoved: 0, recordsClosed: 0, limitsRestored: 0, errors: 0 };
  // Panel side, instance by instance: orphans removed, lost resizes restored.
  const answered = new Map<string, { client: PanelClient; onPanel: Set<string> }>();
  for (const instance of await listInstances()) {
    report.instances++;
    try {
      answered.set(instance.id, await reconcilePanel(instance, now, report));
    } catch (err) {
      // A panel that did not answer closes nothing: its servers are not known to be gone.
      report.errors++;
      logger.warn('reconcile: instance failed', { instanceId: instance.id, ...errorFields(err) });
    }
  }
  // Record side, in one walk over every server record: live records whose server is gone.
  let cursor: string | undefined;
  do {
    const page = await accessPatterns.allServers({ limit: 100, cursor, boundTo: 'reconciler' });
    for (const record of page.data) {
      const panel = answered.get(record.instanceId);
      if (!panel || record.status === 'deleted' || panel.onPanel.has(record.serverId)) continue;
      if (now - Date.parse(record.createdAt) < RECENT_MS) continue;
      try {
        // Ask once more for this one server: the listing may predate a create.
        if (await panel.client.getServerByExternalId(record.serverId)) continue;
        if (await closeRecord(record)) report.recordsClosed++;
      } catch (err) {
        report.errors++;
        logger.warn('reconcile: could not close a record', { serverId: record.serverId, ...errorFields(err) });
      }
    }
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return report;
}

/** One panel's servers against the records: removes orphans, restores lost resizes. */
async function reconcilePanel(
  instance: InstanceView,
  now: number,
  report: ReconcileReport,
): Promise<{ client: PanelClient; onPanel: Set<string> }> {
  const client = await panelClientFor(instance);
  const panelServers = (await client.listServers()).filter((s) => s.external_id && UUID.test(s.external_id));
  report.panelServers += panelServers.length;
  for (const panel of panelServers) {
    const record = await accessPatterns.serverById(panel.external_id!);
    if (record && record.status !== 'deleted' && record.instanceId === instance.id) {
      await restoreLimits(client, record, panel)
        .then((fixed) => (report.limitsRestored += fixed ? 1 : 0))
        .catch(() => report.errors++);
      continue;
    }
    if (now - Date.parse(panel.created_at) < RECENT_MS) continue;
    try {
      await client.deleteServer(panel.id, true);
      report.orphansRemoved++;
      logger.warn('reconcile: removed a panel server without a live record', {
        instanceId: instance.id,
        panelServerId: panel.id,
        serverId: panel.external_id,
      });
    } catch (err) {
      report.errors++;
      logger.warn('reconcile: could not remove an orphan', { instanceId: instance.id, panelServerId: panel.id, ...errorFields(err) });
    }
  }
  return { client, onPanel: new Set(panelServers.map((s) => s.external_id!)) };
}

/**
 * A panel build that differs from the record is put back to the record (a lost resize), under the
 * server's lease and from the record as it is then; a server busy with another operation is left
 * for the next run.
 */
async function restoreLimits(client: PanelClient, listed: ServerItem, panel: PanelServer): Promise<boolean> {
  return skipWhenBusy(listed.serverId, async () => {
    const record = await accessPatterns.serverOfAccount(listed.accountId, listed.serverId);
    if (!record || record.status === 'deleted') return false;
    const r = record.resources;
    if (panel.limits.memory === r.ramMb && panel.limits.disk === r.diskMb && panel.limits.cpu === r.cpuPercent) return false;
    await client.updateBuild(panel.id, buildWith(panel, r));
    logger.warn('reconcile: panel limits differed from the record; restored', { serverId: record.serverId, panelServerId: panel.id });
    return true;
  });
}

async function skipWhenBusy(serverId: string, repair: () => Promise<boolean>): Promise<boolean> {
  try {
    return await withServerLease(serverId, 'reconcile', repair);
  } catch (err) {
    if (err instanceof OperationInProgressError) return false;
    throw err;
  }
}

/** Closes a record whose panel server is gone: deleted now, so the billing pass bills this hour and stops. */
async function closeRecord(record: ServerItem): Promise<boolean> {
  const accountId = record.accountId;
  const serverId = record.serverId;
  return skipWhenBusy(serverId, () => closeUnderLease(accountId, serverId));
}

async function closeUnderLease(accountId: string, serverId: string): Promise<boolean> {
  const current = await accessPatterns.serverOfAccount(accountId, serverId);
  if (!current || current.status === 'deleted') return false;
  await recordDeleted({ accountId, serverId, instanceId: current.instanceId, reason: 'missing on the panel' });
  await recordSystemActivity({
    accountId,
    actor: 'reconciler',
    action: 'servers.closed',
    target: `server:${serverId}`,
    details: {
      reason: 'The server no longer exists on the panel',
    },
  });
  logger.warn('reconcile: closed a record whose panel server is gone', { accountId, serverId });
  return true;
}
