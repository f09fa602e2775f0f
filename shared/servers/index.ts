import { randomUUID } from 'node:crypto';
import { TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import type { z } from 'zod';
import { db, tableName } from '../db/client.ts';
import { keys } from '../db/keys.ts';
import { accessPatterns, type Item, type Page, type PageRequest } from '../db/access-patterns.ts';
import { ApiError, notFound } from '../errors.ts';
import { getSettings } from '../settings/index.ts';
import { hourlyPriceCents, RUNWAY_HOURS, type Resources } from '../pricing/index.ts';
import { getConfig } from '../config/env.ts';
import { getInstance, listInstances, panelClientFor, serviceUserIdOf, toInstanceView, type InstanceView } from '../instances/index.ts';
import { eggsOf } from '../catalog/index.ts';
import { loadCandidates } from '../catalog/candidates.ts';
import { freeCapacity, rankFitting, noCapacity, type NodeCandidate } from '../placement/index.ts';
import { PanelRequestError } from '../panel/errors.ts';
import type { PanelClient } from '../panel/client.ts';
import type { PanelServer } from '../panel/types.ts';
import { logger, errorFields } from '../observability/logger.ts';
import { resolveEnvironment, type VariableIssue } from './egg-variables.ts';
import { assertWithinBudget } from '../budgets/index.ts';
import type { AdminServer, CreateServer, LiveState, ResizeServer, Server } from '../api/schemas.ts';

/**
 * Servers: deploy, read, resize, delete (spec rules 1, 3, 4, 9). The panel is called first and the
 * record written after, so a panel failure leaves nothing recorded and nothing to charge; a failed
 * record after the panel created the server removes it from the panel again. The server's panel
 * `external_id` is our id, so an ambiguous create (timeout, lost answer) is settled by looking it
 * up instead of creating a second one.
 *
 * The account profile keeps `serverCount` (active + suspended) and `burnCentsPerHour` (sum of the
 * active servers' prices); deploys and resizes move them in the same transaction as the server,
 * under a condition on the values read, so two concurrent deploys cannot both spend one runway.
 */
export type ServerView = z.infer<typeof Server>;

export function toServerView(item: Item): ServerView {
  return {
    id: item.serverId as string,
    instanceId: item.instanceId as string,
    identifier: item.identifier as string,
    uuid: item.uuid as string,
    name: item.name as string,
    eggId: Number(item.eggId),
    region: (item.region as string | null | undefined) ?? null,
    resources: item.resources as Resources,
    priceCentsPerHour: Number(item.priceCentsPerHour),
    status: item.status as ServerView['status'],
    createdAt: item.createdAt as string,
    updatedAt: item.updatedAt as string,
    suspendedAt: (item.suspendedAt as string | undefined) ?? null,
    deletedAt: (item.deletedAt as string | undefined) ?? null,
  };
}

const validation = (issues: VariableIssue[]) =>
  new ApiError('validation_failed', `Invalid request: ${issues.map((i) => `${i.field} ${i.message}`).join('; ')}`, { issues });

// ---- limits and runway --------------------------------------------------------------------------

/** Platform caps (settings.serverCaps): 422 `limit_exceeded` naming the field. */
export async function checkCaps(resources: Resources): Promise<void> {
  const { serverCaps } = await getSettings();
  const over: VariableIssue[] = [];
  if (resources.ramMb > serverCaps.maxRamMb) over.push({ field: 'body.ramMb', message: `must be at most ${serverCaps.maxRamMb}` });
  if (resources.cpuPercent > serverCaps.maxCpuPercent)
    over.push({ field: 'body.cpuPercent', message: `must be at most ${serverCaps.maxCpuPercent}` });
  if (resources.diskMb > serverCaps.maxDiskMb) over.push({ field: 'body.diskMb', message: `must be at most ${serverCaps.maxDiskMb}` });
  if (over.length) {
    throw new ApiError('limit_exceeded', `Above the platform limits: ${over.map((o) => `${o.field} ${o.message}`).join('; ')}`, {
      issues: over,
    });
  }
}

export interface ProfileSnapshot {
  balanceCents: number;
  serverCount: number;
  burnCentsPerHour: number;
  hasBurn: boolean;
  budgetCapCents: number | null;
}

export async function profileSnapshot(accountId: string): Promise<ProfileSnapshot> {
  const profile = await accessPatterns.accountById(accountId);
  if (!profile) throw notFound('Account');
  return {
    balanceCents: Number(profile.balanceCents ?? 0),
    serverCount: Number(profile.serverCount ?? 0),
    burnCentsPerHour: Number(profile.burnCentsPerHour ?? 0),
    hasBurn: profile.burnCentsPerHour !== undefined,
    budgetCapCents: (profile.budgetCapCents as number | null | undefined) ?? null,
  };
}

/** Balance ≥ 24 h of every active server's price (after the change), and ≥ the platform minimum. */
export function requiredBalance(burnAfter: number, minimumBalanceCents: number): number {
  return Math.max(RUNWAY_HOURS * burnAfter, minimumBalanceCents);
}

function insufficientCredit(balanceCents: number, requiredCents: number, burnAfter: number): ApiError {
  return new ApiError(
    'insufficient_credit',
    `Not enough credit: ${requiredCents} cents needed (24 hours at ${burnAfter} cents an hour, or the platform minimum), ${balanceCents} available`,
    { balanceCents, requiredCents, hourlyCentsAfter: burnAfter, runwayHours: RUNWAY_HOURS },
  );
}

/** The condition that the profile still holds what was read, plus the runway. */
function profileCondition(snap: ProfileSnapshot, required: number, extra: string[] = []) {
  return {
    ConditionExpression: [
      snap.hasBurn ? 'burnCentsPerHour = :burnRead' : 'attribute_not_exists(burnCentsPerHour)',
      'balanceCents >= :required',
      ...extra,
    ].join(' AND '),
    values: { ...(snap.hasBurn ? { ':burnRead': snap.burnCentsPerHour } : {}), ':required': required },
  };
}

// ---- deploy ---------------------------------------------------------------------------------------

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

export async function deployServer(
  principal: { accountId: string; email: string },
  input: z.infer<typeof CreateServer>,
): Promise<ServerView> {
  const resources: Resources = { ramMb: input.ramMb, cpuPercent: input.cpuPercent, diskMb: input.diskMb };
  const settings = await getSettings();
  await checkCaps(resources);
  const price = hourlyPriceCents(resources, settings.prices);

  const snap = await profileSnapshot(principal.accountId);
  if (snap.serverCount >= settings.maxServersPerAccount) {
    throw new ApiError(
      'limit_exceeded',
      `This account already has ${snap.serverCount} servers, the most allowed (${settings.maxServersPerAccount})`,
      {
        serverCount: snap.serverCount,
        maxServersPerAccount: settings.maxServersPerAccount,
      },
    );
  }
  const required = requiredBalance(snap.burnCentsPerHour + price, settings.minimumBalanceCents);
  if (snap.balanceCents < required) throw insufficientCredit(snap.balanceCents, required, snap.burnCentsPerHour + price);
  if (snap.budgetCapCents !== null) await assertWithinBudget(principal.accountId, snap.burnCentsPerHour + price);

  // Which instances offer this egg (egg ids are per panel), then where it fits.
  const instances = (await listInstances()).filter((i) => !input.instanceId || i.id === input.instanceId);
  if (input.instanceId && !instances[0]?.enabled) {
    throw validation([
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
    throw validation([{ field: 'body.eggId', message: 'is not offered by any enabled instance (see GET /v1/eggs)' }]);

  const { candidates } = await loadCandidates(instances.filter((i) => offering.has(i.id)));
  // A region no node carries is a mistake in the request (400), not a lack of capacity (503, which clients retry).
  if (input.region != null && candidates.length > 0 && !candidates.some((c) => c.region === input.region)) {
    throw validation([
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
  if (issues.length) throw validation(issues);

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
  const item = {
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
    await recordDeploy(principal.accountId, item, price, settings.maxServersPerAccount, settings.minimumBalanceCents, instance.id, snap);
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

/** Without a client key, servers go under one panel user per account (spec auth rule 6). */
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

async function recordDeploy(
  accountId: string,
  item: Record<string, unknown>,
  price: number,
  maxServers: number,
  minimumBalanceCents: number,
  instanceId: string,
  first: ProfileSnapshot,
): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    // The first try reuses the snapshot read before the panel call: the conditions below catch
    // any change since, and only then is the profile read again.
    const snap = attempt === 0 ? first : await profileSnapshot(accountId);
    const required = requiredBalance(snap.burnCentsPerHour + price, minimumBalanceCents);
    if (snap.serverCount >= maxServers)
      throw new ApiError('limit_exceeded', `This account already has ${snap.serverCount} servers, the most allowed (${maxServers})`);
    if (snap.balanceCents < required) throw insufficientCredit(snap.balanceCents, required, snap.burnCentsPerHour + price);
    const cond = profileCondition(snap, required, ['serverCount = :countRead']);
    const items: TransactItem[] = [
      { Put: { TableName: tableName(), Item: item, ConditionExpression: 'attribute_not_exists(PK)' } },
      {
        Update: {
          TableName: tableName(),
          Key: keys.account(accountId),
          UpdateExpression: 'SET serverCount = :countRead + :one, burnCentsPerHour = :burnAfter',
          ConditionExpression: cond.ConditionExpression,
          ExpressionAttributeValues: {
            ...cond.values,
            ':countRead': snap.serverCount,
            ':one': 1,
            ':burnAfter': snap.burnCentsPerHour + price,
          },
        },
      },
      {
        Update: {
          TableName: tableName(),
          Key: keys.instance(instanceId),
          UpdateExpression: 'ADD serverCount :one',
          ConditionExpression: 'attribute_exists(PK)',
          ExpressionAttributeValues: { ':one': 1 },
        },
      },
      { Put: { TableName: tableName(), Item: { ...keys.serverPointer(item.serverId as string), kind: 'server-pointer', accountId } } },
    ];
    try {
      await db().send(new TransactWriteCommand({ TransactItems: items }));
      return;
    } catch (err) {
      if ((err as Error).name !== 'TransactionCanceledException') throw err;
      const reasons = (err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? [];
      if (reasons[2]?.Code === 'ConditionalCheckFailed')
        throw new ApiError('conflict', 'The instance was removed while the server was being deployed');
      // The profile moved (another deploy, a charge): read again and re-check.
    }
  }
  throw new ApiError('conflict', 'The account changed too often while deploying; try again');
}

// ---- read -----------------------------------------------------------------------------------------

/** The caller's server; another account's server is 404 exactly like an unknown id. */
export async function getOwnedServer(accountId: string, serverId: string): Promise<Item> {
  const item = await accessPatterns.serverOfAccount(accountId, serverId);
  if (!item) throw notFound('Server');
  return item;
}

export async function listServers(accountId: string, page: PageRequest): Promise<Page<ServerView>> {
  const result = await accessPatterns.serversOfAccount(accountId, page);
  return { data: result.data.map(toServerView), nextCursor: result.nextCursor };
}

export async function listAllServers(page: PageRequest): Promise<Page<z.infer<typeof AdminServer>>> {
  const result = await accessPatterns.allServers(page);
  return {
    data: result.data.map((item) => ({ ...toServerView(item), accountId: item.accountId as string })),
    nextCursor: result.nextCursor,
  };
}

/** The stored server plus what the panel says now; an unreachable panel marks the live part unavailable. */
export async function getServerWithLive(accountId: string, serverId: string): Promise<ServerView & { live: z.infer<typeof LiveState> }> {
  const item = await getOwnedServer(accountId, serverId);
  const view = toServerView(item);
  const unavailable = (reason: string) => ({
    available: false,
    reason,
    installStatus: null,
    powerState: null,
    suspendedOnPanel: null,
    resources: null,
  });
  if (view.status === 'deleted') return { ...view, live: unavailable('The server is deleted') };
  try {
    const instance = await getInstance(view.instanceId);
    const client = await panelClientFor(instance);
    const panel = await client.getServer(Number(item.panelServerId));
    const installStatus =
      panel.status === 'installing'
        ? 'installing'
        : panel.status === 'install_failed' || panel.status === 'reinstall_failed'
          ? 'install_failed'
          : 'installed';
    let powerState: string | null = null;
    let resources: z.infer<typeof LiveState>['resources'] = null;
    if (client.hasClientKey && installStatus === 'installed' && !panel.suspended) {
      const stats = await client.getResources(view.identifier);
      powerState = stats.current_state;
      resources = {
        memoryBytes: stats.resources.memory_bytes,
        cpuAbsolute: stats.resources.cpu_absolute,
        diskBytes: stats.resources.disk_bytes,
        networkRxBytes: stats.resources.network_rx_bytes,
        networkTxBytes: stats.resources.network_tx_bytes,
        uptimeMs: stats.resources.uptime,
      };
    }
    return { ...view, live: { available: true, installStatus, powerState, suspendedOnPanel: panel.suspended, resources } };
  } catch (err) {
    logger.warn('server live state unavailable', { serverId, ...errorFields(err) });
    return { ...view, live: unavailable(err instanceof ApiError ? err.message : 'The panel could not be reached') };
  }
}

// ---- resize ---------------------------------------------------------------------------------------

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
    const node = await client.getNode(Number(item.nodeId));
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
    allocation: Number(item.allocationId),
    limits: { memory: r.ramMb, swap: 0, disk: r.diskMb, io: 500, cpu: r.cpuPercent, threads: null },
    feature_limits: { databases: 0, allocations: 1, backups: 0 },
  });
  await client.updateBuild(Number(item.panelServerId), build(resources));

  const now = new Date().toISOString();
  try {
    await recordResize(accountId, serverId, server, resources, price, now, settings.minimumBalanceCents, snap);
  } catch (err) {
    // Put the panel back to what we have on record.
    await client
      .updateBuild(Number(item.panelServerId), build(server.resources))
      .catch((e) => logger.error('resize: could not restore the panel build', { serverId, ...errorFields(e) }));
    throw err;
  }
  return { ...server, resources, priceCentsPerHour: price, updatedAt: now };
}

async function recordResize(
  accountId: string,
  serverId: string,
  server: ServerView,
  resources: Resources,
  price: number,
  now: string,
  minimumBalanceCents: number,
  first: ProfileSnapshot,
): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const snap = attempt === 0 ? first : await profileSnapshot(accountId);
    const burnAfter = snap.burnCentsPerHour - server.priceCentsPerHour + price;
    const required = price > server.priceCentsPerHour ? requiredBalance(burnAfter, minimumBalanceCents) : Number.MIN_SAFE_INTEGER;
    if (snap.balanceCents < required) throw insufficientCredit(snap.balanceCents, required, burnAfter);
    const cond = profileCondition(snap, required);
    try {
      await db().send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: tableName(),
                Key: keys.server(accountId, serverId),
                UpdateExpression: 'SET resources = :r, priceCentsPerHour = :p, updatedAt = :now, history = list_append(history, :h)',
                ConditionExpression: '#status = :active AND priceCentsPerHour = :oldPrice',
                ExpressionAttributeNames: { '#status': 'status' },
                ExpressionAttributeValues: {
                  ':r': resources,
                  ':p': price,
                  ':now': now,
                  ':h': [{ at: now, status: 'active', priceCentsPerHour: price }],
                  ':active': 'active',
                  ':oldPrice': server.priceCentsPerHour,
                },
              },
            },
            {
              Update: {
                TableName: tableName(),
                Key: keys.account(accountId),
                UpdateExpression: 'SET burnCentsPerHour = :burnAfter',
                ConditionExpression: cond.ConditionExpression,
                ExpressionAttributeValues: { ...cond.values, ':burnAfter': burnAfter },
              },
            },
          ],
        }),
      );
      return;
    } catch (err) {
      if ((err as Error).name !== 'TransactionCanceledException') throw err;
      const reasons = (err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? [];
      if (reasons[0]?.Code === 'ConditionalCheckFailed')
        throw new ApiError(
          'conflict',
          'The server changed while resizing (another resize, a suspension or a deletion); read it and try again',
        );
    }
  }
  throw new ApiError('conflict', 'The account changed too often while resizing; try again');
}

// ---- delete ---------------------------------------------------------------------------------------

export async function deleteServer(accountId: string, serverId: string): Promise<{ id: string; status: 'deleted'; deletedAt: string }> {
  const item = await getOwnedServer(accountId, serverId);
  const server = toServerView(item);
  if (server.status === 'deleted') return { id: serverId, status: 'deleted', deletedAt: server.deletedAt! };
  // An instance cannot be removed while it hosts servers, so it is there; if it is not, there is no panel to ask.
  const instanceItem = await accessPatterns.instanceById(server.instanceId);
  if (instanceItem) await (await panelClientFor(toInstanceView(instanceItem))).deleteServer(Number(item.panelServerId));
  const deletedAt = await recordDeleted(accountId, serverId, instanceItem ? server.instanceId : undefined);
  return { id: serverId, status: 'deleted', deletedAt };
}

/**
 * Records a server as deleted — status, time, history — and moves the account's server count and
 * burn rate and the instance's server count, in one transaction under conditions on what was
 * read. The server stays in the billable index: the next pass charges the hour of deletion, then
 * drops it. Returns the deletion time (an earlier one if someone else recorded it first).
 */
export async function recordDeleted(accountId: string, serverId: string, instanceId: string | undefined, reason?: string): Promise<string> {
  const now = new Date().toISOString();
  for (let attempt = 0; attempt < 5; attempt++) {
    const current = toServerView(await getOwnedServer(accountId, serverId));
    if (current.status === 'deleted') return current.deletedAt!;
    const snap = await profileSnapshot(accountId);
    const burnAfter = current.status === 'active' ? snap.burnCentsPerHour - current.priceCentsPerHour : snap.burnCentsPerHour;
    const items: TransactItem[] = [
      {
        Update: {
          TableName: tableName(),
          Key: keys.server(accountId, serverId),
          UpdateExpression: `SET #status = :deleted, deletedAt = :now, updatedAt = :now, history = list_append(history, :h)${reason ? ', deletedReason = :reason' : ''}`,
          ConditionExpression: '#status = :was',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':deleted': 'deleted',
            ':now': now,
            ':was': current.status,
            ':h': [{ at: now, status: 'deleted', priceCentsPerHour: current.priceCentsPerHour }],
            ...(reason ? { ':reason': reason } : {}),
          },
        },
      },
      {
        Update: {
          TableName: tableName(),
          Key: keys.account(accountId),
          UpdateExpression: 'SET serverCount = :countAfter, burnCentsPerHour = :burnAfter',
          ConditionExpression: `serverCount = :countRead AND ${snap.hasBurn ? 'burnCentsPerHour = :burnRead' : 'attribute_not_exists(burnCentsPerHour)'}`,
          ExpressionAttributeValues: {
            ':countAfter': snap.serverCount - 1,
            ':countRead': snap.serverCount,
            ':burnAfter': burnAfter,
            ...(snap.hasBurn ? { ':burnRead': snap.burnCentsPerHour } : {}),
          },
        },
      },
    ];
    if (instanceId) {
      items.push({
        Update: {
          TableName: tableName(),
          Key: keys.instance(instanceId),
          UpdateExpression: 'ADD serverCount :minus',
          ExpressionAttributeValues: { ':minus': -1 },
        },
      });
    }
    try {
      await db().send(new TransactWriteCommand({ TransactItems: items }));
      return now;
    } catch (err) {
      if ((err as Error).name !== 'TransactionCanceledException') throw err;
    }
  }
  throw new ApiError('conflict', 'The account changed too often while deleting; try again');
}
