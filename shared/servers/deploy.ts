import { sleepWithin as sleep } from '../panel/deadline.ts';
import type { z } from 'zod';
import type { CreateServer } from '../api/schemas.ts';
import { assertWithinBudget } from '../budgets/index.ts';
import { addressOf, candidatesOf, freeAllocationsOf, needsRefill } from '../catalog/candidates.ts';
import { eggsOf, invalidateEggs, toPanelEgg } from '../catalog/eggs.ts';
import {
  type AllocationClaimed,
  claimAllocation,
  dropRefusedClaim,
  refillAllocations,
  releaseClaim,
  settleClaim,
  topologyOf,
} from '../catalog/topology.ts';
import { getConfig } from '../config/env.ts';
import type { CachedEgg, PanelTopologyItem, ServerAddress, ServerItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { assertStorable } from '../db/stored-keys.ts';
import { backoffMs } from '../db/write.ts';
import { type InstanceView, listInstances, panelClientFor, serviceUserIdOf } from '../instances/index.ts';
import { errorFields, logger } from '../observability/logger.ts';
import type { PanelClient } from '../panel/client.ts';
import { isAmbiguous, PanelRequestError } from '../panel/errors.ts';
import type { PanelServer } from '../panel/types.ts';
import {
  type NodeCandidate,
  type PlacementRequest,
  panelUnavailable,
  placementFailure,
  rankFitting,
  type Unanswered,
  unansweredOf,
} from '../placement/index.ts';
import { type Addons, centsUp, featureLimitsOf, NO_ADDONS, type Resources, serverPriceMillicents } from '../pricing/index.ts';
import { getSettings } from '../settings/index.ts';
import { admitPlan, planPriceOf } from '../plans/admit.ts';
import { resolveEnvironment, type VariableIssue } from './egg-variables.ts';
import { checkAddonMaxima, checkCaps, insufficientCredit, invalidRequest, limitExceeded, requiredBalance } from './limits.ts';
import { panelUserOf } from './panel-user.ts';
import { queueRepair } from './pending.ts';
import { profileSnapshot, recordCreated } from './records.ts';
import { admitSubdomain, claimLost, deploySubdomain, subdomainClaimWrite, updateServerRecords } from './subdomain.ts';
import { type ServerView, toServerView } from './views.ts';
import { newId } from '../ids.ts';

/**
 * Deploy: every check that needs no panel first (caps, the per-account limit, runway, budget,
 * egg variables), then placement, then the panel's create, then the record. A panel failure
 * leaves nothing recorded and nothing to charge; a record that fails after the panel created
 * the server removes it from the panel again. The panel's `external_id` is our server id, so an
 * ambiguous create (timeout, lost answer) is settled by looking it up, never by creating twice.
 *
 * Placement works on the shared copies of each panel's eggs and topology (shared/catalog), so in
 * the steady state a deploy makes one Application call, the create (two when its answer is lost
 * and the server is looked up by external id). Before the create it claims a free allocation of
 * the chosen node and reserves the memory and disk there in the copy (one conditional write), so
 * concurrent deploys neither pick the same allocation nor overfill a node.
 */
export async function deployServer(
  principal: { accountId: string; email: string },
  input: z.infer<typeof CreateServer>,
): Promise<ServerView> {
  const { resources, addons, settings, planId, planPrice, priceMillicents, price, snap, required, burnAfter } = await admitDeploy(
    principal.accountId,
    input,
  );
  if (snap.balanceCents < required) throw insufficientCredit(snap.balanceCents, required, burnAfter);
  if (snap.budgetCapCents !== null) await assertWithinBudget(principal.accountId, burnAfter);
  // The caller's fields must be storable before the panel creates anything (see removeUnrecorded).
  assertStorable({ name: input.name, labels: input.labels ?? {} });
  // A bad or taken name answers before the panel creates anything; the claim itself goes with the record.
  const admittedName = input.subdomain ? await admitSubdomain(input.subdomain) : undefined;

  const placement = await placementFor(input, {
    ramMb: resources.ramMb,
    diskMb: resources.diskMb,
    cpuPercent: resources.cpuPercent,
    region: input.region ?? null,
    ...(input.instanceId ? { instanceId: input.instanceId } : {}),
  });
  const serverId = newId();
  const { offer, node, claim, address, panelServer } = await placeAndCreate(
    placement,
    async ({ instance, egg, environment, dockerImage }, allocationId) => {
      const client = await panelClientFor(instance);
      const owner = client.hasClientKey ? await serviceUserIdOf(instance) : await panelUserForAccount(client, principal);
      return createOnPanel(client, {
        name: input.name,
        description: `control-plane server ${serverId}`,
        external_id: serverId,
        user: owner,
        egg: egg.id,
        docker_image: dockerImage,
        startup: egg.startup,
        environment,
        limits: { memory: resources.ramMb, swap: 0, disk: resources.diskMb, io: 500, cpu: resources.cpuPercent, threads: null },
        // What every server includes plus the add-ons bought (shared/servers/addons.ts changes them later).
        feature_limits: featureLimitsOf(addons, settings),
        allocation: { default: allocationId },
        start_on_completion: false,
      });
    },
  );

  const now = new Date().toISOString();
  const subdomain = admittedName ? deploySubdomain(admittedName, offer.egg) : undefined;
  const item: ServerItem & Record<string, unknown> = {
    ...keys.server(principal.accountId, serverId),
    ...keys.serversListing(principal.accountId, now, serverId),
    kind: 'server',
    serverId,
    accountId: principal.accountId,
    instanceId: offer.instance.id,
    panelServerId: panelServer.id,
    identifier: panelServer.identifier,
    uuid: panelServer.uuid,
    name: input.name,
    eggId: offer.egg.id,
    nestId: offer.egg.nestId,
    nodeId: node.nodeId,
    allocationId: panelServer.allocation ?? claim.allocationId,
    // The claimed allocation is the server's primary one (the create names it as the default).
    ...(address && (panelServer.allocation ?? claim.allocationId) === claim.allocationId ? { address } : {}),
    // Where SFTP listens, from the same copy: no panel call (the account's access is granted by shared/servers/sftp.ts).
    ...sftpOf(offer.topology, node.nodeId),
    region: node.region,
    dockerImage: offer.dockerImage,
    resources,
    priceCentsPerHour: price,
    priceMillicentsPerHour: priceMillicents,
    ...keys.billable(principal.accountId, serverId),
    // Billing reads from this history when the server was active and at which price (the highest in each hour).
    history: [{ at: now, status: 'active', priceCentsPerHour: price, priceMillicentsPerHour: priceMillicents }],
    status: 'active',
    createdAt: now,
    updatedAt: now,
    labels: input.labels ?? {},
    addons,
    ...(subdomain ? { subdomain } : {}),
    ...(planId ? { planId } : {}),
    ...(planPrice ? { planPrice } : {}),
  };
  try {
    await recordCreated({
      accountId: principal.accountId,
      item,
      priceMillicents,
      maxServers: snap.maxServers ?? settings.maxServersPerAccount,
      minimumBalanceCents: settings.minimumBalanceCents,
      snapshot: snap,
      extraWrites: subdomain ? [subdomainClaimWrite(item, subdomain)] : [],
    });
  } catch (err) {
    await removeUnrecorded(offer.instance, panelServer, claim);
    throw claimLost(err, subdomain) ?? err;
  }
  // The records after the record: a DNS failure leaves the server deployed with `subdomain.status` failed (and a repair queued).
  if (subdomain) item.subdomain = await updateServerRecords(item);
  // SFTP set up on this panel: the account's user becomes a subuser once the install ends (the panel
  // refuses subuser changes while it runs), done by the pending-repair pass (shared/servers/sftp.ts).
  if (snap.sftpUsers[offer.instance.id] !== undefined) await queueRepair(item, 'sftp');
  return toServerView(item);
}

/** The node's FQDN and SFTP port as the copy holds them; nothing for a copy read before it kept the port. */
function sftpOf(topology: PanelTopologyItem, nodeId: number): { sftp?: { host: string; port: number } } {
  const n = topology.nodes.find((x) => x.id === nodeId);
  return n?.fqdn && n.sftpPort ? { sftp: { host: n.fqdn, port: n.sftpPort } } : {};
}

/**
 * The checks of a deploy that need no panel and no write, shared with its dry run (quote.ts): the
 * platform caps and the per-account server limit throw as the deploy answers them; the price and
 * what the runway requires are computed once, here, so a quote and the deploy after it agree.
 */
export async function admitDeploy(accountId: string, input: z.infer<typeof CreateServer>) {
  const resources: Resources = { ramMb: input.ramMb, cpuPercent: input.cpuPercent, diskMb: input.diskMb };
  const addons: Addons = input.addons ?? { ...NO_ADDONS };
  const settings = await getSettings();
  await checkCaps(resources);
  checkAddonMaxima(addons, settings, 'body.addons');
  // A plan's set price is what the server is charged (recorded in its history like any price).
  const onPlan = await admitPlan({ planId: input.planId, eggId: input.eggId, resources, addons }, settings);
  const priceMillicents = onPlan?.priceMillicents ?? serverPriceMillicents(resources, addons, settings);
  const price = Math.max(1, centsUp(priceMillicents));
  const snap = await profileSnapshot(accountId);
  const maxServers = snap.maxServers ?? settings.maxServersPerAccount;
  if (snap.serverCount >= maxServers) throw limitExceeded(snap.serverCount, maxServers);
  const burnAfter = snap.burnMillicentsPerHour + priceMillicents;
  return {
    resources,
    addons,
    settings,
    planId: onPlan?.plan.planId,
    planAddons: onPlan?.plan.addons,
    planPrice: onPlan && planPriceOf(onPlan.plan),
    priceMillicents,
    price,
    snap,
    burnAfter,
    required: requiredBalance(burnAfter, settings.minimumBalanceCents),
  };
}

/**
 * The panel has a server we could not record: remove it so nothing runs unbilled; then its
 * allocation is free again. The plain delete first: the panel removes the server on Wings, then
 * its row. Only when the panel refuses that (Wings answered an error, or the node is unreachable)
 * the forced delete, which removes the row whatever Wings says and may leave the server's files
 * on the node. A delete with no answer is left to the reconciler (an orphan: a panel server whose
 * external id no record claims).
 */
async function removeUnrecorded(instance: InstanceView, panelServer: PanelServer, claim: AllocationClaimed): Promise<void> {
  const at = { instanceId: instance.id, panelServerId: panelServer.id };
  try {
    const client = await panelClientFor(instance);
    try {
      await client.deleteServer(panelServer.id);
      logger.warn('deploy: removed the unrecorded panel server', { ...at, forced: false });
    } catch (err) {
      if (!refusedByPanel(err)) throw err;
      logger.warn('deploy: the panel refused the delete of the unrecorded server; forcing it', { ...at, ...errorFields(err) });
      await client.deleteServer(panelServer.id, true);
      logger.warn('deploy: removed the unrecorded panel server', { ...at, forced: true });
    }
    await releaseClaim(instance, claim);
  } catch (err) {
    logger.error('deploy: could not remove the unrecorded panel server', { ...at, ...errorFields(err) });
  }
}

/** The panel answered the delete with an error (not a lost answer, not its rate limit): what the forced delete is for. */
const refusedByPanel = (err: unknown): boolean =>
  err instanceof PanelRequestError && err.panelStatus !== undefined && err.panelStatus !== 429;

/** An instance that offers the egg, with its copy of the topology and the create's egg fields. */
interface Offer {
  instance: InstanceView;
  egg: CachedEgg;
  topology: PanelTopologyItem;
  environment: Record<string, string>;
  dockerImage: string;
}

/** The deploy's view of the panels that offer the egg: their copies as our claims change them, and those that did not answer. */
export class Placement {
  readonly offers = new Map<string, Offer>();
  readonly unanswered: Unanswered[] = [];
  readonly request: PlacementRequest;

  constructor(request: PlacementRequest) {
    this.request = request;
  }

  ranked() {
    return rankFitting(
      [...this.offers.values()].flatMap((o) => candidatesOf(o.instance, o.topology)),
      this.request,
    );
  }

  /** `no_capacity`, or `panel_unavailable` while a panel that might have taken the server did not answer. */
  failure() {
    return placementFailure(this.request, this.ranked().rejected, this.unanswered);
  }

  adopt(instanceId: string, topology: PanelTopologyItem | undefined): void {
    const offer = this.offers.get(instanceId);
    if (offer && topology) offer.topology = topology;
  }

  drop(instanceId: string, err: unknown): void {
    logger.warn('deploy: panel did not answer', { instanceId, ...errorFields(err) });
    this.offers.delete(instanceId);
    this.unanswered.push(unansweredOf(instanceId, err));
  }
}

/**
 * The instances that offer the egg (egg ids are per panel) and accept the request's variables and
 * image, with their copies; a 400 when none does, 503 `panel_unavailable` when a panel that might
 * did not answer.
 */
export async function placementFor(input: z.infer<typeof CreateServer>, request: PlacementRequest): Promise<Placement> {
  const instances = (await listInstances()).filter((i) => !input.instanceId || i.id === input.instanceId);
  if (input.instanceId && !instances[0]?.enabled) {
    throw invalidRequest([
      { field: 'body.instanceId', message: instances[0] ? 'is disabled: it takes no new servers' : 'is not a known instance' },
    ]);
  }
  const placement = new Placement(request);
  const refusals = new Map<string, VariableIssue[]>();
  await Promise.all(
    instances
      .filter((i) => i.enabled)
      .map(async (instance) => {
        try {
          const egg = (await eggsOf(instance)).find((e) => e.id === input.eggId);
          if (!egg) return;
          const { issues, ...fields } = createFields(egg, input);
          if (issues.length) refusals.set(instance.id, issues);
          else placement.offers.set(instance.id, { instance, egg, topology: await topologyOf(instance), ...fields });
        } catch (err) {
          if (!(err instanceof PanelRequestError)) throw err;
          placement.drop(instance.id, err);
        }
      }),
  );
  if (placement.offers.size === 0) {
    // Instances are listed by priority: the preferred one's objections.
    const refused = instances.find((i) => refusals.has(i.id));
    if (refused) throw invalidRequest(refusals.get(refused.id)!);
    if (placement.unanswered.length) throw panelUnavailable(placement.unanswered);
    throw invalidRequest([{ field: 'body.eggId', message: 'is not offered by any enabled instance (see GET /v1/eggs)' }]);
  }
  assertKnownRegion(placement);
  return placement;
}

/** Every variable is sent (the panel fills no defaults); the image must be one of the egg's. */
function createFields(egg: CachedEgg, input: z.infer<typeof CreateServer>) {
  const { environment, issues } = resolveEnvironment(toPanelEgg(egg), input.environment);
  const images = Object.values(egg.dockerImages);
  if (input.dockerImage && !images.includes(input.dockerImage))
    issues.push({ field: 'body.dockerImage', message: `must be one of the egg's images: ${images.join(', ')}` });
  return { environment, dockerImage: input.dockerImage ?? egg.dockerImage, issues };
}

/** A region no node carries is a mistake in the request (400), not a lack of capacity (503, which clients retry). */
function assertKnownRegion(placement: Placement): void {
  const wanted = placement.request.region;
  const { fitting, rejected } = placement.ranked();
  const known = [...new Set([...fitting, ...rejected].map((n) => n.region).filter((r) => r !== null))];
  if (wanted == null || known.length === 0 || known.includes(wanted)) return;
  throw invalidRequest([
    { field: 'body.region', message: `is not a region of any instance offering this egg (see GET /v1/regions): ${known.join(', ')}` },
  ]);
}

/**
 * Creates tried at most, each an Application call. After a create refused for its allocation, the
 * node sets read no later than the refused one are read from the panel again before use, so the
 * next create rarely fails the same way.
 */
const MAX_CREATES = 4;

type Create = (offer: Offer, allocationId: number) => Promise<PanelServer>;

async function placeAndCreate(placement: Placement, create: Create) {
  for (let attempt = 1; attempt <= MAX_CREATES; attempt++) {
    const { offer, node, claim, address } = await claimPlacement(placement);
    let panelServer: PanelServer;
    try {
      panelServer = await create(offer, claim.allocationId);
    } catch (err) {
      await afterFailedCreate(err, placement, offer, claim);
      continue;
    }
    // Bookkeeping of the copy only: the server exists and must be recorded whatever happens here.
    await settleClaim(offer.instance, claim).catch((err) => logger.warn('deploy: claim not settled in the copy', errorFields(err)));
    return { offer, node, claim, address, panelServer };
  }
  throw placement.failure();
}

/** Claim attempts at most: concurrent deploys onto one node lose races to each other, and each lost race brings the current copy. */
const CLAIM_ATTEMPTS = 12;

/** The best node that fits and one of its free allocations, claimed in the copy; a node whose copy has none left is refilled from the panel. */
async function claimPlacement(
  placement: Placement,
): Promise<{ offer: Offer; node: NodeCandidate; claim: AllocationClaimed; address: ServerAddress | undefined }> {
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const node = placement.ranked().fitting[0];
    if (!node) throw placement.failure();
    const offer = placement.offers.get(node.instanceId)!;
    if (needsRefill(offer.topology, node.nodeId)) {
      await refill(placement, offer, node.nodeId);
      continue;
    }
    const free = freeAllocationsOf(offer.topology, node.nodeId);
    // Random, so deploys working from the same copy rarely race for one allocation.
    const allocationId = free[Math.floor(Math.random() * free.length)]!;
    // Read from the copy the allocation came from: the claim's answer may be a newer one.
    const address = addressOf(offer.topology, node.nodeId, allocationId);
    const { claim, topology } = await claimAllocation(offer.instance, offer.topology, node.nodeId, allocationId, placement.request);
    placement.adopt(offer.instance.id, topology);
    if (claim) return { offer, node, claim, address };
    await sleep(backoffMs(attempt));
  }
  throw placement.failure();
}

async function refill(placement: Placement, offer: Offer, nodeId: number): Promise<void> {
  try {
    placement.adopt(offer.instance.id, await refillAllocations(offer.instance, offer.topology, nodeId));
  } catch (err) {
    if (!(err instanceof PanelRequestError)) throw err;
    placement.drop(offer.instance.id, err);
  }
}

/**
 * After a failed create: returns to try again (another allocation, another panel), or throws.
 * - The allocation was taken (422 on `allocation.default`): the copy lags behind the panel; the
 *   allocation stays out, and the sets read before now are read again before use.
 * - The panel did nothing (429, or our call budget for it is spent): the claim goes back and the
 *   other panels are tried; if none fits, `panel_unavailable`.
 * - Unknown whether it created (no answer to the create nor to the lookups): `panel_unavailable`
 *   at once, never a second create elsewhere. The claim stays until the next read of the panel.
 * - Anything else is the answer: the claim goes back; a refusal naming the egg or a variable
 *   means the eggs copy is out of date.
 */
async function afterFailedCreate(err: unknown, placement: Placement, offer: Offer, claim: AllocationClaimed): Promise<void> {
  const { instance } = offer;
  if (err instanceof UnsettledCreate) throw panelUnavailable([...placement.unanswered, unansweredOf(instance.id, err.cause)]);
  if (allocationTaken(err)) return placement.adopt(instance.id, await dropRefusedClaim(instance, claim));
  placement.adopt(instance.id, await releaseClaim(instance, claim));
  if (panelDidNothing(err)) return placement.drop(instance.id, err);
  if (eggOutdated(err)) await invalidateEggs(instance.id);
  throw err;
}

const refusedFields = (err: unknown): string[] =>
  err instanceof PanelRequestError && err.panelStatus === 422 ? err.panelErrors.map((e) => e.meta?.source_field ?? '') : [];

const allocationTaken = (err: unknown): boolean => refusedFields(err).includes('allocation.default');

const eggOutdated = (err: unknown): boolean => refusedFields(err).some((f) => f === 'egg' || f.startsWith('environment.'));

/** Rate limited by the panel, or refused by our own call budget before sending: nothing happened there. */
const panelDidNothing = (err: unknown): boolean => err instanceof PanelRequestError && (err.panelStatus === 429 || !err.sent);

/** Without a client key, servers go under one panel user per account (with one, under its service user). */
async function panelUserForAccount(client: PanelClient, principal: { accountId: string }): Promise<number> {
  const { externalId, ...fields } = panelUserOf(principal.accountId);
  const existing = await client.getUserByExternalId(externalId);
  if (existing) return existing.id;
  try {
    return (await client.createUser({ external_id: externalId, ...fields })).id;
  } catch (err) {
    // Two deploys raced to create the user: the other one won.
    const again = await client.getUserByExternalId(externalId);
    if (again) return again.id;
    throw err;
  }
}

/** A create that failed ambiguously, and the panel answered none of the lookups: the server may or may not exist. */
class UnsettledCreate extends Error {
  constructor(cause: unknown) {
    super('The panel did not answer whether it created the server', { cause });
  }
}

/** Creates on the panel; an ambiguous failure (timeout, lost answer, 5xx) is settled by the external id. */
async function createOnPanel(client: PanelClient, body: Parameters<PanelClient['createServer']>[0]): Promise<PanelServer> {
  try {
    return await client.createServer(body, getConfig().panelCreateTimeoutMs);
  } catch (err) {
    if (!isAmbiguous(err)) throw err;
    const found = await lookUpCreated(client, body.external_id);
    if (found === 'no answer') throw new UnsettledCreate(err);
    if (!found) throw err;
    logger.warn('deploy: create answer lost, server found by external id', { serverId: body.external_id, panelServerId: found.id });
    return found;
  }
}

/** A few lookups, spaced out: the create may still be running on the panel. */
async function lookUpCreated(client: PanelClient, externalId: string): Promise<PanelServer | null | 'no answer'> {
  let answered = false;
  for (const waitMs of [0, 500, 1500]) {
    await sleep(waitMs);
    try {
      const found = await client.getServerByExternalId(externalId);
      if (found) return found;
      answered = true;
    } catch {
      /* the lookup failed too: try again */
    }
  }
  return answered ? null : 'no answer';
}
