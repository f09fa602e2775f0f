import type * as z from 'zod';
import type { BillingProfile, BillingProfileUpdate } from '../api/schemas/billing-profile.ts';
import { EMPTY_ADDRESS } from '../api/empty-address.ts';
import type { BillingProfileItem } from '../db/items.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import { keys } from '../db/keys.ts';
import { isConditionFailed, writeItem } from '../db/write.ts';
import { checkVatId } from './vies.ts';

/**
 * The account's billing profile: who its invoices are addressed to (name, company, address, VAT
 * id), printed as the buyer on the invoice PDF. Its own item under the account's partition, not
 * fields of the profile item: that one is read by every request and by the billing pass, and
 * this personal data has no business in those reads.
 */
export type BillingProfileView = z.infer<typeof BillingProfile>;
type Update = z.output<typeof BillingProfileUpdate>;

const EMPTY: BillingProfileView = { name: null, company: null, address: EMPTY_ADDRESS, vatId: null, vatCheck: null, updatedAt: null };

/** VIES's answer about the VAT id the profile has now (an answer about an earlier id is no answer). */
const checkOf = (item: BillingProfileItem): BillingProfileView['vatCheck'] =>
  item.vatCheck && item.vatCheck.vatId === item.profile.vatId ? { valid: item.vatCheck.valid, checkedAt: item.vatCheck.checkedAt } : null;

const viewOf = (item: BillingProfileItem | undefined): BillingProfileView =>
  item
    ? { ...item.profile, address: { ...EMPTY_ADDRESS, ...item.profile.address }, vatCheck: checkOf(item), updatedAt: item.updatedAt }
    : EMPTY;

export async function getBillingProfile(accountId: string): Promise<BillingProfileView> {
  return viewOf(await accessPatterns.billingProfile(accountId));
}

/** Replaces the profile: what the update leaves out is cleared. Last write wins, as with any PUT of the whole resource. */
export async function putBillingProfile(accountId: string, update: Update): Promise<BillingProfileView> {
  const vatId = update.vatId?.toUpperCase() ?? null;
  // Checked as it is saved, so the profile view says at once whether the id earns a reverse charge.
  const vatCheck = vatId ? { vatId, valid: await checkVatId(vatId), checkedAt: new Date().toISOString() } : undefined;
  const item: BillingProfileItem = {
    ...keys.billingProfile(accountId),
    kind: 'billing-profile',
    accountId,
    profile: {
      name: update.name ?? null,
      company: update.company ?? null,
      address: { ...EMPTY_ADDRESS, ...update.address },
      vatId,
    },
    ...(vatCheck ? { vatCheck } : {}),
    updatedAt: new Date().toISOString(),
  };
  await writeItem({ Put: { Item: item } });
  return viewOf(item);
}

/**
 * The profile with an answer from VIES about its VAT id: the stored one, else (never checked, or
 * VIES could not say) asked now and kept, so a top-up never grants a reverse charge unchecked.
 */
export async function billingProfileChecked(accountId: string): Promise<BillingProfileView> {
  const item = await accessPatterns.billingProfile(accountId);
  const vatId = item?.profile.vatId;
  if (!item || !vatId || checkOf(item)?.valid != null) return viewOf(item);
  const vatCheck = { vatId, valid: await checkVatId(vatId), checkedAt: new Date().toISOString() };
  try {
    // Only onto the profile as read: a PUT in between made its own check.
    await writeItem({
      Update: {
        Key: keys.billingProfile(accountId),
        UpdateExpression: 'SET vatCheck = :check',
        ConditionExpression: 'updatedAt = :at',
        ExpressionAttributeValues: { ':check': vatCheck, ':at': item.updatedAt },
      },
    });
  } catch (err) {
    if (!isConditionFailed(err)) throw err;
  }
  return viewOf({ ...item, vatCheck });
}
