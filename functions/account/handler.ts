import { createGroupHandler } from '../../shared/http/handler.ts';
import { getAccount } from '../../shared/accounts/index.ts';
import { listActivity } from '../../shared/audit/index.ts';
import { createApiKey, listApiKeys, revokeApiKey } from '../../shared/keys/index.ts';
import { listLedger } from '../../shared/ledger/index.ts';
import { getBudget, setBudget } from '../../shared/budgets/index.ts';
import { unsuspendAfterCredit } from '../../shared/servers/suspension.ts';

/** Account group: the caller's account, activity log and API keys. */
export const handler = createGroupHandler('account', {
  getAccount: async ({ principal }) => getAccount(principal.accountId),

  listActivity: async ({ principal, query }) => listActivity(principal.accountId, { ...query, boundTo: `activity:${principal.accountId}` }),

  listKeys: async ({ principal, query }) => listApiKeys(principal.accountId, { ...query, boundTo: `keys:${principal.accountId}` }),

  createKey: async ({ principal, body, audit }) => {
    const { key, secret } = await createApiKey(principal, body);
    audit.target = `key:${key.id}`;
    audit.details = { name: key.name, scopes: key.scopes, expiresAt: key.expiresAt };
    return { ...key, secret };
  },

  listTransactions: async ({ principal, query }) => listLedger(principal.accountId, { ...query, boundTo: `ledger:${principal.accountId}` }),

  getBudget: async ({ principal }) => getBudget(principal.accountId),

  putBudget: async ({ principal, body, audit }) => {
    audit.target = `account:${principal.accountId}`;
    audit.details = { monthlyCapCents: body.monthlyCapCents, action: body.action };
    const budget = await setBudget(principal.accountId, body);
    // A raised or cleared cap lifts a budget suspension now.
    await unsuspendAfterCredit(principal.accountId, 'budget');
    return budget;
  },

  revokeKey: async ({ principal, params, audit }) => {
    audit.target = `key:${params.id}`;
    return revokeApiKey(principal.accountId, params.id);
  },
});
