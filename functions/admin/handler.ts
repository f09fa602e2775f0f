import { createGroupHandler } from '../../shared/http/handler.ts';
import { listAccounts } from '../../shared/accounts/index.ts';
import { listPlatformAudit } from '../../shared/audit/index.ts';
import { getSettings, updateSettings } from '../../shared/settings/index.ts';

/** Admin group: everything under /v1/admin (admin accounts with the `admin` scope only). */
export const handler = createGroupHandler('admin', {
  adminListUsers: async ({ principal, query }) => listAccounts({ ...query, boundTo: `admin-users:${principal.accountId}` }),

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
});

const valueAt = (obj: object, path: string): unknown =>
  path.split('.').reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined), obj);
