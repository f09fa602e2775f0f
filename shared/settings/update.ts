import type { z } from 'zod';
import type { SettingsUpdate, SettingsValue } from '../api/schemas/settings.ts';
import { keys } from '../db/keys.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import { getConfig } from '../config/env.ts';
import { isConditionFailed, writeItem } from '../db/write.ts';
import { ApiError } from '../errors.ts';
import { getSettings, mergeIssuer, rememberSettings } from './index.ts';

/**
 * Saving the platform settings (admin group). Every part is checked before it gets here: the update
 * by its route's schema (SettingsUpdate: each field as Settings has it, nested ones field by field),
 * what is stored when it was saved; so the merge is valid Settings, and only the rule across fields
 * is checked here. Neither reading nor saving builds the schema (the admin function's start).
 */
export interface SettingsChange {
  before: SettingsValue;
  after: SettingsValue;
  changed: string[];
}

/** Applies a partial (or whole) update under the version read; an update that changes nothing is not written. */
export async function updateSettings(
  update: z.infer<typeof SettingsUpdate>,
  actorId: string,
  // Only the logo upload (shared/brand/logo.ts) sets a new brand.logo.
  options: { logoUpload?: boolean } = {},
): Promise<SettingsChange> {
  const item = await accessPatterns.settings();
  const before = await getSettings(true);
  const after: SettingsValue = {
    ...before,
    ...update,
    prices: { ...before.prices, ...update.prices },
    serverCaps: { ...before.serverCaps, ...update.serverCaps },
    addons: { ...before.addons, ...update.addons },
    invoiceIssuer: mergeIssuer(before.invoiceIssuer, update.invoiceIssuer),
    brand: { ...before.brand, ...update.brand },
  };
  // The logo is the upload's (PUT /v1/admin/brand/logo): sent back unchanged, or null to remove it.
  if (!options.logoUpload && update.brand?.logo && update.brand.logo.sha256 !== before.brand.logo?.sha256) {
    throw new ApiError(
      'validation_failed',
      'brand.logo is set by uploading the file (PUT /v1/admin/brand/logo); send it unchanged or null',
      {
        issues: [{ field: 'body.brand.logo', message: 'upload the file with PUT /v1/admin/brand/logo; here only unchanged or null' }],
      },
    );
  }
  if (!options.logoUpload && update.brand?.logo) after.brand.logo = before.brand.logo;
  if (after.minimumTopUpCents > after.maximumTopUpCents) {
    throw new ApiError('validation_failed', 'minimumTopUpCents must not exceed maximumTopUpCents', {
      issues: [{ field: 'body.minimumTopUpCents', message: 'must not exceed maximumTopUpCents' }],
    });
  }
  if (after.currency !== before.currency && (await currencyIsFixed())) {
    throw new ApiError(
      'conflict',
      `The currency is fixed once customer accounts exist: balances and invoices are in ${before.currency.toUpperCase()}. Nothing was changed.`,
      { currency: before.currency },
    );
  }
  const changed = diffPaths(before, after);
  // Sending back what GET returned changes nothing, so nothing is written: the version stays and
  // an admin saving a real change at the same moment does not get a conflict for it.
  if (changed.length === 0) return { before, after: before, changed };
  const version = Number(item?.version ?? 0);
  try {
    await writeItem({
      Put: {
        Item: {
          ...keys.settings(),
          kind: 'settings',
          value: after,
          version: version + 1,
          updatedAt: new Date().toISOString(),
          updatedBy: actorId,
        },
        // Two admins saving at once: the second gets a conflict instead of silently undoing the first.
        ConditionExpression: item ? 'version = :v' : 'attribute_not_exists(PK)',
        ExpressionAttributeValues: item ? { ':v': version } : undefined,
      },
    });
  } catch (err) {
    if (isConditionFailed(err)) {
      throw new ApiError('conflict', 'The settings changed while saving; read them again and retry');
    }
    throw err;
  }
  rememberSettings(after);
  return { before, after, changed };
}

function diffPaths(a: Record<string, unknown>, b: Record<string, unknown>, prefix = ''): string[] {
  const out: string[] = [];
  for (const key of Object.keys(b)) {
    const x = a[key];
    const y = b[key];
    if (x && y && typeof x === 'object' && typeof y === 'object')
      out.push(...diffPaths(x as Record<string, unknown>, y as Record<string, unknown>, `${prefix}${key}.`));
    else if (x !== y) out.push(`${prefix}${key}`);
  }
  return out;
}

/**
 * Whether the deployment's currency may no longer change: some account is a customer's (not an
 * ADMIN_EMAILS one), or moved money beyond its first ledger entry (the trial credit). The operator's
 * own account exists as soon as they sign in to set up, so it alone does not fix the currency.
 * A customer signing up in the very moment of the change is not excluded; set-up happens before launch.
 */
async function currencyIsFixed(): Promise<boolean> {
  const { adminEmails } = getConfig();
  // One more than the operators' accounts: a page that does not hold them all holds a customer's.
  const page = await accessPatterns.allAccounts({ limit: Math.min(100, adminEmails.size + 1), boundTo: 'settings:currency' });
  if (page.nextCursor) return true;
  return page.data.some((account) => !adminEmails.has(account.email.toLowerCase()) || Number(account.ledgerSeq ?? 0) > 1);
}
