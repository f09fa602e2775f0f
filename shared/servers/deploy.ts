import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { CreateServer } from '../api/schemas.ts';
import { assertWithinBudget } from '../budgets/index.ts';
import { loadCandidates } from '../catalog/candidates.ts';
import { eggsOf } from '../catalog/index.ts';
import { getConfig } from '../config/env.ts';
import type { ServerItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { type InstanceView, listInstances, panelClientFor, serviceUserIdOf } from '../instances/index.ts';
import { errorFields, logger } from '../observability/logger.ts';
import type { PanelClient } from '../panel/client.ts';
import { PanelRequestError } from '../panel/errors.ts';
import type { PanelServer } from '../panel/types.ts';
import { type NodeCandidate, noCapacity, rankFitting } from '../placement/index.ts';
import { hourlyPriceCents, type Resources } from '../pricing/index.ts';
import { getSettings } from '../settings/index.ts';
import { resolveEnvironment } from './egg-variables.ts';
import { checkCaps, insufficientCredit, invalidRequest, limitExceeded, requiredBalance } from './limits.ts';
import { profileSnapshot, recordCreated } from './records.ts';
import { type ServerView, toServerView } from './views.ts';

/**
 * Deploy: every check that needs no panel first (caps, the per-account limit, runway, budget,
 * egg variables), then placement, then the panel's create, then the record. A panel failure
 * leaves nothing recorded and nothing to charge; a record that fails after the panel created
 * the server removes it from the panel again. The panel's `external_id` is our server id, so an
 * ambiguous create (timeout, lost answer) is settled by looking it up, never by creating twice.
 */
export async function deployServer(
  principal: { accountId: string; email: string },
  input: z.infer<typeof CreateServer>,
): Promise<ServerView> {
  const resources: Resources = { ramMb: input.ramMb, cpuPercent: input.cpuPercent, diskMb: input.diskMb };
  const settings = await getSettings();
  await checkCaps(resources);
  const price = hourlyPriceCents(resources, settings.prices);

  const snap = await profileSnapshot(principal.accountId);
  if (snap.serverCount >= settings.maxServersPerAccount) throw limitExceeded(snap.serverCount, settings.maxServersPerAccount);
  const required = requiredBalance(snap.burnCentsPerHour + price, settings.minimumBalanceCents);
  if (snap.balanceCents < required) throw insufficientCredit(snap.balanceCents, required, snap.burnCentsPerHour + price);
  if (snap.budgetCapCents !== null) await assertWithinBudget(principal.accountId, snap.burnCentsPerHour + price);

  // Which instances offer this egg (egg ids are per panel), then where it fits.
  const instances = (await listInstances()).filter((i) => !input.instanceId || i.id === input.instanceId);
  if (input.instanceId && !instances[0]?.enabled) {
    throw invalidRequest([
      { field: 'body.instanceId', message: instances[0] ? 'is disabled: it takes no new servers' : 'is not a known instance' },
    ]);
  }
  const offering = new Set<string>();
  await Promise.all(
    instances
      .filter((i) => i.enabled)
      .map(async (i) => {
        try {
          if ((await eggsOf(i)).some((e) => e.egg.id === input.eggId)) offering.add(i.id);
        } catch (err) {
          logger.warn('deploy: panel unavailable for egg lookup', { instanceId: i.id, ...errorFields(err) });
        }
      }),
  );
  if (offering.size === 0)
    throw invalidRequest([{ field: 'body.eggId', message: 'is not offered by any enabled instance (see GET /v1/eggs)' }]);

  const { candidates } = await loadCandidates(instances.filter((i) => offering.has(i.id)));
  // A region no node carries is a mistake in the request (400), not a lack of capacity (503, which clients retry).
  if (input.region != null && candidates.length > 0 && !candidates.some((c) => c.region === input.region)) {
    throw invalidRequest([
      {
        field: 'body.region',
        message: `is not a region of any instance offering this egg (see GET /v1/regions): ${[...new Set(candidates.map((c) => c.region).filter(Boolean))].join(', ')}`,
      },
    ]);
  }
  const { node, instance, allocations } = await placeWithAllocation(
    candidates,
    {
      ramMb: resources.ramMb,
      diskMb: resources.diskMb,
      region: input.region ?? null,
      ...(input.instanceId ? { instanceId: input.instanceId } : {}),
    },
    instances,
  );

  const egg = (await eggsOf(instance)).find((e) => e.egg.id === input.eggId)!.egg;
  const { environment, issues } = resolveEnvironment(egg, input.environment);
  const images = Object.values(egg.docker_images ?? {});
  const dockerImage = input.dockerImage ?? egg.docker_image;
  if (input.dockerImage && !images.includes(input.dockerImage))
    issues.push({ field: 'body.dockerImage', message: `must be one of the egg's images: ${images.join(', ')}` });
  if (issues.length) throw invalidRequest(issues);

  const client = await panelClientFor(instance);
  const owner = client.hasClientKey ? await serviceUserIdOf(instance) : await panelUserForAccount(client, principal);
  const serverId = randomUUID();
  const body = {
    name: input.name,
    description: `control-plane server ${serverId}`,
    external_id: serverId,
    user: owner,
    egg: egg.id,
    docker_image: dockerImage,
    startup: egg.startup,
    environment,
    limits: { memory: resources.ramMb, swap: 0, disk: resources.diskMb, io: 500, cpu: resources.cpuPercent, threads: null },
    feature_limits: { databases: 0, allocations: 1, backups: 0 },
    start_on_completion: false,
  };
  let panelServer: PanelServer | undefined;
  let allocationId = 0;
  // Concurrent deploys can pick the same free allocation; the loser's create is refused with a
  // 422 on allocation.default, and it tries the next free one (creates nothing in between).
  for (const candidate of allocations) {
    allocationId = candidate;
    try {
      panelServer = await createOnPanel(client, { ...body, allocation: { default: candidate } });
      break;
    } catch (err) {
      const taken =
        err instanceof PanelRequestError &&
        err.panelStatus === 422 &&
        err.panelErrors.some((e) => e.meta?.source_field === 'allocation.default');
      if (!taken || candidate === allocations.at(-1)) throw err;
    }
  }
  if (!panelServer) throw noCapacity({ ramMb: resources.ramMb, diskMb: resources.diskMb }, []);

  const now = new Date().toISOString();
  const item: ServerItem & Record<string, unknown> = {
    ...keys.server(principal.accountId, serverId),
    ...keys.serversListing(principal.accountId, now, serverId),
    kind: 'server',
    serverId,
    accountId: principal.accountId,
    instanceId: instance.id,
    panelServerId: panelServer.id,
    identifier: panelServer.identifier,
    uuid: panelServer.uuid,
    name: input.name,
    eggId: egg.id,
    nestId: egg.nest,
    nodeId: node.nodeId,
    allocationId: panelServer.allocation ?? allocationId,
    region: node.region,
    dockerImage,
    resources,
    priceCentsPerHour: price,
    ...keys.billable(principal.accountId, serverId),
    // Billing reads from this history when the server was active and at which price (the highest in each hour).
    history: [{ at: now, status: 'active', priceCentsPerHour: price }],
    status: 'active',
    createdAt: now,
    updatedAt: now,
  };
  try {
    await recordCreated({
      accountId: principal.accountId,
      item,
      priceCents: price,
      maxServers: settings.maxServersPerAccount,
      minimumBalanceCents: settings.minimumBalanceCents,
      snapshot: snap,
    });
  } catch (err) {
    // The panel has a server we could not record: remove it so nothing runs unbilled.
    await client.deleteServer(panelServer.id, true).catch((e) =>
      logger.error('deploy: could not remove the unrecorded panel server', {
        serverId,
        panelServerId: panelServer.id,
        ...errorFields(e),
      }),
    );
    throw err;
  }
  return toServerView(item);
}

/**
 * Places, then reads the chosen node's free allocations; a node without one is marked and the
 * next best is tried, so placement honours "must have a free allocation" with one read per try.
 * Returns a few free allocations in random order, so concurrent deploys rarely pick the same one.
 */
async function placeWithAllocation(candidates: NodeCandidate[], request: Parameters<typeof rankFitting>[1], instances: InstanceView[]) {
  const pool = candidates.map((c) => ({ ...c }));
  for (let attempt = 0; attempt < 5; attempt++) {
    const { fitting, rejected } = rankFitting(pool, request);
    const node = fitting[0];
    if (!node) throw noCapacity(request, rejected);
    const instance = instances.find((i) => i.id === node.instanceId)!;
    const free = await (await panelClientFor(instance)).listFreeAllocations(node.nodeId, 50);
    if (free.length) {
      const shuffled = free
        .map((a) => a.id)
        .sort(() => Math.random() - 0.5)
        .slice(0, 3);
      return { node, instance, allocations: shuffled };
    }
    pool.find((c) => c.instanceId === node.instanceId && c.nodeId === node.nodeId)!.freeAllocations = 0;
  }
  throw noCapacity(request, rankFitting(pool, request).rejected);
}

/** Without a client key, servers go under one panel user per account (with one, under its service user). */
async function panelUserForAccount(client: PanelClient, principal: { accountId: string }): Promise<number> {
  const externalId = `cp-account-${principal.accountId}`;
  const existing = await client.getUserByExternalId(externalId);
  if (existing) return existing.id;
  const short = principal.accountId.replace(/-/g, '').slice(0, 16);
  try {
    return (
      await client.createUser({
        external_id: externalId,
        // Not the customer's address: the panel would mail them a password reset for a panel they never use.
        email: `account-${short}@users.control-plane.invalid`,
        username: `cp${short}`,
        first_name: 'Control plane',
        last_name: `account ${short}`,
      })
    ).id;
  } catch (err) {
    // Two deploys raced to create the user: the other one won.
    const again = await client.getUserByExternalId(externalId);
    if (again) return again.id;
    throw err;
  }
}

/** Creates on the panel; an ambiguous failure (timeout, lost answer, 5xx) is settled by the external id. */
async function createOnPanel(client: PanelClient, body: Parameters<PanelClient['createServer']>[0]): Promise<PanelServer> {
  try {
    return await client.createServer(body, getConfig().panelCreateTimeoutMs);
  } catch (err) {
    const ambiguous =
      err instanceof PanelRequestError && (err.code === 'panel_timeout' || err.panelStatus === undefined || err.panelStatus >= 500);
    if (!ambiguous) throw err;
    for (const waitMs of [0, 500, 1500]) {
      await new Promise((r) => setTimeout(r, waitMs));
      try {
        const found = await client.getServerByExternalId(body.external_id);
        if (found) {
          logger.warn('deploy: create answer lost, server found by external id', { serverId: body.external_id, panelServerId: found.id });
          return found;
        }
      } catch {
        /* the lookup failed too: try again */
      }
    }
    throw err;
  }
}
