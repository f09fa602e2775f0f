import * as z from 'zod';
import { Timestamp, Email } from './common.ts';

/** The local-only routes (/dev/*, never deployed). */

export const DevSessionRequest = z.object({ email: Email }).strict();
export const DevSession = z.object({ token: z.string(), expiresAt: Timestamp });

export const BillingRunRequest = z.object({ at: z.iso.datetime({ offset: true }).optional() }).strict();
export const BillingSummary = z
  .object({
    at: Timestamp,
    throughHour: z.string().nullable().meta({ description: 'Last UTC hour billed (its start).' }),
    shards: z.number().int(),
    serverHoursCharged: z.number().int(),
    servers: z.number().int(),
    accounts: z.number().int(),
    cents: z.number().int(),
    suspended: z.number().int(),
    unsuspended: z.number().int(),
    deletedByRetention: z.number().int(),
    lowBalanceWarnings: z.number().int(),
    errors: z.number().int().meta({ description: 'Accounts or shards whose charging failed; the next pass covers them again.' }),
    panelErrors: z
      .number()
      .int()
      .meta({ description: 'Suspensions, unsuspensions or retention deletes the panel refused; retried next pass.' }),
  })
  .meta({ id: 'BillingSummary' });

export const ReconcileReport = z
  .object({
    instances: z.number().int(),
    panelServers: z.number().int(),
    orphansRemoved: z.number().int(),
    orphansHeld: z.number().int().meta({ description: 'Orphans held for an admin to confirm (setting holdOrphansForConfirmation).' }),
    claimedElsewhere: z
      .number()
      .int()
      .meta({ description: 'Panel servers whose record is on another instance (the same panel registered twice): left alone.' }),
    recordsClosed: z.number().int(),
    limitsRestored: z.number().int(),
    errors: z.number().int(),
  })
  .meta({ id: 'ReconcileReport' });
