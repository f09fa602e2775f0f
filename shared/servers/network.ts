import { updateServerRecords } from './subdomain.ts';
import type { z } from 'zod';
import type { AllocationList, ServerAllocation as ServerAllocationView, UpdateAllocation } from '../api/schemas/network.ts';
import { addressOf, freeAllocationsOf, needsRefill } from '../catalog/candidates.ts';
import { claimPort, dropRefusedClaim, refillAllocations, releaseClaim, settleClaim, topologyOf } from '../catalog/topology.ts';
import type { PanelTopologyItem, ServerAllocation, ServerItem } from '../db/items.ts';
import { ApiError } from '../errors.ts';
import { getInstance, panelClientFor } from '../instances/index.ts';
import { errorFields, logger } from '../observability/logger.ts';
import type { PanelClient } from '../panel/client.ts';
import { isAmbiguous, PanelRequestError } from '../panel/errors.ts';
import type { Envelope, PanelAppAllocation, PanelServerWithAllocations } from '../panel/types.ts';
import { controllable } from './control.ts';
import type { RouteContext } from './files.ts';
import { assertCustomerMayHold, stateConflict, withServerLease } from './lease.ts';
import { getOwnedServer } from './read.ts';
import { recordAllocations } from './records.ts';
import { addressesOf } from './views.ts';

/**
 * A server's network allocations (extra ports): list, add one from its node's free ones, set the
 * primary, a note, remove. Loaded by the server-tools function on the first network call.
 *
 * How a port is added. The panel has two ways: the Client API's `POST …/network/allocations`
 * (FindAssignableAllocationService) and the Application API's build change with
 * `add_allocations`. The first refuses unless the operator turned on
 * `PTERODACTYL_CLIENT_ALLOCATIONS_ENABLED` (off by default) and, when the primary's IP has no free
 * allocation, a port range; it also picks at random, outside the topology copy our deploys claim
 * from. The second works on every panel and takes the allocation we name, but ignores
 * `feature_limits.allocations` and silently skips an allocation that is not free on the node. So
 * an add, under the server's lease:
 * 1. reads the server with its allocations (Application GET `?include=allocations`: the build to
 *    send back, the limit, the count); at or above the limit (the count includes the primary, a
 *    null limit counts as 0, as the panel's own check does) it is 422 `limit_exceeded` — WE enforce
 *    the limit, since the route used does not;
 * 2. claims one of the node's free allocations in the topology copy (one conditional write, the
 *    primary's IP first, like the panel's own choice), so concurrent adds on other servers never
 *    take the same one; the lease serializes adds of one server, so two never pass the limit;
 * 3. sends the build unchanged plus `add_allocations: [id]`, answered with the allocations
 *    (`?include=allocations`); when the panel skipped it (the copy lagged), the claim is dropped
 *    and another one tried (one more call each).
 * Two panel calls with a fresh copy (a node the copy has none left for costs one listing more).
 * Everything else is one Client API call (client key needed): primary (`POST …/{id}/primary`),
 * notes (`POST …/{id}`, max 255 here, 256 at the panel), remove (`DELETE …/{id}`: never the
 * primary, 409 before any call); the list is one Application GET (it carries the limit too). A
 * note or primary on a server whose ports never changed through us reads its list once (one more).
 * The list route does not write the record: a port changed on the panel directly shows in it,
 * and in the server view after the next change through us.
 *
 * The server record keeps the list (`allocations`) and the primary (`allocationId`, `address`), so
 * every server view shows them with no panel call. SFTP is per node (the node's FQDN and Wings'
 * SFTP port), so a port change leaves it as it is. A port added or made primary reaches players
 * after the server's next start (Wings binds the container's ports when it starts it).
 */

const MAX_ADD_ATTEMPTS = 3;

type NetworkRoute<Body = unknown> = RouteContext<Body> & { params: { id: string; allocationId?: number } };
type AllocationView = z.infer<typeof ServerAllocationView>;

/**
 * The primary address changed: the server's subdomain records follow (its A record to the new
 * IP, its SRV record to the new port; nothing without a subdomain). Called under the server's lease
 * after the record is written; a DNS failure is kept on the server and repaired, never thrown.
 */
export async function onPrimaryChanged(before: ServerItem, _primary: ServerAllocation): Promise<void> {
  await updateServerRecords(before);
}

/** The node's FQDN the deploy recorded (the SFTP host), for `host` when an allocation has no alias. */
const fqdnOf = (item: ServerItem): string | undefined =>
  item.sftp?.host ?? (item.address && item.address.alias === null && item.address.host !== item.address.ip ? item.address.host : undefined);

const toStored = (
  a: { id: number; ip: string; port: number; notes: string | null },
  alias: string | null,
  fqdn: string | undefined,
): ServerAllocation => ({
  id: a.id,
  host: alias ?? fqdn ?? a.ip,
  ip: a.ip,
  alias,
  port: a.port,
  notes: a.notes,
});

const fromApp = (list: PanelAppAllocation[], fqdn: string | undefined): ServerAllocation[] => list.map((a) => toStored(a, a.alias, fqdn));

const allocationsOf = (server: PanelServerWithAllocations): PanelAppAllocation[] =>
  (server.relationships?.allocations?.data ?? []).map((d) => d.attributes);

const viewsOf = (item: Pick<ServerItem, 'allocationId' | 'address' | 'allocations'>): AllocationView[] => addressesOf(item);

/** The panel's refusals of allocation changes in our terms; anything else passes through. */
async function onNetwork<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (!(err instanceof PanelRequestError)) throw err;
    if (err.panelStatus === 404) throw new ApiError('not_found', 'No such allocation on this server');
    if (err.panelStatus === 400) {
      const detail = err.panelErrors[0]?.detail ?? '';
      if (/no allocation limit is set/.test(detail)) {
        throw new ApiError('conflict', "The server's port limit is 0 on its panel, so its ports cannot be removed; ask the operator");
      }
      throw new ApiError('conflict', detail || 'The panel refused this change of ports');
    }
    throw err;
  }
}

async function underLease<T>(accountId: string, serverId: string, fn: (item: ServerItem) => Promise<T>): Promise<T> {
  await assertCustomerMayHold(await getOwnedServer(accountId, serverId));
  return withServerLease(serverId, 'network', async () => {
    // Read again under the lease: the record another change wrote before we held it.
    const item = await getOwnedServer(accountId, serverId);
    const conflict = stateConflict(item);
    if (conflict) throw conflict;
    return fn(item);
  });
}

async function appClientOf(item: ServerItem) {
  const instance = await getInstance(item.instanceId);
  return { instance, client: await panelClientFor(instance) };
}

/** GET: the server's allocations and its limit, from one Application API read (no client key needed). */
export async function listAllocations({ principal, params }: NetworkRoute): Promise<z.infer<typeof AllocationList>> {
  const item = await getOwnedServer(principal.accountId, params.id);
  const conflict = stateConflict(item);
  if (conflict) throw conflict;
  const { client } = await appClientOf(item);
  const onPanel = await client.getServerWithAllocations(item.panelServerId);
  const data = viewsOf({
    allocationId: onPanel.allocation,
    address: item.address,
    allocations: fromApp(allocationsOf(onPanel), fqdnOf(item)),
  });
  return { data, limit: onPanel.feature_limits.allocations ?? 0 };
}

/** POST: one more allocation from the server's node (see the module comment: two panel calls). */
export async function addAllocation({ principal, params, audit }: NetworkRoute): Promise<AllocationView> {
  audit.target = `server:${params.id}`;
  return underLease(principal.accountId, params.id, async (item) => {
    const { instance, client } = await appClientOf(item);
    const onPanel = await client.getServerWithAllocations(item.panelServerId);
    const held = allocationsOf(onPanel);
    const limit = onPanel.feature_limits.allocations ?? 0;
    if (held.length >= limit) {
      throw new ApiError(
        'limit_exceeded',
        `This server holds its limit of ${limit} port${limit === 1 ? '' : 's'} (the primary included); remove one or raise the limit first`,
        { limit, held: held.length },
      );
    }
    const primaryIp = held.find((a) => a.id === onPanel.allocation)?.ip ?? item.address?.ip;
    const { limits, feature_limits } = onPanel;
    const { oom_disabled, ...build } = limits;
    let topology = await topologyOf(instance);
    for (let attempt = 0; attempt < MAX_ADD_ATTEMPTS; attempt++) {
      if (needsRefill(topology, item.nodeId)) topology = await refillAllocations(instance, topology, item.nodeId);
      const allocationId = pick(topology, item.nodeId, primaryIp);
      if (allocationId === undefined) {
        throw new ApiError('no_capacity', "The server's node has no free port left; ask the operator to add allocations to it", {
          nodeId: item.nodeId,
        });
      }
      const address = addressOf(topology, item.nodeId, allocationId);
      const { claim, topology: after } = await claimPort(instance, topology, item.nodeId, allocationId);
      topology = after ?? (await topologyOf(instance));
      if (!claim) continue;
      let changed: PanelServerWithAllocations;
      try {
        changed = await client.updateBuildWithAllocations(item.panelServerId, {
          allocation: onPanel.allocation,
          limits: build,
          feature_limits,
          ...(oom_disabled !== undefined ? { oom_disabled } : {}),
          add_allocations: [allocationId],
        });
      } catch (err) {
        // Unknown whether the panel assigned it: the claim stays until the next read of the panel.
        if (!isAmbiguous(err)) await releaseClaim(instance, claim);
        throw err;
      }
      const now = allocationsOf(changed);
      const added = now.find((a) => a.id === allocationId);
      if (!added) {
        // Not free on the panel any more (the copy lagged behind it): never offered again, try another.
        topology = (await dropRefusedClaim(instance, claim)) ?? (await topologyOf(instance));
        continue;
      }
      await settleClaim(instance, claim).catch((err) => logger.warn('network: claim not settled in the copy', errorFields(err)));
      const fqdn = fqdnOf(item) ?? (address && address.alias === null ? address.host : undefined);
      const allocations = fromApp(now, fqdn);
      await recordAllocations(item, { allocations }, new Date().toISOString());
      audit.details = { allocationId, ip: added.ip, port: added.port };
      return viewsOf({ allocationId: changed.allocation, address: item.address, allocations }).find((a) => a.id === allocationId)!;
    }
    throw new ApiError('conflict', 'Other deploys kept taking the free ports of this node; try again');
  });
}

/** A free allocation of the node from the copy, on the primary's IP when there is one (as the panel's own choice), at random. */
function pick(topology: PanelTopologyItem, nodeId: number, ip: string | undefined): number | undefined {
  const free = freeAllocationsOf(topology, nodeId);
  const sameIp = free.filter((id) => topology.allocationAddresses?.[nodeId]?.[id]?.ip === ip);
  const from = sameIp.length > 0 ? sameIp : free;
  return from[Math.floor(Math.random() * from.length)];
}

/** PATCH: a note (one call) and/or make it the primary (one call). */
export async function updateAllocation({
  principal,
  params,
  body,
  audit,
}: NetworkRoute<z.infer<typeof UpdateAllocation>>): Promise<AllocationView> {
  const allocationId = params.allocationId ?? 0;
  audit.target = `server:${params.id}`;
  audit.details = {
    allocationId,
    ...(body.notes !== undefined ? { notes: body.notes ? 'set' : 'cleared' } : {}),
    ...(body.primary ? { primary: true } : {}),
  };
  return underLease(principal.accountId, params.id, async (item) => {
    const { server, client } = await controllable(principal.accountId, params.id);
    const path = `/network/allocations/${allocationId}`;
    let answered: PanelClientAllocation | undefined;
    if (body.notes !== undefined) {
      const notes = body.notes === '' ? null : body.notes;
      answered = (
        await onNetwork(() =>
          client.serverCall<Envelope<PanelClientAllocation>>(server.identifier, 'POST', path, {
            json: { notes },
            idempotent: true,
            expect: 'json',
          }),
        )
      ).attributes;
    }
    if (body.primary) {
      answered = (
        await onNetwork(() =>
          client.serverCall<Envelope<PanelClientAllocation>>(server.identifier, 'POST', `${path}/primary`, {
            idempotent: true,
            expect: 'json',
          }),
        )
      ).attributes;
    }
    const changed = toStored(answered!, answered!.ip_alias, fqdnOf(item));
    const known = item.allocations ?? (await listedByClient(client, server.identifier, item));
    const allocations = [...known.filter((a) => a.id !== changed.id), changed];
    const primaryMoved = body.primary === true && item.allocationId !== changed.id;
    await recordAllocations(item, { allocations, ...(body.primary ? { primary: changed } : {}) }, new Date().toISOString());
    if (primaryMoved) await onPrimaryChanged(item, changed);
    return viewsOf({ allocationId: body.primary ? changed.id : item.allocationId, address: item.address, allocations }).find(
      (a) => a.id === changed.id,
    )!;
  });
}

/** DELETE: frees it on the panel (one call); the primary never (409 with no call). */
export async function removeAllocation({ principal, params, audit }: NetworkRoute): Promise<{ id: number; deleted: true }> {
  const allocationId = params.allocationId ?? 0;
  audit.target = `server:${params.id}`;
  audit.details = { allocationId };
  return underLease(principal.accountId, params.id, async (item) => {
    if (item.allocationId === allocationId) {
      throw new ApiError('conflict', 'This is the primary allocation: make another one primary first');
    }
    const { server, client } = await controllable(principal.accountId, params.id);
    await onNetwork(() => client.serverCall(server.identifier, 'DELETE', `/network/allocations/${allocationId}`, { idempotent: true }));
    const known = item.allocations ?? viewsOf(item);
    const gone = known.find((a) => a.id === allocationId);
    audit.details = { allocationId, ...(gone ? { ip: gone.ip, port: gone.port } : {}) };
    await recordAllocations(item, { allocations: known.filter((a) => a.id !== allocationId).map(stored) }, new Date().toISOString());
    return { id: allocationId, deleted: true as const };
  });
}

const stored = ({ id, host, ip, alias, port, notes }: ServerAllocation): ServerAllocation => ({ id, host, ip, alias, port, notes });

/** A record with no list yet (a server that never changed its ports through us): the panel's, one call. */
async function listedByClient(client: PanelClient, identifier: string, item: ServerItem): Promise<ServerAllocation[]> {
  const list = await client.serverCall<{ data: Envelope<PanelClientAllocation>[] }>(identifier, 'GET', '/network/allocations', {
    idempotent: true,
    expect: 'json',
  });
  return list.data.map(({ attributes: a }) => toStored(a, a.ip_alias, fqdnOf(item)));
}

/** An allocation as the Client API shows it (pterodactyl/panel:app/Transformers/Api/Client/AllocationTransformer.php). */
interface PanelClientAllocation {
  id: number;
  ip: string;
  ip_alias: string | null;
  port: number;
  notes: string | null;
  is_default: boolean;
}
