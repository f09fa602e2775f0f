import * as z from 'zod';
import { ERROR_STATUS, type ErrorCode } from '../../errors.ts';
import { Uuid, text, int32, Cents, SignedCents, Timestamp, Email, listOf } from './common.ts';

/** The account and its activity log (account group; the admin group lists both too). */

const cents = (description: string) => SignedCents.meta({ description });

export const Account = z
  .object({
    id: Uuid,
    email: Email,
    balanceCents: cents('Credit balance in cents (paid plus granted credit).'),
    balanceUsd: z.number().meta({
      description:
        "The same balance in whole units of the platform's currency: dollars, or euros on a platform in EUR (the name stays for compatibility).",
    }),
    debtCents: Cents.meta({
      description:
        'What the account owes: −balanceCents when the balance is below zero (a refund, dispute or deduction after the credit was spent), else 0. The next top-up pays it off first.',
    }),
    trialGranted: z.boolean(),
    isAdmin: z.boolean(),
    burnMillicentsPerHour: Cents.meta({ description: 'What the active servers cost an hour, exactly, in millicents (1/1000 cent).' }),
    accruedMillicents: int32(0, 999).meta({
      description:
        'Charged hours not yet taken from the balance because together they are below a cent (0–999); the next hourly charge adds to them.',
    }),
    runwayHours: z
      .number()
      .nullable()
      .meta({ description: 'Hours until the balance reaches zero at the current burn (one decimal); null with no burn.' }),
    fundedUntil: Timestamp.nullable().meta({ description: 'When the balance reaches zero at the current burn; null with no burn.' }),
    suspendAt: Timestamp.nullable().meta({
      description:
        'When the running servers would be suspended for the balance at the current burn: when it reaches zero plus the grace (setting `suspensionGraceMinutes`); once at or below zero, the grace counted from then. Null with no burn.',
    }),
    createdAt: Timestamp,
  })
  .meta({ id: 'Account' });

export const ActivityEntry = z
  .object({
    id: text(128),
    at: Timestamp,
    accountId: Uuid,
    actorEmail: text(254),
    credential: z.object({
      kind: z.enum(['api_key', 'session', 'system']),
      id: text(128),
    }),
    action: text(64).meta({ example: 'keys.create' }),
    target: text(256).nullable().meta({ example: 'key:8b0e…' }),
    result: z.enum(['success', 'failure']),
    status: int32(100, 599).meta({ description: 'HTTP status the call ended with.' }),
    errorCode: z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]).nullable(),
    sourceIp: text(45).nullable(),
    requestId: text(128),
    details: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: 'ActivityEntry' });

export const ActivityList = listOf(ActivityEntry, 'ActivityList');
