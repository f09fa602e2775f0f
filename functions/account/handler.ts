import { createGroupHandler } from '../../shared/http/handler.ts';
import { getAccount } from '../../shared/accounts/index.ts';
import { listActivity } from '../../shared/audit/index.ts';
import { createApiKey, listApiKeys, revokeApiKey } from '../../shared/keys/index.ts';

/** Account group: the caller's account, activity log and API keys. */
export const handler = createGroupHandler('account', {
  getAccount: async ({ principal }) => getAccount(principal.accountId),

  listActivity: async ({ principal, query }) =>
    listActivity(principal.accountId, { ...query, boundTo: `activity:${principal.accountId}` }),

  listKeys: async ({ principal, query }) => listApiKeys(principal.accountId, { ...query, boundTo: `keys:${principal.accountId}` }),

  createKey: async ({ principal, body, audit }) => {
    const { key, secret } = await createApiKey(principal, body);
    audit.target = `key:${key.id}`;
    audit.details = { name: key.name, scopes: key.scopes, expiresAt: key.expiresAt };
    return { ...key, secret };
  },

  revokeKey: async ({ principal, params, audit }) => {
    audit.target = `key:${params.id}`;
    return revokeApiKey(principal.accountId, params.id);
  },
});
