import type { z } from 'zod';
import { ApiError } from '../errors.ts';
import { getInstance, panelClientFor } from '../instances/index.ts';
import type { PanelClient } from '../panel/client.ts';
import { PanelRequestError } from '../panel/errors.ts';
import type { PanelFileObject } from '../panel/types.ts';
import { getOwnedServer } from './read.ts';
import { toServerView, type ServerView } from './views.ts';
import type { ConsoleCredentials, FileEntry, LiveUsage } from '../api/schemas.ts';
import { assertCustomerMayHold, stateConflict, withServerLease } from './lease.ts';
import { usageOfServer } from './live.ts';

/**
 * Server control: power, usage, console, files, all through the instance's client
 * key and the server's 8-character identifier. Without a client key: 400 `no_client_key`. A
 * suspended or deleted server: 409 `conflict`. Another account's server: 404 (getOwnedServer). A
 * power signal from an account at or below zero: 402 `insufficient_credit`.
 */
export const CONSOLE_TOKEN_SECONDS = 600;

export async function controllable(
  accountId: string,
  serverId: string,
): Promise<{ server: ServerView; client: PanelClient; wingsOrigin: string | null }> {
  const item = await getOwnedServer(accountId, serverId);
  const conflict = stateConflict(item);
  if (conflict) throw conflict;
  const server = toServerView(item);
  const instance = await getInstance(server.instanceId);
  if (!instance.hasClientKey) {
    throw new ApiError('no_client_key', "This server's instance has no client key, so power, console and files are not available on it");
  }
  return { server, client: await panelClientFor(instance), wingsOrigin: instance.wingsOrigin };
}

/**
 * File operations: the panel's 404 (no such file or directory) is ours too, and its 400 (a
 * directory read as a file, a file listed as a directory) is a bad request naming the field —
 * not a panel failure.
 */
export async function onFiles<T>(field: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof PanelRequestError && err.panelStatus === 404)
      throw new ApiError('not_found', 'No such file or directory on the server');
    if (err instanceof PanelRequestError && err.panelStatus === 400) {
      const reason =
        err.panelErrors[0]?.detail?.replace(/^An error occurred on the remote host: /, '').replace(/ \(request id: [^)]*\)\.?$/, '') ??
        'not valid for this path';
      throw new ApiError('validation_failed', `${field} ${reason}`, { issues: [{ field, message: reason }] });
    }
    throw err;
  }
}

/** Paths as the panel wants them: relative to the server root, with a leading slash. */
export const rooted = (path: string): string => `/${path.replace(/^[\\/]+/, '')}`;

/**
 * Under the server's lease: a power signal never lands in the middle of a resize or a deletion. The
 * account's state is checked first (lease.ts `assertCustomerMayHold`): an account at or below zero
 * sends no signal and takes no lease, so signals sent in a loop cannot hold off its suspension.
 */
export async function sendPower(accountId: string, serverId: string, signal: 'start' | 'stop' | 'restart' | 'kill') {
  await assertCustomerMayHold(await getOwnedServer(accountId, serverId));
  return withServerLease(serverId, 'power', async () => {
    const { server, client } = await controllable(accountId, serverId);
    await client.power(server.identifier, signal);
    return { id: serverId, signal, accepted: true as const };
  });
}

/**
 * Usage from the live-state copy every caller shares (shared/servers/live.ts), not a panel call per
 * request: polled by any number of customers, a server costs at most one refresh per interval.
 */
export async function liveUsage(accountId: string, serverId: string): Promise<z.infer<typeof LiveUsage>> {
  await controllable(accountId, serverId);
  return usageOfServer(await getOwnedServer(accountId, serverId));
}

export async function sendCommand(accountId: string, serverId: string, command: string) {
  const { server, client } = await controllable(accountId, serverId);
  try {
    await client.sendCommand(server.identifier, command);
  } catch (err) {
    // The panel answers 502 when the server process is not running (Wings refuses the command): a state conflict, not a panel fault.
    if (err instanceof ApiError && (err as { panelStatus?: number }).panelStatus === 502) {
      throw new ApiError('conflict', 'The server must be running to receive commands; start it first');
    }
    throw err;
  }
  return { id: serverId, sent: true as const };
}

/**
 * The panel's websocket credentials for the server's node (Wings). `origin` is the panel URL, the
 * one Origin Wings accepts besides its `allowed_origins` (pterodactyl/wings:router/websocket/websocket.go);
 * `expiresAt` is the token's own `exp` (the panel signs for 10 minutes). `websocket` and
 * `expiresInSeconds` stay for older clients.
 */
export async function consoleCredentials(accountId: string, serverId: string): Promise<z.infer<typeof ConsoleCredentials>> {
  const { server, client, wingsOrigin } = await controllable(accountId, serverId);
  const websocket = await client.websocket(server.identifier);
  let exp = Math.floor(Date.now() / 1000) + CONSOLE_TOKEN_SECONDS;
  try {
    const claims = JSON.parse(Buffer.from(websocket.token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { exp?: unknown };
    if (typeof claims.exp === 'number' && Number.isFinite(claims.exp)) exp = claims.exp;
  } catch {
    // not a readable JWT: assume the panel's 10 minutes
  }
  return {
    socket: websocket.socket,
    token: websocket.token,
    expiresAt: new Date(exp * 1000).toISOString(),
    origin: wingsOrigin ?? client.baseUrl,
    websocket: { token: websocket.token, socket: websocket.socket },
    expiresInSeconds: CONSOLE_TOKEN_SECONDS,
  };
}

export async function listFiles(
  accountId: string,
  serverId: string,
  directory = '/',
): Promise<{ directory: string; data: z.infer<typeof FileEntry>[] }> {
  const { server, client } = await controllable(accountId, serverId);
  const dir = rooted(directory);
  const files = await onFiles('query.directory', () => client.listFiles(server.identifier, dir));
  return {
    directory: dir,
    data: files.map(toFileEntry),
  };
}

/** A panel file object as the API shows it (a listing's entries, an archive just made). */
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

export async function readFile(accountId: string, serverId: string, file: string) {
  const { server, client } = await controllable(accountId, serverId);
  return { file: rooted(file), content: await onFiles('query.file', () => client.fileContents(server.identifier, rooted(file))) };
}

export async function writeFile(accountId: string, serverId: string, file: string, content: string) {
  const { server, client } = await controllable(accountId, serverId);
  await onFiles('body.file', () => client.writeFile(server.identifier, rooted(file), content));
  return { file: rooted(file), written: true as const, bytes: Buffer.byteLength(content) };
}

export async function downloadLink(accountId: string, serverId: string, file: string) {
  const { server, client } = await controllable(accountId, serverId);
  return { file: rooted(file), url: await onFiles('query.file', () => client.downloadUrl(server.identifier, rooted(file))) };
}

export async function deleteFiles(accountId: string, serverId: string, root: string | undefined, files: string[]) {
  const { server, client } = await controllable(accountId, serverId);
  const base = rooted(root ?? '/');
  await onFiles('body.files', () => client.deleteFiles(server.identifier, base, files));
  return { root: base, deleted: files };
}
