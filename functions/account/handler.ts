import { createGroupHandler } from '../../shared/http/handler.ts';
import { accountRoutes } from '../../shared/api/routes/account.ts';
import { getAccount } from '../../shared/accounts/index.ts';
import { listActivity } from '../../shared/audit/index.ts';
import { listLedger } from '../../shared/ledger/index.ts';
import { getBudget, setBudget } from '../../shared/budgets/index.ts';
import { getBalanceAlerts, setLowBalanceThreshold } from '../../shared/ledger/alerts.ts';
import { getBillingProfile, putBillingProfile } from '../../shared/accounts/billing-profile.ts';

// Loaded with their routes' first request: a cold start that reads the account loads neither the
// key management nor the webhook endpoints (bench/results.md, section 1).
const apiKeys = () => import('../../shared/api-keys/index.ts');
const webhooks = () => import('../../shared/webhooks/endpoints.ts');

/** Account group: the caller's account, activity log and API keys. */
export const handler = createGroupHandler('account', accountRoutes, {
  getAccount: async ({ principal }) => getAccount(principal.accountId),

  listActivity: async ({ principal, query }) => listActivity(principal.accountId, { ...query, boundTo: `activity:${principal.accountId}` }),

  listKeys: async ({ principal, query }) =>
    (await apiKeys()).listApiKeys(principal.accountId, { ...query, boundTo: `keys:${principal.accountId}` }),

  createKey: async ({ principal, body, audit }) => {
    const { key, secret } = await (await apiKeys()).createApiKey(principal, body);
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
    // which re-reads budget and balance). Loaded on use: the panel work stays out of the start chunk.
    const { unsuspendAfterCredit } = await import('../../shared/servers/suspension.ts');
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
    // Loaded on first use: the panel client and the SFTP flow stay out of the account function's start chunk.
    const { setSftpPassword } = await import('../../shared/servers/sftp.ts');
    const result = await setSftpPassword(principal.accountId);
    // Never the password: only which servers the login may open.
    audit.details = { servers: result.servers.length, enabled: result.servers.filter((s) => s.enabled).length };
    return result;
  },

  updateKey: async ({ principal, params, body, audit }) => {
    audit.target = `key:${params.id}`;
    audit.details = { labels: Object.keys(body.labels).length };
    return (await apiKeys()).updateApiKeyLabels(principal.accountId, params.id, body.labels);
  },

  revokeKey: async ({ principal, params, audit }) => {
    audit.target = `key:${params.id}`;
    return (await apiKeys()).revokeApiKey(principal.accountId, params.id);
  },

  // Webhooks: the activity log names the endpoint and what changed, never its secret.
  listWebhookEndpoints: async ({ principal, query }) =>
    (await webhooks()).listEndpoints(principal.accountId, { ...query, boundTo: `webhook-endpoints:${principal.accountId}` }),

  createWebhookEndpoint: async ({ principal, body, audit }) => {
    const { endpoint, secret } = await (await webhooks()).createEndpoint(principal.accountId, body, principal.scopes);
    audit.target = `webhook-endpoint:${endpoint.id}`;
    audit.details = { url: endpoint.url, events: endpoint.events };
    return { ...endpoint, secret };
  },

  getWebhookEndpoint: async ({ principal, params }) => (await webhooks()).getEndpoint(principal.accountId, params.id),

  updateWebhookEndpoint: async ({ principal, params, body, audit }) => {
    audit.target = `webhook-endpoint:${params.id}`;
    audit.details = { changed: Object.keys(body).sort() };
    return (await webhooks()).updateEndpoint(principal.accountId, params.id, body, principal.scopes);
  },

  deleteWebhookEndpoint: async ({ principal, params, audit }) => {
    audit.target = `webhook-endpoint:${params.id}`;
    return (await webhooks()).deleteEndpoint(principal.accountId, params.id);
  },

  rotateWebhookSecret: async ({ principal, params, audit }) => {
    audit.target = `webhook-endpoint:${params.id}`;
    return (await webhooks()).rotateSecret(principal.accountId, params.id);
  },

  listWebhookDeliveries: async ({ principal, params, query }) =>
    (await webhooks()).listDeliveries(principal.accountId, params.id, {
      ...query,
      boundTo: `webhook-deliveries:${principal.accountId}:${params.id}`,
    }),

  redeliverWebhook: async ({ principal, params, audit }) => {
    audit.target = `webhook-delivery:${params.deliveryId}`;
    audit.details = { endpointId: params.id };
    return (await webhooks()).redeliverDelivery(principal.accountId, params.id, params.deliveryId);
  },

  listEvents: async ({ principal, query }) =>
    (await webhooks()).listEvents(
      principal.accountId,
      { limit: query.limit, cursor: query.cursor, boundTo: `events:${principal.accountId}:${query.type ?? ''}` },
      principal.scopes,
      query.type,
    ),

  getEvent: async ({ principal, params }) => (await webhooks()).getEvent(principal.accountId, params.id, principal.scopes),
});
