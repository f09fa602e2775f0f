import * as accessPatterns from '../db/access-patterns.ts';
import type { ServerRepairItem } from '../db/items.ts';
import { REPAIR_SHARDS } from '../db/table.ts';
import { errorFields, logger } from '../observability/logger.ts';
import { putMetric } from '../observability/metrics.ts';
import { claimRepair, completeRepair, retryRepairLater } from './pending.ts';
import { repairPanel } from './reconcile.ts';
import { reconcileAccount } from './suspension.ts';
import { grantSftp } from './sftp.ts';
import { repairSubdomain } from './subdomain.ts';

/**
 * The pending-repair pass (every minute: functions/billing-pass `repairs` in AWS, dev/repair-loop.ts
 * locally): takes the due items of the queue (pending.ts), at most `limit` a run, claims each, and
 * redoes its work from fresh reads — the account's suspension state for this server
 * (`reconcileAccount`), the panel's build (or existence) against the record (`repairPanel`). Both are
 * system work under the server's lease, so they go before customers (lease.ts). Panel and record
 * agreeing removes the item; anything else backs it off (pending.ts `repairBackoffMs`).
 *
 * Each run reports the queue it found (`PendingWorkDepth`, `PendingWorkOldestAge`: 0 when empty, so an
 * alarm sees the queue drain; the depth reads at most `limit`) and the suspension states it put right
 * (`ReconcilerRepairs` Kind `suspension`; the panel repairs count in reconcile.ts).
 */
export interface RepairSummary {
  due: number;
  repaired: number;
  failed: number;
}

export const REPAIRS_PER_RUN = 50;
/** Servers repaired at once: each may wait for a customer's hold, so a few run side by side. */
const CONCURRENCY = 4;

export async function runRepairs(at = new Date(), limit = REPAIRS_PER_RUN): Promise<RepairSummary> {
  const nowIso = at.toISOString();
  const due: ServerRepairItem[] = [];
  for (let shard = 0; shard < REPAIR_SHARDS && due.length < limit; shard++) {
    due.push(...(await accessPatterns.dueRepairsOfShard(shard, nowIso, limit - due.length)));
  }
  const oldest = Math.min(at.getTime(), ...due.map((item) => Date.parse(item.queuedAt) || at.getTime()));
  putMetric('PendingWorkDepth', due.length);
  putMetric('PendingWorkOldestAge', Math.floor((at.getTime() - oldest) / 1000));
  const summary: RepairSummary = { due: due.length, repaired: 0, failed: 0 };
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, due.length) }, async () => {
      for (let i = next++; i < due.length; i = next++) {
        const outcome = await repairOne(due[i]!, at.getTime());
        if (outcome === 'repaired') summary.repaired++;
        if (outcome === 'failed') summary.failed++;
      }
    }),
  );
  if (summary.due) logger.info('pending repairs', { ...summary });
  return summary;
}

async function repairOne(item: ServerRepairItem, now: number): Promise<'repaired' | 'failed' | 'skipped'> {
  // The clock, not `now`, is what the claim is measured against; `now` only chooses what is due.
  if (!(await claimRepair(item, Math.max(now, Date.now())))) return 'skipped';
  try {
    const record = await accessPatterns.serverOfAccount(item.accountId, item.serverId);
    if (record && record.status !== 'deleted') {
      if (item.reasons.has('suspension')) {
        const result = await reconcileAccount(item.accountId, [record]);
        if (result.suspended + result.unsuspended)
          putMetric('ReconcilerRepairs', result.suspended + result.unsuspended, { Kind: 'suspension' });
        if (result.errors) throw Object.assign(new Error('The suspension state did not complete'), { code: 'suspension_failed' });
      }
      if (item.reasons.has('panel')) await repairPanel(record);
      if (item.reasons.has('sftp')) await grantSftp(record);
    }
    // A deleted server's records are removed too (its given-up names wait in `dnsRetire`).
    if (item.reasons.has('dns')) await repairSubdomain(item, item.dnsRetire ?? []);
    await completeRepair(item);
    return 'repaired';
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const error = typeof code === 'string' ? code : err instanceof Error ? err.name : 'error';
    const attempts = await retryRepairLater(item, Date.now(), error);
    logger.warn('repair failed; retried later', { serverId: item.serverId, attempts, ...errorFields(err) });
    return 'failed';
  }
}
