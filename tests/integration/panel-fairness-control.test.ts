import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { appendLedger } from '../../shared/ledger/index.ts';
import { type ApiResponse, startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * Control calls (power, console, files, resources) under abuse, over real HTTP against the
 * simulator enforcing the panel's limiter, its Client API lowered to 120 calls a minute so a few
 * accounts reach their shares in seconds (the instance's budget is told the same limit).
 */
let api: TestApi;
let sim: PanelSim;
let instanceId: string;

beforeAll(async () => {
  api = await startTestApi({
    panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0, rateLimits: { application: 240, client: 120 } },
  });
  sim = api.panel!.sim;
  instanceId = api.panel!.instanceId;
});
afterAll(async () => api?.stop());

interface Tenant {
  token: string;
  serverId: string;
}

async function tenant(email: string): Promise<Tenant> {
  const token = await api.session(email);
  const { id } = (await api.call('GET', '/v1/account', { token })).body;
  await appendLedger(id, [{ type: 'grant', amountCents: 1_000_000, idempotencyKey: `control-funds:${id}` }]);
  const res = await api.call('POST', '/v1/servers', {
    token,
    body: { name: 'control', eggId: 1, ramMb: 256, cpuPercent: 25, diskMb: 512 },
  });
  if (res.status !== 201) throw new Error(`deploy failed: ${res.text}`);
  const identifier = res.body.identifier as string;
  // Installed on the panel (asked of the simulator directly, so the wait spends no budget).
  await until(() => sim.server(identifier)?.status !== 'installing');
  return { token, serverId: res.body.id };
}

const control = (t: Tenant, call: number): Promise<ApiResponse> => {
  const path = `/v1/servers/${t.serverId}`;
  if (call % 3 === 0) return api.call('GET', `${path}/files?directory=/`, { token: t.token });
  if (call % 3 === 1) return api.call('GET', `${path}/console`, { token: t.token });
  return api.call('POST', `${path}/power`, { token: t.token, body: { signal: 'start' } });
};

const clientBudget = async () =>
  (await api.call('GET', '/v1/admin/instances')).body.data.find((i: { id: string }) => i.id === instanceId).callBudget.client as {
    usedThisMinute: number;
  };

const sim429s = async (): Promise<number> => ((await (await fetch(`${sim.url}/__sim/requests`)).json()) as { throttled: number }).throttled;

describe('control calls: fair shares', () => {
  let tenants: Tenant[];
  beforeAll(async () => {
    tenants = [];
    for (let i = 0; i < 6; i++) tenants.push(await tenant(`control-${i}@example.com`));
  }, 120_000);

  it('resources answer from the live-state copy: any number of reads within its interval cost no panel call', async () => {
    const t = tenants[4]!;
    const resourceCalls = async () =>
      Object.entries(((await (await fetch(`${sim.url}/__sim/requests`)).json()) as { requests: Record<string, number> }).requests)
        .filter(([k]) => k.includes('/resources'))
        .reduce((n, [, v]) => n + v, 0);
    const first = await api.call('GET', `/v1/servers/${t.serverId}/resources`, { token: t.token });
    expect(first.status, first.text).toBe(200);
    const before = await resourceCalls();
    const reads = await Promise.all(
      Array.from({ length: 20 }, () => api.call('GET', `/v1/servers/${t.serverId}/resources`, { token: t.token })),
    );
    for (const r of reads) expect(r.status, r.text).toBe(200);
    expect((await resourceCalls()) - before, '20 reads, at most a refresh or two').toBeLessThanOrEqual(2);
  });

  it("the panel's X-RateLimit-Remaining corrects the shared view: calls another tool makes with the same key owner are counted", async () => {
    const before = await clientBudget();
    // Another tool of the same panel user, straight at the panel: 30 Client API calls we never counted.
    for (let i = 0; i < 30; i++) {
      const res = await fetch(`${sim.url}/api/client/account`, {
        headers: { authorization: `Bearer ${sim.clientKey}`, accept: 'application/json' },
      });
      expect(res.status).toBe(200);
    }
    const one = await api.call('GET', `/v1/servers/${tenants[5]!.serverId}/console`, { token: tenants[5]!.token });
    expect(one.status, one.text).toBe(200);
    const after = await clientBudget();
    expect(after.usedThisMinute - before.usedThisMinute, 'our window now holds the other tool’s calls').toBeGreaterThanOrEqual(30);
  });

  it("five accounts at their control share: a sixth account's power, console, files and resources answer 200, and the panel never answers 429", async () => {
    const [newcomer, ...abusers] = [tenants[5]!, ...tenants.slice(0, 5)];
    // Each abuser as fast as it can, all at once, until the budget refuses it several times running.
    const refused = await Promise.all(
      abusers.map(async (t) => {
        let refusals = 0;
        for (let call = 0, inARow = 0; call < 60 && inARow < 3; call++) {
          const res = await control(t, call);
          if (res.status === 503) {
            expect(res.body.error.code).toBe('panel_unavailable');
            refusals++;
            inARow++;
          } else {
            expect([200, 409], res.text).toContain(res.status);
            inARow = 0;
          }
        }
        return refusals;
      }),
    );
    expect(Math.min(...refused), 'every abuser was held to its share').toBeGreaterThan(0);

    const power = await api.call('POST', `/v1/servers/${newcomer.serverId}/power`, { token: newcomer.token, body: { signal: 'start' } });
    expect(power.status, power.text).toBe(200);
    const console_ = await api.call('GET', `/v1/servers/${newcomer.serverId}/console`, { token: newcomer.token });
    expect(console_.status, console_.text).toBe(200);
    const files = await api.call('GET', `/v1/servers/${newcomer.serverId}/files?directory=/`, { token: newcomer.token });
    expect(files.status, files.text).toBe(200);
    const usage = await api.call('GET', `/v1/servers/${newcomer.serverId}/resources`, { token: newcomer.token });
    expect(usage.status, usage.text).toBe(200);
    expect(usage.body.resources.memoryBytes).toEqual(expect.any(Number));
    expect(Date.parse(usage.body.asOf)).toBeGreaterThan(Date.now() - 60_000);
    expect(await sim429s()).toBe(0);
  }, 120_000);
});
