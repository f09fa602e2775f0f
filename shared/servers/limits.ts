import { ApiError } from '../errors.ts';
import { type Addons, centsUp, RUNWAY_HOURS, type Resources } from '../pricing/index.ts';
import type { SettingsValue } from '../api/schemas/settings.ts';
import { getSettings } from '../settings/index.ts';
import type { VariableIssue } from './egg-variables.ts';

/** What a deploy or an upsize must respect: platform caps, the per-account limit and the runway. */

/** Platform caps (settings.serverCaps): 422 `limit_exceeded` naming the field. */
export async function checkCaps(resources: Resources): Promise<void> {
  const { serverCaps } = await getSettings();
  const over: VariableIssue[] = [];
  if (resources.ramMb > serverCaps.maxRamMb) over.push({ field: 'body.ramMb', message: `must be at most ${serverCaps.maxRamMb}` });
  if (resources.cpuPercent > serverCaps.maxCpuPercent)
    over.push({ field: 'body.cpuPercent', message: `must be at most ${serverCaps.maxCpuPercent}` });
  if (resources.diskMb > serverCaps.maxDiskMb) over.push({ field: 'body.diskMb', message: `must be at most ${serverCaps.maxDiskMb}` });
  if (over.length) {
    throw new ApiError('limit_exceeded', `Above the platform limits: ${over.map((o) => `${o.field} ${o.message}`).join('; ')}`, {
      issues: over,
    });
  }
}

/** The add-on maxima (settings.addons.max*): 422 `limit_exceeded` naming the field (`prefix` is where the body holds them). */
export function checkAddonMaxima(addons: Addons, settings: Pick<SettingsValue, 'addons'>, prefix: string): void {
  const max = { backups: settings.addons.maxBackups, databases: settings.addons.maxDatabases, ports: settings.addons.maxPorts };
  const over: VariableIssue[] = (['backups', 'databases', 'ports'] as const)
    .filter((k) => addons[k] > max[k])
    .map((k) => ({ field: `${prefix}.${k}`, message: `must be at most ${max[k]}` }));
  if (over.length) {
    throw new ApiError('limit_exceeded', `Above the add-on limits: ${over.map((o) => `${o.field} ${o.message}`).join('; ')}`, {
      issues: over,
    });
  }
}

export const limitExceeded = (serverCount: number, maxServersPerAccount: number): ApiError =>
  new ApiError('limit_exceeded', `This account already has ${serverCount} servers, the most allowed (${maxServersPerAccount})`, {
    serverCount,
    maxServersPerAccount,
  });

/** Balance ≥ 24 h of every active server's exact price (after the change), and ≥ the platform minimum. */
export function requiredBalance(burnAfterMillicents: number, minimumBalanceCents: number): number {
  return Math.max(centsUp(RUNWAY_HOURS * burnAfterMillicents), minimumBalanceCents);
}

export function insufficientCredit(balanceCents: number, requiredCents: number, burnAfterMillicents: number): ApiError {
  return new ApiError(
    'insufficient_credit',
    `Not enough credit: ${requiredCents} cents needed (24 hours at ${burnAfterMillicents / 1000} cents an hour, or the platform minimum), ${balanceCents} available`,
    {
      balanceCents,
      requiredCents,
      hourlyCentsAfter: centsUp(burnAfterMillicents),
      hourlyMillicentsAfter: burnAfterMillicents,
      runwayHours: RUNWAY_HOURS,
    },
  );
}

export const invalidRequest = (issues: VariableIssue[]): ApiError =>
  new ApiError('validation_failed', `Invalid request: ${issues.map((i) => `${i.field} ${i.message}`).join('; ')}`, { issues });
