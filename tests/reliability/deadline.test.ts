import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { appendLedger } from '../../shared/ledger/index.ts';
import { GATEWAY_LIMIT_MS, requestDeadline } from '../../shared/panel/deadline.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';

/**
 * A panel that never answers, with the production timeouts (10 s a call, 20 s for a create, three
 * attempts for reads): without a deadline a deploy would wait a minute and API Gateway would
 * answer at 29 s with its own error. Every request must end with our envelope first.
 */
let api: TestApi;
let sim: PanelSim;
beforeAll(async () => {
  delete process.env.PANEL_TIMEOUT_MS;
  delete process.env.PANEL_CREATE_TIMEOUT_MS;
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20 } });
  sim = api.panel!.sim;
});
afterAll(async () => api?.stop());

describe('the request deadline', () => {
  it('is before API Gateway gives up, and before the function does', () => {
    expect(requestDeadline(0, undefined)).toBeLessThanOrEqual(GATEWAY_LIMIT_MS - 1000);
    expect(requestDeadline(0, 10_000)).toBeLessThanOrEqual(8_000);
  });

  it('a deploy whose panel never answers ends with our envelope within 28 s, and records and charges nothing', async () => {
    const token = await api.session('deadline@example.com');
    const { id } = (await api.call('GET', '/v1/account', { token })).body;
    await appendLedger(id, [{ type: 'grant', amountCents: 10_000, idempotencyKey: `deadline-funds:${id}` }]);
    // A first deploy warms the shared topology copy, so the next goes straight to the create.
    const warm = await api.call('POST', '/v1/servers', {
      token,
      body: { name: 'warm', eggId: 1, ramMb: 256, cpuPercent: 25, diskMb: 512 },
    });
    expect(warm.status, warm.text).toBe(201);
    const before = (await api.call('GET', '/v1/account', { token })).body.balanceCents;

    sim.faults.add({ method: '*', path: '/api/', effect: { kind: 'timeout' } });
    try {
      const started = Date.now();
      const res = await api.call('POST', '/v1/servers', {
        token,
        body: { name: 'never', eggId: 1, ramMb: 256, cpuPercent: 25, diskMb: 512 },
      });
      const took = Date.now() - started;
      console.log(`deploy against a panel that never answers: ${res.status} after ${took} ms`);
      expect(took, `answered after ${took} ms`).toBeLessThan(28_000);
      expect([503, 504]).toContain(res.status);
      expectEnvelope(res, res.status, res.status === 503 ? 'panel_unavailable' : 'panel_timeout');
    } finally {
      sim.faults.clear();
    }
    const servers = (await api.call('GET', '/v1/servers', { token })).body.data as { name: string }[];
    expect(servers.map((s) => s.name)).toEqual(['warm']);
    expect((await api.call('GET', '/v1/account', { token })).body.balanceCents).toBe(before);
  }, 60_000);
});
