import { keys } from '../db/keys.ts';
import type { RepairReason, RetiredSubdomain, ServerRepairItem } from '../db/items.ts';
import { writeIfFirst, writeItem } from '../db/write.ts';
import { errorFields, logger } from '../observability/logger.ts';

/**
 * The pending-repair queue: a server whose panel and record may disagree because a suspension, an
 * unsuspension or a repair did not complete (the panel failed, or a customer's hold outlasted the
 * system's wait), or because a resize ended without the panel confirming. One item per server
 * (`REPAIR#<serverId>`, so queueing twice is one item with both reasons), due at once in the
 * sparse GSI2 `REPAIRDUE#<n>`; the every-minute pass (repairs.ts) redoes the work from fresh reads
 * and removes the item once panel and record agree, backing off after each failure. Minutes, not
 * the next hourly pass.
 */
export type { RepairReason } from '../db/items.ts';

/** Backoff after the n-th failed attempt: 15 s, 30 s, 1 min, 2 min, … at most 10 min. */
export const repairBackoffMs = (attempts: number): number => Math.min(10 * 60_000, 15_000 * 2 ** Math.max(0, attempts - 1));

/** How long a pass holds a claimed item: its lease wait (20 s) and panel calls with retries fit well inside. */
export const REPAIR_CLAIM_MS = 2 * 60_000;

/**
 * Queues (or adds a reason to) a server's repair, due now unless an earlier failure set it later.
 * Never throws: the caller is already handling a failure, and the hourly pass remains behind this.
 */
export async function queueRepair(
  server: { accountId: string; serverId: string },
  reason: RepairReason,
  cause?: unknown,
  /** Reason `dns`: subdomains whose records are still to be removed. */
  retire: RetiredSubdomain[] = [],
): Promise<void> {
  const now = new Date().toISOString();
  const due = keys.repairDue(server.serverId, now);
  try {
    await writeItem({
      Update: {
        Key: keys.serverRepair(server.serverId),
        UpdateExpression:
          'SET kind = :kind, serverId = :sid, accountId = :aid, queuedAt = if_not_exists(queuedAt, :now), attempts = if_not_exists(attempts, :zero), ' +
          `GSI2PK = :pk, GSI2SK = if_not_exists(GSI2SK, :sk)${retire.length ? ', dnsRetire = list_append(if_not_exists(dnsRetire, :none), :retire)' : ''} ADD reasons :reason, version :one`,
        ExpressionAttributeValues: {
          ':kind': 'server-repair',
          ':sid': server.serverId,
          ':aid': server.accountId,
          ':now': now,
          ':zero': 0,
          ':pk': due.GSI2PK,
          ':sk': due.GSI2SK,
          ':reason': new Set([reason]),
          ':one': 1,
          ...(retire.length ? { ':none': [], ':retire': retire } : {}),
        },
      },
    });
    logger.warn('repair queued', { serverId: server.serverId, accountId: server.accountId, reason, ...(cause ? errorFields(cause) : {}) });
  } catch (err) {
    logger.error('could not queue a repair; the hourly pass retries', { serverId: server.serverId, reason, ...errorFields(err) });
  }
}

/** Claims a due item for REPAIR_CLAIM_MS (its due entry moved ahead, on the entry read): false when another pass has it. */
export function claimRepair(item: ServerRepairItem, now: number): Promise<boolean> {
  return writeIfFirst({
    Update: {
      Key: keys.serverRepair(item.serverId),
      UpdateExpression: 'SET GSI2SK = :claimed',
      ConditionExpression: 'GSI2SK = :read',
      ExpressionAttributeValues: {
        ':claimed': keys.repairDue(item.serverId, new Date(now + REPAIR_CLAIM_MS).toISOString()).GSI2SK,
        ':read': item.GSI2SK,
      },
    },
  });
}

/** Panel and record agree: the item goes, unless it was queued again meanwhile (then it stays due at its claim's end). */
export function completeRepair(item: ServerRepairItem): Promise<boolean> {
  return writeIfFirst({
    Delete: {
      Key: keys.serverRepair(item.serverId),
      ConditionExpression: 'version = :v',
      ExpressionAttributeValues: { ':v': item.version },
    },
  });
}

/** Another attempt later, with the failure's code (safe to log and store). */
export async function retryRepairLater(item: ServerRepairItem, now: number, error: string): Promise<number> {
  const attempts = item.attempts + 1;
  const dueAt = new Date(now + repairBackoffMs(attempts)).toISOString();
  await writeIfFirst({
    Update: {
      Key: keys.serverRepair(item.serverId),
      UpdateExpression: 'SET attempts = :a, lastError = :e, GSI2SK = :due',
      ConditionExpression: 'attribute_exists(PK)',
      ExpressionAttributeValues: { ':a': attempts, ':e': error, ':due': keys.repairDue(item.serverId, dueAt).GSI2SK },
    },
  });
  return attempts;
}
