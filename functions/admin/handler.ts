import { createGroupHandler } from '../../shared/http/handler.ts';
import { adminRoutes } from '../../shared/api/routes/admin.ts';
import { listAccounts } from '../../shared/accounts/index.ts';
import { listPlatformAudit } from '../../shared/audit/index.ts';
import { getSettings } from '../../shared/settings/index.ts';
import { listAllServers } from '../../shared/servers/read.ts';
import { adjustCredit } from '../../shared/accounts/credits.ts';
import { deductPaidCredit } from '../../shared/credit-notes/deductions.ts';
import type { LedgerChange } from '../../shared/ledger/index.ts';
import { getAccountLimits, setAccountLimits } from '../../shared/settings/limits.ts';
import { getBalanceAlerts, setLowBalanceThreshold } from '../../shared/ledger/alerts.ts';
import { accountDetail, searchAccounts } from '../../shared/admin/users.ts';
import { adminDelete, adminReinstall, adminSuspend, adminUnsuspend } from '../../shared/admin/servers.ts';
import { updateSettings } from '../../shared/settings/update.ts';
import { uploadLogo } from '../../shared/brand/logo.ts';
import { refundInvoice } from '../../shared/payments/refunds.ts';
import { stripeWebhookHealth } from '../../shared/payments/webhook-endpoint.ts';
import { paymentRoutes } from '../../shared/api/routes/payments.ts';
import { sellerStatus } from '../../shared/invoices/parties.ts';
import { platformHome } from '../../shared/admin/home.ts';

/** Admin group: everything under /v1/admin (admin accounts with the `admin` scope only). */
export const handler = createGroupHandler('admin', adminRoutes, {
  adminListUsers: async ({ principal, query }) =>
    query.email || query.accountId
      ? searchAccounts({ ...query, boundTo: `admin-users:${principal.accountId}` })
      : listAccounts({ ...query, boundTo: `admin-users:${principal.accountId}` }),

  adminGetUser: async ({ principal, params }) => accountDetail(params.id, principal.accountId),

  adminSuspendServer: async ({ params, audit }) => {
    audit.target = `server:${params.id}`;
    const view = await adminSuspend(params.id);
    audit.details = { accountId: view.accountId, reason: 'admin' };
    return view;
  },

  adminUnsuspendServer: async ({ params, audit }) => {
    audit.target = `server:${params.id}`;
    const view = await adminUnsuspend(params.id);
    audit.details = { accountId: view.accountId, status: view.status, suspendedReason: view.suspendedReason };
    return view;
  },

  adminDeleteServer: async ({ params, audit }) => {
    audit.target = `server:${params.id}`;
    const { accountId, ...result } = await adminDelete(params.id);
    audit.details = { accountId, panel: result.panel };
    return result;
  },

  adminReinstallServer: async ({ params, audit }) => {
    audit.target = `server:${params.id}`;
    const { accountId, ...result } = await adminReinstall(params.id);
    audit.details = { accountId };
    return result;
  },

  adminListLogs: async ({ principal, query }) => listPlatformAudit({ ...query, boundTo: `admin-logs:${principal.accountId}` }),

  adminGetSettings: async () => getSettings(true),

  adminUpdateSettings: async ({ principal, body, audit }) => {
    const { before, after, changed } = await updateSettings(body, principal.accountId);
    audit.target = 'settings';
    audit.details = {
      changed,
      before: Object.fromEntries(changed.map((path) => [path, valueAt(before, path)])),
      after: Object.fromEntries(changed.map((path) => [path, valueAt(after, path)])),
    };
    return after;
  },

  adminUploadBrandLogo: async ({ principal, body, baseUrl, audit }) => {
    const brand = await uploadLogo(body.dataBase64, baseUrl, principal.accountId);
    audit.target = 'settings';
    audit.details = { logo: brand.logo };
    return brand;
  },

  adminGetLimits: async ({ params }) => getAccountLimits(params.id),

  adminSetLimits: async ({ params, body, audit }) => {
    audit.target = `account:${params.id}`;
    const { before, view } = await setAccountLimits(params.id, body);
    audit.details = { before, after: view.overrides };
    return view;
  },

  adminGetAlerts: async ({ params }) => getBalanceAlerts(params.id),

  adminSetAlerts: async ({ params, body, audit }) => {
    audit.target = `account:${params.id}`;
    const { before, view } = await setLowBalanceThreshold(params.id, body.lowBalanceThresholdCents);
    audit.details = { before, after: view.override };
    return view;
  },

  adminCredit: async ({ principal, params, body, headers, requestId, audit }) => {
    audit.target = `account:${params.id}`;
    audit.details = { amountCents: body.amountCents, note: body.note, invoiceId: body.invoiceId ?? null };
    const { invoiceId } = body;
    // A deduction of paid credit books its credit note in the same transaction.
    const withNote = invoiceId ? (change: LedgerChange) => deductPaidCredit(params.id, invoiceId, change) : undefined;
    return adjustCredit(params.id, body, principal.accountId, headers['idempotency-key'] ?? requestId, withNote);
  },

  adminRefundInvoice: async ({ params, body, headers, requestId, audit }) => {
    audit.target = `invoice:${params.id}`;
    audit.details = { amountCents: body.amountCents, reason: body.reason };
    const result = await refundInvoice(params.id, body, headers['idempotency-key'] ?? requestId);
    audit.details = { ...audit.details, refundId: result.refundId, status: result.status };
    return result;
  },

  adminHealth: async ({ baseUrl }) => ({
    stripeWebhook: await stripeWebhookHealth(`${baseUrl}${paymentRoutes.stripeWebhook.path}`),
    invoiceIssuer: sellerStatus((await getSettings()).invoiceIssuer),
  }),

  adminHome: async () => platformHome(),

  adminListServers: async ({ principal, query }) => listAllServers({ ...query, boundTo: `admin-servers:${principal.accountId}` }),
});

const valueAt = (obj: object, path: string): unknown =>
  path.split('.').reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined), obj);
