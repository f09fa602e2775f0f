import * as z from 'zod';
import { int32, SignedCents } from './common.ts';

/** The account's balance.low threshold (docs/api.md "Low-balance warning"); the bounds are the platform setting's. */
const threshold = int32(0, 10_000_000);

export const BalanceAlerts = z
  .object({
    lowBalanceThresholdCents: threshold.meta({ description: 'The threshold in force: the override, else the platform setting.' }),
    override: threshold.nullable().meta({ description: "This account's own threshold (null: the platform setting applies)." }),
    platformThresholdCents: threshold.meta({ description: 'The platform setting lowBalanceThresholdCents.' }),
    armed: z.boolean().meta({
      description:
        'true: the next change that lowers the balance (a charge, a deduction) below the threshold fires balance.low. false: it fired and re-arms once the balance is back at or above the threshold.',
    }),
    balanceCents: SignedCents,
  })
  .meta({ id: 'BalanceAlerts' });

export const BalanceAlertsUpdate = z
  .object({
    lowBalanceThresholdCents: threshold
      .nullable()
      .meta({ description: 'The threshold for this account; null returns to the platform setting.' }),
  })
  .strict()
  .meta({ id: 'BalanceAlertsUpdate' });
