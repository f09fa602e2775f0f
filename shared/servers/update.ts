import type { z } from 'zod';
import type { UpdateServer } from '../api/schemas.ts';
import type { ServerItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { writeIfFirst } from '../db/write.ts';
import { ApiError } from '../errors.ts';
import { getInstance, panelClientFor } from '../instances/index.ts';
import { errorFields, logger } from '../observability/logger.ts';
import type { PanelClient } from '../panel/client.ts';
import { isAmbiguous } from '../panel/errors.ts';
import type { PanelServer } from '../panel/types.ts';
import type { Resources } from '../pricing/index.ts';
import { assertCustomerMayHold, withServerLease } from './lease.ts';
import { getOwnedServer } from './read.ts';
import { recordSettings } from './records.ts';
import { resizeHeld } from './resize.ts';
import { type ServerView, toServerView } from './views.ts';

export interface ServerUpdate {
  server: ServerView;
  /** Absent when the request did not rename. */
  renamed?: { from: string; to: string };
  /** Absent when the request did not set labels. */
  labels?: { from: Record<string, string>; to: Record<string, string> };
}

/** The resize fields of a PATCH, when it has them (the schema lets them come only all three together). */
export function resizeOf(input: z.infer<typeof UpdateServer>): Resources | undefined {
  const { ramMb, cpuPercent, diskMb } = input;
  return ramMb !== undefined && cpuPercent !== undefined && diskMb !== undefined ? { ramMb, cpuPercent, diskMb } : undefined;
}

/**
 * PATCH /v1/servers/:id: a rename, a resize, or both, under one lease so nothing comes between
 * them. The resize goes first (it is the part that can be refused: caps, credit, the node's room);
 * a rename that fails after it leaves the new size in place, and repeating the request is safe
 * (the resize to the same size changes nothing, then the rename is tried again).
 */
export async function updateServer(accountId: string, serverId: string, input: z.infer<typeof UpdateServer>): Promise<ServerUpdate> {
  const resources = resizeOf(input);
  // Labels only: one conditional write on the record, no lease, no panel call (the panel never sees labels).
  if (!resources && input.name === undefined) return setLabels(await getOwnedServer(accountId, serverId), input.labels ?? {});
  // 404 for another account's server, then the account's state, before the lease (lease.ts).
  await assertCustomerMayHold(await getOwnedServer(accountId, serverId));
  const update = await withServerLease(serverId, resources ? 'resize' : 'rename', async () => {
    const resized = resources ? await resizeHeld(accountId, serverId, resources) : undefined;
    if (input.name === undefined) return { server: resized! };
    return renameHeld(accountId, serverId, input.name);
  });
  if (input.labels === undefined) return update;
  // After the panel's part: a failure here leaves the rename or resize done, and repeating the request is safe.
  const labelled = await setLabels(await getOwnedServer(accountId, serverId), input.labels);
  return { ...update, server: labelled.server, labels: labelled.labels };
}

/**
 * Replaces a server's labels: one conditional update on the record (not deleted, and the labels
 * as read, so a concurrent change is a 409 rather than lost). Suspended servers may be labelled.
 */
async function setLabels(item: ServerItem, labels: Record<string, string>): Promise<ServerUpdate> {
  if (item.status === 'deleted') throw new ApiError('conflict', 'The server is deleted');
  const now = new Date().toISOString();
  const had = item.labels;
  const done = await writeIfFirst({
    Update: {
      Key: keys.server(item.accountId, item.serverId),
      UpdateExpression: 'SET labels = :labels, updatedAt = :now',
      ConditionExpression: `#status <> :deleted AND ${had === undefined ? 'attribute_not_exists(labels)' : 'labels = :had'}`,
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':labels': labels, ':now': now, ':deleted': 'deleted', ...(had === undefined ? {} : { ':had': had }) },
    },
  });
  if (!done) throw new ApiError('conflict', 'The server changed meanwhile (its labels, or a deletion); read it and try again');
  return { server: toServerView({ ...item, labels, updatedAt: now }), labels: { from: had ?? {}, to: labels } };
}

/**
 * A rename, under the lease: the panel's details, then the record; no placement, no price.
 *
 * The panel writes every detail field (DetailsModificationService): an omitted external id becomes
 * null, an omitted description '', and the `user` sent becomes the owner (a different one would
 * move the server and revoke its owner's console tokens on Wings). The record does not hold the
 * panel owner, and the instance cannot tell it (a server deployed before the instance had a client
 * key belongs to a per-account user, not the service user), so the server is read first and its
 * owner, external id and description sent back as they are: two Application calls.
 */
async function renameHeld(accountId: string, serverId: string, name: string): Promise<ServerUpdate> {
  const item = await getOwnedServer(accountId, serverId);
  if (item.status !== 'active') throw new ApiError('conflict', `The server is ${item.status}; only active servers can be renamed`);
  const renamed = { from: item.name, to: name };
  if (item.name === name) return { server: toServerView(item), renamed };
  const client = await panelClientFor(await getInstance(item.instanceId));
  const onPanel = await client.getServer(item.panelServerId);
  await applyName(client, onPanel, name, serverId);
  const now = new Date().toISOString();
  try {
    await recordSettings(item, { name }, now);
  } catch (err) {
    // The name is only a label: a panel left with the new one is logged, not queued for repair.
    await applyName(client, onPanel, onPanel.name, serverId).catch((e) =>
      logger.error('rename: could not put the panel name back', { serverId, ...errorFields(e) }),
    );
    throw err;
  }
  return { server: { ...toServerView(item), name, updatedAt: now }, renamed };
}

/** Sends the details; when the answer is lost, reads the panel back: done if it has the name, else the original failure. */
async function applyName(client: PanelClient, onPanel: PanelServer, name: string, serverId: string): Promise<void> {
  try {
    await client.updateDetails(onPanel.id, {
      name,
      user: onPanel.user,
      external_id: onPanel.external_id,
      description: onPanel.description ?? '',
    });
  } catch (err) {
    if (!isAmbiguous(err)) throw err;
    const now = await client.getServer(onPanel.id).catch(() => undefined);
    if (now?.name !== name) throw err;
    logger.warn('rename: details answer lost, the panel has the new name', { serverId, panelServerId: onPanel.id });
  }
}
