import * as accessPatterns from '../db/access-patterns.ts';
import type { InstallKind, InstallWatchItem, ServerAddress, ServerAllocation, ServerItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { type ConditionFailedError, isConditionFailed, type NamedWrite, retrying, transact, writeIfFirst } from '../db/write.ts';
import { ApiError, notFound } from '../errors.ts';
import { centsUp, exactPriceOf, type Resources } from '../pricing/index.ts';
import type { HistoryEvent } from '../pricing/hours.ts';
import { exactBurnOf, restOfMonthCents } from '../budgets/index.ts';
import { monthOf } from '../pricing/hours.ts';
import { insufficientCredit, limitExceeded, requiredBalance } from './limits.ts';
import { eventWrite } from '../webhooks/events.ts';
import { toServerView } from './views.ts';

/**
 * The one home of every stored change of a server: created, resized, suspended, unsuspended,
 * deleted. Each is one transaction that moves the server record together with the account's
 * `serverCount` and `burnMillicentsPerHour` (and the instance's `serverCount`), under a condition on
 * the values read, so two concurrent changes can never both spend one runway or count one server
 * twice. When the account moved in between, the change reads it again and retries
 * (shared/db/write.ts `retrying`); when the server itself moved, the caller is told. Each records
 * its event (`server.created`, …, with the server's view as the data) in the same transaction, so
 * an event exists exactly when its change does (shared/webhooks/events.ts).
 */
/**
 * A deploy or resize records after its panel call has already succeeded, and a record that gives up
 * undoes that call: it persists as long as the ledger does (12 attempts with jittered backoff), so
 * 20 concurrent deploys of one account all record instead of the last few giving up.
 */
const RECORD_ATTEMPTS = 12;

export interface ProfileSnapshot {
  balanceCents: number;
  /** The balance's suspension grace, since when (shared/servers/suspension.ts). */
  graceStartedAt: string | undefined;
  serverCount: number;
  /** Sum of the active servers' exact prices. */
  burnMillicentsPerHour: number;
  hasBurn: boolean;
  budgetCapCents: number | null;
  /** The account's SFTP panel user by instance (shared/servers/sftp.ts): a deploy there queues its subuser grant. */
  sftpUsers: Record<string, number>;
  /** An admin's override of maxServersPerAccount for this account (shared/settings/limits.ts). */
  maxServers: number | undefined;
}

export async function profileSnapshot(accountId: string): Promise<ProfileSnapshot> {
  const profile = await accessPatterns.accountById(accountId);
  if (!profile) throw notFound('Account');
  return {
    balanceCents: Number(profile.balanceCents ?? 0),
    graceStartedAt: profile.graceStartedAt,
    serverCount: Number(profile.serverCount ?? 0),
    // Accounts from before exact prices have only the rounded burn: taken as exact once, then kept exact.
    burnMillicentsPerHour: exactBurnOf(profile),
    hasBurn: profile.burnMillicentsPerHour !== undefined,
    budgetCapCents: profile.budgetCapCents ?? null,
    sftpUsers: profile.sftpUsers ?? {},
    maxServers: profile.limits?.maxServers,
  };
}

/** The condition that the profile's burn rate is still what was read (plus any extra clauses). */
function burnUnchanged(snap: ProfileSnapshot, extra: string[] = []) {
  return {
    ConditionExpression: [
      snap.hasBurn ? 'burnMillicentsPerHour = :burnRead' : 'attribute_not_exists(burnMillicentsPerHour)',
      ...extra,
    ].join(' AND '),
    values: snap.hasBurn ? { ':burnRead': snap.burnMillicentsPerHour } : {},
  };
}

/** The condition that the monthly budget is still the one read (a cap set meanwhile makes the change read again). */
function capUnchanged(snap: ProfileSnapshot) {
  return snap.budgetCapCents === null
    ? { clause: '(attribute_not_exists(budgetCapCents) OR attribute_type(budgetCapCents, :nullType))', values: { ':nullType': 'NULL' } }
    : { clause: 'budgetCapCents = :capRead', values: { ':capRead': snap.budgetCapCents } };
}

/**
 * The account's SFTP panel user became a subuser of the server (shared/servers/sftp.ts). Not a change
 * of state, count or price, so no transaction and no event; a server deleted meanwhile stays as it is.
 */
export async function recordSftpGranted(accountId: string, serverId: string, at: string): Promise<void> {
  await writeIfFirst({
    Update: {
      Key: keys.server(accountId, serverId),
      UpdateExpression: 'SET sftpGrantedAt = :at',
      ConditionExpression: 'attribute_exists(PK) AND #status <> :deleted',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':at': at, ':deleted': 'deleted' },
    },
  });
}

/**
 * A monthly budget holds under concurrency: the change commits only while the month's spend
 * still leaves room for the burn it leads to until the month ends (a condition on the spend
 * item, in the same transaction as the burn it pins), so no number of concurrent deploys or
 * upsizes takes the projected month past the cap.
 */
function budgetGuard(accountId: string, snap: ProfileSnapshot, burnAfter: number, now = Date.now()): NamedWrite[] {
  if (snap.budgetCapCents === null) return [];
  const rest = restOfMonthCents(burnAfter, now);
  const maxSpent = snap.budgetCapCents - rest;
  if (maxSpent < 0) throw overBudget(snap.budgetCapCents, rest);
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

/** The burn written with every change: exact, and rounded up to cents for display. */
const SET_BURN = 'burnMillicentsPerHour = :burnAfter, burnCentsPerHour = :burnShown';
const burnValues = (burnAfter: number) => ({ ':burnAfter': burnAfter, ':burnShown': centsUp(burnAfter) });

const historyEntry = (at: string, status: HistoryEvent['status'], priceMillicentsPerHour: number): HistoryEvent[] => [
  { at, status, priceCentsPerHour: centsUp(priceMillicentsPerHour), priceMillicentsPerHour },
];

/** Another change to the profile (a charge, a deploy) between our read and our write: read again. */
const profileMoved = { retryIf: (err: ConditionFailedError) => err.has('profile') };

// ---- created --------------------------------------------------------------------------------------

export interface CreatedChange {
  accountId: string;
  /** The full server record to store. */
  item: ServerItem & Record<string, unknown>;
  /** The server's exact hourly price. */
  priceMillicents: number;
  maxServers: number;
  minimumBalanceCents: number;
  /** The profile as read before the panel call; the first attempt reuses it. */
  snapshot: ProfileSnapshot;
  /** Written in the same transaction (the subdomain's claim, shared/servers/subdomain.ts). */
  extraWrites?: NamedWrite[];
}

export async function recordCreated(change: CreatedChange): Promise<void> {
  const { accountId, item, priceMillicents } = change;
  await retrying(
    async (attempt) => {
      // The first try reuses the snapshot read before the panel call: the conditions below catch
      // any change since, and only then is the profile read again.
      const snap = attempt === 0 ? change.snapshot : await profileSnapshot(accountId);
      const burnAfter = snap.burnMillicentsPerHour + priceMillicents;
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
              UpdateExpression: `SET serverCount = :countRead + :one, ${SET_BURN}`,
              ConditionExpression: cond.ConditionExpression,
              ExpressionAttributeValues: {
                ...cond.values,
                ...cap.values,
                ':required': required,
                ':countRead': snap.serverCount,
                ':one': 1,
                ...burnValues(burnAfter),
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
          eventWrite(accountId, 'server.created', toServerView(item)),
          // The panel installs the new server now: the install watch reports when it ends (server.installed).
          installWatchWrite(item, 'deploy'),
          ...(change.extraWrites ?? []),
        ]);
      } catch (err) {
        if (isConditionFailed(err, 'instance')) {
          throw new ApiError('conflict', 'The instance was removed while the server was being deployed');
        }
        if (isConditionFailed(err, 'budget') && !err.has('profile')) throw overBudget(snap.budgetCapCents!);
        throw err;
      }
    },
    {
      attempts: RECORD_ATTEMPTS,
      ...profileMoved,
      exhausted: () => new ApiError('conflict', 'The account changed too often while deploying; try again'),
    },
  );
}

// ---- install watch --------------------------------------------------------------------------------

/**
 * How long an install is watched (shared/servers/install-watch.ts): egg install scripts download
 * a game's files, minutes on a slow mirror; an hour is far past any normal install, and an install
 * still running then is reported failed (`timeout`).
 */
export const INSTALL_WATCH_LIMIT_MS = 60 * 60_000;

/**
 * Arms the install watch of a server whose install begins now (a deploy's create, a reinstall), due
 * at once unless `due: false` (a reinstall arms before its panel call and makes it due after, so no
 * pass sees the server still installed from before). One watch per server: a second arming fails
 * its condition, unless the first is past its limit (left by a crash).
 */
export function installWatchWrite(
  server: Pick<ServerItem, 'accountId' | 'serverId' | 'instanceId' | 'uuid'>,
  installKind: InstallKind,
  at = new Date(),
  due = true,
): NamedWrite & { Put: { Item: InstallWatchItem } } {
  const startedAt = at.toISOString();
  const until = new Date(at.getTime() + INSTALL_WATCH_LIMIT_MS);
  const item: InstallWatchItem = {
    ...keys.installWatch(server.accountId, server.serverId),
    ...(due ? keys.installWatchDue(server.serverId, startedAt) : {}),
    kind: 'install-watch',
    accountId: server.accountId,
    serverId: server.serverId,
    instanceId: server.instanceId,
    uuid: server.uuid,
    installKind,
    startedAt,
    until: until.toISOString(),
    checks: 0,
    // A watch no pass ended (its server gone meanwhile) leaves a day after its limit.
    expiresAt: Math.floor(until.getTime() / 1000) + 86_400,
  };
  return {
    name: 'installWatch',
    Put: {
      Item: item,
      ConditionExpression: 'attribute_not_exists(PK) OR #until < :now',
      ExpressionAttributeNames: { '#until': 'until' },
      ExpressionAttributeValues: { ':now': startedAt },
    },
  };
}

// ---- resized --------------------------------------------------------------------------------------

export interface ResizedChange {
  accountId: string;
  serverId: string;
  /** The server as read under its lease: its exact price is the record's condition (and the event shows it resized). */
  previous: ServerItem;
  resources: Resources;
  /** The new exact hourly price. */
  priceMillicents: number;
  /** A server on a plan resized to other resources: a custom size from now on (planId and planPrice removed). */
  leavesPlan: boolean;
  at: string;
  minimumBalanceCents: number;
  snapshot: ProfileSnapshot;
}

export async function recordResized(change: ResizedChange): Promise<void> {
  const { accountId, serverId, priceMillicents, at } = change;
  const previousMillicents = exactPriceOf(change.previous);
  const grows = priceMillicents > previousMillicents;
  await retrying(
    async (attempt) => {
      const snap = attempt === 0 ? change.snapshot : await profileSnapshot(accountId);
      const burnAfter = snap.burnMillicentsPerHour - previousMillicents + priceMillicents;
      // Downsizing is always allowed; anything that raises the price needs the runway.
      const required = grows ? requiredBalance(burnAfter, change.minimumBalanceCents) : Number.MIN_SAFE_INTEGER;
      if (snap.balanceCents < required) throw insufficientCredit(snap.balanceCents, required, burnAfter);
      const cap = capUnchanged(snap);
      const cond = burnUnchanged(snap, ['balanceCents >= :required', cap.clause]);
      try {
        await transact([
          {
            name: 'server',
            Update: {
              Key: keys.server(accountId, serverId),
              UpdateExpression:
                'SET resources = :r, priceCentsPerHour = :p, priceMillicentsPerHour = :pm, updatedAt = :now, history = list_append(history, :h)' +
                (change.leavesPlan ? ' REMOVE planId, planPrice' : ''),
              ConditionExpression:
                '#status = :active AND (priceMillicentsPerHour = :oldMc OR (attribute_not_exists(priceMillicentsPerHour) AND priceCentsPerHour = :oldCents))',
              ExpressionAttributeNames: { '#status': 'status' },
              ExpressionAttributeValues: {
                ':r': change.resources,
                ':p': Math.max(1, centsUp(priceMillicents)),
                ':pm': priceMillicents,
                ':now': at,
                ':h': historyEntry(at, 'active', priceMillicents),
                ':active': 'active',
                ':oldMc': previousMillicents,
                ':oldCents': change.previous.priceCentsPerHour,
              },
            },
          },
          {
            name: 'profile',
            Update: {
              Key: keys.account(accountId),
              UpdateExpression: `SET ${SET_BURN}`,
              ConditionExpression: cond.ConditionExpression,
              ExpressionAttributeValues: { ...cond.values, ...cap.values, ':required': required, ...burnValues(burnAfter) },
            },
          },
          // Downsizing is always allowed; an upsize must fit the budget too.
          ...(grows ? budgetGuard(accountId, snap, burnAfter) : []),
          eventWrite(accountId, 'server.resized', {
            ...toServerView({
              ...change.previous,
              ...(change.leavesPlan ? { planId: undefined } : {}),
              resources: change.resources,
              priceCentsPerHour: Math.max(1, centsUp(priceMillicents)),
              priceMillicentsPerHour: priceMillicents,
              updatedAt: at,
            }),
            previousResources: change.previous.resources,
          }),
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
    {
      attempts: RECORD_ATTEMPTS,
      ...profileMoved,
      exhausted: () => new ApiError('conflict', 'The account changed too often while resizing; try again'),
    },
  );
}

// ---- add-ons --------------------------------------------------------------------------------------

export interface AddonsChange {
  accountId: string;
  serverId: string;
  /** The record as read under the lease. */
  previous: ServerItem;
  addons: { backups: number; databases: number; ports: number };
  /** The server's exact hourly price with the new add-ons. */
  priceMillicents: number;
  at: string;
  minimumBalanceCents: number;
  snapshot: ProfileSnapshot;
}

/**
 * New add-ons, after the panel took their feature limits: priced like a resize. The server's price,
 * its add-ons and a history entry (billing charges each hour at the highest price in it, so the
 * change is charged from this moment, a removal stops being charged after this hour) move with the
 * account's burn in one transaction, on the price and the add-ons as read; a higher price needs the
 * runway and the budget, as an upsize does.
 */
export async function recordAddons(change: AddonsChange): Promise<void> {
  const { accountId, serverId, priceMillicents, at } = change;
  const previousMillicents = exactPriceOf(change.previous);
  const grows = priceMillicents > previousMillicents;
  const had = change.previous.addons;
  await retrying(
    async (attempt) => {
      const snap = attempt === 0 ? change.snapshot : await profileSnapshot(accountId);
      const burnAfter = snap.burnMillicentsPerHour - previousMillicents + priceMillicents;
      const required = grows ? requiredBalance(burnAfter, change.minimumBalanceCents) : Number.MIN_SAFE_INTEGER;
      if (snap.balanceCents < required) throw insufficientCredit(snap.balanceCents, required, burnAfter);
      const cap = capUnchanged(snap);
      const cond = burnUnchanged(snap, ['balanceCents >= :required', cap.clause]);
      try {
        await transact([
          {
            name: 'server',
            Update: {
              Key: keys.server(accountId, serverId),
              UpdateExpression:
                'SET addons = :a, priceCentsPerHour = :p, priceMillicentsPerHour = :pm, updatedAt = :now, history = list_append(history, :h)',
              ConditionExpression: [
                '#status = :active',
                '(priceMillicentsPerHour = :oldMc OR (attribute_not_exists(priceMillicentsPerHour) AND priceCentsPerHour = :oldCents))',
                had === undefined ? 'attribute_not_exists(addons)' : 'addons = :had',
              ].join(' AND '),
              ExpressionAttributeNames: { '#status': 'status' },
              ExpressionAttributeValues: {
                ':a': change.addons,
                ':p': Math.max(1, centsUp(priceMillicents)),
                ':pm': priceMillicents,
                ':now': at,
                ':h': historyEntry(at, 'active', priceMillicents),
                ':active': 'active',
                ':oldMc': previousMillicents,
                ':oldCents': change.previous.priceCentsPerHour,
                ...(had === undefined ? {} : { ':had': had }),
              },
            },
          },
          {
            name: 'profile',
            Update: {
              Key: keys.account(accountId),
              UpdateExpression: `SET ${SET_BURN}`,
              ConditionExpression: cond.ConditionExpression,
              ExpressionAttributeValues: { ...cond.values, ...cap.values, ':required': required, ...burnValues(burnAfter) },
            },
          },
          ...(grows ? budgetGuard(accountId, snap, burnAfter) : []),
        ]);
      } catch (err) {
        if (isConditionFailed(err, 'server')) {
          throw new ApiError(
            'conflict',
            'The server changed while its add-ons were changed (a resize, a suspension or a deletion); read it and try again',
          );
        }
        if (isConditionFailed(err, 'budget') && !err.has('profile')) throw overBudget(snap.budgetCapCents!);
        throw err;
      }
    },
    {
      attempts: RECORD_ATTEMPTS,
      ...profileMoved,
      exhausted: () => new ApiError('conflict', 'The account changed too often while changing add-ons; try again'),
    },
  );
}

// ---- renamed, new docker image -------------------------------------------------------------------

/**
 * A rename or a new docker image, after the panel took it: no price, count or burn moves, so one
 * conditional update of the server, on the status and the values read under the lease.
 */
export async function recordSettings(previous: ServerItem, change: { name?: string; dockerImage?: string }, at: string): Promise<void> {
  const sets = ['updatedAt = :now'];
  const values: Record<string, unknown> = { ':now': at, ':active': 'active' };
  const checks = ['#status = :active'];
  if (change.name !== undefined) {
    sets.push('#name = :name');
    values[':name'] = change.name;
    checks.push('#name = :oldName');
    values[':oldName'] = previous.name;
  }
  if (change.dockerImage !== undefined) {
    sets.push('dockerImage = :image');
    values[':image'] = change.dockerImage;
  }
  const done = await writeIfFirst({
    Update: {
      Key: keys.server(previous.accountId, previous.serverId),
      UpdateExpression: `SET ${sets.join(', ')}`,
      ConditionExpression: checks.join(' AND '),
      ExpressionAttributeNames: { '#status': 'status', ...(change.name !== undefined ? { '#name': 'name' } : {}) },
      ExpressionAttributeValues: values,
    },
  });
  if (!done) throw new ApiError('conflict', 'The server changed meanwhile (a suspension or a deletion); read it and try again');
}

// ---- suspended, unsuspended ---------------------------------------------------------------------

/** `admin`: an operator's suspension, which only an operator lifts (suspension.ts). */
export type SuspendReason = 'balance' | 'budget' | 'admin';

/**
 * Active → suspended (with the reason) or suspended → active, with the account's burn rate.
 * Returns false when the server was no longer in the state read (someone else moved or deleted it).
 */
export async function recordSuspension(
  server: ServerItem,
  to: { status: 'suspended'; reason: SuspendReason } | { status: 'active' },
  at = new Date().toISOString(),
): Promise<boolean> {
  const price = exactPriceOf(server);
  const burnDelta = to.status === 'active' ? price : -price;
  const changes =
    to.status === 'suspended'
      ? { set: ', suspendedAt = :now, suspendedReason = :reason', remove: '', values: { ':reason': to.reason } }
      : { set: '', remove: ' REMOVE suspendedAt, suspendedReason', values: {} };
  const { suspendedAt: _at, suspendedReason: _reason, ...unsuspended } = server;
  const view = toServerView(
    to.status === 'suspended'
      ? { ...server, status: 'suspended', suspendedAt: at, suspendedReason: to.reason, updatedAt: at }
      : { ...unsuspended, status: 'active', updatedAt: at },
  );
  const event =
    to.status === 'suspended'
      ? eventWrite(server.accountId, 'server.suspended', { ...view, reason: to.reason })
      : eventWrite(server.accountId, 'server.unsuspended', view);
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
              UpdateExpression: `SET ${SET_BURN}`,
              ConditionExpression: cond.ConditionExpression,
              ExpressionAttributeValues: { ...cond.values, ...burnValues(snap.burnMillicentsPerHour + burnDelta) },
            },
          },
          event,
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
      const price = exactPriceOf(current);
      const burnAfter = current.status === 'active' ? snap.burnMillicentsPerHour - price : snap.burnMillicentsPerHour;
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
            UpdateExpression: `SET serverCount = :countAfter, ${SET_BURN}`,
            ConditionExpression: cond.ConditionExpression,
            ExpressionAttributeValues: {
              ...cond.values,
              ':countAfter': snap.serverCount - 1,
              ':countRead': snap.serverCount,
              ...burnValues(burnAfter),
            },
          },
        },
      ];
      writes.push(eventWrite(accountId, 'server.deleted', toServerView({ ...current, status: 'deleted', deletedAt: now, updatedAt: now })));
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

/**
 * A deleted server whose hour of deletion has been billed leaves the sparse billable index (the
 * billing pass, shared/billing/pass.ts), and says through which hour it was billed.
 */
export async function recordFullyBilled(accountId: string, serverId: string, throughHour: number): Promise<void> {
  await writeIfFirst({
    Update: {
      Key: keys.server(accountId, serverId),
      UpdateExpression: 'REMOVE GSI2PK, GSI2SK SET billedThrough = :h',
      ConditionExpression: '#status = :deleted',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':h': new Date(throughHour).toISOString(), ':deleted': 'deleted' },
    },
  });
}

// ---- network allocations ------------------------------------------------------------------------

/**
 * The server's allocations after a change through us (shared/servers/network.ts), under its lease:
 * the list, and the primary (`allocationId`, `address`) when it moved. No price, count or burn
 * moves; a server deleted meanwhile stays as it is.
 */
export async function recordAllocations(
  item: ServerItem,
  change: { allocations: ServerAllocation[]; primary?: ServerAllocation },
  at: string,
): Promise<void> {
  const primary = change.primary ? { allocationId: change.primary.id, address: addressOnly(change.primary) } : {};
  const sets = ['allocations = :list', 'updatedAt = :now', ...Object.keys(primary).map((k) => `${k} = :${k}`)];
  await writeIfFirst({
    Update: {
      Key: keys.server(item.accountId, item.serverId),
      UpdateExpression: `SET ${sets.join(', ')}`,
      ConditionExpression: 'attribute_exists(PK) AND #status <> :deleted',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':list': change.allocations,
        ':now': at,
        ':deleted': 'deleted',
        ...Object.fromEntries(Object.entries(primary).map(([k, v]) => [`:${k}`, v])),
      },
    },
  });
}

const addressOnly = ({ host, ip, alias, port }: ServerAddress): ServerAddress => ({ host, ip, alias, port });
