import type { z } from 'zod';
import type { CompressFiles, CreateFolder, DecompressFile, FileEntry, RenameFiles } from '../api/schemas/servers.ts';
import type { Envelope, PanelFileObject } from '../panel/types.ts';
import { controllable, onFiles, rooted } from './control.ts';
import { assertCustomerMayHold, withServerLease } from './lease.ts';
import { getOwnedServer } from './read.ts';

/**
 * File operations beyond list/read/write/delete: create a folder, rename or move, compress,
 * decompress, and the signed upload address. Each is one Client API call through the instance's
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
/** The panel waits up to 15 minutes on Wings for an archive; we wait what the request has left. */
const ARCHIVE_TIMEOUT_MS = 20_000;

/** Paths inside a root, as the panel takes them: relative, without a leading slash. */
const relative = (path: string): string => path.replace(/^[\\/]+/, '');

async function underLease<T>(accountId: string, serverId: string, fn: () => Promise<T>): Promise<T> {
  await assertCustomerMayHold(await getOwnedServer(accountId, serverId));
  return withServerLease(serverId, 'files', fn);
}

export function toFileEntry(f: PanelFileObject): z.infer<typeof FileEntry> {
  return {
    name: f.name,
    mode: f.mode,
    size: f.size,
    isFile: f.is_file,
    isSymlink: f.is_symlink,
    mimetype: f.mimetype,
    createdAt: f.created_at,
    modifiedAt: f.modified_at,
  };
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

/** POST compress: Wings writes `archive-<time>.tar.gz` into `root` and answers its file object. Not retried: each call makes an archive. */
export async function compressFiles({ principal, params, body, audit }: RouteContext<z.infer<typeof CompressFiles>>) {
  const base = rooted(body.root ?? '/');
  const files = body.files.map(relative);
  audit.target = `server:${params.id}`;
  audit.details = { root: base, files };
  return underLease(principal.accountId, params.id, async () => {
    const { server, client } = await controllable(principal.accountId, params.id);
    const archive = await onFiles('body.files', () =>
      client.serverCall<Envelope<PanelFileObject>>(server.identifier, 'POST', '/files/compress', {
        json: { root: base, files },
        idempotent: false,
        expect: 'json',
        timeoutMs: ARCHIVE_TIMEOUT_MS,
      }),
    );
    audit.details = { root: base, files, archive: archive.attributes.name, bytes: archive.attributes.size };
    return toFileEntry(archive.attributes);
  });
}

/** POST decompress into `root`; extracting the same archive twice writes the same files, so it is retried. */
export async function decompressFile({ principal, params, body, audit }: RouteContext<z.infer<typeof DecompressFile>>) {
  const base = rooted(body.root ?? '/');
  const file = relative(body.file);
  audit.target = `server:${params.id}`;
  audit.details = { root: base, file };
  return underLease(principal.accountId, params.id, async () => {
    const { server, client } = await controllable(principal.accountId, params.id);
    await onFiles('body.file', () =>
      client.serverCall(server.identifier, 'POST', '/files/decompress', {
        json: { root: base, file },
        idempotent: true,
        timeoutMs: ARCHIVE_TIMEOUT_MS,
      }),
    );
    return { root: base, file, decompressed: true as const };
  });
}
