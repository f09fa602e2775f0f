// Wings' archives, for the simulator: compress and decompress of server files
// (pterodactyl/wings:server/filesystem/compress.go, router/router_server_files.go) and the archive a
// backup holds. Archives are real tar.gz (ustar headers, gzip through node:zlib), so a caller may
// open them with any tar; only regular files and directories are written or read back.
import { gunzipSync, gzipSync } from 'node:zlib';
import type { Server } from './state.ts';
import { WingsError, normalizePath } from './wings.ts';
import type { FsEntry, Wings } from './wings.ts';

const BLOCK = 512;

/** One ustar header; a name over 100 bytes is split into `prefix` (155) and `name` at a slash. */
function header(path: string, e: FsEntry): Buffer {
  const h = Buffer.alloc(BLOCK);
  let name = e.type === 'dir' ? `${path}/` : path;
  let prefix = '';
  if (Buffer.byteLength(name) > 100) {
    const cut = name.lastIndexOf('/', name.length - 2);
    prefix = name.slice(0, cut);
    name = name.slice(cut + 1);
  }
  const put = (value: string, offset: number, length: number) => h.write(value, offset, length, 'utf8');
  const octal = (n: number, length: number) => `${n.toString(8).padStart(length - 1, '0')}\0`;
  put(name, 0, 100);
  put(octal(e.mode, 8), 100, 8);
  put(octal(0, 8), 108, 8);
  put(octal(0, 8), 116, 8);
  put(octal(e.type === 'dir' ? 0 : e.content.length, 12), 124, 12);
  put(octal(Math.floor(e.modified.getTime() / 1000), 12), 136, 12);
  put('        ', 148, 8);
  put(e.type === 'dir' ? '5' : '0', 156, 1);
  put('ustar\u000000', 257, 8);
  put(prefix, 345, 155);
  let sum = 0;
  for (const byte of h) sum += byte;
  put(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8);
  return h;
}

/** tar.gz of the given entries (paths relative to the archive's root). */
export function tarGz(entries: Array<[string, FsEntry]>): Buffer {
  const parts: Buffer[] = [];
  for (const [path, e] of entries) {
    parts.push(header(path, e));
    if (e.type === 'file' && e.content.length > 0) {
      parts.push(e.content);
      const pad = (BLOCK - (e.content.length % BLOCK)) % BLOCK;
      if (pad) parts.push(Buffer.alloc(pad));
    }
  }
  parts.push(Buffer.alloc(BLOCK * 2));
  return gzipSync(Buffer.concat(parts));
}

export interface ArchiveEntry {
  path: string;
  type: 'file' | 'dir';
  mode: number;
  content: Buffer;
}

/** The entries of a tar (gzipped or not); null when the bytes are neither. */
export function readArchive(bytes: Buffer): ArchiveEntry[] | null {
  let tar = bytes;
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    try {
      tar = gunzipSync(bytes);
    } catch {
      return null;
    }
  }
  if (tar.length < BLOCK || tar.subarray(257, 262).toString('latin1') !== 'ustar') return null;
  const out: ArchiveEntry[] = [];
  const field = (h: Buffer, offset: number, length: number) =>
    h
      .subarray(offset, offset + length)
      .toString('utf8')
      .replace(/\0.*$/s, '');
  for (let at = 0; at + BLOCK <= tar.length; ) {
    const h = tar.subarray(at, at + BLOCK);
    if (h.every((b) => b === 0)) break;
    const size = Number.parseInt(field(h, 124, 12).trim() || '0', 8);
    const type = field(h, 156, 1) || '0';
    const prefix = field(h, 345, 155);
    const path = normalizePath(prefix ? `${prefix}/${field(h, 0, 100)}` : field(h, 0, 100));
    const mode = Number.parseInt(field(h, 100, 8).trim() || '644', 8);
    const content = Buffer.from(tar.subarray(at + BLOCK, at + BLOCK + size));
    if (path !== '' && (type === '0' || type === '5')) out.push({ path, type: type === '5' ? 'dir' : 'file', mode, content });
    at += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
  }
  return out;
}

/** Every entry at or under `paths` (relative to `root`), keyed by its path relative to `root`. */
function collect(wings: Wings, server: Server, root: string, paths: string[]): Array<[string, FsEntry]> {
  const files = wings.runtime(server).files;
  const base = normalizePath(root);
  const out: Array<[string, FsEntry]> = [];
  for (const p of paths) {
    const abs = normalizePath(`${base}/${p}`);
    if (!files.has(abs)) continue;
    for (const [key, e] of files) {
      if (key !== '' && (abs === '' || key === abs || key.startsWith(`${abs}/`))) out.push([base ? key.slice(base.length + 1) : key, e]);
    }
  }
  return out;
}

/** Wings names the archive `archive-<RFC 3339 time without colons>.tar.gz` in the root it compressed from. */
export function archiveName(now = new Date()): string {
  return `archive-${now
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replaceAll(':', '')}.tar.gz`;
}

/**
 * Test control over Wings' time on an archive (a real one may take the panel's full 15 minutes):
 * while held, every compress and decompress waits, as Wings working on it, until the test ends
 * them (`endArchives()`, or `POST /__sim/archives/end`); it then runs, even if the caller has gone.
 */
export class ArchiveHolds {
  held = false;
  private waiting: Array<() => void> = [];

  /** Resolves at once unless held. */
  wait(): Promise<void> {
    if (!this.held) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** How many archive operations are waiting now. */
  get pending(): number {
    return this.waiting.length;
  }

  /** Lets every waiting operation run (holding stays as set); answers how many there were. */
  end(): number {
    const ended = this.waiting.splice(0);
    for (const resolve of ended) resolve();
    return ended.length;
  }
}

const holds = new WeakMap<Wings, ArchiveHolds>();
export function archiveHoldsOf(wings: Wings): ArchiveHolds {
  const known = holds.get(wings);
  if (known) return known;
  const made = new ArchiveHolds();
  holds.set(wings, made);
  return made;
}

/** Wings `POST /api/servers/{uuid}/files/compress`: the archive's path and entry (422 when no file is named). */
export function compress(wings: Wings, server: Server, root: string, paths: string[]): { name: string; entry: FsEntry } {
  if (paths.length === 0) throw new WingsError(422, 'No files were passed through to be compressed.');
  const entries = collect(wings, server, root, paths);
  if (entries.length === 0) throw new WingsError(404, 'The requested resources was not found on the system.');
  const name = archiveName();
  const path = normalizePath(`${root}/${name}`);
  wings.writeFile(server, path, tarGz(entries));
  return { name, entry: wings.readFile(server, path).entry };
}

/** Wings `POST /api/servers/{uuid}/files/decompress`: extracts into `root`, overwriting; 400 for a format it does not know. */
export function decompress(wings: Wings, server: Server, root: string, file: string): void {
  const { entry } = wings.readFile(server, normalizePath(`${root}/${file}`));
  const entries = readArchive(entry.content);
  if (!entries) throw new WingsError(400, 'The archive provided is in a format Wings does not understand.');
  extract(wings, server, root, entries);
}

/** Writes archive entries under `root` (files through Wings' write, so the disk limit holds). */
export function extract(wings: Wings, server: Server, root: string, entries: ArchiveEntry[]): void {
  const files = wings.runtime(server).files;
  for (const e of entries) {
    const path = normalizePath(`${root}/${e.path}`);
    if (e.type === 'file') {
      wings.writeFile(server, path, e.content);
      continue;
    }
    const parts = path.split('/');
    for (let i = 1; i <= parts.length; i++) {
      const p = parts.slice(0, i).join('/');
      const existing = files.get(p);
      if (existing?.type === 'file') throw new WingsError(400, 'Cannot perform that action: file is not a directory.');
      if (!existing) files.set(p, { type: 'dir', content: Buffer.alloc(0), mode: 0o755, created: new Date(), modified: new Date() });
    }
  }
}

/** Everything in the server's root, as a backup archives it, minus the ignored paths (one per line, exact or a parent directory). */
export function snapshotArchive(wings: Wings, server: Server, ignored: string[]): Buffer {
  const skip = ignored.map((p) => normalizePath(p)).filter((p) => p !== '');
  const entries = [...wings.runtime(server).files.entries()].filter(
    ([key]) => key !== '' && !skip.some((s) => key === s || key.startsWith(`${s}/`)),
  );
  return tarGz(entries);
}
