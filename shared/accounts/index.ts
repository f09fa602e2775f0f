import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { retrying, transact } from '../db/write.ts';
import { keys } from '../db/keys.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { Page, PageRequest } from '../db/access-patterns.ts';
import { getConfig } from '../config/env.ts';
import { ledgerEntryItems } from '../ledger/index.ts';
import { getSettings } from '../settings/index.ts';
import { exactBurnOf } from '../budgets/index.ts';
import { HOUR_MS } from '../pricing/hours.ts';
import { notFound } from '../errors.ts';
import { currentTime } from '../clock.ts';
import type { Account, AdminAccount } from '../api/schemas.ts';
import type { AccountItem } from '../db/items.ts';

export type AccountView = z.infer<typeof Account>;

export const isAdminEmail = (email: string): boolean => getConfig().adminEmails.has(email.toLowerCase());

// `graceMinutes`: the platform's suspension grace (settings), for `suspendAt`.
export function toAccountView(item: AccountItem, graceMinutes: number, now = currentTime()): AccountView {
  const balanceCents = Number(item.balanceCents ?? 0);
  const runway = runwayOf(item, now);
  return {
    id: item.accountId,
    email: item.email,
    balanceCents,
    balanceUsd: balanceCents / 100,
    debtCents: Math.max(0, -balanceCents),
    trialGranted: Boolean(item.trialGranted),
    isAdmin: isAdminEmail(item.email),
    burnMillicentsPerHour: runway.burnMillicentsPerHour,
    accruedMillicents: item.accruedMillicents ?? 0,
    runwayHours: runway.hours === null ? null : Math.floor(runway.hours * 10) / 10,
    fundedUntil: runway.fundedUntil,
    suspendAt: suspendAtOf(item, graceMinutes, now),
    createdAt: item.createdAt,
  };
}

/**
 * How long the balance lasts at the current exact burn: what is already accrued below a cent is
 * owed too. The low-balance warning and GET /v1/account use these same figures.
 */
export function runwayOf(
  item: Pick<AccountItem, 'balanceCents' | 'accruedMillicents' | 'burnMillicentsPerHour' | 'burnCentsPerHour'>,
  now = Date.now(),
): { burnMillicentsPerHour: number; hours: number | null; fundedUntil: string | null } {
  const burn = exactBurnOf(item);
  if (burn <= 0) return { burnMillicentsPerHour: 0, hours: null, fundedUntil: null };
  const left = Number(item.balanceCents ?? 0) * 1000 - (item.accruedMillicents ?? 0);
  const hours = Math.max(0, left / burn);
  return { burnMillicentsPerHour: burn, hours, fundedUntil: new Date(now + Math.floor(hours * HOUR_MS)).toISOString() };
}

/**
 * When the running servers would be suspended for the balance (ms), or null with no burn: the moment
 * the balance reaches zero at the current burn plus the grace; once it is at or below zero, the
 * grace counted from when the billing first saw that (`graceStartedAt`; not yet seen: from now).
 * Never before `now`: a grace already over ends at the next billing pass.
 */
export function suspendAtMs(
  item: Pick<AccountItem, 'balanceCents' | 'accruedMillicents' | 'burnMillicentsPerHour' | 'burnCentsPerHour' | 'graceStartedAt'>,
  graceMinutes: number,
  now: number,
): number | null {
  const runway = runwayOf(item, now);
  if (runway.hours === null) return null;
  const graceMs = graceMinutes * 60_000;
  if (Number(item.balanceCents ?? 0) > 0) return now + Math.floor(runway.hours * HOUR_MS) + graceMs;
  const started = graceMinutes > 0 && item.graceStartedAt ? Date.parse(item.graceStartedAt) : now;
  return Math.max(now, started + graceMs);
}

export function suspendAtOf(item: Parameters<typeof suspendAtMs>[0], graceMinutes: number, now: number): string | null {
  const at = suspendAtMs(item, graceMinutes, now);
  return at === null ? null : new Date(at).toISOString();
}

export async function getAccount(accountId: string): Promise<AccountView> {
  const [item, settings] = await Promise.all([accessPatterns.accountById(accountId), getSettings()]);
  if (!item) throw notFound('Account');
  return toAccountView(item, settings.suspensionGraceMinutes);
}

/**
 * The account of an identity-provider subject, created on first sight. Creation is one
 * transaction: the subject mapping (conditional, so two first requests cannot create two
 * accounts), the profile, and the trial credit as the account's first ledger entry.
 */
export async function ensureAccountForSubject(
  issuer: string,
  subject: string,
  email: string,
): Promise<{ accountId: string; email: string; created: boolean }> {
  // A concurrent first request that wins the subject makes this one read again and use its account.
  return retrying(
    async () => {
      const existing = await accessPatterns.accountBySubject(issuer, subject);
      if (existing) return { accountId: existing.accountId, email: existing.email, created: false };

      const accountId = randomUUID();
      const normalizedEmail = email.toLowerCase();
      const { trialCreditCents } = await getSettings();
      const now = new Date().toISOString();
      const trialItems =
        trialCreditCents > 0
          ? ledgerEntryItems({
              accountId,
              seq: 1,
              balanceAfterCents: trialCreditCents,
              change: {
                type: 'trial',
                amountCents: trialCreditCents,
                idempotencyKey: `trial:${accountId}`,
                reference: { note: 'Trial credit' },
              },
              at: now,
            })
          : [];
      await transact([
        {
          name: 'subject',
          Put: {
            Item: { ...keys.subject(issuer, subject), kind: 'subject', accountId, email: normalizedEmail },
            ConditionExpression: 'attribute_not_exists(PK)',
          },
        },
        {
          name: 'profile',
          Put: {
            Item: {
              ...keys.account(accountId),
              kind: 'account',
              accountId,
              email: normalizedEmail,
              issuer,
              subject,
              balanceCents: trialCreditCents,
              ledgerSeq: trialItems.length ? 1 : 0,
              trialGranted: true,
              serverCount: 0,
              burnCentsPerHour: 0,
              createdAt: now,
            },
            ConditionExpression: 'attribute_not_exists(PK)',
          },
        },
        // The admin listing's row, apart from the profile (shared/accounts/listing.ts).
        {
          name: 'listing',
          Put: {
            Item: {
              ...keys.accountListingEntry(accountId),
              ...keys.accountsListing(accountId, now),
              kind: 'account-listing',
              accountId,
              email: normalizedEmail,
              createdAt: now,
            },
            ConditionExpression: 'attribute_not_exists(PK)',
          },
        },
        ...trialItems,
      ]);
      return { accountId, email: normalizedEmail, created: true };
    },
    { retryIf: (err) => err.has('subject'), exhausted: () => new Error('Could not create the account: the subject kept conflicting') },
  );
}

export async function listAccounts(page: PageRequest): Promise<Page<z.infer<typeof AdminAccount>>> {
  const [result, settings] = await Promise.all([accessPatterns.allAccounts(page), getSettings()]);
  return {
    data: result.data.map((item) => ({
      ...toAccountView(item, settings.suspensionGraceMinutes),
      serverCount: Number(item.serverCount ?? 0),
    })),
    nextCursor: result.nextCursor,
  };
}
