import type { z } from 'zod';
import type { ReinstallResult } from '../api/schemas.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import { keys } from '../db/keys.ts';
import { isConditionFailed, writeIfFirst, writeItem } from '../db/write.ts';
import { ApiError } from '../errors.ts';
import { getInstance, panelClientFor } from '../instances/index.ts';
import { errorFields, logger } from '../observability/logger.ts';
import type { PanelClient } from '../panel/client.ts';
import { isAmbiguous } from '../panel/errors.ts';
import { refuseOnFreshState } from './fresh-gate.ts';
import { endWatchFromPanel } from './install-watch.ts';
import { assertCustomerMayHold, stateConflict, withServerLease } from './lease.ts';
import { getOwnedServer } from './read.ts';
import { installWatchWrite } from './records.ts';

/**
 * POST /v1/servers/:id/reinstall: the panel runs the egg's install script again (files are kept,
 * pterodactyl/panel ReinstallServerService: status `installing`, then Wings' reinstall), and the
 * install watch (install-watch.ts) raises `server.reinstalled` or `server.install_failed` when it ends.
 *
 * Under the server's lease, after the customer checks power makes (lease.ts `assertCustomerMayHold`).
 * The watch is armed before the panel call, conditional on none being armed. A server whose install
 * (a deploy's or an earlier reinstall's) is still watched is read once on the panel (fresh-gate.ts:
 * the watch is checked once a minute, so an install may have ended since): still installing is 409
 * `conflict`; ended, its watch is ended here with its event and the reinstall goes on. It
 * becomes due only once the panel accepted, so no pass can see the server still installed from
 * before and call the reinstall done. The
 * panel's Application API itself refuses nothing while a server installs (only Wings refuses while a
 * power action runs, a 409 the client turns into `conflict`), and two install scripts over one
 * server's files would race. A refused call disarms the watch again; a lost answer is settled by
 * one read of the server (installing: the reinstall happened).
 */
export async function reinstallServer(accountId: string, serverId: string): Promise<z.infer<typeof ReinstallResult>> {
  await assertCustomerMayHold(await getOwnedServer(accountId, serverId));
  return withServerLease(serverId, 'reinstall', async () => {
    const item = await getOwnedServer(accountId, serverId);
    const conflict = stateConflict(item);
    if (conflict) throw conflict;
    const client = await panelClientFor(await getInstance(item.instanceId));
    const arm = installWatchWrite(item, 'reinstall', new Date(), false);
    const startedAt = arm.Put.Item.startedAt;
    if (!(await armed(arm.Put))) {
      // The watch is the install state as of its last check, up to a minute old: refused only on the panel's word.
      await refuseOnFreshState({
        cached: false,
        refusal: (ended) =>
          ended ? undefined : new ApiError('conflict', 'The server is still installing; reinstall it once the install has ended'),
        readFresh: () => installEndedOnPanel(client, accountId, serverId, item.panelServerId),
      });
      if (!(await armed(arm.Put)))
        throw new ApiError('conflict', 'The server is still installing; reinstall it once the install has ended');
    }
    try {
      await client.reinstallServer(item.panelServerId);
    } catch (err) {
      if (!(isAmbiguous(err) && (await installingNow(client, item.panelServerId)))) {
        await disarm(accountId, serverId, startedAt);
        throw err;
      }
    }
    await makeDue(accountId, serverId, startedAt);
    return { id: serverId, installStatus: 'installing' as const, watchedUntil: arm.Put.Item.until };
  });
}

/** Arms the watch unless one is armed already (an install still watched). */
async function armed(put: ReturnType<typeof installWatchWrite>['Put']): Promise<boolean> {
  try {
    await writeItem({ Put: put });
    return true;
  } catch (err) {
    if (!isConditionFailed(err)) throw err;
    return false;
  }
}

/**
 * One read of the server on the panel: when its install has ended, the watch is ended now as the
 * every-minute pass would end it (its event raised once), so the reinstall can arm its own.
 */
async function installEndedOnPanel(client: PanelClient, accountId: string, serverId: string, panelServerId: number): Promise<boolean> {
  const watch = await accessPatterns.installWatchOfServer(accountId, serverId);
  if (!watch) return true;
  return endWatchFromPanel(watch, await client.getServer(panelServerId));
}

/** After a lost answer: whether the panel shows the server installing (the reinstall went through). */
async function installingNow(client: PanelClient, panelServerId: number): Promise<boolean> {
  try {
    return (await client.getServer(panelServerId)).status === 'installing';
  } catch {
    return false;
  }
}

/**
 * The panel has the server installing now: the watch is due from here. Never throws: the reinstall
 * is done; a watch left undue ends by its TTL and no longer blocks a reinstall after its limit.
 */
async function makeDue(accountId: string, serverId: string, startedAt: string): Promise<void> {
  const due = keys.installWatchDue(serverId, new Date().toISOString());
  try {
    await writeIfFirst({
      Update: {
        Key: keys.installWatch(accountId, serverId),
        UpdateExpression: 'SET GSI2PK = :pk, GSI2SK = :sk',
        ConditionExpression: 'startedAt = :started',
        ExpressionAttributeValues: { ':pk': due.GSI2PK, ':sk': due.GSI2SK, ':started': startedAt },
      },
    });
  } catch (err) {
    logger.warn('reinstall: its install watch was not started; no event will tell its end', { serverId, ...errorFields(err) });
  }
}

/** The reinstall did not happen: its watch goes (only this arming's). */
async function disarm(accountId: string, serverId: string, startedAt: string): Promise<void> {
  try {
    await writeIfFirst({
      Delete: {
        Key: keys.installWatch(accountId, serverId),
        ConditionExpression: 'startedAt = :started',
        ExpressionAttributeValues: { ':started': startedAt },
      },
    });
  } catch (err) {
    // Left undue, it blocks another reinstall until its limit at most.
    logger.warn('reinstall: the watch of a refused reinstall was not removed', { serverId, ...errorFields(err) });
  }
}
