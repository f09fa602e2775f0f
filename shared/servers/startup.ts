import type { z } from 'zod';
import type { ServerStartup, StartupUpdated, UpdateStartup } from '../api/schemas.ts';
import { eggsOf, invalidateEggs } from '../catalog/eggs.ts';
import type { CachedEgg, ServerItem } from '../db/items.ts';
import { ApiError } from '../errors.ts';
import { getInstance, type InstanceView, panelClientFor } from '../instances/index.ts';
import { errorFields, logger } from '../observability/logger.ts';
import { PanelRequestError } from '../panel/errors.ts';
import { ruleText } from '../panel/rules.ts';
import type { PanelServer } from '../panel/types.ts';
import { checkRules, type VariableIssue } from './egg-variables.ts';
import { assertCustomerMayHold, stateConflict, withServerLease } from './lease.ts';
import { invalidRequest } from './limits.ts';
import { getOwnedServer } from './read.ts';
import { recordSettings } from './records.ts';

export type StartupView = z.infer<typeof ServerStartup>;
export type StartupChange = z.infer<typeof StartupUpdated>;

/**
 * A server's startup settings: its egg variables and docker image.
 *
 * The egg (which variables, their rules, who may see and change them, the allowed images) comes
 * from the shared copy of the panel's eggs, as at deploy: no panel call. The server's current
 * values are not kept by the service (they may be secrets, such as an RCON password), so they
 * are read from the panel: GET is one Application call; PUT is two (the read, then the change),
 * because the panel re-writes every egg variable on a change and sets one missing from it to ''
 * (StartupModificationService), so the change must carry every current value.
 */
export async function getStartup(accountId: string, serverId: string): Promise<StartupView> {
  const item = await getOwnedServer(accountId, serverId);
  if (item.status === 'deleted') throw stateConflict(item)!;
  const instance = await getInstance(item.instanceId);
  const onPanel = await (await panelClientFor(instance)).getServer(item.panelServerId);
  return viewOf(await eggOf(instance, onPanel.egg), onPanel);
}

/**
 * PUT: every check that needs no panel first (the variables by the egg's rules exactly as at
 * deploy, the image among the egg's), so a refused request sends nothing; then, under the lease,
 * the panel's current values with the change laid over them, in one startup change. Wings takes
 * it at the server's next start (it re-reads the panel before every start). Repeating a request
 * whose answer was lost is safe: the same settings twice change nothing.
 */
export async function updateStartup(accountId: string, serverId: string, input: z.infer<typeof UpdateStartup>): Promise<StartupChange> {
  const first = await getOwnedServer(accountId, serverId);
  await assertCustomerMayHold(first);
  const instance = await getInstance(first.instanceId);
  const checked = await eggOf(instance, first.eggId);
  assertValid(checked, input);
  return withServerLease(serverId, 'startup', async () => {
    const item = await getOwnedServer(accountId, serverId);
    if (item.status !== 'active') throw new ApiError('conflict', `The server is ${item.status}; only active servers can be changed`);
    const client = await panelClientFor(instance);
    const onPanel = await client.getServer(item.panelServerId);
    // An admin may have moved the server to another egg on the panel: its rules are the ones that count.
    const egg = onPanel.egg === checked.id ? checked : await eggOf(instance, onPanel.egg);
    if (egg !== checked) assertValid(egg, input);

    const current = environmentOf(egg, onPanel);
    const given = input.variables ?? {};
    const image = input.dockerImage ?? onPanel.container.image;
    const changed = [
      ...Object.keys(given).filter((name) => given[name] !== current[name]),
      ...(image !== onPanel.container.image ? ['dockerImage'] : []),
    ];
    if (changed.length === 0) return { ...viewOf(egg, onPanel), changed, appliesAt: 'next_start' };

    let after: PanelServer;
    try {
      after = await client.updateStartup(onPanel.id, {
        startup: onPanel.container.startup_command,
        environment: { ...current, ...given },
        egg: onPanel.egg,
        image,
        // Deploys never skip the install script; the panel stores whatever is sent here.
        skip_scripts: false,
      });
    } catch (err) {
      // The panel refused a variable our copy of the egg allowed: the egg changed there.
      if (refusesVariable(err)) await invalidateEggs(instance.id);
      throw err;
    }
    await recordStartup(item, image);
    return { ...viewOf(egg, after), changed, appliesAt: 'next_start' };
  });
}

/** The image is kept on the record (deploy put it there); the panel already has the change, so a failure here is only logged. */
async function recordStartup(item: ServerItem, image: string): Promise<void> {
  await recordSettings(item, image === item.dockerImage ? {} : { dockerImage: image }, new Date().toISOString()).catch((err) =>
    logger.warn('startup: the record keeps the previous image', { serverId: item.serverId, ...errorFields(err) }),
  );
}

/** The server's egg from the shared copy (refreshed on its own schedule, not per request). */
async function eggOf(instance: InstanceView, eggId: number): Promise<CachedEgg> {
  const egg = (await eggsOf(instance)).find((e) => e.id === eggId);
  if (!egg) throw new ApiError('conflict', `The server's egg (${eggId}) is not offered by its panel any more`);
  return egg;
}

/** 400 naming every refused field: unknown or not editable variables, values the egg's rules refuse, an image not the egg's. */
export function assertValid(egg: CachedEgg, input: z.infer<typeof UpdateStartup>): void {
  const issues: VariableIssue[] = [];
  const variables = new Map(egg.variables.map((v) => [v.env, v]));
  for (const [name, value] of Object.entries(input.variables ?? {})) {
    const field = `body.variables.${name}`;
    const variable = variables.get(name);
    // A variable the panel hides from users cannot be set by them either.
    if (!variable) issues.push({ field, message: 'is not a variable of this egg' });
    else if (!variable.userEditable || !variable.userViewable) issues.push({ field, message: 'is not editable' });
    else {
      const problem = checkRules(value, variable.rules);
      if (problem) issues.push({ field, message: problem });
    }
  }
  const images = Object.values(egg.dockerImages);
  if (input.dockerImage !== undefined && !images.includes(input.dockerImage))
    issues.push({ field: 'body.dockerImage', message: `must be one of the egg's images: ${images.join(', ')}` });
  if (issues.length) throw invalidRequest(issues);
}

/** Every egg variable's value on the panel (its own, else the default: `container.environment`), as strings. */
function environmentOf(egg: CachedEgg, onPanel: PanelServer): Record<string, string> {
  const env = onPanel.container.environment;
  return Object.fromEntries(
    egg.variables.map((v) => {
      const value = Object.hasOwn(env, v.env) ? env[v.env] : v.defaultValue;
      return [v.env, value === null || value === undefined ? '' : String(value)];
    }),
  );
}

function viewOf(egg: CachedEgg, onPanel: PanelServer): StartupView {
  const values = environmentOf(egg, onPanel);
  return {
    variables: egg.variables
      .filter((v) => v.userViewable)
      .map((v) => ({
        env: v.env,
        name: v.name,
        description: v.description,
        value: values[v.env]!,
        default: v.defaultValue,
        rules: ruleText(v.rules),
        editable: v.userEditable,
      })),
    dockerImage: onPanel.container.image,
    dockerImages: egg.dockerImages,
    startup: onPanel.container.startup_command,
  };
}

const refusesVariable = (err: unknown): boolean =>
  err instanceof PanelRequestError &&
  err.panelStatus === 422 &&
  err.panelErrors.some((e) => (e.meta?.source_field ?? '').startsWith('environment.'));
