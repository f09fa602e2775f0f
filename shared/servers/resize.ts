import { assertWithinBudget } from '../budgets/index.ts';
import type { ServerItem } from '../db/items.ts';
import { countGrowth } from '../catalog/topology.ts';
import { ApiError } from '../errors.ts';
import { getInstance, panelClientFor } from '../instances/index.ts';
import { errorFields, logger } from '../observability/logger.ts';
import type { PanelClient } from '../panel/client.ts';
import { isAmbiguous } from '../panel/errors.ts';
import type { BuildBody, PanelServer } from '../panel/types.ts';
import { freeCapacity } from '../placement/index.ts';
import {
  centsUp,
  exactPriceOf,
  featureLimitsOf,
  NO_ADDONS,
  priceWithAddons,
  type Resources,
  serverPriceMillicents,
} from '../pricing/index.ts';
import { getSettings } from '../settings/index.ts';
import { queueRepair } from './pending.ts';
import { checkCaps, insufficientCredit, requiredBalance } from './limits.ts';
import { getOwnedServer } from './read.ts';
import { profileSnapshot, recordResized } from './records.ts';
import { type ServerView, toServerView } from './views.ts';

/**
 * Resize, for a caller that holds the server's lease (update.ts: a PATCH that also renames holds it
 * once for both): the panel's build first, then the record.
 *
 * - The record is read under the lease, so it is the committed state nobody else can change
 *   until we are done; a failure to record puts the panel back to exactly that state.
 * - Only memory, cpu and disk change: swap, io, threads and the OOM setting are whatever the panel
 *   has (an admin may have set them there); the feature limits follow the settings' included
 *   counts plus the server's add-ons (shared/servers/addons.ts).
 * - A build change whose answer was lost (timeout, 5xx) is settled by reading the panel back,
 *   as deploy settles a lost create by its external id, so panel and record agree when the
 *   request ends. When the read-back is lost too, the panel may hold either build: the server is
 *   queued for the pending-repair pass (pending.ts), which puts the record's build back within
 *   minutes, and the caller gets the panel's error (504 `panel_timeout`, 503 `panel_unavailable`).
 */
export async function resizeHeld(accountId: string, serverId: string, resources: Resources): Promise<ServerView> {
  const item = await getOwnedServer(accountId, serverId);
  const server = toServerView(item);
  if (server.status !== 'active') throw new ApiError('conflict', `The server is ${server.status}; only active servers can be resized`);
  await checkCaps(resources);
  const settings = await getSettings();
  // A server on a plan has the plan's resources: the same ones keep the plan and its price; others
  // leave it (a custom size), priced from the resources. The add-ons stay as bought either way.
  const leavesPlan = item.planId !== undefined && !sameResources(item.resources, resources);
  const priceMillicents = leavesPlan
    ? serverPriceMillicents(resources, item.addons, settings)
    : priceWithAddons({ ...item, resources }, item.addons ?? NO_ADDONS, settings);
  const snap = await profileSnapshot(accountId);
  const burnAfter = snap.burnMillicentsPerHour - exactPriceOf(item) + priceMillicents;
  // Downsizing is always allowed; anything that raises the price needs the runway.
  if (priceMillicents > exactPriceOf(item)) {
    const required = requiredBalance(burnAfter, settings.minimumBalanceCents);
    if (snap.balanceCents < required) throw insufficientCredit(snap.balanceCents, required, burnAfter);
    if (snap.budgetCapCents !== null) await assertWithinBudget(accountId, burnAfter);
  }

  const client = await panelClientFor(await getInstance(server.instanceId));
  await assertNodeCanGrow(client, item, resources);
  const onPanel = await client.getServer(item.panelServerId);
  // The feature limits follow the settings as they are now plus the add-ons (docs/api.md, add-ons).
  await applyBuild(client, onPanel, resources, serverId, featureLimitsOf(item.addons, settings)).catch(async (err: unknown) => {
    // The panel did not confirm either build: the repair pass makes it the record's.
    if (isAmbiguous(err)) await queueRepair(item, 'panel', err);
    throw err;
  });

  const now = new Date().toISOString();
  try {
    await recordResized({
      accountId,
      serverId,
      previous: item,
      resources,
      priceMillicents,
      leavesPlan,
      at: now,
      minimumBalanceCents: settings.minimumBalanceCents,
      snapshot: snap,
    });
  } catch (err) {
    // Put the panel back to the committed state, read under this lease.
    await applyBuild(client, onPanel, server.resources, serverId).catch(async (e) => {
      logger.error('resize: could not restore the panel build; queued for the repair pass', { serverId, ...errorFields(e) });
      await queueRepair(item, 'panel', e);
    });
    throw err;
  }
  await countGrowth(item.instanceId, item.nodeId, {
    memoryMb: resources.ramMb - item.resources.ramMb,
    diskMb: resources.diskMb - item.resources.diskMb,
  }).catch((err) => logger.warn('resize: could not count the growth in the topology copy', { serverId, ...errorFields(err) }));
  const { planId: _left, ...offPlan } = server;
  return {
    ...(leavesPlan ? offPlan : server),
    resources,
    priceCentsPerHour: Math.max(1, centsUp(priceMillicents)),
    priceMillicentsPerHour: priceMillicents,
    updatedAt: now,
  };
}

/** The panel does not check capacity on a build change; we do, so nodes are not overcommitted. */
async function assertNodeCanGrow(client: PanelClient, item: ServerItem, resources: Resources): Promise<void> {
  const grows = { ramMb: resources.ramMb - item.resources.ramMb, diskMb: resources.diskMb - item.resources.diskMb };
  if (grows.ramMb <= 0 && grows.diskMb <= 0) return;
  const node = await client.getNode(item.nodeId);
  const free = freeCapacity(node);
  if (free.memoryMb < grows.ramMb || free.diskMb < grows.diskMb) {
    throw new ApiError(
      'no_capacity',
      `The server's node cannot grow it by ${Math.max(0, grows.ramMb)} MB RAM and ${Math.max(0, grows.diskMb)} MB disk`,
      { nodeId: node.id, freeMemoryMb: free.memoryMb, freeDiskMb: free.diskMb },
    );
  }
}

/** The panel's current build with only memory, cpu and disk changed (and the feature limits, when given). */
export function buildWith(onPanel: PanelServer, resources: Resources, featureLimits?: BuildBody['feature_limits']): BuildBody {
  const { oom_disabled: _top, ...limits } = onPanel.limits;
  return {
    allocation: onPanel.allocation,
    limits: { ...limits, memory: resources.ramMb, cpu: resources.cpuPercent, disk: resources.diskMb },
    feature_limits: featureLimits ?? onPanel.feature_limits,
    ...(onPanel.limits.oom_disabled !== undefined ? { oom_disabled: onPanel.limits.oom_disabled } : {}),
  };
}

const sameResources = (a: Resources, b: Resources): boolean =>
  a.ramMb === b.ramMb && a.cpuPercent === b.cpuPercent && a.diskMb === b.diskMb;

export const hasResources = (server: PanelServer, r: Resources): boolean =>
  server.limits.memory === r.ramMb && server.limits.cpu === r.cpuPercent && server.limits.disk === r.diskMb;

/**
 * Sends the build change; when its answer is lost, reads the panel back: done if it holds the new
 * resources, the original failure if it does not (nothing changed, or the restore is the caller's).
 */
async function applyBuild(
  client: PanelClient,
  onPanel: PanelServer,
  resources: Resources,
  serverId: string,
  featureLimits?: BuildBody['feature_limits'],
): Promise<void> {
  try {
    await client.updateBuild(onPanel.id, buildWith(onPanel, resources, featureLimits));
  } catch (err) {
    if (!isAmbiguous(err)) throw err;
    const now = await client.getServer(onPanel.id).catch(() => undefined);
    if (now && hasResources(now, resources)) {
      logger.warn('resize: build answer lost, the panel has the new build', { serverId, panelServerId: onPanel.id });
      return;
    }
    throw err;
  }
}
