import type { z } from 'zod';
import type { CreateDatabase, DatabaseWithPassword, ServerDatabase, ServerDatabaseList } from '../api/schemas/databases.ts';
import { keys } from '../db/keys.ts';
import { isConditionFailed, writeItem } from '../db/write.ts';
import { ApiError } from '../errors.ts';
import { PanelRequestError } from '../panel/errors.ts';
import type { Envelope, ListEnvelope } from '../panel/types.ts';
import { controllable } from './control.ts';
import type { RouteContext } from './files.ts';
import { assertCustomerMayHold, withServerLease } from './lease.ts';
import { getOwnedServer } from './read.ts';

/**
 * Server databases on the panel's database hosts, through the panel's Client API on the instance's
 * client key (the panel's DatabaseController): list, create, rotate the password, delete. One panel
 * call each. Changes run under the server's lease (lease.ts), like backups.
 *
 * A password passes through once: the panel's answer to a create or a rotate goes to the caller and
 * nowhere else. It is never stored (no idempotency record: a create is not `idempotent`, and a
 * repeated one is refused by the name being taken), never logged, never in an activity entry.
 *
 * How many a server may hold is the panel's `feature_limits.databases` (null: no limit). The panel's
 * refusals become ours: its limit (400 TooManyDatabasesException) is 422 `limit_exceeded` with the
 * limit (read with a second call, on a refusal only); no
 * database host for the server (400 NoSuitableDatabaseHostException) is 409 `conflict`, and is kept
 * on the instance (`databaseHost`), as is a create that found one: the panel's APIs do not list
 * database hosts, so what its creates answered is what the admin's instance view shows.
 */

/** DatabaseTransformer (pterodactyl/panel:app/Transformers/Api/Client/DatabaseTransformer.php). */
export interface PanelDatabase {
  id: string;
  host: { address: string | null; port: number | null };
  name: string;
  username: string;
  connections_from: string;
  max_connections: number | null;
  relationships?: { password?: { attributes: { password: string } | null } };
}

export function toDatabase(d: PanelDatabase): z.infer<typeof ServerDatabase> {
  return {
    id: d.id,
    name: d.name,
    username: d.username,
    host: { address: d.host.address, port: d.host.port },
    remote: d.connections_from,
    maxConnections: d.max_connections ?? 0,
  };
}

function withPassword(d: PanelDatabase): z.infer<typeof DatabaseWithPassword> {
  const password = d.relationships?.password?.attributes?.password;
  // The service user owns the server, so the panel always includes it; without it the caller could not connect.
  if (typeof password !== 'string') throw new Error('The panel answered without the database password');
  return { ...toDatabase(d), password };
}

/** The panel's database refusals in our terms; anything else passes through. Never carries the panel's answer body. */
async function onDatabases<T>(instanceId: string, call: () => Promise<T>, limitOf?: () => Promise<number | null>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (!(err instanceof PanelRequestError)) throw err;
    const code = err.panelErrors[0]?.code;
    if (err.panelStatus === 404) throw new ApiError('not_found', 'No such database on this server');
    if (err.panelStatus === 400 && code === 'TooManyDatabasesException') {
      // The panel's message does not say the number: one read of the server's feature limits does.
      const limit = limitOf ? await limitOf().catch(() => null) : null;
      if (limit === null)
        throw new ApiError('limit_exceeded', 'This server holds as many databases as its databases limit allows; delete one first');
      throw new ApiError(
        'limit_exceeded',
        limit > 0
          ? `This server holds its limit of ${limit} databases; delete one first`
          : 'Databases are not available on this server (its database limit is 0)',
        { limit },
      );
    }
    if (err.panelStatus === 400 && code === 'NoSuitableDatabaseHostException') {
      await noteDatabaseHost(instanceId, false);
      throw new ApiError('conflict', 'This panel has no database host for this server, so databases are not available on it');
    }
    if (err.panelStatus === 422) {
      const taken = err.panelErrors.find((e) => e.meta?.source_field === 'database' && e.meta?.rule === 'unique');
      if (taken) throw new ApiError('conflict', 'This server already has a database with that name');
    }
    throw err;
  }
}

/**
 * Keeps on the instance whether its panel had a database host for the last create (only when that
 * changed: one conditional write, refused cheaply when it did not).
 */
async function noteDatabaseHost(instanceId: string, available: boolean): Promise<void> {
  try {
    await writeItem({
      Update: {
        Key: keys.instance(instanceId),
        UpdateExpression: 'SET databaseHost = :seen',
        ConditionExpression: 'attribute_exists(PK) AND (attribute_not_exists(databaseHost) OR databaseHost.available <> :available)',
        ExpressionAttributeValues: { ':seen': { available, at: new Date().toISOString() }, ':available': available },
      },
    });
  } catch (err) {
    if (!isConditionFailed(err)) throw err;
  }
}

async function underLease<T>(accountId: string, serverId: string, fn: () => Promise<T>): Promise<T> {
  await assertCustomerMayHold(await getOwnedServer(accountId, serverId));
  return withServerLease(serverId, 'databases', fn);
}

type DatabaseRoute<Body = unknown> = RouteContext<Body> & { params: { id: string; databaseId?: string } };

/** GET databases: one call, never with passwords. */
export async function listDatabases({ principal, params }: DatabaseRoute): Promise<z.infer<typeof ServerDatabaseList>> {
  const { server, client } = await controllable(principal.accountId, params.id);
  const list = await onDatabases(server.instanceId, () =>
    client.serverCall<ListEnvelope<PanelDatabase>>(server.identifier, 'GET', '/databases', { idempotent: true, expect: 'json' }),
  );
  return { data: list.data.map((d) => toDatabase(d.attributes)) };
}

/**
 * POST databases: one call, not retried (the name is then taken: a second try is a 409). The
 * password is in the answer only. Refused for the limit: a second call reads the limit's number.
 */
export async function createDatabase({ principal, params, body, audit }: DatabaseRoute<z.infer<typeof CreateDatabase>>) {
  audit.target = `server:${params.id}`;
  audit.details = { name: body.name, remote: body.remote };
  return underLease(principal.accountId, params.id, async () => {
    const { server, client } = await controllable(principal.accountId, params.id);
    const created = await onDatabases(
      server.instanceId,
      () =>
        client.serverCall<Envelope<PanelDatabase>>(server.identifier, 'POST', '/databases', {
          json: { database: body.name, remote: body.remote },
          idempotent: false,
          expect: 'json',
        }),
      async () =>
        (
          await client.serverCall<Envelope<{ feature_limits: { databases: number | null } }>>(server.identifier, 'GET', '', {
            idempotent: true,
            expect: 'json',
          })
        ).attributes.feature_limits.databases,
    );
    await noteDatabaseHost(server.instanceId, true);
    const database = withPassword(created.attributes);
    audit.details = { databaseId: database.id, name: database.name, remote: database.remote };
    return database;
  });
}

/** POST rotate-password: one call; the new password is in the answer only. */
export async function rotateDatabasePassword({ principal, params, audit }: DatabaseRoute) {
  const databaseId = params.databaseId ?? '';
  audit.target = `server:${params.id}`;
  audit.details = { databaseId };
  return underLease(principal.accountId, params.id, async () => {
    const { server, client } = await controllable(principal.accountId, params.id);
    const rotated = await onDatabases(server.instanceId, () =>
      client.serverCall<Envelope<PanelDatabase>>(server.identifier, 'POST', `/databases/${databaseId}/rotate-password`, {
        idempotent: false,
        expect: 'json',
      }),
    );
    const database = withPassword(rotated.attributes);
    audit.details = { databaseId, name: database.name };
    return database;
  });
}

/** DELETE: one call (the panel drops the database and its user). */
export async function deleteDatabase({ principal, params, audit }: DatabaseRoute) {
  const databaseId = params.databaseId ?? '';
  audit.target = `server:${params.id}`;
  audit.details = { databaseId };
  return underLease(principal.accountId, params.id, async () => {
    const { server, client } = await controllable(principal.accountId, params.id);
    await onDatabases(server.instanceId, () =>
      client.serverCall(server.identifier, 'DELETE', `/databases/${databaseId}`, { idempotent: true }),
    );
    return { id: databaseId, deleted: true as const };
  });
}
