import type { z } from 'zod';
import { writeItem } from '../db/write.ts';
import { keys } from '../db/keys.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { Item, Page, PageRequest } from '../db/access-patterns.ts';
import type { ActivityEntry } from '../api/schemas.ts';
import { newId } from '../ids.ts';

/**
 * The activity log (per account) and the audit log (platform-wide, for admins) are the same
 * entries: stored under the account, indexed across accounts in GSI1, expired by TTL after 90 days.
 */
export const ACTIVITY_RETENTION_DAYS = 90;

export type ActivityView = z.infer<typeof ActivityEntry>;
export type ActivityInput = Omit<ActivityView, 'id' | 'at'>;

/** The server an entry's target names (`server:<id>`), if it names one. */
export function serverOfTarget(target: string | null): string | undefined {
  return target?.startsWith('server:') ? target.slice('server:'.length) : undefined;
}

export async function recordActivity(input: ActivityInput, now = new Date()): Promise<void> {
  const id = newId();
  const at = now.toISOString();
  await writeItem({
    Put: {
      Item: {
        ...keys.activity(input.accountId, at, id),
        ...keys.auditListing(input.accountId, at, id),
        // An entry about a server is listed under that server too (its activity view).
        ...(serverOfTarget(input.target) ? keys.serverActivityListing(serverOfTarget(input.target)!, at, id) : {}),
        kind: 'activity',
        id,
        at,
        ...input,
        expiresAt: Math.floor(now.getTime() / 1000) + ACTIVITY_RETENTION_DAYS * 86_400,
      },
    },
  });
}

/**
 * An entry written by the platform itself (the billing pass, the reconciler, a payment webhook)
 * rather than by a caller: the actor is named, the credential kind is `system`.
 */
export async function recordSystemActivity(entry: {
  accountId: string;
  actor: 'billing' | 'reconciler' | 'stripe';
  action: string;
  target: string;
  details?: Record<string, unknown>;
}): Promise<void> {
  const { accountId, actor, action, target, details } = entry;
  await recordActivity({
    accountId,
    actorEmail: actor,
    credential: { kind: 'system', id: actor },
    action,
    target,
    result: 'success',
    status: 200,
    errorCode: null,
    sourceIp: null,
    requestId: `${actor}-${action}-${Date.now()}`,
    ...(details ? { details } : {}),
  });
}

function toView(item: Item): ActivityView {
  const { PK, SK, GSI1PK, GSI1SK, GSI2PK, GSI2SK, kind, expiresAt, ...view } = item;
  return view as ActivityView;
}

export async function listActivity(accountId: string, page: PageRequest): Promise<Page<ActivityView>> {
  const result = await accessPatterns.activityOfAccount(accountId, page);
  return { data: result.data.map(toView), nextCursor: result.nextCursor };
}

export async function listPlatformAudit(page: PageRequest): Promise<Page<ActivityView>> {
  const result = await accessPatterns.platformAudit(page);
  const now = Math.floor(Date.now() / 1000);
  return { data: result.data.filter((i) => Number(i.expiresAt ?? Infinity) > now).map(toView), nextCursor: result.nextCursor };
}
