import { eggsOf } from '../catalog/eggs.ts';
import { getConfig } from '../config/env.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { DnsRecordValues, RetiredSubdomain, ServerItem, ServerSubdomain } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { isConditionFailed, type NamedWrite, transact, writeIfFirst } from '../db/write.ts';
import { fqdnOf, srvServiceOf, subdomainNameProblem } from '../dns/names.ts';
import { dnsProvider } from '../dns/provider.ts';
import { ApiError } from '../errors.ts';
import { toInstanceView } from '../instances/index.ts';
import { errorFields, logger } from '../observability/logger.ts';
import { withServerLease } from './lease.ts';
import { invalidRequest } from './limits.ts';
import { queueRepair } from './pending.ts';
import { getOwnedServer } from './read.ts';
import { type ServerView, toServerView } from './views.ts';

/**
 * A server's name under the operator's DNS zone (`survival.play.example.com`): an A (AAAA) record to
 * its primary address's IP and, for a game whose client reads SRV (shared/dns/names.ts), the SRV
 * record with the port. The name is claimed in the table (keys.subdomainClaim, `attribute_not_exists`)
 * in the same transaction that sets the server's `subdomain`, so two servers never hold one name.
 *
 * The DNS provider is asked after the table changed, and its failure never fails the request: the
 * server's `subdomain.status` says `failed` and the pending-repair pass (reason `dns`) publishes
 * again. A name given up (rename, clear, delete) keeps its claim until its records are removed, so
 * another server cannot take it while the old records still point at the old address; a removal
 * that failed waits on the repair item (`dnsRetire`). No panel call, except the eggs copy's refresh
 * when a set finds it stale (to know the game's SRV service).
 */

/** The zone, or a 400 on a platform without one. */
function zoneOrRefuse(field: string): string {
  const { zone } = getConfig().dns;
  if (!zone) throw invalidRequest([{ field, message: 'cannot be set: this platform offers no subdomains (no DNS zone is configured)' }]);
  return zone;
}

function assertName(name: string, field: string): void {
  const problem = subdomainNameProblem(name);
  if (problem) throw invalidRequest([{ field, message: problem }]);
}

const taken = (name: string): ApiError =>
  new ApiError('conflict', `The subdomain ${name} is taken; choose another name`, { field: 'subdomain', name });

/**
 * A deploy's subdomain, checked before anything is created: a bad name or one already claimed
 * answers before the panel is asked (the claim itself is written with the server, recordCreated).
 */
export async function admitSubdomain(name: string): Promise<{ zone: string; name: string }> {
  const zone = zoneOrRefuse('body.subdomain');
  assertName(name, 'body.subdomain');
  if (await accessPatterns.subdomainClaim(zone, name)) throw taken(name);
  return { zone, name };
}

/** The deploy's subdomain once its egg is known (the SRV service is the game's). */
export const deploySubdomain = (admitted: { zone: string; name: string }, egg: { name: string; nestName: string }): ServerSubdomain =>
  pendingSubdomain(admitted.zone, admitted.name, srvServiceOf(egg));

const pendingSubdomain = (zone: string, name: string, srvService: string | undefined): ServerSubdomain => ({
  name,
  zone,
  fqdn: fqdnOf(name, zone),
  ...(srvService ? { srvService } : {}),
  status: 'pending',
});

/** The claim of `subdomain` by the server, for the transaction that gives the server the name. Its failure (`claim`) is a name taken. */
export function subdomainClaimWrite(server: { accountId: string; serverId: string }, subdomain: ServerSubdomain): NamedWrite {
  return {
    name: 'claim',
    Put: {
      Item: {
        ...keys.subdomainClaim(subdomain.zone, subdomain.name),
        kind: 'subdomain-claim',
        zone: subdomain.zone,
        name: subdomain.name,
        accountId: server.accountId,
        serverId: server.serverId,
        claimedAt: new Date().toISOString(),
      },
      // The server's own claim may stand (a name given up and taken back before its records were removed).
      ConditionExpression: 'attribute_not_exists(PK) OR serverId = :sid',
      ExpressionAttributeValues: { ':sid': server.serverId },
    },
  };
}

/** A deploy whose claim lost the race to another server's: 409, and the deploy removes what it created. */
export const claimLost = (err: unknown, subdomain: ServerSubdomain | undefined): ApiError | undefined =>
  subdomain && isConditionFailed(err, 'claim') ? taken(subdomain.name) : undefined;

/** What the server's records hold now: its primary address and, with an SRV service, its port. */
function valuesOf(server: ServerItem): DnsRecordValues | null {
  const sub = server.subdomain;
  if (!sub || !server.address) return null;
  return { ip: server.address.ip, port: server.address.port, ...(sub.srvService ? { srvService: sub.srvService } : {}) };
}

const sameValues = (a: DnsRecordValues | undefined, b: DnsRecordValues): boolean =>
  a !== undefined && a.ip === b.ip && a.port === b.port && a.srvService === b.srvService;

/**
 * Publishes the server's records from its stored primary address: call it after a change of the
 * server's `address` (a new primary port, shared/servers: the ports part). Reads the server afresh;
 * does nothing without a subdomain or when the provider already has these values. Never throws for
 * the provider: a failure is stored as `status: failed` and queued for the repair pass (`throwOnFailure`:
 * the repair pass's own call, which backs off). Returns the subdomain as stored after.
 */
export async function updateServerRecords(
  server: Pick<ServerItem, 'accountId' | 'serverId'>,
  options: { throwOnFailure?: boolean } = {},
): Promise<ServerSubdomain | undefined> {
  const item = await accessPatterns.serverOfAccount(server.accountId, server.serverId);
  const sub = item?.subdomain;
  if (!item || !sub || item.status === 'deleted') return sub;
  const values = valuesOf(item);
  if (sub.status === 'active' && values && sameValues(sub.published, values)) return sub;
  const provider = dnsProvider();
  let next: ServerSubdomain;
  try {
    if (!provider) throw new Error('No DNS provider is configured');
    if (!values) throw new Error('The server has no primary address to publish');
    await provider.upsert({ zone: sub.zone, name: sub.name, values }, sub.published);
    next = { ...sub, status: 'active', published: values };
  } catch (err) {
    logger.warn('subdomain records not published; the repair pass retries', {
      serverId: item.serverId,
      fqdn: sub.fqdn,
      ...errorFields(err),
    });
    next = { ...sub, status: 'failed' };
    await storeSubdomain(item, next);
    // The repair pass's own call backs its item off instead.
    if (options.throwOnFailure) throw err;
    await queueRepair(item, 'dns', err);
    return next;
  }
  await storeSubdomain(item, next);
  return next;
}

/** The subdomain's new state, unless the server's name changed meanwhile (then that change publishes its own). */
async function storeSubdomain(item: ServerItem, next: ServerSubdomain): Promise<void> {
  await writeIfFirst({
    Update: {
      Key: keys.server(item.accountId, item.serverId),
      UpdateExpression: 'SET subdomain = :next',
      ConditionExpression: 'subdomain.#name = :name AND subdomain.#zone = :zone',
      ExpressionAttributeNames: { '#name': 'name', '#zone': 'zone' },
      ExpressionAttributeValues: { ':next': next, ':name': next.name, ':zone': next.zone },
    },
  });
}

/**
 * Removes the records of names the server gave up, then releases each claim (if it is still this
 * server's and not its current name again). A removal that fails goes to the repair item; with
 * `throwOnFailure` (the repair pass) it throws after queueing.
 */
async function retire(
  server: Pick<ServerItem, 'accountId' | 'serverId'>,
  names: RetiredSubdomain[],
  options: { throwOnFailure?: boolean } = {},
) {
  const provider = dnsProvider();
  const current = (await accessPatterns.serverOfAccount(server.accountId, server.serverId))?.subdomain;
  const failed: RetiredSubdomain[] = [];
  let firstError: unknown;
  for (const gone of names) {
    if (current && current.zone === gone.zone && current.name === gone.name) continue;
    try {
      if (gone.values) {
        if (!provider) throw new Error('No DNS provider is configured');
        await provider.remove({ zone: gone.zone, name: gone.name, values: gone.values });
      }
      await writeIfFirst({
        Delete: {
          Key: keys.subdomainClaim(gone.zone, gone.name),
          ConditionExpression: 'serverId = :sid',
          ExpressionAttributeValues: { ':sid': server.serverId },
        },
      });
    } catch (err) {
      logger.warn('subdomain records not removed; the repair pass retries', {
        serverId: server.serverId,
        name: gone.name,
        ...errorFields(err),
      });
      failed.push(gone);
      firstError ??= err;
    }
  }
  if (!failed.length) return;
  // The repair pass's own call: its item already lists these names.
  if (options.throwOnFailure) throw firstError;
  await queueRepair(server, 'dns', firstError, failed);
}

/** The name as given up: the records last published under it (or, never confirmed, those it would have). */
const retiredOf = (item: ServerItem): RetiredSubdomain | null =>
  item.subdomain ? { zone: item.subdomain.zone, name: item.subdomain.name, values: item.subdomain.published ?? valuesOf(item) } : null;

/**
 * PUT /v1/servers/{id}/subdomain: gives the server `name` (replacing its current one, whose records
 * go). 409 when another server holds the name. Setting the current name again publishes it again
 * when it is not active.
 */
export async function setSubdomain(accountId: string, serverId: string, name: string): Promise<ServerView> {
  const zone = zoneOrRefuse('body.name');
  assertName(name, 'body.name');
  return withServerLease(serverId, 'subdomain', async () => {
    const item = await getOwnedServer(accountId, serverId);
    if (item.status === 'deleted') throw new ApiError('conflict', 'The server is deleted');
    const previous = item.subdomain;
    if (previous?.zone === zone && previous.name === name) {
      await updateServerRecords(item);
      return toServerView(await getOwnedServer(accountId, serverId));
    }
    const holder = await accessPatterns.subdomainClaim(zone, name);
    if (holder && holder.serverId !== serverId) throw taken(name);
    const next = pendingSubdomain(zone, name, srvServiceOf(await eggOf(item)));
    try {
      await transact([
        subdomainClaimWrite(item, next),
        {
          name: 'server',
          Update: {
            Key: keys.server(accountId, serverId),
            UpdateExpression: 'SET subdomain = :next',
            // The name read is the name replaced: a concurrent change of it makes this one retry by hand.
            ConditionExpression: previous
              ? '#status <> :deleted AND subdomain.#name = :was AND subdomain.#zone = :zone'
              : '#status <> :deleted AND attribute_not_exists(subdomain)',
            ExpressionAttributeNames: { '#status': 'status', ...(previous ? { '#name': 'name', '#zone': 'zone' } : {}) },
            ExpressionAttributeValues: {
              ':next': next,
              ':deleted': 'deleted',
              ...(previous ? { ':was': previous.name, ':zone': previous.zone } : {}),
            },
          },
        },
      ]);
    } catch (err) {
      if (isConditionFailed(err, 'claim')) throw taken(name);
      if (isConditionFailed(err, 'server'))
        throw new ApiError('conflict', "The server's subdomain changed meanwhile; read it and try again");
      throw err;
    }
    const gone = retiredOf(item);
    if (gone) await retire(item, [gone]);
    await updateServerRecords(item);
    return toServerView(await getOwnedServer(accountId, serverId));
  });
}

/** DELETE /v1/servers/{id}/subdomain: the server keeps no name; its records go, then its claim. Idempotent. */
export async function clearSubdomain(accountId: string, serverId: string): Promise<ServerView> {
  return withServerLease(serverId, 'subdomain', async () => {
    const item = await getOwnedServer(accountId, serverId);
    const gone = retiredOf(item);
    if (!gone) return toServerView(item);
    await dropSubdomainField(item);
    await retire(item, [gone]);
    return toServerView(await getOwnedServer(accountId, serverId));
  });
}

async function dropSubdomainField(item: ServerItem): Promise<void> {
  await writeIfFirst({
    Update: {
      Key: keys.server(item.accountId, item.serverId),
      UpdateExpression: 'REMOVE subdomain',
      ConditionExpression: 'subdomain.#name = :name',
      ExpressionAttributeNames: { '#name': 'name' },
      ExpressionAttributeValues: { ':name': item.subdomain!.name },
    },
  });
}

/** After the server's deletion was recorded (delete.ts): its name's records go, then the claim. Never throws for the provider. */
export async function releaseDeletedSubdomain(item: ServerItem): Promise<void> {
  const gone = retiredOf(item);
  if (!gone) return;
  await dropSubdomainField(item);
  await retire(item, [gone]);
}

/**
 * The repair pass's part (reason `dns`): removes the records of given-up names, then publishes the
 * server's current name if it is not active. Throws while anything is left, so the item backs off.
 */
export async function repairSubdomain(server: { accountId: string; serverId: string }, names: RetiredSubdomain[]): Promise<void> {
  if (names.length) await retire(server, names, { throwOnFailure: true });
  await updateServerRecords(server, { throwOnFailure: true });
}

/** The server's egg (its name and nest's, for the SRV service) from the eggs copy. */
async function eggOf(item: ServerItem) {
  const instance = await accessPatterns.instanceById(item.instanceId);
  if (!instance) return undefined;
  return (await eggsOf(toInstanceView(instance))).find((e) => e.id === item.eggId);
}
