import * as z from 'zod';
import { Uuid, int32, Count, SignedCents, SafeText, listOf } from './common.ts';
import { Account } from './account.ts';
import { Server } from './servers.ts';
import { LedgerEntryView } from './money.ts';

/** What only the admin group adds: accounts and servers with their owner, credit adjustments. */

export const AdminAccount = Account.extend({
  serverCount: Count.meta({ description: 'Servers currently active or suspended.' }),
}).meta({ id: 'AdminAccount' });

export const AdminAccountList = listOf(AdminAccount, 'AdminAccountList');

export const AdminServer = Server.extend({ accountId: Uuid }).meta({ id: 'AdminServer' });
export const AdminServerList = listOf(AdminServer, 'AdminServerList');

export const AdminCredit = z
  .object({
    amountCents: int32(-10_000_000, 10_000_000)
      .refine((v) => v !== 0, 'must not be 0')
      .meta({ description: 'Positive grants, negative deducts (the balance may go below zero).' }),
    note: SafeText.trim().min(1).max(500),
  })
  .strict()
  .meta({ id: 'AdminCredit' });

export const AdminCreditResult = z
  .object({ accountId: Uuid, entry: LedgerEntryView, balanceCents: SignedCents })
  .meta({ id: 'AdminCreditResult' });
