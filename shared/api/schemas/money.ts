import * as z from 'zod';
import { INT32_MAX, text, int32, Cents, SignedCents, Timestamp, listOf } from './common.ts';

/** The account's money (account group): ledger and monthly budget. */

export const LedgerEntryView = z
  .object({
    seq: int32(1, INT32_MAX).meta({ description: 'Position in the account ledger (1, 2, 3, …).' }),
    type: z.enum(['trial', 'topup', 'bonus', 'grant', 'deduction', 'charge', 'refund', 'dispute']),
    amountCents: SignedCents.meta({ description: 'Signed: credits positive, charges and deductions negative.' }),
    balanceAfterCents: SignedCents,
    granted: z.boolean().meta({ description: 'Trial, bonus and admin grants: credit that was not paid for.' }),
    reference: z.object({
      serverId: text(64).nullable(),
      invoiceId: text(64).nullable(),
      invoiceNumber: text(32).nullable(),
      hour: Timestamp.nullable().meta({ description: 'Hourly charges: the UTC hour charged (its start).' }),
      note: text(500).nullable(),
      lines: z
        .array(z.object({ serverId: text(64), millicents: Cents }))
        .max(10_000)
        .meta({ description: 'Hourly charges: each server and its exact price for the hour, in millicents.' }),
      accruedBeforeMillicents: int32(0, 999)
        .nullable()
        .meta({ description: 'Hourly charges: what was below a cent before this entry (carried from earlier hours).' }),
      accruedAfterMillicents: int32(0, 999).nullable().meta({
        description:
          'Hourly charges: what is below a cent after it, carried to the next hour. amountCents = −floor((before + Σ lines) / 1000).',
      }),
      settlesDebtCents: Cents.nullable().meta({
        description:
          'Credits that landed on a negative balance: the part of amountCents that paid the debt off first (the rest is credit); null otherwise.',
      }),
    }),
    at: Timestamp,
  })
  .meta({ id: 'LedgerEntry' });

export const LedgerList = listOf(LedgerEntryView, 'LedgerList');

export const BudgetAction = z.enum(['refuse', 'suspend']).meta({
  id: 'BudgetAction',
  description:
    '`refuse`: at the cap, deploys and upsizes are refused. `suspend`: also suspend the running servers until the month ends or the cap is raised.',
});

export const Budget = z
  .object({
    monthlyCapCents: int32(0, 100_000_000).nullable().meta({ description: 'null: no cap.' }),
    action: BudgetAction,
    month: text(7).meta({ example: '2026-11' }),
    spentCents: Cents.meta({ description: 'Hourly charges this UTC month.' }),
    burnCentsPerHour: Cents.meta({ description: 'Current hourly price of the active servers, rounded up to cents.' }),
    burnMillicentsPerHour: Cents.meta({ description: 'Current exact hourly price of the active servers, in millicents.' }),
    projectedCents: Cents.meta({ description: 'Spent plus the current exact burn until the month ends, rounded up.' }),
    remainingCents: SignedCents.nullable().meta({ description: 'Cap minus spent (null without a cap).' }),
    capReached: z.boolean(),
  })
  .meta({ id: 'Budget' });

export const BudgetUpdate = z
  .object({ monthlyCapCents: int32(0, 100_000_000).nullable(), action: BudgetAction.default('refuse') })
  .strict()
  .meta({ id: 'BudgetUpdate' });
