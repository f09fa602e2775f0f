import * as accessPatterns from '../db/access-patterns.ts';
import { keys } from '../db/keys.ts';
import { writeIfFirst } from '../db/write.ts';
import { ApiError } from '../errors.ts';
import type { ServerItem } from '../db/items.ts';
import { toInstanceView, panelClientFor } from '../instances/index.ts';
import { recordSystemActivity } from '../audit/index.ts';
import { logger, errorFields } from '../observability/logger.ts';
import { putMetric } from '../observability/metrics.ts';
import { getBudget } from '../budgets/index.ts';
import { getSettings } from '../settings/index.ts';
import { currentTime } from '../clock.ts';
import { withServerLease } from './lease.ts';
import { queueRepair } from './pending.ts';
import { profileSnapshot, recordSuspension, type SuspendReason } from './records.ts';

/**
 * Suspension (the `suspended` server status): an account whose balance is at or below zero, or whose
 * monthly budget is reached with the `suspend` action, has its active servers suspended on the
 * panel; they stop accruing. When neither holds any more (a top-up, a grant, a raised cap, a new
 * month), they are unsuspended. The panel is asked first and the record follows, so a panel that
 * fails leaves the record as it was. Suspending and unsuspending are system work under the
 * server's lease: they go before customers' operations (lease.ts), and one that still does not
 * complete is queued for the pending-repair pass (pending.ts), retried within minutes until the
 * panel confirms.
 */
export type { SuspendReason } from './records.ts';

export interface ReconcileResult {
  suspended: number;
  unsuspended: number;
  errors: number;
  /** The balance's grace in force (its start), when the balance is at or below zero and a grace runs or ran. */
  graceStartedAt?: string;
}

interface SuspensionState {
  reason: SuspendReason | null;
  /** At or below zero, the grace still running: nothing is suspended for the balance, and nothing unsuspended either. */
  inGrace: boolean;
  graceStartedAt?: string;
}

/**
 * What the account's balance and budget call for at `now`. At or below zero that is `balance`,
 * unless the operator's grace (setting `suspensionGraceMinutes`) still runs: it starts the first
 * time servers are found running at or below zero (`running`), recorded on the profile once
 * (conditional, so concurrent passes agree on one start), and a credit that lifts the balance above
 * zero ends it (the ledger removes the mark, shared/ledger). Servers already stopped start no grace.
 */
async function suspensionState(accountId: string, now: number, running: boolean): Promise<SuspensionState> {
  const snap = await profileSnapshot(accountId);
  if (snap.balanceCents <= 0) {
    const { suspensionGraceMinutes } = await getSettings();
    if (suspensionGraceMinutes === 0) return { reason: 'balance', inGrace: false };
    const started = snap.graceStartedAt ?? (running ? await startGrace(accountId, now) : undefined);
    if (!started) return { reason: 'balance', inGrace: false };
    if (now >= Date.parse(started) + suspensionGraceMinutes * 60_000) return { reason: 'balance', inGrace: false, graceStartedAt: started };
    const budget = await getBudget(accountId, now);
    return { reason: budget.capReached && budget.action === 'suspend' ? 'budget' : null, inGrace: true, graceStartedAt: started };
  }
  const budget = await getBudget(accountId);
  return { reason: budget.capReached && budget.action === 'suspend' ? 'budget' : null, inGrace: false };
}

/** Records the grace's start, once: a concurrent pass that recorded it first wins, and its start is used. */
async function startGrace(accountId: string, now: number): Promise<string | undefined> {
  const at = new Date(now).toISOString();
  const won = await writeIfFirst({
    Update: {
      Key: keys.account(accountId),
      UpdateExpression: 'SET graceStartedAt = :at',
      // Only while the balance is still at or below zero: a top-up in between ends the episode.
      ConditionExpression: 'attribute_exists(PK) AND attribute_not_exists(graceStartedAt) AND balanceCents <= :zero',
      ExpressionAttributeValues: { ':at': at, ':zero': 0 },
    },
  });
  if (won) {
    logger.info('suspension grace started', { accountId, graceStartedAt: at });
    return at;
  }
  const profile = await accessPatterns.accountById(accountId);
  return Number(profile?.balanceCents ?? 0) <= 0 ? profile?.graceStartedAt : undefined;
}

/** What the balance and budget call for (an operator's unsuspension: it starts no grace). */
export async function desiredSuspension(accountId: string, now = currentTime()): Promise<SuspendReason | null> {
  return (await suspensionState(accountId, now, false)).reason;
}

/**
 * Brings every server of the account to the state its balance and budget call for at `now` (the
 * billing pass's time; else the clock): suspends, or unsuspends once the balance is above zero.
 */
export async function reconcileAccount(accountId: string, servers?: ServerItem[], now: number = currentTime()): Promise<ReconcileResult> {
  const result: ReconcileResult = { suspended: 0, unsuspended: 0, errors: 0 };
  const all = servers ?? (await accessPatterns.allServersOfAccount(accountId));
  const state = await suspensionState(
    accountId,
    now,
    all.some((s) => s.status === 'active'),
  );
  const reason = state.reason;
  if (state.graceStartedAt) result.graceStartedAt = state.graceStartedAt;
  for (const item of all) {
    const status = item.status;
    try {
      if (reason && status === 'active') {
        if (await setSuspended(item, reason)) result.suspended++;
      } else if (!reason && !state.inGrace && status === 'suspended' && item.suspendedReason !== 'admin') {
        // An operator's suspension is not the balance's to lift (suspendByAdmin below).
        await setActive(item);
        result.unsuspended++;
      }
    } catch (err) {
      result.errors++;
      logger.warn('suspension: panel or record failed; queued for the repair pass', {
        accountId,
        serverId: item.serverId,
        ...errorFields(err),
      });
      await queueRepair(item, 'suspension', err);
    }
  }
  return result;
}

async function clientFor(item: ServerItem) {
  const instance = await accessPatterns.instanceById(item.instanceId);
  if (!instance) throw new Error(`Instance ${item.instanceId} of server ${item.serverId} is gone`);
  return panelClientFor(toInstanceView(instance));
}

/** Under the server's lease, from the record as it is then: a deletion or resize in between wins. */
async function underLease(
  read: ServerItem,
  operation: 'suspend' | 'unsuspend',
  from: ServerItem['status'],
  fn: (item: ServerItem) => Promise<void>,
) {
  await withServerLease(read.serverId, operation, async () => {
    const item = await accessPatterns.serverOfAccount(read.accountId, read.serverId);
    if (item?.status === from) await fn(item);
  });
}

/**
 * `Suspensions` or `Unsuspensions` (CloudWatch EMF, shared/observability/metrics.ts), one line per
 * server the panel and the record both changed; Reason is the suspension's (`balance`, `budget`,
 * `admin`). A reason that changes while the server stays suspended (`setReason`) is neither: the
 * panel did not change. A metric never fails the suspension. Each call site names its metric
 * literally: the alarm test finds an alarmed metric's emitter by `putMetric('<Name>'`.
 */
function countSuspension(emit: () => void): void {
  try {
    emit();
  } catch (err) {
    logger.warn('suspension metric not written', errorFields(err));
  }
}

/** True when this call suspended it (a concurrent pass that did it first leaves false). */
async function setSuspended(read: ServerItem, reason: SuspendReason): Promise<boolean> {
  let done = false;
  await underLease(read, 'suspend', 'active', async (item) => {
    await (await clientFor(item)).suspendServer(item.panelServerId);
    if (await recordSuspension(item, { status: 'suspended', reason })) {
      done = true;
      countSuspension(() => putMetric('Suspensions', 1, { Reason: reason }));
      await suspendedActivity(item, reason);
    }
  });
  return done;
}

async function suspendedActivity(item: ServerItem, reason: SuspendReason): Promise<void> {
  await recordSystemActivity({
    accountId: item.accountId,
    actor: 'billing',
    action: 'servers.suspend',
    target: `server:${item.serverId}`,
    details: { reason },
  });
  logger.info('server suspended', { accountId: item.accountId, serverId: item.serverId, reason });
}

async function setActive(read: ServerItem): Promise<void> {
  await underLease(read, 'unsuspend', 'suspended', async (item) => {
    if (item.suspendedReason === 'admin') return; // an operator suspended it meanwhile
    await (await clientFor(item)).unsuspendServer(item.panelServerId);
    if (await recordSuspension(item, { status: 'active' })) {
      // A record from before reasons were kept was suspended for its balance (desiredSuspension).
      countSuspension(() => putMetric('Unsuspensions', 1, { Reason: item.suspendedReason ?? 'balance' }));
      await unsuspendedActivity(item);
    }
  });
}

async function unsuspendedActivity(item: ServerItem): Promise<void> {
  await recordSystemActivity({
    accountId: item.accountId,
    actor: 'billing',
    action: 'servers.unsuspend',
    target: `server:${item.serverId}`,
  });
  logger.info('server unsuspended', { accountId: item.accountId, serverId: item.serverId });
}

/**
 * After credit arrives (a top-up, an admin grant, a raised budget): unsuspend what may run again,
 * now. A panel that says no is left to the pending-repair pass, which retries until it confirms.
 */
export async function unsuspendAfterCredit(accountId: string, cause: string): Promise<void> {
  await reconcileAccount(accountId).catch((err) =>
    logger.warn('unsuspend after credit failed; the billing pass retries', { accountId, cause, ...errorFields(err) }),
  );
}

// ---- an operator's suspension ---------------------------------------------------------------------

const changedMeanwhile = () =>
  new ApiError('conflict', 'The server changed meanwhile (a deletion or another suspension); read it and try again');

/**
 * POST /v1/admin/servers/:id/suspend: the reason `admin`, which neither a top-up nor a grant nor a
 * new month lifts (reconcileAccount skips it); only unsuspendByAdmin does. An active server is
 * suspended on the panel, then the record follows; a server the billing already suspended is
 * suspended on the panel already, so only its reason changes. Under the server's lease. A panel
 * that fails is the caller's error (nothing changed): an operator is there to retry.
 */
export async function suspendByAdmin(read: ServerItem): Promise<void> {
  if (read.status === 'deleted') throw new ApiError('conflict', 'The server is deleted');
  await withServerLease(read.serverId, 'suspend', async () => {
    const item = await accessPatterns.serverOfAccount(read.accountId, read.serverId);
    if (!item || item.status === 'deleted') throw new ApiError('conflict', 'The server is deleted');
    if (item.status === 'active') {
      await (await clientFor(item)).suspendServer(item.panelServerId);
      if (!(await recordSuspension(item, { status: 'suspended', reason: 'admin' }))) throw changedMeanwhile();
      countSuspension(() => putMetric('Suspensions', 1, { Reason: 'admin' }));
    } else if (item.suspendedReason !== 'admin') {
      if (!(await setReason(item, 'admin'))) throw changedMeanwhile();
    }
  });
}

/**
 * POST /v1/admin/servers/:id/unsuspend: ends an operator's suspension. If the balance or budget
 * still calls for one, the server stays suspended with that reason (the next top-up lifts it);
 * otherwise the panel unsuspends it and the record follows. A server suspended by the billing
 * alone is 409 `conflict`: a grant or a raised budget lifts that. An active server: nothing to do.
 */
export async function unsuspendByAdmin(read: ServerItem): Promise<void> {
  if (read.status === 'deleted') throw new ApiError('conflict', 'The server is deleted');
  if (read.status === 'suspended' && read.suspendedReason !== 'admin') {
    throw new ApiError(
      'conflict',
      `The server is suspended for its account's ${read.suspendedReason ?? 'balance'}, not by an operator; a grant or a raised budget lifts that`,
    );
  }
  await withServerLease(read.serverId, 'unsuspend', async () => {
    const item = await accessPatterns.serverOfAccount(read.accountId, read.serverId);
    if (!item || item.status === 'deleted') throw new ApiError('conflict', 'The server is deleted');
    if (item.status !== 'suspended' || item.suspendedReason !== 'admin') return;
    const billing = await desiredSuspension(item.accountId);
    if (billing) {
      if (!(await setReason(item, billing))) throw changedMeanwhile();
      return;
    }
    await (await clientFor(item)).unsuspendServer(item.panelServerId);
    // The route's audit entry records who lifted it.
    if (!(await recordSuspension(item, { status: 'active' }))) throw changedMeanwhile();
    countSuspension(() => putMetric('Unsuspensions', 1, { Reason: 'admin' }));
  });
}

/** A suspended server's reason changes (the panel has it suspended either way): false when it is not as read. */
function setReason(item: ServerItem, reason: SuspendReason): Promise<boolean> {
  return writeIfFirst({
    Update: {
      Key: keys.server(item.accountId, item.serverId),
      UpdateExpression: 'SET suspendedReason = :reason, updatedAt = :now',
      ConditionExpression: `#status = :suspended AND ${item.suspendedReason ? 'suspendedReason = :was' : 'attribute_not_exists(suspendedReason)'}`,
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':reason': reason,
        ':now': new Date().toISOString(),
        ':suspended': 'suspended',
        ...(item.suspendedReason ? { ':was': item.suspendedReason } : {}),
      },
    },
  });
}
