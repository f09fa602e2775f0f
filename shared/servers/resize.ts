import type { z } from 'zod';
import type { ResizeServer } from '../api/schemas.ts';
import { assertWithinBudget } from '../budgets/index.ts';
import { ApiError } from '../errors.ts';
import { getInstance, panelClientFor } from '../instances/index.ts';
import { errorFields, logger } from '../observability/logger.ts';
import { freeCapacity } from '../placement/index.ts';
import { hourlyPriceCents, type Resources } from '../pricing/index.ts';
import { getSettings } from '../settings/index.ts';
import { checkCaps, insufficientCredit, requiredBalance } from './limits.ts';
import { getOwnedServer } from './read.ts';
import { profileSnapshot, recordResized } from './records.ts';
import { type ServerView, toServerView } from './views.ts';

/**
 * Resize: the panel's build first, then the record; a record that fails puts the panel back to
 * the resources on record.
 */
export async function resizeServer(accountId: string, serverId: string, input: z.infer<typeof ResizeServer>): Promise<ServerView> {
  const item = await getOwnedServer(accountId, serverId);
  const server = toServerView(item);
  if (server.status !== 'active') throw new ApiError('conflict', `The server is ${server.status}; only active servers can be resized`);
  const resources: Resources = { ramMb: input.ramMb, cpuPercent: input.cpuPercent, diskMb: input.diskMb };
  await checkCaps(resources);
  const settings = await getSettings();
  const price = hourlyPriceCents(resources, settings.prices);
  const snap = await profileSnapshot(accountId);
  const burnAfter = snap.burnCentsPerHour - server.priceCentsPerHour + price;
  // Downsizing is always allowed; anything that raises the price needs the runway.
  if (price > server.priceCentsPerHour) {
    const required = requiredBalance(burnAfter, settings.minimumBalanceCents);
    if (snap.balanceCents < required) throw insufficientCredit(snap.balanceCents, required, burnAfter);
    if (snap.budgetCapCents !== null) await assertWithinBudget(accountId, burnAfter);
  }

  const instance = await getInstance(server.instanceId);
  const client = await panelClientFor(instance);
  const grows = { ramMb: resources.ramMb - server.resources.ramMb, diskMb: resources.diskMb - server.resources.diskMb };
  if (grows.ramMb > 0 || grows.diskMb > 0) {
    // The panel does not check capacity on a build change; we do, so nodes are not overcommitted.
    const node = await client.getNode(item.nodeId);
    const free = freeCapacity(node);
    if (free.memoryMb < grows.ramMb || free.diskMb < grows.diskMb) {
      throw new ApiError(
        'no_capacity',
        `The server's node cannot grow it by ${Math.max(0, grows.ramMb)} MB RAM and ${Math.max(0, grows.diskMb)} MB disk`,
        {
          nodeId: node.id,
          freeMemoryMb: free.memoryMb,
          freeDiskMb: free.diskMb,
        },
      );
    }
  }

  const build = (r: Resources) => ({
    allocation: item.allocationId,
    limits: { memory: r.ramMb, swap: 0, disk: r.diskMb, io: 500, cpu: r.cpuPercent, threads: null },
    feature_limits: { databases: 0, allocations: 1, backups: 0 },
  });
  await client.updateBuild(item.panelServerId, build(resources));

  const now = new Date().toISOString();
  try {
    await recordResized({
      accountId,
      serverId,
      previousPriceCents: server.priceCentsPerHour,
      resources,
      priceCents: price,
      at: now,
      minimumBalanceCents: settings.minimumBalanceCents,
      snapshot: snap,
    });
  } catch (err) {
    // Put the panel back to what we have on record.
    await client
      .updateBuild(item.panelServerId, build(server.resources))
      .catch((e) => logger.error('resize: could not restore the panel build', { serverId, ...errorFields(e) }));
    throw err;
  }
  return { ...server, resources, priceCentsPerHour: price, updatedAt: now };
}
