import { assertWithinBudget } from '../budgets/index.ts';
import { ApiError } from '../errors.ts';
import { getInstance, panelClientFor } from '../instances/index.ts';
import { errorFields, logger } from '../observability/logger.ts';
import type { PanelClient } from '../panel/client.ts';
import { isAmbiguous } from '../panel/errors.ts';
import type { BuildBody, ListEnvelope, PanelServer } from '../panel/types.ts';
import { type Addons, centsUp, exactPriceOf, featureLimitsOf, priceWithAddons } from '../pricing/index.ts';
import { getSettings } from '../settings/index.ts';
import { assertCustomerMayHold, withServerLease } from './lease.ts';
import { checkAddonMaxima, insufficientCredit, requiredBalance } from './limits.ts';
import { getOwnedServer } from './read.ts';
import { profileSnapshot, recordAddons } from './records.ts';
import { buildWith } from './resize.ts';
import { type ServerView, toServerView } from './views.ts';

/**
 * Add-ons (PUT /v1/servers/:id/addons): extra backup slots, databases and ports beyond what the
 * settings include, priced per hour and added to the server's hourly price (shared/pricing), so the
 * hourly billing pass charges them like resources from the moment of the change, and the budget
 * bounds them through the burn.
 *
 * Under the server's lease: the record is read, the maxima, the 24-hour runway and the budget are
 * checked as for an upsize (only when the price rises), then the panel's feature limits are written
 * with ONE Application build PATCH carrying the rest of the build as it is (the panel requires
 * allocation, limits and feature_limits on every build change), then the record. The panel itself
 * accepts limits below what a server holds (BuildModificationService writes them unchecked, and
 * only refuses the next create), so a lowering below what the server uses now is refused here: 409
 * `conflict` naming the count, nothing changed.
 *
 * Panel calls: 2 (the server with its allocations and databases, the build PATCH); 3 when the
 * backup slots go down (the backup count, on the Client API). Unchanged add-ons: none.
 */
export async function setAddons(accountId: string, serverId: string, addons: Addons): Promise<ServerView> {
  // 404 for another account's server, then the account's state, before the lease (lease.ts).
  await assertCustomerMayHold(await getOwnedServer(accountId, serverId));
  return withServerLease(serverId, 'addons', () => setAddonsHeld(accountId, serverId, addons));
}

async function setAddonsHeld(accountId: string, serverId: string, addons: Addons): Promise<ServerView> {
  const item = await getOwnedServer(accountId, serverId);
  if (item.status !== 'active') throw new ApiError('conflict', `The server is ${item.status}; only active servers can change add-ons`);
  const settings = await getSettings();
  checkAddonMaxima(addons, settings, 'body');
  const had = item.addons ?? { backups: 0, databases: 0, ports: 0 };
  if (had.backups === addons.backups && had.databases === addons.databases && had.ports === addons.ports) return toServerView(item);

  // On a plan with a set price: that price plus the extras beyond the plan's add-ons, which stay bought.
  const kept = item.planPrice?.addons;
  const below = kept ? (['backups', 'databases', 'ports'] as const).filter((k) => addons[k] < kept[k]) : [];
  if (kept && below.length) {
    const issues = below.map((k) => ({ field: `body.${k}`, message: `must be at least ${kept[k]} (the plan's)` }));
    throw new ApiError('plan_mismatch', `Not as the plan: ${issues.map((i) => `${i.field} ${i.message}`).join('; ')}`, { issues });
  }
  const priceMillicents = priceWithAddons(item, addons, settings);
  const snap = await profileSnapshot(accountId);
  const burnAfter = snap.burnMillicentsPerHour - exactPriceOf(item) + priceMillicents;
  // Removing is always allowed; anything that raises the price needs the runway and the budget.
  if (priceMillicents > exactPriceOf(item)) {
    const required = requiredBalance(burnAfter, settings.minimumBalanceCents);
    if (snap.balanceCents < required) throw insufficientCredit(snap.balanceCents, required, burnAfter);
    if (snap.budgetCapCents !== null) await assertWithinBudget(accountId, burnAfter);
  }

  const limits = featureLimitsOf(addons, settings);
  const client = await panelClientFor(await getInstance(item.instanceId));
  const usage = await client.getServerWithUsage(item.panelServerId);
  await assertFits(client, item.identifier, usage, limits, addons.backups < had.backups);
  const onPanel = usage.server;
  await applyLimits(client, onPanel, limits, serverId);

  const now = new Date().toISOString();
  try {
    await recordAddons({
      accountId,
      serverId,
      previous: item,
      addons,
      priceMillicents,
      at: now,
      minimumBalanceCents: settings.minimumBalanceCents,
      snapshot: snap,
    });
  } catch (err) {
    // Put the panel's limits back to what they were under this lease.
    await applyLimits(client, onPanel, onPanel.feature_limits, serverId).catch((e) =>
      logger.error('addons: could not restore the panel feature limits', { serverId, ...errorFields(e) }),
    );
    throw err;
  }
  return toServerView({
    ...item,
    addons,
    priceMillicentsPerHour: priceMillicents,
    priceCentsPerHour: Math.max(1, centsUp(priceMillicents)),
    updatedAt: now,
  });
}

/** The panel would keep what a server holds above a lowered limit: refused here, naming the count. */
async function assertFits(
  client: PanelClient,
  identifier: string,
  usage: { allocations: number; databases: number },
  limits: BuildBody['feature_limits'],
  backupsLowered: boolean,
): Promise<void> {
  if (usage.databases > limits.databases) {
    throw new ApiError(
      'conflict',
      `The server has ${usage.databases} databases; with these add-ons it may have ${limits.databases}. Delete ${usage.databases - limits.databases} first.`,
      { field: 'databases', inUse: usage.databases, limit: limits.databases },
    );
  }
  if (usage.allocations > limits.allocations) {
    throw new ApiError(
      'conflict',
      `The server has ${usage.allocations} ports; with these add-ons it may have ${limits.allocations}. Remove ${usage.allocations - limits.allocations} first.`,
      { field: 'ports', inUse: usage.allocations, limit: limits.allocations },
    );
  }
  if (!backupsLowered || !client.hasClientKey) return;
  // The panel counts backups that are not failed (its `backup_count`) against the limit.
  const list = await client.serverCall<ListEnvelope<unknown> & { meta?: { backup_count?: number } }>(identifier, 'GET', '/backups', {
    query: { per_page: 1 },
    idempotent: true,
    expect: 'json',
  });
  const backups = Number(list.meta?.backup_count ?? 0);
  if (backups > limits.backups) {
    throw new ApiError(
      'conflict',
      `The server has ${backups} backups; with these add-ons it may have ${limits.backups}. Delete ${backups - limits.backups} first.`,
      { field: 'backups', inUse: backups, limit: limits.backups },
    );
  }
}

const sameLimits = (a: BuildBody['feature_limits'], b: BuildBody['feature_limits']): boolean =>
  a.databases === b.databases && a.allocations === b.allocations && a.backups === b.backups;

/** One build PATCH with the panel's build as it is and the new feature limits; a lost answer is settled by reading back. */
async function applyLimits(
  client: PanelClient,
  onPanel: PanelServer,
  limits: BuildBody['feature_limits'],
  serverId: string,
): Promise<void> {
  const resources = { ramMb: onPanel.limits.memory, cpuPercent: onPanel.limits.cpu, diskMb: onPanel.limits.disk };
  try {
    await client.updateBuild(onPanel.id, buildWith(onPanel, resources, limits));
  } catch (err) {
    if (!isAmbiguous(err)) throw err;
    const now = await client.getServer(onPanel.id).catch(() => undefined);
    if (now && sameLimits(now.feature_limits, limits)) {
      logger.warn('addons: build answer lost, the panel has the new limits', { serverId, panelServerId: onPanel.id });
      return;
    }
    throw err;
  }
}
