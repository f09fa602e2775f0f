import * as z from 'zod';
import { text, Count, Timestamp } from './common.ts';

/** GET /v1/health (public group). */

export const Health = z
  .object({
    status: z.literal('ok'),
    version: text(32),
    time: Timestamp,
    instances: z.object({
      total: Count,
      enabled: Count,
    }),
  })
  .meta({ id: 'Health' });
