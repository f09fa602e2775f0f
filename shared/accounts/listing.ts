import { keys } from '../db/keys.ts';
import type { AccountItem, AccountListingItem } from '../db/items.ts';
import { isConditionFailed, transact, WriteConflictError } from '../db/write.ts';

/**
 * The account's row in the admin listing (GSI1 `ACCOUNTS#<n>`): an item of its own next to the
 * profile, holding what the listing sorts and filters on (creation time, e-mail; the e-mail changes
 * only with a confirmed change, shared/accounts/email-change.ts). The profile carries no GSI1 keys, so the balance changes of the hourly charges
 * write no index copy; the listing reads a page's profiles from the table (one BatchGetItem).
 */
export const listingEntry = (accountId: string, email: string, createdAt: string): AccountListingItem => ({
  ...keys.accountListingEntry(accountId),
  ...keys.accountsListing(accountId, createdAt),
  kind: 'account-listing',
  accountId,
  email,
  createdAt,
});

/**
 * An account created before the listing entry has the GSI1 keys on its profile. This moves them,
 * in one transaction, to a listing entry: the account is listed once before and after (never
 * twice, never not at all). Idempotent: a profile already moved (a concurrent pass) is left alone.
 * Returns whether it moved them.
 */
export async function moveListingOffProfile(profile: AccountItem): Promise<boolean> {
  if (!profile.GSI1PK) return false;
  try {
    await transact([
      {
        name: 'listing',
        Put: { Item: listingEntry(profile.accountId, profile.email, profile.createdAt), ConditionExpression: 'attribute_not_exists(PK)' },
      },
      {
        name: 'profile',
        Update: {
          Key: keys.account(profile.accountId),
          UpdateExpression: 'REMOVE GSI1PK, GSI1SK',
          ConditionExpression: 'attribute_exists(GSI1PK)',
        },
      },
    ]);
    return true;
  } catch (err) {
    // Moved by another pass already, or being moved right now: nothing to do (the next pass looks again).
    if (isConditionFailed(err) || err instanceof WriteConflictError) return false;
    throw err;
  }
}
