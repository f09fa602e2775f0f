import type { z } from 'zod';
import { keys } from '../db/keys.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { Page, PageRequest } from '../db/access-patterns.ts';
import { isConditionFailed, type NamedWrite, retrying, transact } from '../db/write.ts';
import type { LedgerEntryView } from '../api/schemas.ts';
import type { EventData } from '../api/schemas/events.ts';
import { type AccountItem, asKind, type LedgerItem } from '../db/items.ts';
import { eventWrite } from '../webhooks/events.ts';
import { getSettings } from '../settings/index.ts';

/**
 * The ledger: the balance on the account profile is a projection of these append-only entries
 * (`balanceCents == sum(amountCents)` at all times). Every change is one transaction that
 *   (1) moves the balance under an optimistic-lock condition on `ledgerSeq`,
 *   (2) appends the entry at the next sequence number,
 *   (3) writes a guard item for each of its deterministic idempotency keys,
 * so a retried, duplicated or concurrent change can never apply twice.
 */
/** `refund` and `dispute` take back a paid top-up (and its bonus share); a won dispute is a positive `dispute` entry. */
export const LEDGER_TYPES = ['trial', 'topup', 'bonus', 'grant', 'deduction', 'charge', 'refund', 'dispute'] as const;
export type LedgerType = (typeof LEDGER_TYPES)[number];

/**
 * `balance.low` (docs/api.md "Low-balance warning"): an append that lowers the balance below the
 * account's threshold records it once, in the same transaction, and marks the profile
 * (`balanceLowFired`); an append that leaves the balance at or above the threshold re-arms it.
 * The threshold is the account's override, else the platform setting: read (cached, see
 * shared/settings) only when the append could fire or re-arm without an override.
 */
export async function lowBalanceStep(
  profile: AccountItem,
  before: number,
  after: number,
): Promise<{ fire: boolean; thresholdCents: number; fired: boolean }> {
  const fired = Boolean(profile.balanceLowFired);
  if (fired ? after <= before : after >= before) return { fire: false, thresholdCents: 0, fired };
  const thresholdCents = profile.lowBalanceThresholdCents ?? (await getSettings()).lowBalanceThresholdCents;
  if (after >= thresholdCents) return { fire: false, thresholdCents, fired: false };
  return { fire: !fired, thresholdCents, fired: true };
}

/**
 * Auto top-up (README "Auto top-up"): a debit that leaves the balance below the armed rule's
 * threshold marks the profile due (`autoTopUpDue`, and the sparse GSI2 TOPUPDUE#<n> the every-minute
 * loop reads) in the same transaction, once until the loop takes it: detection is exact and costs
 * the debit no extra item. No Stripe call here: the loop makes it, off the customer's path.
 */
export function autoTopUpMark(profile: AccountItem, before: number, after: number, at: string): Record<string, unknown> | null {
  const below = profile.autoTopUpBelowCents;
  if (below === undefined || profile.autoTopUpDue || after >= before || after >= below) return null;
  return { autoTopUpDue: at, ...keys.autoTopUpDue(profile.accountId, at) };
}

/** Trial, bonus and admin grants are granted credit, kept apart from paid credit. */
const GRANTED: ReadonlySet<LedgerType> = new Set(['trial', 'bonus', 'grant']);

/** What an entry refers to (the stored shape, shared/db/items.ts). */
export type LedgerReference = NonNullable<LedgerItem['reference']>;

export interface LedgerChange {
  type: LedgerType;
  /** Signed: credits are positive, charges and deductions negative. */
  amountCents: number;
  /** Deterministic: the same business event always yields the same key. */
  idempotencyKey: string;
  /** More keys that must all be new (an hourly charge has one per server-hour). */
  extraGuards?: string[];
  reference?: LedgerReference;
  actorId?: string;
  /** Refunds and disputes: the card money the entry moves (signed like it), the bonus it also takes back left out (the admin home's figures). */
  moneyCents?: number;
}

export interface LedgerEntry extends Omit<LedgerChange, 'extraGuards'> {
  seq: number;
  balanceAfterCents: number;
  granted: boolean;
  at: string;
}

const guardsOf = (change: LedgerChange): string[] => [change.idempotencyKey, ...(change.extraGuards ?? [])];

/** Names of the transaction items, so a cancellation says which guard or extra item failed. */
const GUARD = 'guard:';
const EXTRA = 'extra:';

/** The items that append `change` at sequence `seq`, leaving the balance at `balanceAfterCents`. */
export function ledgerEntryItems(append: {
  accountId: string;
  seq: number;
  balanceAfterCents: number;
  change: LedgerChange;
  at: string;
}): NamedWrite[] {
  const { accountId, seq, balanceAfterCents, change, at } = append;
  if (!Number.isSafeInteger(change.amountCents)) throw new Error('Ledger amounts are integer cents');
  const { extraGuards: _extra, ...rest } = change;
  const entry: LedgerEntry = { ...rest, seq, balanceAfterCents, granted: GRANTED.has(change.type), at };
  return [
    {
      name: `entry:${seq}`,
      Put: {
        Item: { ...keys.ledgerEntry(accountId, seq), kind: 'ledger', accountId, ...entry },
        ConditionExpression: 'attribute_not_exists(PK)',
      },
    },
    ...guardsOf(change).map((guard) => ({
      name: `${GUARD}${guard}`,
      Put: {
        Item: { ...keys.ledgerGuard(guard), kind: 'ledger-guard', accountId, seq },
        ConditionExpression: 'attribute_not_exists(PK)',
      },
    })),
  ];
}

export interface AppendOptions {
  now?: Date;
  /** More writes that must happen in the same transaction (an invoice turning paid, a spend counter), by name. */
  extraItems?: (entries: LedgerEntry[]) => NamedWrite[];
  /**
   * An hourly charge of this many millicents (the one change, of type `charge`): the entry takes
   * whole cents — floor((carried + this) / 1000) — and what is left below a cent is carried on the
   * profile (`accruedMillicents`) to the next charge. Rounded once, never against the customer.
   * A list: one amount per change, all charges (the pass's caught-up hours in one transaction),
   * each entry rounded from what the one before it carried, exactly as separate appends would.
   */
  accrueMillicents?: number | readonly number[];
  /**
   * The profile as the caller already read it (consistently), used for the first attempt instead
   * of reading it again (the billing pass reads a shard's profiles in batches). Safe when stale:
   * the write is conditional on its `ledgerSeq`, and a conflict retries from the profile the
   * failed condition returns.
   */
  profile?: AccountItem;
}

export interface AppendResult {
  applied: boolean;
  balanceCents: number;
  entries: LedgerEntry[];
  /** When not applied: the guard keys that already existed. */
  alreadyApplied: string[];
  /** When not applied: the extra item whose condition failed (its name). */
  extraFailed?: string;
  /**
   * The profile as this call last knew it: after the write when applied (balance, sequence and
   * carried millicents moved, the rest as read), else as read. What a caller needs next (the
   * pass: whether to suspend, the runway) without reading it again.
   */
  profile?: AccountItem;
}

/**
 * Appends changes to an account's ledger in one transaction. Changes nothing and returns
 * `applied: false` when any idempotency key was used before (listed in `alreadyApplied`) or an
 * extra item's condition fails. The balance moves under an optimistic lock on `ledgerSeq`: a
 * concurrent change makes it read the profile again and retry.
 */
export async function appendLedger(accountId: string, changes: LedgerChange[], options: AppendOptions = {}): Promise<AppendResult> {
  let unchangedBalance = 0;
  // The profile for the next attempt: the caller's, then the one a failed lock condition returns.
  let known = options.profile;
  let lastProfile: AccountItem | undefined;
  try {
    return await retrying(
      async () => {
        const profile = known ?? (await accessPatterns.accountById(accountId));
        known = undefined;
        if (!profile) throw new Error(`Account ${accountId} not found`);
        lastProfile = profile;
        const seq0 = Number(profile.ledgerSeq ?? 0);
        unchangedBalance = Number(profile.balanceCents ?? 0);
        let balance = unchangedBalance;
        const at = (options.now ?? new Date()).toISOString();
        const items: NamedWrite[] = [];
        const entries: LedgerEntry[] = [];
        // One accrual per amount, each from what the one before it carried.
        let carried = profile.accruedMillicents ?? 0;
        const accruals =
          options.accrueMillicents === undefined
            ? undefined
            : [options.accrueMillicents].flat().map((m) => {
                const a = accrue(carried, m);
                carried = a.after;
                return a;
              });
        const accrual = accruals?.at(-1);
        const toApply = accruals ? withAccruals(changes, accruals) : changes;
        toApply.forEach((applied, i) => {
          const change = withDebtSettled(applied, balance);
          balance += change.amountCents;
          items.push(...ledgerEntryItems({ accountId, seq: seq0 + i + 1, balanceAfterCents: balance, change, at }));
          const { extraGuards: _extra, ...rest } = change;
          entries.push({ ...rest, seq: seq0 + i + 1, balanceAfterCents: balance, granted: GRANTED.has(change.type), at });
        });
        const extras = (options.extraItems?.(entries) ?? []).map((w) => ({ ...w, name: `${EXTRA}${w.name}` }));
        const received = moneyReceivedWrites(accountId, entries);
        const low = await lowBalanceStep(profile, unchangedBalance, balance);
        const events = [
          ...eventsOf(accountId, entries, low.fire ? { balanceCents: balance, thresholdCents: low.thresholdCents } : null, at),
          ...debtEventsOf(accountId, entries, unchangedBalance, at),
        ];
        const mark = autoTopUpMark(profile, unchangedBalance, balance, at);
        const markSet = mark ? ', autoTopUpDue = :dueAt, GSI2PK = :duePk, GSI2SK = :dueSk' : '';
        const lowFlag = low.fired === Boolean(profile.balanceLowFired) ? '' : low.fired ? ', balanceLowFired = :fired' : '';
        const removes = [
          ...(!low.fired && profile.balanceLowFired ? ['balanceLowFired'] : []),
          // A credit that lifts the balance above zero ends the suspension grace (shared/servers/suspension.ts).
          ...(balance > 0 && (unchangedBalance <= 0 || profile.graceStartedAt) ? ['graceStartedAt'] : []),
        ];
        try {
          await transact([
            {
              name: 'profile',
              Update: {
                Key: keys.account(accountId),
                UpdateExpression: `SET balanceCents = :balance, ledgerSeq = :seq${accrual ? ', accruedMillicents = :accrued' : ''}${markSet}${lowFlag}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
                ConditionExpression: 'ledgerSeq = :seq0',
                ExpressionAttributeValues: {
                  ':balance': balance,
                  ':seq': seq0 + toApply.length,
                  ':seq0': seq0,
                  ...(accrual ? { ':accrued': accrual.after } : {}),
                  ...(low.fired && !profile.balanceLowFired ? { ':fired': true } : {}),
                  ...(mark ? { ':dueAt': mark.autoTopUpDue, ':duePk': mark.GSI2PK, ':dueSk': mark.GSI2SK } : {}),
                },
                // A lost race returns the profile as it now is, so the retry needs no read.
                ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
              },
            },
            ...items,
            ...received,
            ...extras,
            ...events,
          ]);
        } catch (err) {
          const current = isConditionFailed(err, 'profile') ? err.current.get('profile') : undefined;
          if (current?.kind === 'account') known = lastProfile = asKind(current, 'account');
          throw err;
        }
        const after: AccountItem = {
          ...profile,
          balanceCents: balance,
          ledgerSeq: seq0 + toApply.length,
          ...(accrual ? { accruedMillicents: accrual.after } : {}),
          balanceLowFired: low.fired || undefined,
          ...(mark ?? {}),
        };
        if (removes.includes('graceStartedAt')) delete after.graceStartedAt;
        return { applied: true, balanceCents: balance, entries, alreadyApplied: [], profile: after };
      },
      {
        attempts: 12,
        // Another change moved the balance first (its entry may already hold our sequence number):
        // read again. A failed guard or extra item is final and reported below.
        retryIf: (err) => err.has('profile') && !err.anyStartingWith(GUARD).length && !err.anyStartingWith(EXTRA).length,
        exhausted: () => new Error('Ledger append kept conflicting; gave up'),
      },
    );
  } catch (err) {
    if (!isConditionFailed(err)) throw err;
    const unchanged = { applied: false, balanceCents: unchangedBalance, entries: [], profile: lastProfile };
    const alreadyApplied = err.anyStartingWith(GUARD).map((name) => name.slice(GUARD.length));
    if (alreadyApplied.length) return { ...unchanged, alreadyApplied };
    const extraFailed = err.anyStartingWith(EXTRA)[0];
    if (extraFailed) return { ...unchanged, alreadyApplied: [], extraFailed: extraFailed.slice(EXTRA.length) };
    throw err;
  }
}

/** Entries that move money between a customer's card and the operator: top-ups in, refunds and disputes out. */
const MONEY_MOVES: ReadonlySet<LedgerType> = new Set(['topup', 'refund', 'dispute']);

/**
 * The admin home's daily money counters (keys.moneyReceivedDay), added to in the entry's own
 * transaction so they always equal the ledger: `topUpCents`/`topUps` from top-ups, `returnedCents`
 * the card money refunds and lost disputes gave back (`moneyCents`: without the bonus they take back
 * with it; a won dispute lowers it again). Charges,
 * grants and deductions move no money and are not counted.
 */
function moneyReceivedWrites(accountId: string, entries: LedgerEntry[]): NamedWrite[] {
  const byDay = new Map<string, { topUpCents: number; topUps: number; returnedCents: number }>();
  for (const entry of entries) {
    if (!MONEY_MOVES.has(entry.type)) continue;
    const day = entry.at.slice(0, 10);
    const sums = byDay.get(day) ?? { topUpCents: 0, topUps: 0, returnedCents: 0 };
    if (entry.type === 'topup') {
      sums.topUpCents += entry.amountCents;
      sums.topUps += 1;
    } else sums.returnedCents -= entry.moneyCents ?? entry.amountCents;
    byDay.set(day, sums);
  }
  return [...byDay].map(([day, sums]) => ({
    name: `money:${day}`,
    Update: {
      Key: keys.moneyReceivedDay(day.slice(0, 7), day.slice(8, 10), accountId),
      UpdateExpression: 'SET kind = :kind ADD topUpCents :topUpCents, topUps :topUps, returnedCents :returnedCents',
      ExpressionAttributeValues: {
        ':kind': 'money-received',
        ':topUpCents': sums.topUpCents,
        ':topUps': sums.topUps,
        ':returnedCents': sums.returnedCents,
      },
    },
  }));
}

/**
 * The events an append records with it: `ledger.entry` for every entry but hourly charges (one per
 * account-hour would bury every other event; the pass's transaction stays as it was), and
 * `balance.low` when lowBalanceStep says so — at most one extra item for a charge.
 */
function eventsOf(
  accountId: string,
  entries: LedgerEntry[],
  low: { balanceCents: number; thresholdCents: number } | null,
  at: string,
): NamedWrite[] {
  const now = new Date(at);
  const writes: NamedWrite[] = entries
    .filter((entry) => entry.type !== 'charge')
    .map((entry) =>
      eventWrite(
        accountId,
        'ledger.entry',
        toLedgerView({ ...keys.ledgerEntry(accountId, entry.seq), kind: 'ledger', accountId, ...entry }),
        now,
        `event:ledger.entry:${entry.seq}`,
      ),
    );
  if (low) writes.push(eventWrite(accountId, 'balance.low', low, now));
  return writes;
}

/**
 * Debt (docs/api.md "Debt"): a balance below zero is owed. A credit that lands on it pays the debt
 * off first, and its entry says how much (`reference.settlesDebtCents`, at most the entry's amount),
 * so the ledger shows where each top-up went; the balance arithmetic is unchanged.
 */
export function withDebtSettled(change: LedgerChange, balanceBefore: number): LedgerChange {
  const settles = change.amountCents > 0 && balanceBefore < 0 ? Math.min(change.amountCents, -balanceBefore) : 0;
  return settles === 0 ? change : { ...change, reference: { ...change.reference, settlesDebtCents: settles } };
}

/**
 * `account.debt` when an append leaves the balance below zero and lower than it was (an hourly
 * charge only when it crosses zero: one per account-hour would bury the rest), and
 * `account.debt_settled` when one brings a negative balance back to zero or above. Both go in the
 * append's transaction, so its guard keys make them happen once with the booking. The cause is
 * the entry that crossed zero (or, deeper in debt, the debit that took it there).
 */
export function debtEventsOf(accountId: string, entries: LedgerEntry[], before: number, at: string): NamedWrite[] {
  const last = entries.at(-1);
  if (!last) return [];
  const after = last.balanceAfterCents;
  const now = new Date(at);
  const causeOf = (entry: LedgerEntry) => ({
    entrySeq: entry.seq,
    invoiceId: entry.reference?.invoiceId ?? null,
    invoiceNumber: entry.reference?.invoiceNumber ?? null,
  });
  if (after < 0 && after < before) {
    if (before < 0 && entries.every((e) => e.type === 'charge')) return [];
    const cause = entries.find((e) => e.amountCents < 0 && e.balanceAfterCents < 0)!;
    // Only these entry types are ever negative; any other debit is credit taken away, a deduction.
    const type: EventData<'account.debt'>['cause'] =
      cause.type === 'refund' || cause.type === 'dispute' || cause.type === 'charge' ? cause.type : 'deduction';
    const data = { debtCents: -after, previousDebtCents: Math.max(0, -before), balanceCents: after, cause: type, ...causeOf(cause) };
    return [eventWrite(accountId, 'account.debt', data, now)];
  }
  if (before < 0 && after >= 0) {
    const cause = entries.find((e) => e.balanceAfterCents >= 0)!;
    // A new account's trial is never a settlement (its balance starts at zero): only these credit a debt.
    const type: EventData<'account.debt_settled'>['cause'] =
      cause.type === 'topup' || cause.type === 'bonus' || cause.type === 'refund' || cause.type === 'dispute' ? cause.type : 'grant';
    const data = { settledCents: -before, balanceCents: after, cause: type, ...causeOf(cause) };
    return [eventWrite(accountId, 'account.debt_settled', data, now)];
  }
  return [];
}

export interface Accrual {
  before: number;
  after: number;
  cents: number;
}

export function accrue(carried: number, millicents: number): Accrual {
  if (!Number.isSafeInteger(millicents) || millicents < 0) throw new Error('Accrued amounts are non-negative integer millicents');
  const total = carried + millicents;
  return { before: carried, after: total % 1000, cents: Math.floor(total / 1000) };
}

function withAccruals(changes: LedgerChange[], accruals: Accrual[]): LedgerChange[] {
  if (changes.length !== accruals.length || changes.some((c) => c.type !== 'charge')) {
    throw new Error('One accrued amount per charge');
  }
  return changes.map((charge, i) => {
    const accrual = accruals[i]!;
    return {
      ...charge,
      amountCents: accrual.cents === 0 ? 0 : -accrual.cents,
      reference: { ...charge.reference, accruedBeforeMillicents: accrual.before, accruedAfterMillicents: accrual.after },
    };
  });
}

export function toLedgerView(item: LedgerItem): z.infer<typeof LedgerEntryView> {
  const reference = item.reference ?? {};
  return {
    seq: item.seq,
    type: item.type,
    amountCents: item.amountCents,
    balanceAfterCents: item.balanceAfterCents,
    granted: Boolean(item.granted),
    reference: {
      serverId: reference.serverId ?? null,
      invoiceId: reference.invoiceId ?? null,
      invoiceNumber: reference.invoiceNumber ?? null,
      hour: reference.hour ?? null,
      note: reference.note ?? null,
      lines: (reference.lines ?? []).map((l) => ({ serverId: l.serverId, millicents: l.millicents ?? (l.cents ?? 0) * 1000 })),
      accruedBeforeMillicents: reference.accruedBeforeMillicents ?? null,
      accruedAfterMillicents: reference.accruedAfterMillicents ?? null,
      settlesDebtCents: reference.settlesDebtCents ?? null,
    },
    at: item.at,
  };
}

export async function listLedger(accountId: string, page: PageRequest): Promise<Page<z.infer<typeof LedgerEntryView>>> {
  const result = await accessPatterns.ledgerOfAccount(accountId, page);
  return { data: result.data.map(toLedgerView), nextCursor: result.nextCursor };
}
