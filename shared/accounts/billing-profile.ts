import type * as z from 'zod';
import type { BillingProfile, BillingProfileUpdate } from '../api/schemas/billing-profile.ts';
import { EMPTY_ADDRESS } from '../api/empty-address.ts';
import type { BillingProfileItem } from '../db/items.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import { keys } from '../db/keys.ts';
import { writeItem } from '../db/write.ts';

/**
 * The account's billing profile: who its invoices are addressed to (name, company, address, VAT
 * id), printed as the buyer on the invoice PDF. Its own item under the account's partition, not
 * fields of the profile item: that one is read by every request and by the billing pass, and
 * this personal data has no business in those reads.
 */
export type BillingProfileView = z.infer<typeof BillingProfile>;
type Update = z.output<typeof BillingProfileUpdate>;

const EMPTY: BillingProfileView = { name: null, company: null, address: EMPTY_ADDRESS, vatId: null, updatedAt: null };

const viewOf = (item: BillingProfileItem | undefined): BillingProfileView =>
  item ? { ...item.profile, address: { ...EMPTY_ADDRESS, ...item.profile.address }, updatedAt: item.updatedAt } : EMPTY;

export async function getBillingProfile(accountId: string): Promise<BillingProfileView> {
  return viewOf(await accessPatterns.billingProfile(accountId));
}

/** Replaces the profile: what the update leaves out is cleared. Last write wins, as with any PUT of the whole resource. */
export async function putBillingProfile(accountId: string, update: Update): Promise<BillingProfileView> {
  const item: BillingProfileItem = {
    ...keys.billingProfile(accountId),
    kind: 'billing-profile',
    accountId,
    profile: {
      name: update.name ?? null,
      company: update.company ?? null,
      address: { ...EMPTY_ADDRESS, ...update.address },
      vatId: update.vatId?.toUpperCase() ?? null,
    },
    updatedAt: new Date().toISOString(),
  };
  await writeItem({ Put: { Item: item } });
  return viewOf(item);
}
