import type { z } from 'zod';
import type { FileEntry } from '../api/schemas/servers.ts';
import type { PanelFileObject } from '../panel/types.ts';
import { controllable, onFiles, rooted } from './control.ts';
import { assertCustomerMayHold, withServerLease } from './lease.ts';
import { getOwnedServer } from './read.ts';

/**
 * File operations beyond list/read/write/delete: create a folder, rename or move, compress,
 * decompress, and the signed upload address. Each is one Client API call through the instance's
 * client key (control.ts `controllable`), with the panel's 404 and 400 passed on as ours
 * (`onFiles`). The changes run under the server's lease like power (lease.ts), after the same
 * cheap account check, so none lands in the middle of a resize, a restore request or a deletion.
 * Loaded lazily by the servers function (only these routes need it).
 */
const SIGNED_URL_SECONDS = 15 * 60;

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

export async function createFolder(accountId: string, serverId: string, root: string | undefined, name: string) {
  return underLease(accountId, serverId, async () => {
    const { server, client } = await controllable(accountId, serverId);
    const base = rooted(root ?? '/');
    await onFiles('body.name', () => client.createFolder(server.identifier, base, relative(name)));
    return { root: base, created: rooted(`${base}/${relative(name)}`).replace(/\/{2,}/g, '/') };
  });
}

export async function renameFiles(
  accountId: string,
  serverId: string,
  root: string | undefined,
  files: Array<{ from: string; to: string }>,
) {
  return underLease(accountId, serverId, async () => {
    const { server, client } = await controllable(accountId, serverId);
    const base = rooted(root ?? '/');
    const pairs = files.map((f) => ({ from: relative(f.from), to: relative(f.to) }));
    await onFiles('body.files', () => client.renameFiles(server.identifier, base, pairs));
    return { root: base, renamed: pairs };
  });
}

/**
 * The panel's signed upload address. Not under the lease: it changes nothing until the caller
 * posts to Wings (up to 15 minutes later, straight to the node), so a lease could not cover it.
 */
export async function uploadLink(accountId: string, serverId: string, directory: string | undefined) {
  const { server, client } = await controllable(accountId, serverId);
  const dir = rooted(directory ?? '/');
  const signed = await client.uploadUrl(server.identifier);
  const url = new URL(signed);
  url.searchParams.set('directory', dir);
  return { directory: dir, url: url.toString(), expiresAt: new Date(Date.now() + SIGNED_URL_SECONDS * 1000).toISOString() };
}

export async function compressFiles(accountId: string, serverId: string, root: string | undefined, files: string[]) {
  return underLease(accountId, serverId, async () => {
    const { server, client } = await controllable(accountId, serverId);
    const base = rooted(root ?? '/');
    const archive = await onFiles('body.files', () => client.compressFiles(server.identifier, base, files.map(relative)));
    return toFileEntry(archive);
  });
}

export async function decompressFile(accountId: string, serverId: string, root: string | undefined, file: string) {
  return underLease(accountId, serverId, async () => {
    const { server, client } = await controllable(accountId, serverId);
    const base = rooted(root ?? '/');
    await onFiles('body.file', () => client.decompressFile(server.identifier, base, relative(file)));
    return { root: base, file: relative(file), decompressed: true as const };
  });
}
