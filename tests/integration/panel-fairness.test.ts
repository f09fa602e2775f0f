import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { type ApiResponse, expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { customer } from '../helpers/customer.ts';

/**
 * One tenant cannot spend another's panel budget, nor the platform's: an attacker with its own
 * account, over real HTTP, against the simulator enforcing the panel's limiter (fixed 60 s window
 * from the first hit, per key owner), lowered to 60 Application calls a minute so the attack ends
 * in seconds; the instance's budget is told the same limit.
 */
let api: TestApi;
let sim: PanelSim;
let instanceId: string;
const APPLICATION_LIMIT = 60;

beforeAll(async () => {
  api = await startTestApi({
    panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0, rateLimits: { application: APPLICATION_LIMIT, client: 720 } },
  });
  sim = api.panel!.sim;
  instanceId = api.panel!.instanceId;
});
afterAll(async () => api?.stop());

const FUNDED = { grantCents: 1_000_000 };

const deploy = (token: string, name: string): Promise<ApiResponse> =>
  api.call('POST', '/v1/servers', { token, body: { name, eggId: 1, ramMb: 256, cpuPercent: 25, diskMb: 512 } });

const throttledByPanel = async (): Promise<number> =>
  ((await (await fetch(`${sim.url}/__sim/requests`)).json()) as { throttled: number }).throttled;

describe("one account cannot spend another's panel budget, nor the platform's", () => {
  it('an account cycling deploy/delete as fast as it can: another account still deploys (201) and the pass still suspends, in the same minute', async () => {
    // The victim of the pass: a server deployed before the attack, whose account then runs dry.
    const debtor = await customer(api, 'fair-debtor@example.com', FUNDED);
    const owed = await deploy(debtor.token, 'debtor-server');
    expect(owed.status, owed.text).toBe(201);

    const attacker = await customer(api, 'fair-attacker@example.com', FUNDED);
    const started = Date.now();
    const outcomes: number[] = [];
    // As fast as it can, until the panel budget refuses it several times running.
    for (let cycle = 0, refusedInARow = 0; cycle < 40 && refusedInARow < 4; cycle++) {
      const created = await deploy(attacker.token, `churn-${cycle}`);
      outcomes.push(created.status);
      if (created.status === 201) {
        const deleted = await api.call('DELETE', `/v1/servers/${created.body.id}`, { token: attacker.token });
        outcomes.push(deleted.status);
      }
      refusedInARow = created.status === 503 ? refusedInARow + 1 : 0;
    }
    expect(outcomes.filter((s) => s === 503).length, `the attacker is held to its share: ${outcomes.join(' ')}`).toBeGreaterThan(0);

    const other = await customer(api, 'fair-bystander@example.com', FUNDED);
    const theirs = await deploy(other.token, 'bystander-server');
    expect(theirs.status, theirs.text).toBe(201);

    await api.call('POST', `/v1/admin/users/${debtor.id}/credits`, { body: { amountCents: -1_010_000, note: 'overdrawn' } });
    const pass = await api.call('POST', '/dev/billing/run', { token: null, body: {} });
    expect(pass.status, pass.text).toBe(200);
    expect((await api.call('GET', `/v1/servers/${owed.body.id}`, { token: debtor.token })).body.status).toBe('suspended');
    expect(sim.server(owed.body.identifier)!.status).toBe('suspended');

    expect(Date.now() - started, 'all of it inside one minute').toBeLessThan(60_000);
    expect(await throttledByPanel(), 'the panel never answered 429').toBe(0);
  }, 120_000);

  it('a second registration of the same panel (URL spelled differently) is refused: one panel, one budget', async () => {
    const [scheme, rest] = sim.url.split('://') as [string, string];
    const again = await api.call('POST', '/v1/admin/instances', {
      body: { name: 'Same panel again', baseUrl: `${scheme.toUpperCase()}://${rest}/`, appApiKey: sim.appKey, clientApiKey: sim.clientKey },
    });
    expectEnvelope(again, 409, 'panel_already_registered');
    expect(again.body.error.details).toEqual({ instanceId });
    const list = (await api.call('GET', '/v1/admin/instances')).body.data as { id: string; callBudget: { sharedWith: string[] } }[];
    expect(list.map((i) => i.id)).toEqual([instanceId]);
    expect(list[0]!.callBudget.sharedWith).toEqual([]);
  });
});
