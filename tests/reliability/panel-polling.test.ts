// Our own API limit (240 a minute per credential) would refuse most of this customer's polling
// long before the panel felt it; this file raises it so the polling really reaches our service.
process.env.RATE_LIMIT_PER_MINUTE = '100000';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { customer } from '../helpers/customer.ts';

/**
 * One customer hammering one server must not take the panel from everybody else: the panel
 * (simulated with its real 240 / 720 requests a minute) never answers 429, nothing we answer is a
 * 5xx, and another customer deploys in the same minute.
 */
let api: TestApi;
let sim: PanelSim;
beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20 } });
  sim = api.panel!.sim;
});
afterAll(async () => api?.stop());

const FUNDED = { grantCents: 100_000 };

const panelCounts = async () =>
  (await (await fetch(`${sim.url}/__sim/requests`)).json()) as { requests: Record<string, number>; throttled: number };
const total = (requests: Record<string, number>, api: 'application' | 'client') =>
  Object.entries(requests)
    .filter(([route]) => route.includes(`/api/${api}/`))
    .reduce((sum, [, n]) => sum + n, 0);

describe('a customer polling one server', () => {
  it('1,000 reads as fast as the service answers: no 5xx, the panel never says 429, and another customer deploys in the same minute', async () => {
    const { token: poller } = await customer(api, 'poller@example.com', FUNDED);
    const created = await api.call('POST', '/v1/servers', {
      token: poller,
      body: { name: 'polled', eggId: 1, ramMb: 256, cpuPercent: 25, diskMb: 512 },
    });
    expect(created.status, created.text).toBe(201);
    const path = `/v1/servers/${created.body.id}`;

    const before = await panelCounts();
    const started = Date.now();
    const statuses = new Map<number, number>();
    let next = 0;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (next < 1000) {
          next++;
          const res = await api.call('GET', path, { token: poller });
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        }
      }),
    );
    const seconds = (Date.now() - started) / 1000;
    const after = await panelCounts();

    expect(Object.fromEntries(statuses)).toEqual({ 200: 1000 });
    expect(1000 / seconds, 'the polling ran at 1,000 a minute or faster').toBeGreaterThan(1000 / 60);
    expect(after.throttled - before.throttled, 'the panel never answered 429').toBe(0);
    // One refresh per interval at most: Application and Client reads for this server stay in the tens.
    const appReads = total(after.requests, 'application') - total(before.requests, 'application');
    const clientReads = total(after.requests, 'client') - total(before.requests, 'client');
    expect(
      appReads + clientReads,
      `${appReads} + ${clientReads} panel calls for 1,000 reads in ${seconds.toFixed(1)} s`,
    ).toBeLessThanOrEqual(2 * (Math.ceil(seconds / 5) + 2));

    const { token: other } = await customer(api, 'second-customer@example.com', FUNDED);
    const deployed = await api.call('POST', '/v1/servers', {
      token: other,
      body: { name: 'meanwhile', eggId: 1, ramMb: 256, cpuPercent: 25, diskMb: 512 },
    });
    expect(deployed.status, deployed.text).toBe(201);
    expect(Date.now() - started, 'in the same minute').toBeLessThan(60_000);
  }, 120_000);
});
