import * as z from 'zod';
import { Count, SignedCents, Timestamp, Uuid, text } from './common.ts';
import { CallBudgetState } from './instances.ts';

/** GET /v1/admin/home: the platform's figures, each read from the store its list reads. */

const MoneyFigures = z
  .object({
    topUpCents: SignedCents.meta({ description: 'Credit bought by card (ledger `topup` entries, before tax).' }),
    topUps: Count.meta({ description: 'How many top-ups.' }),
    returnedCents: SignedCents.meta({
      description: 'What refunds and lost disputes gave back (ledger `refund` and `dispute` entries; a won dispute lowers it).',
    }),
    revenueCents: SignedCents.meta({
      description: 'Money received net of what went back: `topUpCents − returnedCents`. Granted credit, charges and tax are not revenue.',
    }),
  })
  .meta({ id: 'AdminMoneyFigures' });

/** A count read from a listing, with whether the bounded read reached the listing's end. */
const Tally = (description: string) =>
  z.object({
    count: Count.meta({ description }),
    complete: z.boolean().meta({ description: 'False when the read stopped at its bound: the count is a lower bound.' }),
  });

export const AdminHome = z
  .object({
    at: Timestamp.meta({ description: 'When the figures were read; days and months are UTC.' }),
    money: z
      .object({ today: MoneyFigures, month: MoneyFigures })
      .meta({ description: 'From the ledger (booked in the same transaction as each top-up, refund and dispute).' }),
    servers: z
      .object({
        active: Count,
        suspended: Count,
        complete: z.boolean().meta({ description: 'False when the read stopped at its bound: the counts are lower bounds.' }),
      })
      .meta({ description: 'Servers in GET /v1/admin/servers by status.' }),
    accounts: Tally('Accounts in GET /v1/admin/users.'),
    pendingRepairs: Tally('Suspensions, unsuspensions and other panel changes queued for a retry.'),
    webhookBacklog: z
      .object({
        undispatched: Count.meta({ description: 'Events not yet fanned out to their endpoints.' }),
        deliveriesDue: Count.meta({ description: 'Deliveries waiting for an attempt (first or retry).' }),
        complete: z.boolean(),
      })
      .meta({ description: 'The queues of the webhook dispatcher.' }),
    panels: z
      .array(
        z.object({
          id: Uuid,
          name: text(100),
          enabled: z.boolean(),
          health: z.enum(['ok', 'failing', 'untested']).meta({ description: 'The last instance test: passed, failed, or none yet.' }),
          lastTestAt: Timestamp.nullable(),
          serverCount: Count,
          callBudget: CallBudgetState,
        }),
      )
      .max(1000)
      .meta({ description: 'As GET /v1/admin/instances, in short.' }),
  })
  .meta({ id: 'AdminHome' });
