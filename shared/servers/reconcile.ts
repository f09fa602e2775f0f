import * as accessPatterns from '../db/access-patterns.ts';
import { releaseDeletedSubdomain } from './subdomain.ts';
import type { ServerItem } from '../db/items.ts';
import { listInstances, panelClientFor, toInstanceView, type InstanceView } from '../instances/index.ts';
import { claimPanelNodes } from '../instances/identity.ts';
import { getSettings } from '../settings/index.ts';
import { dropStaleHolds, holdOrphan, removeOrphan } from './orphans.ts';
import { recordSystemActivity } from '../audit/index.ts';
import { logger, errorFields } from '../observability/logger.ts';
import { putMetric } from '../observability/metrics.ts';
import type { PanelClient } from '../panel/client.ts';
import { recordDeleted } from './records.ts';
import { OperationInProgressError, withServerLease } from './lease.ts';
import { buildWith, hasResources } from './resize.ts';
import { queueRepair } from './pending.ts';

/**
 * The reconciler: makes each panel and our records agree, by the panel's `external_id` (our
 * server id). Runs every hour before the billing pass (AWS) and on demand (`POST /dev/reconcile`).
 *
 * - A panel server whose external id is one of ours but that no live record holds, on this instance
 *   or any other (a create whose answer was lost and never settled, a compensation that failed),
 *   runs unbilled: an orphan. With the setting `holdOrphansForConfirmation` (on by default) it is
 *   held for an admin to confirm (orphans.ts); off, it is removed from the panel. Servers created
 *   in the last RECENT_MS are left alone (a deploy may still be recording). A server whose record
 *   is on another instance is the same panel registered twice: never touched, only logged.
 * - Each instance's panel nodes are claimed first (instances/identity.ts): the backfill of the
 *   instances registered before panels had an identity, or while their panel did not answer.
 * - A live record whose server is gone from the panel (deleted by hand on the panel) is closed as
 *   deleted in the same pass, whatever its age, so billing stops at that hour and the instance's
 *   server count drops (an instance with no live server can be deleted). A record is written only
 *   after its panel server was created, so a missing one was removed, not yet to come.
 * - A live record whose limits differ from the panel's (a resize whose answer was lost) gets the
 *   recorded limits applied again: the record is what the customer pays for.
 * Repairs are system work under the server's lease (lease.ts: they go before customers); one that
 * does not complete is queued for the pending-repair pass (pending.ts, every minute).
 * Panel servers without a uuid-shaped external id are not ours and are never touched. Metrics: each
 * orphan found (`ReconcilerOrphans`), each held (`ReconcilerOrphansHeld`) and each change made
 * (`ReconcilerRepairs` by Kind: `orphan` removed, record `closed`, `limits` restored; the repair
 * pass adds `suspension`). One walk
 * over the records serves every instance, so a run costs one panel listing per instance plus one
 * read of the server listing.
 */
export const RECENT_MS = 10 * 60_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface ReconcileReport {
  instances: number;
  panelServers: number;
  orphansRemoved: number;
  /** Orphans held for an admin's confirmation (new or still held). */
  orphansHeld: number;
  /** Panel servers whose live record is on another instance (the same panel registered twice): left alone. */
  claimedElsewhere: number;
  recordsClosed: number;
  limitsRestored: number;
  errors: number;
}

export async function reconcileAll(now = Date.now()): Promise<ReconcileReport> {
  const report: ReconcileReport = {
    instances: 0,
    panelServers: 0,
    orphansRemoved: 0,
    orphansHeld: 0,
    claimedElsewhere: 0,
    recordsClosed: 0,
    limitsRestored: 0,
    errors: 0,
  };
  const { holdOrphansForConfirmation } = await getSettings(true);
  // Panel side, instance by instance: orphans removed, lost resizes restored.
  const answered = new Map<string, { client: PanelClient; onPanel: Set<string> }>();
  for (const instance of await listInstances()) {
    report.instances++;
    try {
      answered.set(instance.id, await reconcilePanel(instance, now, report, holdOrphansForConfirmation));
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
      try {
        // A record is written only once its panel server exists, so a record of any age whose
        // server the panel no longer has was deleted there. The listing may predate a create
        // recorded since: the panel is asked once more for this one server, under its lease.
        if (await closeRecord(record, panel.client, report)) report.recordsClosed++;
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
  holdOrphans: boolean,
): Promise<{ client: PanelClient; onPanel: Set<string> }> {
  const client = await panelClientFor(instance);
  try {
    await claimPanelNodes(
      { instanceId: instance.id, panelNodeUuids: instance.panelNodeUuids ?? undefined, duplicateOf: instance.duplicateOf ?? undefined },
      client,
    );
  } catch (err) {
    report.errors++;
    logger.warn('reconcile: could not claim the panel nodes', { instanceId: instance.id, ...errorFields(err) });
  }
  const panelServers = (await client.listServers()).filter((s) => s.external_id && UUID.test(s.external_id));
  report.panelServers += panelServers.length;
  const orphans = new Set<number>();
  for (const panel of panelServers) {
    // By external id, across every instance: a record anywhere claims the server.
    const record = await accessPatterns.serverById(panel.external_id!);
    if (record && record.status !== 'deleted') {
      if (record.instanceId === instance.id) {
        if (!hasResources(panel, record.resources) && (await orQueue(record, report, () => restoreLimits(client, record, panel.id))))
          report.limitsRestored++;
      } else {
        report.claimedElsewhere++;
        logger.warn('reconcile: a panel server held by a record on another instance (the same panel registered twice); left alone', {
          instanceId: instance.id,
          recordInstanceId: record.instanceId,
          panelServerId: panel.id,
          serverId: panel.external_id,
        });
      }
      continue;
    }
    if (now - Date.parse(panel.created_at) < RECENT_MS) continue;
    putMetric('ReconcilerOrphans', 1);
    try {
      if (holdOrphans) {
        orphans.add(panel.id);
        report.orphansHeld++;
        if (await holdOrphan(instance.id, panel, now)) {
          putMetric('ReconcilerOrphansHeld', 1);
          logger.warn('reconcile: held a panel server without a live record for an admin to confirm', {
            instanceId: instance.id,
            panelServerId: panel.id,
            serverId: panel.external_id,
          });
        }
        continue;
      }
      await removeOrphan(client, instance.id, panel, 'reconciler');
      report.orphansRemoved++;
    } catch (err) {
      report.errors++;
      logger.warn('reconcile: could not remove an orphan', { instanceId: instance.id, panelServerId: panel.id, ...errorFields(err) });
    }
  }
  await dropStaleHolds(instance.id, orphans);
  return { client, onPanel: new Set(panelServers.map((s) => s.external_id!)) };
}

/**
 * A panel build that differs from the record is put back to the record (a lost resize), under the
 * server's lease, from the record and the panel's build as they are then. The listing's figures
 * only choose which servers to look at: those that agree take no lease.
 */
async function restoreLimits(client: PanelClient, listed: ServerItem, panelServerId: number): Promise<boolean> {
  return withServerLease(listed.serverId, 'reconcile', async () => {
    const record = await accessPatterns.serverOfAccount(listed.accountId, listed.serverId);
    if (!record || record.status === 'deleted') return false;
    const panel = await client.getServer(panelServerId);
    if (hasResources(panel, record.resources)) return false;
    await client.updateBuild(panel.id, buildWith(panel, record.resources));
    logger.warn('reconcile: panel limits differed from the record; restored', { serverId: record.serverId, panelServerId: panel.id });
    putMetric('ReconcilerRepairs', 1, { Kind: 'limits' });
    return true;
  });
}

/**
 * A repair the reconciler could not finish (the panel failed, or a customer's hold outlasted the
 * system's wait) goes to the pending-repair queue, retried within minutes rather than next hour.
 */
async function orQueue(record: ServerItem, report: ReconcileReport, repair: () => Promise<boolean>): Promise<boolean> {
  try {
    return await repair();
  } catch (err) {
    if (!(err instanceof OperationInProgressError)) report.errors++;
    await queueRepair(record, 'panel', err);
    return false;
  }
}

/**
 * The pending-repair pass's panel work for one server (repairs.ts): its panel server found by
 * external id; gone closes the record, present gets the recorded limits
 * back. Throws when the panel did not answer or the server is busy, so the item is retried.
 */
export async function repairPanel(listed: ServerItem): Promise<void> {
  const instance = await accessPatterns.instanceById(listed.instanceId);
  if (!instance) return; // no panel to disagree with
  const client = await panelClientFor(toInstanceView(instance));
  const panel = await client.getServerByExternalId(listed.serverId);
  if (panel) {
    await restoreLimits(client, listed, panel.id);
    return;
  }
  await withServerLease(listed.serverId, 'reconcile', () => closeUnderLease(listed.accountId, listed.serverId));
}

/**
 * Closes a record whose panel server is gone: deleted now, so the billing pass bills this hour and
 * stops. The panel is asked for the server under the lease, so a delete or repair in flight has
 * settled; a server it still has keeps its record.
 */
async function closeRecord(record: ServerItem, client: PanelClient, report: ReconcileReport): Promise<boolean> {
  return orQueue(record, report, () =>
    withServerLease(record.serverId, 'reconcile', () => closeUnderLease(record.accountId, record.serverId, client)),
  );
}

/** With a client, the panel is asked first: a server it has keeps its record. */
async function closeUnderLease(accountId: string, serverId: string, client?: PanelClient): Promise<boolean> {
  const current = await accessPatterns.serverOfAccount(accountId, serverId);
  if (!current || current.status === 'deleted' || (await client?.getServerByExternalId(serverId))) return false;
  await recordDeleted({ accountId, serverId, instanceId: current.instanceId, reason: 'missing on the panel' });
  await releaseDeletedSubdomain(current);
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
  putMetric('ReconcilerRepairs', 1, { Kind: 'closed' });
  return true;
}
