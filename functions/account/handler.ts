import { createGroupHandler } from '../../shared/http/handler.ts';
import { accountRoutes } from '../../shared/api/routes/account.ts';
import { getAccount } from '../../shared/accounts/index.ts';
import { listActivity } from '../../shared/audit/index.ts';
import { listLedger } from '../../shared/ledger/index.ts';
import { getBudget, setBudget } from '../../shared/budgets/index.ts';
import { getBalanceAlerts, setLowBalanceThreshold } from '../../shared/ledger/alerts.ts';
import { getBillingProfile, putBillingProfile } from '../../shared/accounts/billing-profile.ts';
import { getMailPreferences, setMailPreferences } from '../../shared/mail/preferences.ts';
import { requestEmailChange } from '../../shared/accounts/email-change.ts';

import * as apiKeys from '../../shared/api-keys/index.ts';
import * as webhooks from '../../shared/webhooks/endpoints.ts';
import { unsuspendAfterCredit } from '../../shared/servers/suspension.ts';
import { setSftpPassword } from '../../shared/servers/sftp.ts';

/** Account group: the caller's account, activity log and API keys. */
export const handler = createGroupHandler('account', accountRoutes, {
  getAccount: async ({ principal }) => getAccount(principal.accountId),

  listActivity: async ({ principal, query }) => listActivity(principal.accountId, { ...query, boundTo: `activity:${principal.accountId}` }),

  listKeys: async ({ principal, query }) => apiKeys.listApiKeys(principal.accountId, { ...query, boundTo: `keys:${principal.accountId}` }),

  createKey: async ({ principal, body, audit }) => {
    const { key, secret } = await apiKeys.createApiKey(principal, body);
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
    // A raised or cleared cap lifts a budget suspension now (a lowered one waits for the billing pass,
    // which re-reads budget and balance).
    await unsuspendAfterCredit(principal.accountId, 'budget');
    return budget;
  },

  getAlerts: async ({ principal }) => getBalanceAlerts(principal.accountId),

  putAlerts: async ({ principal, body, audit }) => {
    audit.target = `account:${principal.accountId}`;
    const { before, view } = await setLowBalanceThreshold(principal.accountId, body.lowBalanceThresholdCents);
    audit.details = { before, after: view.override };
    return view;
  },

  getMailPreferences: async ({ principal }) => getMailPreferences(principal.accountId),

  putMailPreferences: async ({ principal, body, audit }) => {
    audit.target = `account:${principal.accountId}`;
    audit.details = { preferences: body.preferences };
    return setMailPreferences(principal.accountId, body.preferences);
  },

  putEmail: async ({ principal, body, audit }) => {
    audit.target = `account:${principal.accountId}`;
    // Not the addresses: the activity log keeps no personal data (the events carry them).
    return requestEmailChange(principal.accountId, body.email);
  },

  getBillingProfile: async ({ principal }) => getBillingProfile(principal.accountId),

  putBillingProfile: async ({ principal, body, audit }) => {
    audit.target = `account:${principal.accountId}`;
    // Which fields are set, not their values: the activity log keeps no personal data.
    audit.details = {
      set: Object.keys(body)
        .filter((k) => body[k as keyof typeof body] != null)
        .sort(),
    };
    return putBillingProfile(principal.accountId, body);
  },

  setSftpPassword: async ({ principal, audit }) => {
    audit.target = `account:${principal.accountId}`;
    const result = await setSftpPassword(principal.accountId);
    // Never the password: only which servers the login may open.
    audit.details = { servers: result.servers.length, enabled: result.servers.filter((s) => s.enabled).length };
    return result;
  },

  updateKey: async ({ principal, params, body, audit }) => {
    audit.target = `key:${params.id}`;
    audit.details = { labels: Object.keys(body.labels).length };
    return apiKeys.updateApiKeyLabels(principal.accountId, params.id, body.labels);
  },

  revokeKey: async ({ principal, params, audit }) => {
    audit.target = `key:${params.id}`;
    return apiKeys.revokeApiKey(principal.accountId, params.id);
  },

  // Webhooks: the activity log names the endpoint and what changed, never its secret.
  listWebhookEndpoints: async ({ principal, query }) =>
    webhooks.listEndpoints(principal.accountId, { ...query, boundTo: `webhook-endpoints:${principal.accountId}` }),

  createWebhookEndpoint: async ({ principal, body, audit }) => {
    const { endpoint, secret } = await webhooks.createEndpoint(principal.accountId, body, principal.scopes);
    audit.target = `webhook-endpoint:${endpoint.id}`;
    audit.details = { url: endpoint.url, events: endpoint.events };
    return { ...endpoint, secret };
  },

  getWebhookEndpoint: async ({ principal, params }) => webhooks.getEndpoint(principal.accountId, params.id),

  updateWebhookEndpoint: async ({ principal, params, body, audit }) => {
    audit.target = `webhook-endpoint:${params.id}`;
    audit.details = { changed: Object.keys(body).sort() };
    return webhooks.updateEndpoint(principal.accountId, params.id, body, principal.scopes);
  },

  deleteWebhookEndpoint: async ({ principal, params, audit }) => {
    audit.target = `webhook-endpoint:${params.id}`;
    return webhooks.deleteEndpoint(principal.accountId, params.id);
  },

  rotateWebhookSecret: async ({ principal, params, audit }) => {
    audit.target = `webhook-endpoint:${params.id}`;
    return webhooks.rotateSecret(principal.accountId, params.id);
  },

  listWebhookDeliveries: async ({ principal, params, query }) =>
    webhooks.listDeliveries(principal.accountId, params.id, {
      ...query,
      boundTo: `webhook-deliveries:${principal.accountId}:${params.id}`,
    }),

  redeliverWebhook: async ({ principal, params, audit }) => {
    audit.target = `webhook-delivery:${params.deliveryId}`;
    audit.details = { endpointId: params.id };
    return webhooks.redeliverDelivery(principal.accountId, params.id, params.deliveryId);
  },

  listEvents: async ({ principal, query }) =>
    webhooks.listEvents(
      principal.accountId,
      { limit: query.limit, cursor: query.cursor, boundTo: `events:${principal.accountId}:${query.type ?? ''}` },
      principal.scopes,
      query.type,
    ),

  getEvent: async ({ principal, params }) => webhooks.getEvent(principal.accountId, params.id, principal.scopes),
});
