import type { z } from 'zod';
import * as accessPatterns from '../db/access-patterns.ts';
import type { ItemFilter, Page } from '../db/access-patterns.ts';
import { toAccountView } from '../accounts/index.ts';
import { getAccountLimits, isTrialAccount, profileOf } from '../settings/limits.ts';
import { listAllServers } from '../servers/read.ts';
import type { AdminAccount } from '../api/schemas/admin.ts';
import type { AccountItem } from '../db/items.ts';
import { getSettings } from '../settings/index.ts';

type AdminAccountView = z.infer<typeof AdminAccount>;

const adminView = (item: AccountItem, graceMinutes: number): AdminAccountView => ({
  ...toAccountView(item, graceMinutes),
  serverCount: Number(item.serverCount ?? 0),
});

/**
 * GET /v1/admin/users with `email` (a prefix) or `accountId`. Accounts store their e-mail in lower
 * case (accounts/index.ts), so the prefix, lowered by the schema, is a `begins_with` filter on the
 * reads the plain listing already makes (the 8 GSI1 `ACCOUNTS#<n>` shards, at most FILTERED_READ
 * items each a page): no index and no migration, and a page costs the accounts read, not matched
 * (docs/api.md "Admin in brief" has the figures). An exact id is one read.
 */
export async function searchAccounts(query: {
  limit: number;
  cursor?: string | undefined;
  email?: string | undefined;
  accountId?: string | undefined;
  boundTo: string;
}): Promise<Page<AdminAccountView>> {
  if (query.accountId) {
    const [item, { suspensionGraceMinutes }] = await Promise.all([accessPatterns.accountById(query.accountId), getSettings()]);
    const matches = item && (!query.email || item.email.startsWith(query.email));
    return { data: matches ? [adminView(item, suspensionGraceMinutes)] : [], nextCursor: null };
  }
  const filter: ItemFilter | undefined = query.email
    ? { expression: 'begins_with(#email, :emailPrefix)', names: { '#email': 'email' }, values: { ':emailPrefix': query.email } }
    : undefined;
  // The cursor is bound to the prefix too: replayed under another one it is 400 invalid_cursor.
  const boundTo = query.email ? `${query.boundTo}:email=${query.email}` : query.boundTo;
  const [result, { suspensionGraceMinutes }] = await Promise.all([
    accessPatterns.allAccounts({ limit: query.limit, cursor: query.cursor, boundTo }, filter),
    getSettings(),
  ]);
  return { data: result.data.map((item) => adminView(item, suspensionGraceMinutes)), nextCursor: result.nextCursor };
}

/** GET /v1/admin/users/:id: the account, its limits, trial state and newest servers; 404 for an unknown id. */
export async function accountDetail(accountId: string, adminId: string) {
  const profile = await profileOf(accountId); // 404 for an unknown id
  const [limits, trialActive, servers, { suspensionGraceMinutes }] = await Promise.all([
    getAccountLimits(accountId),
    isTrialAccount(profile),
    // Bound as GET /v1/admin/servers?accountId=<id> binds it, so the cursor continues there.
    listAllServers({ accountId, limit: 10, boundTo: `admin-servers:${adminId}` }),
    getSettings(),
  ]);
  // isTrialAccount records paidAt when it first finds the payment: read it back only then.
  const paidAt = profile.paidAt ?? (trialActive ? null : ((await accessPatterns.accountById(accountId))?.paidAt ?? null));
  return {
    account: adminView(profile, suspensionGraceMinutes),
    limits,
    trial: { granted: Boolean(profile.trialGranted), active: trialActive, paidAt },
    servers: { count: Number(profile.serverCount ?? 0), data: servers.data, nextCursor: servers.nextCursor },
  };
}
