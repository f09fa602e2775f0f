import type { z } from 'zod';
import { isConditionFailed, writeItem } from '../db/write.ts';
import { keys } from '../db/keys.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import { ApiError, notFound } from '../errors.ts';
import { PanelRequestError } from '../panel/errors.ts';
import { detectPanelKind } from '../panel/detect.ts';
import type { PanelKind } from '../panel/types.ts';
import type { InstanceTestReport } from '../api/schemas.ts';
import type { InstanceItem, InstanceLastTestRecord } from '../db/items.ts';
import { logger } from '../observability/logger.ts';
import { budgetOf, listInstances, panelClientFor, toInstanceView } from './index.ts';

/**
 * The instance test (POST /v1/admin/instances/:id/test): the panel's kind again (an operator may
 * have moved the URL to another panel, or registered it while it was down), its nodes, the client
 * key's user, the outcome kept on the instance.
 */
export async function testInstance(instanceId: string): Promise<z.infer<typeof InstanceTestReport>> {
  const item = await accessPatterns.instanceById(instanceId);
  if (!item) throw notFound('Instance');
  const started = Date.now();
  let panelKind: PanelKind | undefined;
  try {
    panelKind = await detectPanelKind(await panelClientFor(toInstanceView(item)), item.panelKind);
  } catch (err) {
    logger.warn('instance test: panel kind not detected', { instanceId, reason: describe(err) });
  }
  const instance = { ...toInstanceView(item), ...(panelKind ? { panelKind } : {}) };
  const client = await panelClientFor(instance);
  const checks: z.infer<typeof InstanceTestReport>['checks'] = [];
  let nodes: z.infer<typeof InstanceTestReport>['nodes'] = [];
  let serviceUser: z.infer<typeof InstanceTestReport>['serviceUser'] = null;
  let clientKey: InstanceLastTestRecord['clientKey'] = 'missing';
  const warnings: z.infer<typeof InstanceTestReport>['warnings'] = [];

  try {
    const { locations, nodes: panelNodes } = await client.topology();
    const shortOf = new Map(locations.map((l) => [l.id, l.short]));
    nodes = panelNodes.map((n) => ({
      id: n.id,
      name: n.name,
      region: shortOf.get(n.location_id) ?? null,
      fqdn: n.fqdn,
      maintenance: n.maintenance_mode,
      memoryMb: n.memory,
      diskMb: n.disk,
      allocatedMemoryMb: n.allocated_resources.memory,
      allocatedDiskMb: n.allocated_resources.disk,
    }));
    checks.push({
      name: 'application_api',
      ok: true,
      message: `${nodes.length} node(s) in ${new Set(nodes.map((n) => n.region)).size} region(s)`,
    });
  } catch (err) {
    checks.push({ name: 'application_api', ok: false, message: describe(err) });
  }

  if (!client.hasClientKey) {
    checks.push({
      name: 'client_api',
      ok: false,
      message: 'No client key: deploys work (per-account panel users), power, console and files do not',
    });
  } else {
    try {
      const account = await client.getAccount();
      serviceUser = { id: account.id, username: account.username, email: account.email, admin: account.admin };
      clientKey = 'ok';
      // From the same account read: a root admin's console tokens carry `admin.websocket.*`, so
      // customers would see install output and Wings' raw errors (GetUserPermissionsService).
      if (account.admin)
        warnings.push({
          code: 'client_key_is_root_admin',
          message: 'A root admin: console tokens carry admin.websocket.*; use a non-admin service user',
        });
      checks.push({
        name: 'client_api',
        ok: true,
        message: `Client key belongs to ${account.username} (panel user ${account.id})`,
      });
    } catch (err) {
      clientKey = clientKeyFailure(err);
      checks.push({ name: 'client_api', ok: false, message: describe(err) });
    }
  }
  const ok = checks.every((c) => c.ok);
  const failed = checks.filter((c) => !c.ok);
  const lastTest: InstanceLastTestRecord = {
    at: new Date().toISOString(),
    ok,
    clientKey,
    message: (ok ? checks.map((c) => c.message) : failed.map((c) => `${c.name}: ${c.message}`)).join('; ').slice(0, 500),
  };
  const recorded = await recordTest(item, lastTest, serviceUser?.id, panelKind);
  return {
    instanceId,
    ...(panelKind ? { panelKind } : {}),
    ok,
    latencyMs: Date.now() - started,
    checks,
    nodes,
    serviceUser,
    warnings,
    callBudget: await budgetOf(instance, await listInstances()),
    lastTest: recorded ? lastTest : null,
  };
}

/** How the client check failed: the panel refused the key, did not answer, or something else. */
function clientKeyFailure(err: unknown): InstanceLastTestRecord['clientKey'] {
  if (!(err instanceof PanelRequestError)) return 'error';
  if (err.panelStatus === 401 || err.panelStatus === 403) return 'refused';
  if (err.code === 'panel_timeout' || err.code === 'panel_unavailable' || err.panelStatus === undefined || err.panelStatus >= 500)
    return 'unreachable';
  return 'error';
}

/**
 * Keeps the outcome (and the service user the client key resolved to) on the instance, only while
 * it still has the keys and URL the test read: a PATCH meanwhile moved `updatedAt`, and a result
 * about the old keys must not describe the new ones. False when it was not kept.
 */
async function recordTest(
  item: InstanceItem,
  lastTest: InstanceLastTestRecord,
  serviceUserId: number | undefined,
  panelKind: PanelKind | undefined,
): Promise<boolean> {
  try {
    await writeItem({
      Update: {
        Key: keys.instance(item.instanceId),
        UpdateExpression: `SET lastTest = :test${serviceUserId === undefined ? '' : ', serviceUserId = :user'}${panelKind ? ', panelKind = :kind' : ''}`,
        ConditionExpression: 'attribute_exists(PK) AND updatedAt = :read',
        ExpressionAttributeValues: {
          ':test': lastTest,
          ':read': item.updatedAt,
          ...(serviceUserId === undefined ? {} : { ':user': serviceUserId }),
          ...(panelKind ? { ':kind': panelKind } : {}),
        },
      },
    });
    return true;
  } catch (err) {
    if (!isConditionFailed(err)) throw err;
    logger.warn('instance test: the instance changed while it ran; result not kept', { instanceId: item.instanceId });
    return false;
  }
}

const describe = (err: unknown): string =>
  err instanceof PanelRequestError || err instanceof ApiError ? err.message : 'Unexpected failure talking to the panel';
