import type { z } from 'zod';
import type { ServerActivityEntry, ServerActivityList } from '../api/schemas/activity.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { IndexedKey, Item } from '../db/access-patterns.ts';
import { decodeCursor, encodeCursor } from '../db/cursor.ts';
import { getInstance, panelClientFor } from '../instances/index.ts';
import { PanelRequestError } from '../panel/errors.ts';
import type { ListEnvelope } from '../panel/types.ts';
import { stateConflict } from './lease.ts';
import { getOwnedServer } from './read.ts';

/**
 * A server's activity: our entries about it (every audited call naming `server:<id>`, whoever's
 * account wrote it: the owner, an invitee acting on the owner's server, an admin; GSI2
 * `SERVERLOG#<serverId>`) and the panel's activity log for it (Client API
 * `GET /servers/{server}/activity`, ActivityLogController), merged newest first.
 *
 * Paging a merge of two sources: the cursor holds both positions, signed as every cursor is.
 * - Ours: the table key of the last entry of ours shown; new entries land above it, so none is
 *   shown twice or skipped.
 * - The panel's: it pages by number (`sort=-timestamp`, 100 a page) and new events push older ones
 *   down, never up. The cursor keeps the page to read and the last event shown (its second and the
 *   ids shown at that second); events at or above it are dropped as already shown, so a page read
 *   again after new events (or a page of events all shown) repeats nothing. An event not shown
 *   stays at or after the page kept, so none is skipped.
 * - Order across the two: while the panel has pages after the one read, an entry of ours older than
 *   that page's oldest event waits for a later page (a panel event between them may be on the next
 *   panel page). Such a page may be shorter than `limit` and still carry a cursor.
 * At most ONE panel call per page of ours (the Client API's activity page), none for a server that
 * cannot be read on the panel (not deployed, suspended, deleted, no client key).
 *
 * Our own calls that reached the panel are logged twice, by us (the real actor and credential) and
 * by the panel (our service user's API key). The panel's copy is left out: an event made with an
 * API key (`is_api`) is ours, since the service user's client key is the only API key acting on our
 * servers, and every change through this API has its own entry. Reads we do not log (a file's
 * contents or a download link) stay, as the panel logged them, with the actor `platform`.
 *
 * A panel that does not answer (or refuses) does not fail the page: our entries are listed and
 * `panel.status` says `unavailable` with the error's code; the panel's position is kept, so its
 * events come on later pages once it answers (late, not lost), unless ours are all shown by then:
 * that page ends the walk and says `unavailable`.
 *
 * Details never carry a secret: ours are written without (shared/http/handler.ts callers); the
 * panel's properties pass through an allow-list (a console command's text, a pull URL, startup
 * values and e-mail addresses stay out).
 */
export const PANEL_ACTIVITY_PER_PAGE = 100;
/**
 * Ids (8-hex prefixes of the panel's sha1 ids) of the events shown in the boundary second that the
 * cursor keeps: 200 fit in a cursor. When a single second holds more, the rest of that second is
 * treated as shown (left out of the walk) rather than shown twice.
 */
const BOUNDARY_IDS_KEPT = 200;
/** Panel events made through an API key that we do not log ourselves: reads. */
const UNLOGGED_READS = new Set(['server:file.read', 'server:file.download']);

type Entry = z.infer<typeof ServerActivityEntry>;
type Details = Entry['details'];

interface PanelPosition {
  /** The panel page to read (1-based). */
  page: number;
  /** The time (ms) of the last panel event shown, and the ids (prefixes) shown at that second. */
  at: number | null;
  ids: string[];
}

interface Position {
  /** Ours: the key of the last entry shown; absent: from the newest. */
  o?: IndexedKey;
  /** Ours: no more. */
  od?: true;
  /** Ours before any is shown: only entries below this index sort key (the first page's time), so later ones stay out. */
  c?: string;
  /** The panel's position; null when its events are all shown. */
  p: PanelPosition | null;
}

export interface PanelActivity {
  id: string;
  event: string;
  is_api: boolean;
  ip: string | null;
  properties: Record<string, unknown> | unknown[];
  timestamp: string;
  relationships?: { actor?: { object: string; attributes: { username?: string; email?: string } | null } };
}

const START: Position = { p: { page: 1, at: null, ids: [] } };
const idPrefix = (id: string): string => id.slice(0, 8);

export async function listServerActivity(
  accountId: string,
  serverId: string,
  query: { limit: number; cursor?: string | undefined },
): Promise<z.infer<typeof ServerActivityList>> {
  // Another account's server (or none): 404 before anything is read.
  const server = await getOwnedServer(accountId, serverId);
  const boundTo = `server-activity:${accountId}:${serverId}`;
  const position = ((await decodeCursor(query.cursor, boundTo)) as Position | undefined) ?? START;
  const limit = query.limit;

  // The walk's top, fixed by its first page: what is logged after it (in either source) stays out.
  const now = Date.now();
  const ceiling = position.c ?? `${new Date(now).toISOString()}~`;
  const ours = position.od
    ? { items: [] as Item[], more: false }
    : await accessPatterns.activityOfServer(serverId, limit, position.o, ceiling);

  let panelState: z.infer<typeof ServerActivityList>['panel'] = { status: 'ok', code: null, message: null };
  /** Panel events not shown yet, newest first; `floor`: the oldest time on the page read when more pages follow. */
  let candidates: PanelActivity[] = [];
  let floor: number | null = null;
  let lastPage = true;
  let panelRead: PanelActivity[] = [];
  if (position.p) {
    const read = await readPanelPage(server, position.p.page);
    if ('error' in read) panelState = read.error;
    else {
      lastPage = read.lastPage;
      panelRead = read.events;
      const shown = new Set(position.p.ids);
      const boundary = position.p.at;
      candidates = read.events.filter((e) => {
        if (e.is_api && !UNLOGGED_READS.has(e.event)) return false; // the panel's copy of one of our entries
        const at = Date.parse(e.timestamp);
        if (boundary === null || at < boundary) return true;
        return at === boundary && shown.size < BOUNDARY_IDS_KEPT && !shown.has(idPrefix(e.id));
      });
      if (!lastPage && read.events.length > 0) floor = Date.parse(read.events.at(-1)!.timestamp);
    }
  }

  // Merge: newest first; ours waits below the floor.
  const page: Array<{ ours: Item } | { panel: PanelActivity }> = [];
  let i = 0;
  let j = 0;
  const oursAt = (item: Item) => Date.parse(String(item.at));
  while (page.length < limit) {
    const o = ours.items[i];
    const p = candidates[j];
    const oOk = o !== undefined && (floor === null || oursAt(o) >= floor);
    if (!oOk && !p) break;
    if (oOk && (!p || oursAt(o) >= Date.parse(p.timestamp))) {
      page.push({ ours: o });
      i++;
    } else {
      page.push({ panel: p! });
      j++;
    }
  }

  // The next position of each source.
  const next: Position = { p: position.p };
  const lastOurs = i > 0 ? ours.items[i - 1] : undefined;
  if (position.od) next.od = true;
  // All read shown and nothing after (an empty read with more left: only expired entries remain).
  else if (i === ours.items.length && (!ours.more || ours.items.length === 0)) next.od = true;
  else if (lastOurs)
    next.o = { PK: String(lastOurs.PK), SK: String(lastOurs.SK), GSI2PK: String(lastOurs.GSI2PK), GSI2SK: String(lastOurs.GSI2SK) };
  else if (position.o) next.o = position.o;
  if (!next.od && !next.o) next.c = ceiling;
  if (position.p && panelState.status === 'ok') {
    // Before any panel event is shown, the boundary is the walk's top: this second, or the newest event read if later.
    let { at, ids } = position.p;
    if (at === null) at = Math.max(Math.floor(now / 1000) * 1000, ...panelRead.map((e) => Date.parse(e.timestamp)));
    for (const entry of page) {
      if (!('panel' in entry)) continue;
      const t = Date.parse(entry.panel.timestamp);
      if (t !== at) ids = [];
      at = t;
      if (ids.length < BOUNDARY_IDS_KEPT) ids = [...ids, idPrefix(entry.panel.id)];
    }
    const pageDone = j === candidates.length;
    next.p = pageDone && lastPage ? null : { page: pageDone ? position.p.page + 1 : position.p.page, at, ids };
  }
  // Not readable there (suspended, deleted, no client key): the walk goes on without the panel.
  if (panelState.status === 'not_read') next.p = null;
  // Ours all shown and the panel not answering: the walk ends here (panel.status says so) rather
  // than hand out empty pages until the panel answers.
  const done = next.od === true && (next.p === null || panelState.status !== 'ok');

  const names = await keyNames(page.flatMap((e) => ('ours' in e ? [e.ours] : [])));
  return {
    data: page.map((e) => ('ours' in e ? fromOurs(e.ours, names) : fromPanel(e.panel))),
    nextCursor: done ? null : await encodeCursor(next as unknown as Record<string, unknown>, boundTo),
    panel: panelState,
  };
}

type PanelRead = { events: PanelActivity[]; lastPage: boolean } | { error: z.infer<typeof ServerActivityList>['panel'] };

/** One page of the panel's activity for the server: one Client API call, or why none was made or it failed. */
async function readPanelPage(server: Awaited<ReturnType<typeof getOwnedServer>>, page: number): Promise<PanelRead> {
  const conflict = stateConflict(server);
  if (conflict) return { error: { status: 'not_read', code: 'conflict', message: conflict.message } };
  if (!server.identifier) return { error: { status: 'not_read', code: 'conflict', message: 'The server is not on a panel yet' } };
  const instance = await getInstance(server.instanceId);
  if (!instance.hasClientKey) {
    return {
      error: {
        status: 'not_read',
        code: 'no_client_key',
        message: "This server's instance has no client key, so its panel activity cannot be read",
      },
    };
  }
  try {
    const client = await panelClientFor(instance);
    const list = await client.serverCall<ListEnvelope<PanelActivity>>(server.identifier, 'GET', '/activity', {
      query: { sort: '-timestamp', page, per_page: PANEL_ACTIVITY_PER_PAGE, include: 'actor' },
      idempotent: true,
      expect: 'json',
    });
    const totalPages = list.meta?.pagination?.total_pages ?? 1;
    return { events: list.data.map((d) => d.attributes), lastPage: page >= totalPages };
  } catch (err) {
    if (!(err instanceof PanelRequestError)) throw err;
    const message =
      err.code === 'panel_timeout'
        ? 'The panel did not answer in time; its events are not on this page'
        : `The panel could not be read (${err.message}); its events are not on this page`;
    return { error: { status: 'unavailable', code: err.code, message: message.slice(0, 300) } };
  }
}

/** API key names of the entries made with one (read under the entry's account, once per key). */
async function keyNames(items: Item[]): Promise<Map<string, string>> {
  const wanted = new Map<string, { accountId: string; keyId: string }>();
  for (const item of items) {
    const credential = item.credential as { kind?: string; id?: string } | undefined;
    if (credential?.kind === 'api_key' && credential.id) {
      wanted.set(`${String(item.accountId)}/${credential.id}`, { accountId: String(item.accountId), keyId: credential.id });
    }
  }
  const names = new Map<string, string>();
  await Promise.all(
    [...wanted].map(async ([ref, { accountId, keyId }]) => {
      const key = await accessPatterns.apiKeyById(accountId, keyId);
      if (key && typeof key.name === 'string') names.set(ref, key.name);
    }),
  );
  return names;
}

function fromOurs(item: Item, names: Map<string, string>): Entry {
  const credential = item.credential as { kind: 'api_key' | 'session' | 'system'; id: string };
  const actorEmail = String(item.actorEmail);
  const system = credential.kind === 'system';
  const action = String(item.action);
  const details = flatten((item.details as Record<string, unknown> | undefined) ?? {});
  const failed = item.result === 'failure';
  const summary = ourSummary(action, details);
  return {
    id: String(item.id),
    at: String(item.at),
    source: 'api',
    action: action.slice(0, 64),
    summary: (failed ? `Failed (${String(item.errorCode ?? item.status)}): ${summary}` : summary).slice(0, 300),
    // The entry's own actor: an invitee or an admin acting on this server is named, not the owner.
    actor: system ? { kind: 'system', name: actorEmail, email: null } : { kind: 'account', name: null, email: actorEmail },
    credential: {
      kind: credential.kind,
      id: system ? null : credential.id,
      name: credential.kind === 'api_key' ? (names.get(`${String(item.accountId)}/${credential.id}`) ?? null) : null,
    },
    result: failed ? 'failure' : 'success',
    status: Number(item.status),
    sourceIp: (item.sourceIp as string | null) ?? null,
    details,
  };
}

function fromPanel(e: PanelActivity): Entry {
  const actor = e.relationships?.actor?.attributes ?? null;
  const properties = Array.isArray(e.properties) ? {} : e.properties;
  const sftp = properties.using_sftp === true;
  const details = panelDetails(e.event, properties);
  return {
    id: `panel:${e.id}`.slice(0, 128),
    at: new Date(e.timestamp).toISOString(),
    source: 'panel',
    action: e.event.slice(0, 64),
    summary: panelSummary(e.event, details).slice(0, 300),
    actor: e.is_api
      ? { kind: 'platform', name: null, email: null }
      : actor
        ? { kind: 'panel_user', name: (actor.username ?? '').slice(0, 254) || null, email: null }
        : { kind: 'panel', name: null, email: null },
    credential: { kind: e.is_api ? 'panel_api_key' : sftp ? 'sftp' : actor ? 'panel_session' : 'none', id: null, name: null },
    result: 'success',
    status: null,
    sourceIp: e.ip && e.ip.length <= 45 ? e.ip : null,
    details,
  };
}

/** The panel's properties that name what an event touched; nothing else passes. */
const PANEL_PROPERTIES = new Set([
  'file',
  'files',
  'directory',
  'name',
  'count',
  'locked',
  'truncate',
  'failed',
  'variable',
  'allocation',
  'action',
]);

function panelDetails(event: string, properties: Record<string, unknown>): Details {
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(properties)) if (PANEL_PROPERTIES.has(key)) kept[key] = value;
  // A console command can carry a password (`/login …`): its length only, as our own entry.
  if (event === 'server:console.command' && typeof properties.command === 'string') kept.length = properties.command.length;
  return flatten(kept);
}

/** Details in the bounded shape of the schema: lists of at most 20 strings, strings of at most 256 characters. */
function flatten(details: Record<string, unknown>): Details {
  const out: Details = {};
  const str = (v: unknown): string => {
    if (v && typeof v === 'object' && 'from' in v && 'to' in v) return `${String(v.from)} → ${String(v.to)}`.slice(0, 256);
    return (typeof v === 'string' ? v : (JSON.stringify(v) ?? '')).slice(0, 256);
  };
  for (const [key, value] of Object.entries(details).slice(0, 30)) {
    const k = key.slice(0, 64);
    if (value === null || typeof value === 'boolean') out[k] = value;
    else if (typeof value === 'number') out[k] = Number.isFinite(value) ? value : null;
    else if (Array.isArray(value)) out[k] = value.slice(0, 20).map(str);
    else if (value && typeof value === 'object') out[k] = Object.values(value).slice(0, 20).map(str);
    else out[k] = str(value);
  }
  return out;
}

const first = (v: unknown): string => (Array.isArray(v) ? String(v[0] ?? '') : v === undefined || v === null ? '' : String(v));
const filesText = (d: Details): string => {
  const files = Array.isArray(d.files) ? d.files : [];
  const count = typeof d.count === 'number' ? d.count : files.length;
  return count === 1 ? first(files) : `${count} files`;
};

function ourSummary(action: string, d: Details): string {
  switch (action) {
    case 'servers.create':
      return 'Created the server';
    case 'servers.resize':
      return 'Resized the server';
    case 'servers.rename':
      return 'Renamed the server';
    case 'servers.labels':
      return 'Changed the labels';
    case 'servers.delete':
      return 'Deleted the server';
    case 'servers.reinstall':
      return 'Reinstalled the server';
    case 'servers.power':
      return `Sent the power signal ${first(d.signal)}`;
    case 'servers.command':
      return 'Sent a console command';
    case 'servers.startup':
      return 'Changed the startup settings';
    case 'servers.files.write':
      return `Wrote ${first(d.file)}`;
    case 'servers.files.delete':
      return `Deleted ${filesText(d)} in ${first(d.root) || '/'}`;
    case 'servers.files.mkdir':
      return 'Created a folder';
    case 'servers.files.rename':
      return 'Renamed files';
    case 'servers.files.upload':
      return 'Asked for an upload link';
    case 'servers.files.compress':
      return 'Compressed files';
    case 'servers.files.decompress':
      return 'Extracted an archive';
    case 'servers.backups.create':
      return 'Started a backup';
    case 'servers.backups.download':
      return 'Asked for a backup download link';
    case 'servers.backups.restore':
      return 'Restored a backup';
    case 'servers.backups.lock':
      return 'Locked or unlocked a backup';
    case 'servers.backups.delete':
      return 'Deleted a backup';
    case 'servers.admin_suspend':
      return 'An administrator suspended the server';
    case 'servers.admin_unsuspend':
      return 'An administrator lifted the suspension';
    case 'servers.admin_delete':
      return 'An administrator deleted the server';
    case 'servers.admin_reinstall':
      return 'An administrator reinstalled the server';
    default:
      return action;
  }
}

/** The panel's own wording (resources/lang/en/activity.php), without the values we do not show. */
function panelSummary(event: string, d: Details): string {
  const dir = first(d.directory) || '/';
  const name = first(d.name);
  switch (event) {
    case 'server:power.start':
      return 'Started the server';
    case 'server:power.stop':
      return 'Stopped the server';
    case 'server:power.restart':
      return 'Restarted the server';
    case 'server:power.kill':
      return 'Killed the server process';
    case 'server:console.command':
      return 'Executed a console command';
    case 'server:reinstall':
      return 'Reinstalled server';
    case 'server:file.read':
      return `Viewed the contents of ${first(d.file)}`;
    case 'server:file.download':
      return `Downloaded ${first(d.file)}`;
    case 'server:file.write':
      return `Wrote new content to ${first(d.file)}`;
    case 'server:file.create-directory':
      return `Created directory ${dir}${name}`;
    case 'server:file.delete':
      return `Deleted ${filesText(d)} in ${dir}`;
    case 'server:file.rename':
      return `Renamed ${filesText(d)} in ${dir}`;
    case 'server:file.compress':
      return `Compressed ${filesText(d)} in ${dir}`;
    case 'server:file.decompress':
      return `Decompressed ${first(d.files)} in ${dir}`;
    case 'server:file.uploaded':
      return `Uploaded ${dir}${first(d.file)}`;
    case 'server:backup.start':
      return `Started a new backup ${name}`;
    case 'server:backup.download':
      return `Downloaded the ${name} backup`;
    case 'server:backup.delete':
      return `Deleted the ${name} backup`;
    case 'server:backup.restore':
      return `Restored the ${name} backup`;
    case 'server:backup.lock':
      return `Locked the ${name} backup`;
    case 'server:backup.unlock':
      return `Unlocked the ${name} backup`;
    default:
      if (event.startsWith('server:sftp.')) return `SFTP: ${event.slice('server:sftp.'.length)} ${filesText(d)}`;
      return event;
  }
}
