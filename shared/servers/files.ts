import { createHash, randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { ChmodFiles, CompressFiles, CreateFolder, DecompressFile, RenameFiles } from '../api/schemas/servers.ts';
import { getConfig } from '../config/env.ts';
import { keys } from '../db/keys.ts';
import { isConditionFailed, writeIfFirst, writeItem } from '../db/write.ts';
import { ApiError } from '../errors.ts';
import { errorFields, logger } from '../observability/logger.ts';
import { PanelRequestError } from '../panel/errors.ts';
import type { Envelope, PanelFileObject } from '../panel/types.ts';
import { controllable, onFiles, rooted, toFileEntry } from './control.ts';
import { assertCustomerMayHold, withServerLease } from './lease.ts';
import { getOwnedServer } from './read.ts';

/**
 * File operations beyond list/read/write/delete: create a folder, rename or move, permissions,
 * compress, decompress, and the signed upload address. Each is one Client API call through the instance's
 * client key (control.ts `controllable`, the client's `serverCall`), with the panel's 404 and 400
 * passed on as ours (`onFiles`). The changes run under the server's lease like power (lease.ts),
 * after the same cheap account check, so none lands in the middle of a resize, a restore request
 * or a deletion. The servers function loads this module on the first of these calls, and hands
 * it the route's context: it names the activity entry here (paths and counts, never contents).
 */
export interface RouteContext<Body = unknown, Query = unknown> {
  principal: { accountId: string };
  params: { id: string };
  body: Body;
  query: Query;
  audit: { target?: string; details?: Record<string, unknown> };
}

const SIGNED_URL_SECONDS = 15 * 60;
/** The panel waits on Wings this long for a compress or decompress; until then it may still be working on one. */
const PANEL_ARCHIVE_WAIT_MS = 15 * 60_000;

/** Paths inside a root, as the panel takes them: relative, without a leading slash. */
const relative = (path: string): string => path.replace(/^[\\/]+/, '');

async function underLease<T>(accountId: string, serverId: string, fn: () => Promise<T>): Promise<T> {
  await assertCustomerMayHold(await getOwnedServer(accountId, serverId));
  return withServerLease(serverId, 'files', fn);
}

/** POST create-folder; not retried (a second attempt answers "already exists" for the first one's folder). */
export async function createFolder({ principal, params, body, audit }: RouteContext<z.infer<typeof CreateFolder>>) {
  const base = rooted(body.root ?? '/');
  audit.target = `server:${params.id}`;
  audit.details = { root: base, name: body.name };
  return underLease(principal.accountId, params.id, async () => {
    const { server, client } = await controllable(principal.accountId, params.id);
    const name = relative(body.name);
    await onFiles('body.name', () =>
      client.serverCall(server.identifier, 'POST', '/files/create-folder', { json: { root: base, name }, idempotent: false }),
    );
    return { root: base, created: rooted(`${base}/${name}`).replace(/\/{2,}/g, '/') };
  });
}

/** PUT rename, which also moves (a `to` in another directory); not retried (the second attempt finds nothing at `from`). */
export async function renameFiles({ principal, params, body, audit }: RouteContext<z.infer<typeof RenameFiles>>) {
  const base = rooted(body.root ?? '/');
  const files = body.files.map((f) => ({ from: relative(f.from), to: relative(f.to) }));
  audit.target = `server:${params.id}`;
  audit.details = { root: base, files };
  return underLease(principal.accountId, params.id, async () => {
    const { server, client } = await controllable(principal.accountId, params.id);
    await onFiles('body.files', () =>
      client.serverCall(server.identifier, 'PUT', '/files/rename', { json: { root: base, files }, idempotent: false }),
    );
    return { root: base, renamed: files };
  });
}

/**
 * POST chmod (the panel's FileController::chmod, Wings reads each mode as octal). Retried like a
 * read: setting the same modes twice leaves the same modes.
 */
export async function chmodFiles({ principal, params, body, audit }: RouteContext<z.infer<typeof ChmodFiles>>) {
  const base = rooted(body.root ?? '/');
  const files = body.files.map((f) => ({ file: relative(f.file), mode: f.mode }));
  audit.target = `server:${params.id}`;
  audit.details = { root: base, files };
  return underLease(principal.accountId, params.id, async () => {
    const { server, client } = await controllable(principal.accountId, params.id);
    await onFiles('body.files', () =>
      client.serverCall(server.identifier, 'POST', '/files/chmod', { json: { root: base, files }, idempotent: true }),
    );
    return { root: base, changed: files };
  });
}

/**
 * The panel's signed upload address (Wings `POST /upload/file?token=`, 15 minutes, single use)
 * with `directory` added. Not under the lease: nothing changes until the caller posts to Wings,
 * straight to the node and possibly minutes later, so a lease could not cover it.
 */
export async function uploadLink({ principal, params, query, audit }: RouteContext<unknown, { directory?: string }>) {
  const dir = rooted(query.directory ?? '/');
  audit.target = `server:${params.id}`;
  audit.details = { directory: dir };
  const { server, client } = await controllable(principal.accountId, params.id);
  const signed = await client.serverCall<Envelope<{ url: string }>>(server.identifier, 'GET', '/files/upload', {
    idempotent: true,
    expect: 'json',
  });
  const url = new URL(signed.attributes.url);
  url.searchParams.set('directory', dir);
  return { directory: dir, url: url.toString(), expiresAt: new Date(Date.now() + SIGNED_URL_SECONDS * 1000).toISOString() };
}

/**
 * Compress and decompress are sent to the panel once, never twice. The panel waits on Wings up to
 * 15 minutes; a request can wait only what API Gateway leaves it (29 s). So each is recorded before
 * it is sent (`archiveOperation`, a conditional put keyed by what it does: kind, root, files), and:
 * - the panel answers (done or refused): the record goes, the answer is the caller's; the same
 *   request later is a new operation (a second archive, as asked);
 * - no answer before the request's deadline: the panel is still working on it. The record stays
 *   until the panel's own wait is over (`settlesBy`), the caller gets 504 `panel_timeout` saying so,
 *   and the same request meanwhile is 409 `operation_in_progress` naming the first: nothing is sent.
 * Never retried by the panel client either (a retry would be a second archive or extraction).
 */
async function sentOnce<T>(
  serverId: string,
  what: { kind: 'compress' | 'decompress'; root: string; files: string[] },
  send: () => Promise<T>,
): Promise<T> {
  const key = keys.archiveOperation(
    serverId,
    createHash('sha256')
      .update(JSON.stringify([what.kind, what.root, [...what.files].sort()]))
      .digest('hex'),
  );
  const now = Date.now();
  const operationId = randomUUID();
  const settlesAt = now + PANEL_ARCHIVE_WAIT_MS;
  try {
    await writeItem({
      Put: {
        Item: {
          ...key,
          kind: 'archive-operation',
          serverId,
          operationId,
          operation: what.kind,
          startedAt: new Date(now).toISOString(),
          settlesAt,
          expiresAt: Math.ceil(settlesAt / 1000) + 3600,
        },
        ConditionExpression: 'attribute_not_exists(PK) OR settlesAt <= :now',
        ExpressionAttributeValues: { ':now': now },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    });
  } catch (err) {
    if (!isConditionFailed(err)) throw err;
    throw stillRunning(err.current.get('item') ?? {}, what.kind, now);
  }
  // Never throws: the panel's answer is the caller's; a record left behind only holds the same request until settlesAt.
  const done = () =>
    writeIfFirst({
      Delete: { Key: key, ConditionExpression: 'operationId = :id', ExpressionAttributeValues: { ':id': operationId } },
    }).catch((err: unknown) => logger.warn('archive operation record not removed', { serverId, operationId, ...errorFields(err) }));
  try {
    const result = await send();
    await done();
    return result;
  } catch (err) {
    // Sent and no answer in the time we have: the panel is still waiting on Wings. Anything else ended it.
    if (!(err instanceof PanelRequestError && err.code === 'panel_timeout' && err.sent)) {
      await done();
      throw err;
    }
    const settlesBy = new Date(settlesAt).toISOString();
    throw new PanelRequestError(
      'panel_timeout',
      `The panel is still working on the ${what.kind}; it was not sent again and will not be: the same request until ${settlesBy} answers 409 operation_in_progress. List the files to see its result.`,
      undefined,
      [],
      { sent: true },
    );
  }
}

/** The same compress or decompress is running on the panel: 409 naming it, with Retry-After at the end of the panel's wait. */
function stillRunning(held: Record<string, unknown>, kind: string, now: number): ApiError {
  const settlesAt = Number(held.settlesAt ?? now + PANEL_ARCHIVE_WAIT_MS);
  const retryAfterSeconds = Math.max(1, Math.ceil((settlesAt - now) / 1000));
  const settlesBy = new Date(settlesAt).toISOString();
  return new ApiError(
    'operation_in_progress',
    `The same ${kind} is still running on the panel (sent at ${String(held.startedAt)}); it was not sent again. It ends by ${settlesBy} at the latest; list the files to see its result.`,
    { operation: kind, operationId: held.operationId, startedAt: held.startedAt, settlesBy, retryAfterSeconds },
    { 'Retry-After': String(retryAfterSeconds) },
  );
}

/** POST compress: Wings writes `archive-<time>.tar.gz` into `root` and answers its file object. Sent once (`sentOnce`). */
export async function compressFiles({ principal, params, body, audit }: RouteContext<z.infer<typeof CompressFiles>>) {
  const base = rooted(body.root ?? '/');
  const files = body.files.map(relative);
  audit.target = `server:${params.id}`;
  audit.details = { root: base, files };
  return underLease(principal.accountId, params.id, async () => {
    const { server, client } = await controllable(principal.accountId, params.id);
    const archive = await sentOnce(params.id, { kind: 'compress', root: base, files }, () =>
      onFiles('body.files', () =>
        client.serverCall<Envelope<PanelFileObject>>(server.identifier, 'POST', '/files/compress', {
          json: { root: base, files },
          idempotent: false,
          expect: 'json',
          timeoutMs: getConfig().panelArchiveWaitMs,
        }),
      ),
    );
    audit.details = { root: base, files, archive: archive.attributes.name, bytes: archive.attributes.size };
    return toFileEntry(archive.attributes);
  });
}

/** POST decompress into `root`. Sent once (`sentOnce`): a retry while the first still extracts would write over its files. */
export async function decompressFile({ principal, params, body, audit }: RouteContext<z.infer<typeof DecompressFile>>) {
  const base = rooted(body.root ?? '/');
  const file = relative(body.file);
  audit.target = `server:${params.id}`;
  audit.details = { root: base, file };
  return underLease(principal.accountId, params.id, async () => {
    const { server, client } = await controllable(principal.accountId, params.id);
    await sentOnce(params.id, { kind: 'decompress', root: base, files: [file] }, () =>
      onFiles('body.file', () =>
        client.serverCall(server.identifier, 'POST', '/files/decompress', {
          json: { root: base, file },
          idempotent: false,
          timeoutMs: getConfig().panelArchiveWaitMs,
        }),
      ),
    );
    return { root: base, file, decompressed: true as const };
  });
}
