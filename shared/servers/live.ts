import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { LiveState, LiveUsage } from '../api/schemas.ts';
import { ApiError } from '../errors.ts';
import { getConfig } from '../config/env.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { LiveRefreshFailure, LiveStateItem, PanelLiveAnswer, ServerItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { writeIfFirst, writeItem } from '../db/write.ts';
import { errorFields, logger } from '../observability/logger.ts';
import { PanelRequestError } from '../panel/errors.ts';
import type { PanelServer } from '../panel/types.ts';
import { refuseOnFreshState } from './fresh-gate.ts';
import { getOwnedServer } from './read.ts';
import { getInstance, panelClientFor } from '../instances/index.ts';
import { recordUsageSample } from './usage-history.ts';
import { type ServerView, toServerView } from './views.ts';

/**
 * A server's live state (install, power, suspension, usage), cached in the table for every
 * process. A panel allows 240 Application and 720 Client calls a minute per key owner, shared by
 * every customer, so a read must not cost a panel call: the state is answered from the table while
 * it is younger than the refresh interval, and once it is older exactly one reader, the one whose
 * conditional write takes the refresh lease, asks the panel; the others answer with what is known.
 */
export type LiveView = z.infer<typeof LiveState>;
type UnavailableReason = NonNullable<LiveView['reason']>;

interface LastKnown {
  answer: PanelLiveAnswer;
  asOf: string;
  ageMs: number;
  intervalMs: number;
}

/** Readers that lose the lease still show a state up to this many intervals old as current. */
const SHOWN_WHILE_REFRESHING_INTERVALS = 3;
/** The item of a server nobody reads goes after a week (a delete also drops it at once). */
const ITEM_TTL_SECONDS = 7 * 24 * 3600;
/**
 * How long a refresh holds the lease: two panel calls and a retry at the panel timeout, which at the
 * default 10 s outlasts the servers function (29 s, infra/stacks/api-stack.ts). A refresher that died
 * frees the server after this; one overtaken while still alive has its late answer refused.
 */
const leaseMs = (): number => 3 * getConfig().panelTimeoutMs;

const NOTHING_KNOWN = { installStatus: null, powerState: null, suspendedOnPanel: null, resources: null } as const;

/**
 * `maxAgeMs` below the refresh interval asks for a fresher state than a plain read accepts: a gate
 * about to refuse on the copy (fresh-gate.ts) reads again with it.
 */
export async function liveStateOf(server: ServerItem, options: { maxAgeMs?: number } = {}): Promise<LiveView> {
  if (server.status === 'deleted') return unavailable('deleted', undefined);
  const now = Date.now();
  const cached = await accessPatterns.liveStateOfServer(server.serverId);
  const last = lastKnown(cached, now);
  if (last && last.ageMs < Math.min(last.intervalMs, options.maxAgeMs ?? Number.POSITIVE_INFINITY)) return shown(last);
  const leaseId = await takeRefreshLease(server.serverId, cached, now);
  if (!leaseId) return whileAnotherRefreshes(cached, last);
  return refresh(server, leaseId, last, cached?.sampledBucket);
}

/**
 * Drops a server's cached live state after our own change to it (power, resize, suspension,
 * delete), so the next read asks the panel instead of showing the state from before. Never throws:
 * the change it follows is done, and a state left behind is replaced within one interval anyway.
 */
export async function forgetLiveState(serverId: string): Promise<void> {
  try {
    await writeItem({ Delete: { Key: keys.liveState(serverId) } });
  } catch (err) {
    logger.warn('cached live state not dropped', { serverId, ...errorFields(err) });
  }
}

/** Installing, starting and stopping end within seconds; a customer watching should see that promptly. */
function refreshIntervalMs(answer: PanelLiveAnswer): number {
  const config = getConfig();
  const changing = answer.installStatus === 'installing' || answer.powerState === 'starting' || answer.powerState === 'stopping';
  return changing ? config.liveStateTransitionTtlMs : config.liveStateTtlMs;
}

function lastKnown(item: LiveStateItem | undefined, now: number): LastKnown | undefined {
  if (!item?.answer || !item.asOf) return undefined;
  return { answer: item.answer, asOf: item.asOf, ageMs: now - Date.parse(item.asOf), intervalMs: refreshIntervalMs(item.answer) };
}

const shown = (last: LastKnown): LiveView => ({ available: true, asOf: last.asOf, ...last.answer });

const unavailable = (reason: UnavailableReason, last: LastKnown | undefined): LiveView => ({
  available: false,
  reason,
  asOf: last?.asOf ?? null,
  ...(last?.answer ?? NOTHING_KNOWN),
});

/**
 * One conditional write: the lease is free (or expired) and the state is still the one this reader
 * saw, so a reader that saw the old state after another already refreshed it cannot ask again.
 */
async function takeRefreshLease(serverId: string, cached: LiveStateItem | undefined, now: number): Promise<string | undefined> {
  // Held: skip the write that would fail anyway (most readers of a busy server end here).
  if (cached?.refreshingUntil !== undefined && cached.refreshingUntil > now) return undefined;
  const leaseId = randomUUID();
  const won = await writeIfFirst({
    Update: {
      Key: keys.liveState(serverId),
      UpdateExpression: 'SET #kind = :kind, serverId = :serverId, refreshingUntil = :until, leaseId = :leaseId, expiresAt = :expiresAt',
      ConditionExpression: `(attribute_not_exists(refreshingUntil) OR refreshingUntil <= :now) AND ${
        cached?.asOf ? 'asOf = :seenAsOf' : 'attribute_not_exists(asOf)'
      }`,
      ExpressionAttributeNames: { '#kind': 'kind' },
      ExpressionAttributeValues: {
        ':kind': 'live-state',
        ':serverId': serverId,
        ':until': now + leaseMs(),
        ':leaseId': leaseId,
        ':expiresAt': Math.floor(now / 1000) + ITEM_TTL_SECONDS,
        ':now': now,
        ...(cached?.asOf ? { ':seenAsOf': cached.asOf } : {}),
      },
    },
  });
  return won ? leaseId : undefined;
}

/** Lost the lease: a failed last refresh says why; otherwise the last state while it is recent enough. */
function whileAnotherRefreshes(cached: LiveStateItem | undefined, last: LastKnown | undefined): LiveView {
  if (cached?.failedReason) return unavailable(cached.failedReason, last);
  if (last && last.ageMs <= SHOWN_WHILE_REFRESHING_INTERVALS * last.intervalMs) return shown(last);
  return unavailable('refreshing', last);
}

async function refresh(
  server: ServerItem,
  leaseId: string,
  last: LastKnown | undefined,
  sampledBucket: string | undefined,
): Promise<LiveView> {
  let answer: PanelLiveAnswer;
  try {
    answer = await askPanel(server);
  } catch (err) {
    const reason = failureReason(err);
    logger.warn('server live state unavailable', { serverId: server.serverId, reason, ...errorFields(err) });
    await storeFailure(server.serverId, leaseId, reason, last?.intervalMs ?? getConfig().liveStateTransitionTtlMs);
    return unavailable(reason, last);
  }
  const asOf = new Date().toISOString();
  // The answer is also a usage sample (usage-history.ts): history costs no panel call of its own.
  const sampled = answer.resources ? await recordUsageSample(server.serverId, answer.resources, sampledBucket) : sampledBucket;
  await storeAnswer(server.serverId, leaseId, answer, asOf, sampled);
  return { available: true, asOf, ...answer };
}

async function askPanel(server: ServerItem): Promise<PanelLiveAnswer> {
  const client = await panelClientFor(await getInstance(server.instanceId));
  const panel = await client.getServer(server.panelServerId);
  const answer: PanelLiveAnswer = {
    installStatus: installStatusOf(panel),
    powerState: null,
    suspendedOnPanel: panel.suspended,
    resources: null,
  };
  // The Client API has no usage for a server that is installing, suspended or restoring a backup (the panel answers 409).
  if (!client.hasClientKey || answer.installStatus !== 'installed' || panel.suspended || panel.status === 'restoring_backup') return answer;
  const stats = await client.getResources(server.identifier);
  return {
    ...answer,
    powerState: stats.current_state,
    resources: {
      memoryBytes: stats.resources.memory_bytes,
      cpuAbsolute: stats.resources.cpu_absolute,
      diskBytes: stats.resources.disk_bytes,
      networkRxBytes: stats.resources.network_rx_bytes,
      networkTxBytes: stats.resources.network_tx_bytes,
      uptimeMs: stats.resources.uptime,
    },
  };
}

function installStatusOf(panel: PanelServer): PanelLiveAnswer['installStatus'] {
  if (panel.status === 'installing') return 'installing';
  if (panel.status === 'install_failed' || panel.status === 'reinstall_failed') return 'install_failed';
  return 'installed';
}

/**
 * Busy: the panel answered 429, or our shared call budget refused the call before it was sent.
 * Unreachable: no answer, a timeout, or a 5xx (`panel_unavailable` also covers these, so the code alone does not tell).
 * Error: the panel refused (its key, a 4xx), or the instance could not be used.
 */
function failureReason(err: unknown): LiveRefreshFailure {
  if (!(err instanceof PanelRequestError)) return 'panel_error';
  if (err.panelStatus === 429 || (err.code === 'panel_unavailable' && !err.sent)) return 'panel_busy';
  if (err.code === 'panel_timeout' || err.code === 'panel_unavailable' || err.panelStatus === undefined || err.panelStatus >= 500)
    return 'panel_unreachable';
  return 'panel_error';
}

/** Only while this refresh still holds the lease: a state dropped meanwhile (forgetLiveState) stays dropped. */
async function storeAnswer(
  serverId: string,
  leaseId: string,
  answer: PanelLiveAnswer,
  asOf: string,
  sampledBucket: string | undefined,
): Promise<void> {
  const stored = await writeIfFirst({
    Update: {
      Key: keys.liveState(serverId),
      UpdateExpression: `SET answer = :answer, asOf = :asOf${sampledBucket ? ', sampledBucket = :bucket' : ''} REMOVE refreshingUntil, leaseId, failedReason`,
      ConditionExpression: 'leaseId = :leaseId',
      ExpressionAttributeValues: {
        ':answer': answer,
        ':asOf': asOf,
        ':leaseId': leaseId,
        ...(sampledBucket ? { ':bucket': sampledBucket } : {}),
      },
    },
  });
  if (!stored) logger.debug('live state answer not stored: the lease was lost', { serverId });
}

/** Keeps the lease for one more interval, so a panel in trouble is asked once per interval, not once per read. */
async function storeFailure(serverId: string, leaseId: string, reason: LiveRefreshFailure, retryAfterMs: number): Promise<void> {
  await writeIfFirst({
    Update: {
      Key: keys.liveState(serverId),
      UpdateExpression: 'SET failedReason = :reason, refreshingUntil = :until REMOVE leaseId',
      ConditionExpression: 'leaseId = :leaseId',
      ExpressionAttributeValues: { ':reason': reason, ':until': Date.now() + retryAfterMs, ':leaseId': leaseId },
    },
  });
}

/** A copy this young counts as fresh for a refusal: it was read from the panel a moment ago, likely by this request. */
const FRESH_FOR_REFUSAL_MS = 1_000;

/**
 * GET /v1/servers/:id/resources from the live state, named like `live` of GET /v1/servers/:id, with
 * `asOf`, and the panel's own stats object under `attributes` (the specification's
 * `attributes.current_state` and `attributes.resources`). The last known usage is shown, with its
 * time, even when the latest refresh failed. With none known, installing or suspended on the panel
 * is a conflict (the panel's own 409), decided on fresh state (fresh-gate.ts: an install that just
 * ended is not refused for the copy's interval); a busy or unreachable panel is 503 with Retry-After.
 */
export async function usageOfServer(server: ServerItem): Promise<z.infer<typeof LiveUsage>> {
  const live = await refuseOnFreshState({
    cached: await liveStateOf(server),
    refusal: usageRefusal,
    readFresh: async () => {
      const fresh = await liveStateOf(server, { maxAgeMs: FRESH_FOR_REFUSAL_MS });
      if (!fresh.available) throw new Error(`live state not read again: ${fresh.reason}`);
      return fresh;
    },
  });
  return usageFromLiveState(live);
}

/** Usage is refused on the server's state only while none is known: installing, or suspended on the panel. */
function usageRefusal(live: LiveView): ApiError | undefined {
  if (live.resources && live.powerState && live.asOf) return undefined;
  if (live.available && live.installStatus !== 'installed')
    return new ApiError('conflict', 'The server is still installing (or its install failed): it has no usage yet');
  if (live.available && live.suspendedOnPanel) return new ApiError('conflict', 'The server is suspended on the panel: it has no usage');
  return undefined;
}

function usageFromLiveState(live: LiveView): z.infer<typeof LiveUsage> {
  if (live.resources && live.powerState && live.asOf) {
    const { resources: r, powerState } = live;
    const suspendedOnPanel = live.suspendedOnPanel ?? false;
    return {
      powerState,
      suspendedOnPanel,
      resources: r,
      asOf: live.asOf,
      attributes: {
        current_state: powerState,
        is_suspended: suspendedOnPanel,
        resources: {
          memory_bytes: r.memoryBytes,
          cpu_absolute: r.cpuAbsolute,
          disk_bytes: r.diskBytes,
          network_rx_bytes: r.networkRxBytes,
          network_tx_bytes: r.networkTxBytes,
          uptime: r.uptimeMs,
        },
      },
    };
  }
  const refusal = usageRefusal(live);
  if (refusal) throw refusal;
  if (live.available) throw new PanelRequestError('panel_error', 'The panel gave no usage for this server', undefined);
  if (live.reason === 'panel_error')
    throw new PanelRequestError('panel_error', 'The panel refused to give usage for this server', undefined);
  const retryAfterSeconds = Math.max(1, Math.ceil(getConfig().liveStateTransitionTtlMs / 1000));
  throw new PanelRequestError('panel_unavailable', 'The panel cannot be asked for usage right now; nothing is known yet', undefined, [], {
    retryAfterSeconds,
    sent: false,
  });
}

/** The stored server plus its live state, cached for every process (live.ts); a panel in trouble marks it unavailable. */
export async function getServerWithLive(accountId: string, serverId: string): Promise<ServerView & { live: LiveView }> {
  const item = await getOwnedServer(accountId, serverId);
  return { ...toServerView(item), live: await liveStateOf(item) };
}
