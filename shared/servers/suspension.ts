import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '../db/client.ts';
import { keys } from '../db/keys.ts';
import { accessPatterns, type Item } from '../db/access-patterns.ts';
import { toInstanceView, panelClientFor } from '../instances/index.ts';
import { recordSystemActivity } from '../audit/index.ts';
import { logger, errorFields } from '../observability/logger.ts';
import { getBudget } from '../budgets/index.ts';
import { profileSnapshot, toServerView } from './index.ts';

/**
 * Suspension (spec: the `suspended` state): an account whose balance is at or below zero, or whose
 * monthly budget is reached with the `suspend` action, has its active servers suspended on the
 * panel; they stop accruing. When neither holds any more (a top-up, a grant, a raised cap, a new
 * month), they are unsuspended. The panel is asked first and the record follows, so a panel that
 * fails leaves the record as it was and the next billing pass (or credit) tries again — retried
 * until the panel confirms.
 */
export type SuspendReason = 'balance' | 'budget';

export interface ReconcileResult {
  suspended: number;
  unsuspended: number;
  errors: number;
}

export async function desiredSuspension(accountId: string): Promise<SuspendReason | null> {
  const snap = await profileSnapshot(accountId);
  if (snap.balanceCents <= 0) return 'balance';
  const budget = await getBudget(accountId);
  if (budget.capReached && budget.action === 'suspend') return 'budget';
  return null;
}

/** Brings every server of the account to the state its balance and budget call for. */
export async function reconcileAccount(accountId: string, servers?: Item[]): Promise<ReconcileResult> {
  const result: ReconcileResult = { suspended: 0, unsuspended: 0, errors: 0 };
  const reason = await desiredSuspension(accountId);
  const all = servers ?? (await accessPatterns.allServersOfAccount(accountId));
  for (const item of all) {
    const status = item.status as string;
    try {
      if (reason && status === 'active') {
        await setSuspended(item, reason);
        result.suspended++;
      } else if (!reason && status === 'suspended') {
        await setActive(item);
        result.unsuspended++;
      }
    } catch (err) {
      result.errors++;
      logger.warn('suspension: panel or record failed; the next pass retries', { accountId, serverId: item.serverId, ...errorFields(err) });
    }
  }
  return result;
}

async function clientFor(item: Item) {
  const instance = await accessPatterns.instanceById(item.instanceId as string);
  if (!instance) throw new Error(`Instance ${item.instanceId} of server ${item.serverId} is gone`);
  return panelClientFor(toInstanceView(instance));
}

async function setSuspended(item: Item, reason: SuspendReason): Promise<void> {
  const accountId = item.accountId as string;
  const server = toServerView(item);
  await (await clientFor(item)).suspendServer(Number(item.panelServerId));
  const now = new Date().toISOString();
  await moveStatus(accountId, item, 'suspended', -server.priceCentsPerHour, now, {
    set: 'suspendedAt = :now, suspendedReason = :reason',
    values: { ':reason': reason },
  });
  await recordSystemActivity(accountId, 'billing', 'servers.suspend', `server:${server.id}`, { reason });
  logger.info('server suspended', { accountId, serverId: server.id, reason });
}

async function setActive(item: Item): Promise<void> {
  const accountId = item.accountId as string;
  const server = toServerView(item);
  await (await clientFor(item)).unsuspendServer(Number(item.panelServerId));
  const now = new Date().toISOString();
  await moveStatus(accountId, item, 'active', server.priceCentsPerHour, now, { remove: 'suspendedAt, suspendedReason' });
  await recordSystemActivity(accountId, 'billing', 'servers.unsuspend', `server:${server.id}`);
  logger.info('server unsuspended', { accountId, serverId: server.id });
}

/** Status change plus the account's burn rate, in one transaction under a condition on both. */
async function moveStatus(
  accountId: string,
  item: Item,
  to: 'active' | 'suspended',
  burnDelta: number,
  now: string,
  extra: { set?: string; remove?: string; values?: Record<string, unknown> },
): Promise<void> {
  const from = item.status as string;
  for (let attempt = 0; attempt < 8; attempt++) {
    const snap = await profileSnapshot(accountId);
    try {
      await db().send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: tableName(),
                Key: keys.server(accountId, item.serverId as string),
                UpdateExpression: `SET #status = :to, updatedAt = :now, history = list_append(history, :h)${extra.set ? `, ${extra.set}` : ''}${extra.remove ? ` REMOVE ${extra.remove}` : ''}`,
                ConditionExpression: '#status = :from',
                ExpressionAttributeNames: { '#status': 'status' },
                ExpressionAttributeValues: {
                  ':to': to,
                  ':from': from,
                  ':now': now,
                  ':h': [{ at: now, status: to, priceCentsPerHour: Number(item.priceCentsPerHour) }],
                  ...extra.values,
                },
              },
            },
            {
              Update: {
                TableName: tableName(),
                Key: keys.account(accountId),
                UpdateExpression: 'SET burnCentsPerHour = :after',
                ConditionExpression: snap.hasBurn ? 'burnCentsPerHour = :read' : 'attribute_not_exists(burnCentsPerHour)',
                ExpressionAttributeValues: {
                  ':after': snap.burnCentsPerHour + burnDelta,
                  ...(snap.hasBurn ? { ':read': snap.burnCentsPerHour } : {}),
                },
              },
            },
          ],
        }),
      );
      return;
    } catch (err) {
      if ((err as Error).name !== 'TransactionCanceledException') throw err;
      const reasons = (err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? [];
      if (reasons[0]?.Code === 'ConditionalCheckFailed') return; // someone else moved it (or deleted it) first
    }
  }
  throw new Error('Could not record the status change: the account kept changing');
}
