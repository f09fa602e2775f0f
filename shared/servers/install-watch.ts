import * as accessPatterns from '../db/access-patterns.ts';
import type { InstallWatchItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { INSTALL_WATCH_SHARDS } from '../db/table.ts';
import { isConditionFailed, transact, writeIfFirst } from '../db/write.ts';
import { PLATFORM_CALLER, runAsCaller } from '../instances/caller.ts';
import { getInstance, panelClientFor } from '../instances/index.ts';
import { errorFields, logger } from '../observability/logger.ts';
import type { PanelServer } from '../panel/types.ts';
import { eventWrite } from '../webhooks/events.ts';
import { toServerView } from './views.ts';

/**
 * The install watch: tells an account when a server's install ends, so nobody polls
 * GET /v1/servers/:id for it. A deploy (records.ts `recordCreated`) and a reinstall (reinstall.ts)
 * arm one watch per server (`ACCOUNT#<id>` / `INSTALL#<serverId>`, due in the sparse GSI2
 * `INSTALLDUE#<n>`); the every-minute pass (functions/billing-pass `repairs` in AWS,
 * dev/repair-loop.ts locally) checks the due ones and ends each with an event:
 *
 * - `server.installed` (a deploy's install) or `server.reinstalled` (a reinstall's), status left `installing`;
 * - `server.install_failed` (`install.reason` `failed`): the panel says `install_failed` / `reinstall_failed`;
 * - `server.install_failed` (`install.reason` `timeout`): still installing, or the panel not answering,
 *   when INSTALL_WATCH_LIMIT_MS (an hour, records.ts) has passed since the install began.
 *
 * A server gone from the panel or deleted here, or suspended at the limit (the panel then no longer
 * tells the install's end), ends its watch without an event.
 *
 * Panel calls: the servers are asked for by uuid, up to 50 in one Application listing call per
 * panel (`filter[uuid]`), so a pass costs ceil(watched on that panel / 50) calls per panel, whatever
 * the panel's size, and none for a panel with nothing installing. They run as the platform's calls
 * (call-budget.ts: the system share, which no customer's calls can use up). Each watch is claimed
 * before it is checked (its due entry moved one interval ahead, on the entry read), so a server is
 * checked at most once per interval and overlapping passes never check one twice; the ending write
 * is conditional on the arming's `startedAt`, so each install raises one event.
 */
export interface InstallWatchSummary {
  due: number;
  /** Watches this pass claimed and checked. */
  checked: number;
  /** Installs that ended with an event (installed, reinstalled or failed). */
  ended: number;
  /** Watches ended without an event (server gone, deleted, or suspended at the limit). */
  dropped: number;
  /** Panel listing calls made. */
  panelCalls: number;
}

export interface InstallWatchOptions {
  /** At most one check per server per interval (default INSTALL_CHECK_INTERVAL_MS). */
  intervalMs?: number;
  limit?: number;
}

/** Below the every-minute schedule, so each run checks every watched server (a run a little early still finds it due). */
export const INSTALL_CHECK_INTERVAL_MS = 30_000;
export const INSTALL_WATCHES_PER_RUN = 200;
/** uuids per listing call: 50 × 37 characters keep the URL under 2 KB, and the matches within one page of 100. */
const UUIDS_PER_CALL = 50;

type Outcome = { end: 'installed' } | { end: 'failed'; reason: 'failed' | 'timeout' } | { end: 'dropped' } | { end: 'none' };

export function runInstallWatch(at = new Date(), options: InstallWatchOptions = {}): Promise<InstallWatchSummary> {
  // The platform's work whoever calls it: its panel calls take the system share of the call budget.
  return runAsCaller(PLATFORM_CALLER, () => pass(at, options));
}

async function pass(at: Date, options: InstallWatchOptions): Promise<InstallWatchSummary> {
  const limit = options.limit ?? INSTALL_WATCHES_PER_RUN;
  const intervalMs = options.intervalMs ?? INSTALL_CHECK_INTERVAL_MS;
  const nowIso = at.toISOString();
  const due: InstallWatchItem[] = [];
  for (let shard = 0; shard < INSTALL_WATCH_SHARDS && due.length < limit; shard++) {
    due.push(...(await accessPatterns.dueInstallWatchesOfShard(shard, nowIso, limit - due.length)));
  }
  const summary: InstallWatchSummary = { due: due.length, checked: 0, ended: 0, dropped: 0, panelCalls: 0 };
  if (!due.length) return summary;
  // The clock, not `at`, is what the claim is measured against; `at` only chooses what is due.
  const claimedAt = Math.max(at.getTime(), Date.now());
  const claimed = (await Promise.all(due.map(async (w) => ((await claim(w, claimedAt + intervalMs)) ? w : null)))).filter(
    (w): w is InstallWatchItem => w !== null,
  );
  summary.checked = claimed.length;
  const byInstance = new Map<string, InstallWatchItem[]>();
  for (const w of claimed) byInstance.set(w.instanceId, [...(byInstance.get(w.instanceId) ?? []), w]);
  await Promise.all([...byInstance].map(([instanceId, watches]) => checkPanel(instanceId, watches, claimedAt, summary)));
  if (summary.checked) logger.info('install watch', { ...summary });
  return summary;
}

/** One conditional write: the due entry moved one interval ahead, on the entry as read. False: another pass has it. */
function claim(watch: InstallWatchItem, nextCheck: number): Promise<boolean> {
  return writeIfFirst({
    Update: {
      Key: keys.installWatch(watch.accountId, watch.serverId),
      UpdateExpression: 'SET GSI2SK = :next ADD checks :one',
      ConditionExpression: 'GSI2SK = :read',
      ExpressionAttributeValues: {
        ':next': keys.installWatchDue(watch.serverId, new Date(nextCheck).toISOString()).GSI2SK,
        ':read': watch.GSI2SK,
        ':one': 1,
      },
    },
  });
}

async function checkPanel(instanceId: string, watches: InstallWatchItem[], now: number, summary: InstallWatchSummary): Promise<void> {
  for (let i = 0; i < watches.length; i += UUIDS_PER_CALL) {
    const chunk = watches.slice(i, i + UUIDS_PER_CALL);
    let found: Map<string, PanelServer> | null = null;
    try {
      const client = await panelClientFor(await getInstance(instanceId));
      summary.panelCalls++;
      found = new Map((await client.listServersByUuid(chunk.map((w) => w.uuid))).map((s) => [s.uuid.toLowerCase(), s]));
    } catch (err) {
      // Asked again next interval; only a watch past its limit ends now (timeout).
      logger.warn('install watch: the panel was not asked or did not answer', { instanceId, watches: chunk.length, ...errorFields(err) });
    }
    await Promise.all(
      chunk.map(async (watch) => {
        const outcome = outcomeOf(watch, found ? (found.get(watch.uuid.toLowerCase()) ?? null) : undefined, now);
        if (outcome.end === 'none') return;
        try {
          const ended = await end(watch, outcome, now);
          if (ended === 'event') summary.ended++;
          if (ended === 'dropped') summary.dropped++;
        } catch (err) {
          logger.warn('install watch: the end was not recorded; checked again next interval', {
            serverId: watch.serverId,
            ...errorFields(err),
          });
        }
      }),
    );
  }
}

/**
 * Ends one watch now from the panel's server as just read (a reinstall's gate, reinstall.ts), the
 * way a pass would: the same outcome and the same conditional end, so its event is raised once
 * whoever ends it. True when the install has ended (the watch is gone, by this call or another).
 */
export async function endWatchFromPanel(watch: InstallWatchItem, panel: PanelServer | null): Promise<boolean> {
  const now = Date.now();
  const outcome = outcomeOf(watch, panel, now);
  if (outcome.end === 'none') return false;
  await end(watch, outcome, now);
  return true;
}

/** `panel`: the panel's server, null when the listing did not have it, undefined when the panel was not asked. */
function outcomeOf(watch: InstallWatchItem, panel: PanelServer | null | undefined, now: number): Outcome {
  const pastLimit = now >= Date.parse(watch.until);
  if (panel === null) return { end: 'dropped' };
  if (panel === undefined || panel.status === 'installing') return pastLimit ? { end: 'failed', reason: 'timeout' } : { end: 'none' };
  if (panel.status === 'install_failed' || panel.status === 'reinstall_failed') return { end: 'failed', reason: 'failed' };
  // Suspended while installing: the panel keeps `suspended` when the install ends, so its end is not
  // visible until an unsuspension; past the limit the watch gives up without saying how it ended.
  if (panel.status === 'suspended') return pastLimit ? { end: 'dropped' } : { end: 'none' };
  return { end: 'installed' };
}

/**
 * Removes the watch of this arming (`startedAt` as read) and, in the same transaction, writes the
 * event: a watch another pass ended already, or a reinstall armed anew, fails the condition and
 * nothing is written twice.
 */
async function end(
  watch: InstallWatchItem,
  outcome: Exclude<Outcome, { end: 'none' }>,
  now: number,
): Promise<'event' | 'dropped' | 'lost'> {
  const Delete = {
    Key: keys.installWatch(watch.accountId, watch.serverId),
    ConditionExpression: 'startedAt = :started',
    ExpressionAttributeValues: { ':started': watch.startedAt },
  };
  const record = outcome.end === 'dropped' ? undefined : await accessPatterns.serverOfAccount(watch.accountId, watch.serverId);
  if (!record || record.status === 'deleted') return (await writeIfFirst({ Delete })) ? 'dropped' : 'lost';
  try {
    const endedAt = new Date(now).toISOString();
    const install = {
      kind: watch.installKind,
      startedAt: watch.startedAt,
      endedAt,
      ...(outcome.end === 'failed' ? { reason: outcome.reason } : {}),
    };
    const type =
      outcome.end === 'failed' ? 'server.install_failed' : watch.installKind === 'reinstall' ? 'server.reinstalled' : 'server.installed';
    await transact([{ name: 'watch', Delete }, eventWrite(watch.accountId, type, { ...toServerView(record), install })]);
    logger.info('install ended', { serverId: watch.serverId, type, ...install });
    return 'event';
  } catch (err) {
    if (isConditionFailed(err, 'watch')) return 'lost';
    throw err;
  }
}
