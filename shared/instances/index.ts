import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { isConditionFailed, transact, writeItem } from '../db/write.ts';
import { keys } from '../db/keys.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import { ApiError, notFound } from '../errors.ts';
import { getConfig } from '../config/env.ts';
import { secretStore, type InstanceKeys } from '../secrets/index.ts';
import { PanelClient } from '../panel/client.ts';
import { detectPanelKind } from '../panel/detect.ts';
import { PelicanClient } from '../panel/pelican.ts';
import type { PanelKind } from '../panel/types.ts';
import type { CreateInstance, Instance, UpdateInstance } from '../api/schemas.ts';
import { asKind, type InstanceItem } from '../db/items.ts';
import { callBudgetState, DEFAULT_PANEL_RATE_LIMITS, dynamoCallBudget, PELICAN_RATE_LIMITS, panelBudgetId } from './call-budget.ts';
import { alreadyRegistered, claimHolder, holderOfAny, nodeClaimWrites, panelNodeUuids, releaseWrites } from './identity.ts';
import { logger, errorFields } from '../observability/logger.ts';

/**
 * Instances: the registered panels, Pterodactyl or Pelican (`panelKind`, detected at registration
 * and at each instance test: shared/panel/detect.ts). The record (name, URL, priority, enabled, the
 * cached service user id, how many servers it hosts) lives in the table; the keys live in the
 * secret store. Instances are few, so they share one partition and are read whole.
 */
export type InstanceView = z.infer<typeof Instance>;

/** The panel's own limits when the operator set none: its kind's defaults. */
const defaultLimits = (kind: PanelKind | undefined) => (kind === 'pelican' ? PELICAN_RATE_LIMITS : DEFAULT_PANEL_RATE_LIMITS);

export function toInstanceView(item: InstanceItem): InstanceView {
  return {
    id: item.instanceId,
    name: item.name,
    baseUrl: item.baseUrl,
    panelKind: item.panelKind ?? 'pterodactyl',
    wingsOrigin: item.wingsOrigin ?? null,
    priority: item.priority,
    enabled: item.enabled !== false,
    hasClientKey: Boolean(item.hasClientKey),
    serviceUserId: item.serviceUserId ?? null,
    controlAvailable: controlAvailable(item),
    lastTest: item.lastTest ?? null,
    serverCount: Number(item.serverCount ?? 0),
    panelRateLimits: item.panelRateLimits ?? defaultLimits(item.panelKind),
    panelNodeUuids: item.panelNodeUuids ?? null,
    duplicateOf: item.duplicateOf ?? null,
    databaseHost: item.databaseHost ?? null,
    createdAt: item.createdAt,
    updatedAt: item.updatedAt,
  };
}

/**
 * Whether power, console and files are expected to work: a client key is set and the last instance
 * test (with these keys: a change of keys or URL removes it) resolved it to a panel user. False
 * before any test: an operator who registers an instance runs the test. Control routes do not
 * consult it; they try, and report the panel's refusal (shared/servers/control.ts).
 */
export const controlAvailable = (item: Pick<InstanceItem, 'hasClientKey' | 'lastTest'>): boolean =>
  Boolean(item.hasClientKey) && item.lastTest?.clientKey === 'ok';

/** The admin's list: every instance with what its shared call budget has spent this minute. */
export async function listInstancesWithCallBudget(): Promise<InstanceView[]> {
  const instances = await listInstances();
  return Promise.all(instances.map(async (i) => ({ ...i, callBudget: await budgetOf(i, instances) })));
}

/** An instance's call budget belongs to its panel: every instance with the same panel URL shares it. */
export async function budgetOf(instance: InstanceView, all: InstanceView[]) {
  const budgetId = panelBudgetId(instance.baseUrl);
  const sharedWith = all.filter((i) => i.id !== instance.id && panelBudgetId(i.baseUrl) === budgetId).map((i) => i.id);
  return callBudgetState(budgetId, instance.panelRateLimits, sharedWith);
}

export async function listInstances(): Promise<InstanceView[]> {
  const items = await accessPatterns.allInstances();
  return items.map(toInstanceView).sort((a, b) => a.priority - b.priority || a.createdAt.localeCompare(b.createdAt));
}

export async function getInstance(instanceId: string): Promise<InstanceView> {
  const item = await accessPatterns.instanceById(instanceId);
  if (!item) throw notFound('Instance');
  return toInstanceView(item);
}

export async function countInstances(): Promise<{ total: number; enabled: number }> {
  const items = await accessPatterns.allInstances();
  return { total: items.length, enabled: items.filter((i) => i.enabled !== false).length };
}

/**
 * Registers a panel once (identity.ts): refused with `panel_already_registered` when an instance
 * has the same normalised URL or claims one of the panel's nodes. The nodes are read with the new
 * keys; a panel that does not answer is registered without them, and the reconciler claims them on
 * its next run (an instance registered twice that way is marked `duplicateOf` there).
 */
export async function createInstance(input: z.infer<typeof CreateInstance>): Promise<InstanceView> {
  const sameUrl = (await listInstances()).find((i) => panelBudgetId(i.baseUrl) === panelBudgetId(input.baseUrl));
  if (sameUrl) throw alreadyRegistered(sameUrl.id);
  const instanceId = randomUUID();
  const now = new Date().toISOString();
  // Keys first: a record never points at keys that are not stored.
  await secretStore().put(instanceId, { appApiKey: input.appApiKey, ...(input.clientApiKey ? { clientApiKey: input.clientApiKey } : {}) });
  let nodeUuids: string[] = [];
  let panelKind: PanelKind | undefined;
  try {
    panelKind = await detectPanelKind(
      await panelClientFor({ id: instanceId, baseUrl: input.baseUrl, panelRateLimits: input.panelRateLimits }),
    );
  } catch (err) {
    logger.warn('instance: panel kind not detected at registration; the instance test detects it', { instanceId, ...errorFields(err) });
  }
  try {
    forgetClient(instanceId);
    nodeUuids = await panelNodeUuids(
      await panelClientFor({
        id: instanceId,
        baseUrl: input.baseUrl,
        panelRateLimits: input.panelRateLimits ?? defaultLimits(panelKind),
        ...(panelKind ? { panelKind } : {}),
      }),
    );
  } catch (err) {
    logger.warn('instance: panel nodes not read at registration; the reconciler claims them', { instanceId, ...errorFields(err) });
  }
  const holder = await holderOfAny(nodeUuids);
  if (holder) {
    await forgetRegistration(instanceId);
    throw alreadyRegistered(holder);
  }
  const item: InstanceItem = {
    ...keys.instance(instanceId),
    kind: 'instance',
    instanceId,
    name: input.name,
    baseUrl: input.baseUrl,
    ...(panelKind ? { panelKind } : {}),
    ...(input.wingsOrigin ? { wingsOrigin: input.wingsOrigin } : {}),
    priority: input.priority,
    enabled: input.enabled,
    hasClientKey: Boolean(input.clientApiKey),
    serverCount: 0,
    ...(input.panelRateLimits ? { panelRateLimits: input.panelRateLimits } : {}),
    ...(nodeUuids.length ? { panelNodeUuids: nodeUuids } : {}),
    createdAt: now,
    updatedAt: now,
  };
  try {
    // The claims in the instance's transaction: two registrations of one panel at once, one wins.
    await transact([
      { name: 'instance', Put: { Item: item, ConditionExpression: 'attribute_not_exists(PK)' } },
      ...nodeClaimWrites(instanceId, nodeUuids, now),
    ]);
  } catch (err) {
    const claimedBy = isConditionFailed(err) && !err.has('instance') ? (claimHolder(err) ?? (await holderOfAny(nodeUuids))) : undefined;
    await forgetRegistration(instanceId);
    if (claimedBy) throw alreadyRegistered(claimedBy);
    throw err;
  }
  forgetClient(instanceId);
  return toInstanceView(item);
}

/** A registration refused after its keys were stored: they go (nothing else was written). */
async function forgetRegistration(instanceId: string): Promise<void> {
  forgetClient(instanceId);
  await secretStore().delete(instanceId);
}

export async function updateInstance(
  instanceId: string,
  input: z.infer<typeof UpdateInstance>,
): Promise<{ view: InstanceView; changed: string[] }> {
  const current = await accessPatterns.instanceById(instanceId);
  if (!current) throw notFound('Instance');
  const changed: string[] = [];
  const set: Record<string, unknown> = { updatedAt: new Date().toISOString() };
  const remove: string[] = [];
  for (const field of ['name', 'baseUrl', 'priority', 'enabled'] as const) {
    if (input[field] !== undefined && input[field] !== current[field]) {
      set[field] = input[field];
      changed.push(field);
    }
  }
  if (input.wingsOrigin !== undefined && input.wingsOrigin !== (current.wingsOrigin ?? null)) {
    if (input.wingsOrigin === null) remove.push('wingsOrigin');
    else set.wingsOrigin = input.wingsOrigin;
    changed.push('wingsOrigin');
  }
  if (input.panelRateLimits !== undefined) {
    set.panelRateLimits = input.panelRateLimits;
    changed.push('panelRateLimits');
  }
  if (input.appApiKey !== undefined || input.clientApiKey !== undefined) {
    const stored = (await secretStore().get(instanceId)) ?? ({ appApiKey: '' } as InstanceKeys);
    const next: InstanceKeys = { appApiKey: input.appApiKey ?? stored.appApiKey };
    const clientKey = input.clientApiKey === undefined ? stored.clientApiKey : (input.clientApiKey ?? undefined);
    if (clientKey) next.clientApiKey = clientKey;
    await secretStore().put(instanceId, next);
    if (input.appApiKey !== undefined) changed.push('appApiKey');
    if (input.clientApiKey !== undefined) {
      changed.push('clientApiKey');
      set.hasClientKey = Boolean(clientKey);
      // Another key may belong to another panel user: resolve it again at the next test.
      remove.push('serviceUserId');
    }
  }
  const moved = input.baseUrl !== undefined && input.baseUrl !== current.baseUrl;
  if (moved) remove.push('serviceUserId');
  // Another URL may be another panel, or one registered already: read before anything is written.
  const nodeUuids = moved ? await nodesAt(instanceId, input.baseUrl!, current) : undefined;
  // The last test said something about the old keys or panel only.
  if (changed.includes('appApiKey') || changed.includes('clientApiKey') || remove.includes('serviceUserId')) remove.push('lastTest');
  const names = Object.keys(set);
  const out = await writeItem({
    Update: {
      Key: keys.instance(instanceId),
      UpdateExpression: `SET ${names.map((_, i) => `#s${i} = :s${i}`).join(', ')}${remove.length ? ` REMOVE ${[...new Set(remove)].join(', ')}` : ''}`,
      ConditionExpression: 'attribute_exists(PK)',
      ExpressionAttributeNames: Object.fromEntries(names.map((n, i) => [`#s${i}`, n])),
      ExpressionAttributeValues: Object.fromEntries(names.map((n, i) => [`:s${i}`, set[n]])),
      ReturnValues: 'ALL_NEW',
    },
  });
  forgetClient(instanceId);
  const updated = asKind(out!, 'instance');
  if (nodeUuids) return { view: toInstanceView(await moveClaims(updated, nodeUuids)), changed };
  return { view: toInstanceView(updated), changed };
}

/**
 * The nodes of the panel at a new URL (refused as a registration would be when another instance
 * has that URL or those nodes); undefined when the panel does not answer (the reconciler claims them).
 */
async function nodesAt(instanceId: string, baseUrl: string, current: InstanceItem): Promise<string[] | undefined> {
  const others = (await listInstances()).filter((i) => i.id !== instanceId);
  const sameUrl = others.find((i) => panelBudgetId(i.baseUrl) === panelBudgetId(baseUrl));
  if (sameUrl) throw alreadyRegistered(sameUrl.id);
  try {
    forgetClient(instanceId);
    const nodes = await panelNodeUuids(
      await panelClientFor({
        id: instanceId,
        baseUrl,
        panelRateLimits: current.panelRateLimits,
        panelKind: current.panelKind ?? 'pterodactyl',
      }),
    );
    const holder = await holderOfAny(nodes);
    if (holder && holder !== instanceId) throw alreadyRegistered(holder);
    return nodes;
  } catch (err) {
    if (err instanceof ApiError && err.code === 'panel_already_registered') throw err;
    logger.warn('instance: panel nodes not read at the new URL; the reconciler claims them', { instanceId, ...errorFields(err) });
    return undefined;
  }
}

/** The instance now claims the nodes of its new panel, and no longer those of the old one. */
async function moveClaims(item: InstanceItem, nodeUuids: string[]): Promise<InstanceItem> {
  const keep = new Set(nodeUuids);
  const released = { ...item, panelNodeUuids: (item.panelNodeUuids ?? []).filter((u) => !keep.has(u)) };
  const added = nodeUuids.filter((u) => !(item.panelNodeUuids ?? []).includes(u));
  try {
    await transact([
      {
        name: 'instance',
        Update: {
          Key: keys.instance(item.instanceId),
          UpdateExpression: nodeUuids.length ? 'SET panelNodeUuids = :nodes REMOVE duplicateOf' : 'REMOVE panelNodeUuids, duplicateOf',
          ConditionExpression: 'attribute_exists(PK)',
          ...(nodeUuids.length ? { ExpressionAttributeValues: { ':nodes': nodeUuids } } : {}),
        },
      },
      ...releaseWrites(released),
      ...nodeClaimWrites(item.instanceId, added, new Date().toISOString()),
    ]);
  } catch (err) {
    const holder = isConditionFailed(err) ? (claimHolder(err) ?? (await holderOfAny(added))) : undefined;
    if (holder) throw alreadyRegistered(holder);
    throw err;
  }
  const { duplicateOf: _gone, ...rest } = item;
  return { ...rest, ...(nodeUuids.length ? { panelNodeUuids: nodeUuids } : {}) } as InstanceItem;
}

export async function deleteInstance(instanceId: string): Promise<void> {
  const current = await accessPatterns.instanceById(instanceId);
  if (!current) throw notFound('Instance');
  try {
    // Its node claims go with it: the panel can be registered again.
    await transact([
      {
        name: 'instance',
        Delete: {
          Key: keys.instance(instanceId),
          // The count is kept by the servers module in the same transactions that add and remove servers.
          ConditionExpression: 'attribute_not_exists(serverCount) OR serverCount = :zero',
          ExpressionAttributeValues: { ':zero': 0 },
        },
      },
      ...releaseWrites(current),
    ]);
  } catch (err) {
    if (!isConditionFailed(err, 'instance')) throw err;
    const count = Number((await accessPatterns.instanceById(instanceId))?.serverCount ?? 0);
    throw new ApiError('conflict', `The instance still hosts ${count} server(s); delete them or disable the instance instead`, {
      serverCount: count,
    });
  }
  await secretStore().delete(instanceId);
  forgetClient(instanceId);
}

// ---- panel clients ----------------------------------------------------------------------------

const clients = new Map<string, { client: PanelClient; at: number; limits: string }>();
const CLIENT_TTL_MS = 5 * 60_000;

function forgetClient(instanceId: string): void {
  clients.delete(instanceId);
}

/**
 * A client for the instance's panel, with its keys from the secret store (cached per process),
 * spending the panel's shared call budget (budget.ts) on every call.
 */
export async function panelClientFor(
  instance: Pick<InstanceView, 'id' | 'baseUrl'> & Partial<Pick<InstanceView, 'panelRateLimits' | 'panelKind'>>,
): Promise<PanelClient> {
  const limits = instance.panelRateLimits ?? defaultLimits(instance.panelKind);
  const hit = clients.get(instance.id);
  if (
    hit &&
    hit.client.baseUrl === instance.baseUrl.replace(/\/+$/, '') &&
    hit.client.kind === (instance.panelKind ?? 'pterodactyl') &&
    hit.limits === JSON.stringify(limits) &&
    Date.now() - hit.at < CLIENT_TTL_MS
  )
    return hit.client;
  const stored = await secretStore().get(instance.id);
  if (!stored) throw new ApiError('panel_error', 'The keys of this instance are missing from the secret store; set them again with PATCH');
  const { panelTimeoutMs } = getConfig();
  // The adapter of the panel's kind: the Pelican one overrides only where Pelican differs.
  const client = new (instance.panelKind === 'pelican' ? PelicanClient : PanelClient)({
    baseUrl: instance.baseUrl,
    instanceId: instance.id,
    appKey: stored.appApiKey,
    clientKey: stored.clientApiKey,
    timeoutMs: panelTimeoutMs,
    budget: dynamoCallBudget(panelBudgetId(instance.baseUrl), limits, { instanceId: instance.id }),
  });
  clients.set(instance.id, { client, at: Date.now(), limits: JSON.stringify(limits) });
  return client;
}

/** The panel user that owns an instance's servers: the client key's user, resolved once and cached. */
export async function serviceUserIdOf(instance: InstanceView): Promise<number> {
  if (instance.serviceUserId !== null) return instance.serviceUserId;
  const account = await (await panelClientFor(instance)).getAccount();
  await writeItem({
    Update: {
      Key: keys.instance(instance.id),
      UpdateExpression: 'SET serviceUserId = :id',
      ConditionExpression: 'attribute_exists(PK)',
      ExpressionAttributeValues: { ':id': account.id },
    },
  });
  return account.id;
}
