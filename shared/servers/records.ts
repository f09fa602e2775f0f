import { accessPatterns } from '../db/access-patterns.ts';
import type { ServerItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { type ConditionFailedError, isConditionFailed, type NamedWrite, retrying, transact } from '../db/write.ts';
import { ApiError, notFound } from '../errors.ts';
import type { Resources } from '../pricing/index.ts';
import type { HistoryEvent } from '../pricing/hours.ts';
import { hoursLeftInMonth } from '../budgets/index.ts';
import { monthOf } from '../pricing/hours.ts';
import { insufficientCredit, limitExceeded, requiredBalance } from './limits.ts';

/**
 * The one home of every stored change of a server: created, resized, suspended, unsuspended,
 * deleted. Each is one transaction that moves the server record together with the account's
 * `serverCount` and `burnCentsPerHour` (and the instance's `serverCount`), under a condition on
 * the values read, so two concurrent changes can never both spend one runway or count one server
 * twice. When the account moved in between, the change reads it again and retries
 * (shared/db/write.ts `retrying`); when the server itself moved, the caller is told.
 */
export interface ProfileSnapshot {
  balanceCents: number;
  serverCount: number;
  burnCentsPerHour: number;
  hasBurn: boolean;
  budgetCapCents: number | null;
}

export async function profileSnapshot(accountId: string): Promise<ProfileSnapshot> {
  const profile = await accessPatterns.accountById(accountId);
  if (!profile) throw notFound('Account');
  return {
    balanceCents: Number(profile.balanceCents ?? 0),
    serverCount: Number(profile.serverCount ?? 0),
    burnCentsPerHour: Number(profile.burnCentsPerHour ?? 0),
    hasBurn: profile.burnCentsPerHour !== undefined,
    budgetCapCents: profile.budgetCapCents ?? null,
  };
}

/** The condition that the profile's burn rate is still what was read (plus any extra clauses). */
function burnUnchanged(snap: ProfileSnapshot, extra: string[] = []) {
  return {
    ConditionExpression: [snap.hasBurn ? 'burnCentsPerHour = :burnRead' : 'attribute_not_exists(burnCentsPerHour)', ...extra].join(' AND '),
    values: snap.hasBurn ? { ':burnRead': snap.burnCentsPerHour } : {},
  };
}

/** The condition that the monthly budget is still the one read (a cap set meanwhile makes the change read again). */
function capUnchanged(snap: ProfileSnapshot) {
  return snap.budgetCapCents === null
    ? { clause: '(attribute_not_exists(budgetCapCents) OR attribute_type(budgetCapCents, :nullType))', values: { ':nullType': 'NULL' } }
    : { clause: 'budgetCapCents = :capRead', values: { ':capRead': snap.budgetCapCents } };
}

/**
 * A monthly budget holds under concurrency: the change commits only while the month's spend
 * still leaves room for the burn it leads to until the month ends (a condition on the spend
 * item, in the same transaction as the burn it pins), so no number of concurrent deploys or
 * upsizes takes the projected month past the cap.
 */
function budgetGuard(accountId: string, snap: ProfileSnapshot, burnAfter: number, now = Date.now()): NamedWrite[] {
  if (snap.budgetCapCents === null) return [];
  const maxSpent = snap.budgetCapCents - burnAfter * hoursLeftInMonth(now);
  if (maxSpent < 0) throw overBudget(snap.budgetCapCents, burnAfter * hoursLeftInMonth(now));
  return [
    {
      name: 'budget',
      ConditionCheck: {
        Key: keys.monthSpend(accountId, monthOf(now)),
        ConditionExpression: 'attribute_not_exists(cents) OR (cents <= :maxSpent AND cents < :cap)',
        ExpressionAttributeValues: { ':maxSpent': maxSpent, ':cap': snap.budgetCapCents },
      },
    },
  ];
}

const overBudget = (capCents: number, projectedCents?: number): ApiError =>
  new ApiError(
    'limit_exceeded',
    projectedCents === undefined
      ? `This change would take the month above the budget of ${capCents} cents`
      : `This change would take the month to at least ${projectedCents} cents, above the budget of ${capCents}`,
    { monthlyCapCents: capCents },
  );

const historyEntry = (at: string, status: HistoryEvent['status'], priceCentsPerHour: number): HistoryEvent[] => [
  { at, status, priceCentsPerHour },
];

/** Another change to the profile (a charge, a deploy) between our read and our write: read again. */
const profileMoved = { retryIf: (err: ConditionFailedError) => err.has('profile') };

// ---- created --------------------------------------------------------------------------------------

export interface CreatedChange {
  accountId: string;
  /** The full server record to store. */
  item: ServerItem & Record<string, unknown>;
  priceCents: number;
  maxServers: number;
  minimumBalanceCents: number;
  /** The profile as read before the panel call; the first attempt reuses it. */
  snapshot: ProfileSnapshot;
}

export async function recordCreated(change: CreatedChange): Promise<void> {
  const { accountId, item, priceCents } = change;
  await retrying(
    async (attempt) => {
      // The first try reuses the snapshot read before the panel call: the conditions below catch
      // any change since, and only then is the profile read again.
      const snap = attempt === 0 ? change.snapshot : await profileSnapshot(accountId);
      const burnAfter = snap.burnCentsPerHour + priceCents;
      const required = requiredBalance(burnAfter, change.minimumBalanceCents);
      if (snap.serverCount >= change.maxServers) throw limitExceeded(snap.serverCount, change.maxServers);
      if (snap.balanceCents < required) throw insufficientCredit(snap.balanceCents, required, burnAfter);
      const cap = capUnchanged(snap);
      const cond = burnUnchanged(snap, ['balanceCents >= :required', 'serverCount = :countRead', cap.clause]);
      try {
        await transact([
          { name: 'server', Put: { Item: item, ConditionExpression: 'attribute_not_exists(PK)' } },
          {
            name: 'profile',
            Update: {
              Key: keys.account(accountId),
              UpdateExpression: 'SET serverCount = :countRead + :one, burnCentsPerHour = :burnAfter',
              ConditionExpression: cond.ConditionExpression,
              ExpressionAttributeValues: {
                ...cond.values,
                ...cap.values,
                ':required': required,
                ':countRead': snap.serverCount,
                ':one': 1,
                ':burnAfter': burnAfter,
              },
            },
          },
          ...budgetGuard(accountId, snap, burnAfter),
          {
            name: 'instance',
            Update: {
              Key: keys.instance(item.instanceId),
              UpdateExpression: 'ADD serverCount :one',
              ConditionExpression: 'attribute_exists(PK)',
              ExpressionAttributeValues: { ':one': 1 },
            },
          },
          { name: 'pointer', Put: { Item: { ...keys.serverPointer(item.serverId), kind: 'server-pointer', accountId } } },
        ]);
      } catch (err) {
        if (isConditionFailed(err, 'instance')) {
          throw new ApiError('conflict', 'The instance was removed while the server was being deployed');
        }
        if (isConditionFailed(err, 'budget') && !err.has('profile')) throw overBudget(snap.budgetCapCents!);
        throw err;
      }
    },
    { attempts: 5, ...profileMoved, exhausted: () => new ApiError('conflict', 'The account changed too often while deploying; try again') },
  );
}

// ---- resized --------------------------------------------------------------------------------------

export interface ResizedChange {
  accountId: string;
  serverId: string;
  /** The price on record before the resize: the server's condition. */
  previousPriceCents: number;
  resources: Resources;
  priceCents: number;
  at: string;
  minimumBalanceCents: number;
  snapshot: ProfileSnapshot;
}

export async function recordResized(change: ResizedChange): Promise<void> {
  const { accountId, serverId, priceCents, previousPriceCents, at } = change;
  await retrying(
    async (attempt) => {
      const snap = attempt === 0 ? change.snapshot : await profileSnapshot(accountId);
      const burnAfter = snap.burnCentsPerHour - previousPriceCents + priceCents;
      // Downsizing is always allowed; anything that raises the price needs the runway.
      const required = priceCents > previousPriceCents ? requiredBalance(burnAfter, change.minimumBalanceCents) : Number.MIN_SAFE_INTEGER;
      if (snap.balanceCents < required) throw insufficientCredit(snap.balanceCents, required, burnAfter);
      const cap = capUnchanged(snap);
      const cond = burnUnchanged(snap, ['balanceCents >= :required', cap.clause]);
      try {
        await transact([
          {
            name: 'server',
            Update: {
              Key: keys.server(accountId, serverId),
              UpdateExpression: 'SET resources = :r, priceCentsPerHour = :p, updatedAt = :now, history = list_append(history, :h)',
              ConditionExpression: '#status = :active AND priceCentsPerHour = :oldPrice',
              ExpressionAttributeNames: { '#status': 'status' },
              ExpressionAttributeValues: {
                ':r': change.resources,
                ':p': priceCents,
                ':now': at,
                ':h': historyEntry(at, 'active', priceCents),
                ':active': 'active',
                ':oldPrice': previousPriceCents,
              },
            },
          },
          {
            name: 'profile',
            Update: {
              Key: keys.account(accountId),
              UpdateExpression: 'SET burnCentsPerHour = :burnAfter',
              ConditionExpression: cond.ConditionExpression,
              ExpressionAttributeValues: { ...cond.values, ...cap.values, ':required': required, ':burnAfter': burnAfter },
            },
          },
          // Downsizing is always allowed; an upsize must fit the budget too.
          ...(priceCents > previousPriceCents ? budgetGuard(accountId, snap, burnAfter) : []),
        ]);
      } catch (err) {
        if (isConditionFailed(err, 'server')) {
          throw new ApiError(
            'conflict',
            'The server changed while resizing (another resize, a suspension or a deletion); read it and try again',
          );
        }
        if (isConditionFailed(err, 'budget') && !err.has('profile')) throw overBudget(snap.budgetCapCents!);
        throw err;
      }
    },
    { attempts: 5, ...profileMoved, exhausted: () => new ApiError('conflict', 'The account changed too often while resizing; try again') },
  );
}

// ---- suspended, unsuspended ---------------------------------------------------------------------

export type SuspendReason = 'balance' | 'budget';

/**
 * Active → suspended (with the reason) or suspended → active, with the account's burn rate.
 * Returns false when the server was no longer in the state read (someone else moved or deleted it).
 */
export async function recordSuspension(
  server: Pick<ServerItem, 'accountId' | 'serverId' | 'status' | 'priceCentsPerHour'>,
  to: { status: 'suspended'; reason: SuspendReason } | { status: 'active' },
  at = new Date().toISOString(),
): Promise<boolean> {
  const price = Number(server.priceCentsPerHour);
  const burnDelta = to.status === 'active' ? price : -price;
  const changes =
    to.status === 'suspended'
      ? { set: ', suspendedAt = :now, suspendedReason = :reason', remove: '', values: { ':reason': to.reason } }
      : { set: '', remove: ' REMOVE suspendedAt, suspendedReason', values: {} };
  return retrying(
    async () => {
      const snap = await profileSnapshot(server.accountId);
      const cond = burnUnchanged(snap);
      try {
        await transact([
          {
            name: 'server',
            Update: {
              Key: keys.server(server.accountId, server.serverId),
              UpdateExpression: `SET #status = :to, updatedAt = :now, history = list_append(history, :h)${changes.set}${changes.remove}`,
              ConditionExpression: '#status = :from',
              ExpressionAttributeNames: { '#status': 'status' },
              ExpressionAttributeValues: {
                ':to': to.status,
                ':from': server.status,
                ':now': at,
                ':h': historyEntry(at, to.status, price),
                ...changes.values,
              },
            },
          },
          {
            name: 'profile',
            Update: {
              Key: keys.account(server.accountId),
              UpdateExpression: 'SET burnCentsPerHour = :after',
              ConditionExpression: cond.ConditionExpression,
              ExpressionAttributeValues: { ...cond.values, ':after': snap.burnCentsPerHour + burnDelta },
            },
          },
        ]);
        return true;
      } catch (err) {
        if (isConditionFailed(err, 'server')) return false;
        throw err;
      }
    },
    { ...profileMoved, exhausted: () => new Error('Could not record the status change: the account kept changing') },
  );
}

// ---- deleted --------------------------------------------------------------------------------------

/**
 * Records a server as deleted — status, time, history — and moves the account's server count and
 * burn rate and the instance's server count. The server stays in the billable index: the next
 * pass charges the hour of deletion, then drops it. Returns the deletion time (an earlier one if
 * someone else recorded it first).
 */
export async function recordDeleted(change: {
  accountId: string;
  serverId: string;
  instanceId?: string | undefined;
  reason?: string;
}): Promise<string> {
  const { accountId, serverId, instanceId, reason } = change;
  const now = new Date().toISOString();
  return retrying(
    async () => {
      const current = await accessPatterns.serverOfAccount(accountId, serverId);
      if (!current) throw notFound('Server');
      if (current.status === 'deleted') return current.deletedAt ?? current.updatedAt;
      const snap = await profileSnapshot(accountId);
      const price = Number(current.priceCentsPerHour);
      const burnAfter = current.status === 'active' ? snap.burnCentsPerHour - price : snap.burnCentsPerHour;
      const cond = burnUnchanged(snap, ['serverCount = :countRead']);
      const writes: NamedWrite[] = [
        {
          name: 'server',
          Update: {
            Key: keys.server(accountId, serverId),
            UpdateExpression: `SET #status = :deleted, deletedAt = :now, updatedAt = :now, history = list_append(history, :h)${reason ? ', deletedReason = :reason' : ''}`,
            ConditionExpression: '#status = :was',
            ExpressionAttributeNames: { '#status': 'status' },
            ExpressionAttributeValues: {
              ':deleted': 'deleted',
              ':now': now,
              ':was': current.status,
              ':h': historyEntry(now, 'deleted', price),
              ...(reason ? { ':reason': reason } : {}),
            },
          },
        },
        {
          name: 'profile',
          Update: {
            Key: keys.account(accountId),
            UpdateExpression: 'SET serverCount = :countAfter, burnCentsPerHour = :burnAfter',
            ConditionExpression: cond.ConditionExpression,
            ExpressionAttributeValues: {
              ...cond.values,
              ':countAfter': snap.serverCount - 1,
              ':countRead': snap.serverCount,
              ':burnAfter': burnAfter,
            },
          },
        },
      ];
      if (instanceId) {
        writes.push({
          name: 'instance',
          Update: {
            Key: keys.instance(instanceId),
            UpdateExpression: 'ADD serverCount :minus',
            ExpressionAttributeValues: { ':minus': -1 },
          },
        });
      }
      await transact(writes);
      return now;
    },
    {
      attempts: 5,
      // The server or the account moved (a suspension, a charge, a concurrent delete): read both again.
      retryIf: (err) => err.has('server') || err.has('profile'),
      exhausted: () => new ApiError('conflict', 'The account changed too often while deleting; try again'),
    },
  );
}
