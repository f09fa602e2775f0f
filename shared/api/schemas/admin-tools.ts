import * as z from 'zod';
import { Count, ListQuery, SafeText, Timestamp, Uuid, text } from './common.ts';
import { AccountLimits, AdminAccount, AdminServer } from './admin.ts';

/** The admin tools for one account or server: search, the account view, an operator's server actions. */

export const AdminUserListQuery = ListQuery.extend({
  email: SafeText.trim()
    .toLowerCase()
    .min(1)
    .max(254)
    // What can begin an address: no leading dot, no `..`, no spaces or backslashes, one `@` at most.
    .regex(/^(?!\.)(?!.*\.\.)[^\s\\@]*@?[^\s\\@]*$/, 'must be the start of an e-mail address')
    .optional()
    .meta({ description: 'Only accounts whose e-mail starts with this (case-insensitive).' }),
  accountId: Uuid.optional().meta({ description: 'Only this account (an exact id).' }),
});

export const AdminUser = z
  .object({
    account: AdminAccount,
    limits: AccountLimits,
    trial: z
      .object({
        granted: z.boolean().meta({ description: 'The trial credit was given at sign-up.' }),
        active: z.boolean().meta({ description: 'No top-up and no grant yet: trial limits apply.' }),
        paidAt: Timestamp.nullable().meta({ description: 'The first top-up or grant known.' }),
      })
      .meta({ id: 'AdminUserTrial' }),
    servers: z
      .object({
        count: Count.meta({ description: 'Active plus suspended.' }),
        data: z.array(AdminServer).max(10).meta({ description: 'The newest 10 (deleted ones too).' }),
        nextCursor: text(4096).nullable().meta({ description: 'For GET /v1/admin/servers?accountId=<id>.' }),
      })
      .meta({ id: 'AdminUserServers' }),
  })
  .meta({ id: 'AdminUser' });

export const AdminDeletedServer = z
  .object({
    id: Uuid,
    status: z.literal('deleted'),
    deletedAt: Timestamp,
    panel: z.enum(['deleted', 'gone']).meta({
      description: '`gone`: its panel is no longer registered; only the record was closed.',
    }),
  })
  .meta({ id: 'AdminDeletedServer' });
