import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { keys } from '../../shared/db/keys.ts';
import { customer } from '../helpers/customer.ts';
import { getRaw, setAttributes } from '../helpers/db.ts';
import { panelCalls } from '../helpers/panel-requests.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * A deploy whose record cannot be written after the panel created the server: the server is removed
 * with the panel's plain delete, the forced one only when the panel refuses that. Nothing is mocked:
 * the record fails on a real conditional write (the account's server count moves while the panel's
 * create is held, as a concurrent deploy would move it), and the panel's refusal is the simulator's
 * answer for an unreachable node (504 DaemonConnectionException, what the panel answers then).
 */
let api: TestApi;
let sim: PanelSim;
beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 40 } });
  sim = api.panel!.sim;
});
afterAll(async () => api?.stop());

const paper = { name: 'cleanup server', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 };
const CREATE = 'POST /api/application/servers';
const isDelete = (call: string) => call.startsWith('DELETE /api/application/servers/');

/** A deploy whose record write meets an account at its server limit: the count moves while the panel's create is held. */
async function deployMeetingTheLimit(token: string, accountId: string) {
  sim.faults.add({ method: 'POST', path: /^\/api\/application\/servers$/, count: 1, effect: { kind: 'hold' } });
  const pending = api.call('POST', '/v1/servers', { token, body: paper });
  await until(() => sim.faults.held() === 1);
  const { serverCount } = (await getRaw(keys.account(accountId)))!;
  await setAttributes(keys.account(accountId), { serverCount: 10 });
  sim.faults.release();
  const res = await pending;
  await setAttributes(keys.account(accountId), { serverCount });
  return res;
}

describe('a deploy whose record fails after the panel create', () => {
  it('answers the failure and removes the server with the plain delete: one create, one delete, no force', async () => {
    const { token, id } = await customer(api, 'plain@example.com', { grantCents: 10_000 });
    const before = sim.state.servers.size;
    const { result, calls } = await panelCalls(sim, () => deployMeetingTheLimit(token, id));
    expectEnvelope(result, 422, 'limit_exceeded');
    const deletes = Object.keys(calls).filter(isDelete);
    expect(calls[CREATE]).toBe(1);
    expect(deletes).toHaveLength(1);
    expect(deletes[0]).toMatch(/^DELETE \/api\/application\/servers\/\d+$/);
    expect(calls[deletes[0]!]).toBe(1);
    expect(sim.state.servers.size).toBe(before);
    expect((await api.call('GET', '/v1/servers', { token })).body.data).toEqual([]);
  });

  it('forces the delete only when the panel refuses the plain one (its node unreachable)', async () => {
    const { token, id } = await customer(api, 'forced@example.com', { grantCents: 10_000 });
    const before = sim.state.servers.size;
    const refusal = sim.faults.add({
      method: 'DELETE',
      path: /^\/api\/application\/servers\/\d+$/,
      effect: { kind: 'status', status: 504, code: 'DaemonConnectionException' },
    });
    try {
      const { result, calls } = await panelCalls(sim, () => deployMeetingTheLimit(token, id));
      expectEnvelope(result, 422, 'limit_exceeded');
      const plain = Object.keys(calls).filter((c) => isDelete(c) && !c.endsWith('/force'));
      const forced = Object.keys(calls).filter((c) => isDelete(c) && c.endsWith('/force'));
      expect(plain).toHaveLength(1);
      expect(forced).toEqual([`${plain[0]}/force`]);
      expect(calls[forced[0]!]).toBe(1);
      expect(sim.state.servers.size).toBe(before);
    } finally {
      sim.faults.remove(refusal);
    }
  });

  it('a request the record could not hold fails before any panel call; `constructor` is an ordinary label', async () => {
    const { token } = await customer(api, 'labels@example.com', { grantCents: 10_000 });
    const refused = await panelCalls(sim, () =>
      api.call('POST', '/v1/servers', { token, body: { ...paper, labels: JSON.parse('{"__proto__":"x"}') } }),
    );
    expectEnvelope(refused.result, 400, 'validation_failed');
    expect(refused.calls).toEqual({});
    const labels = { constructor: 'a', toString: 'b', hasOwnProperty: 'c', valueOf: 'd' };
    const { result, calls } = await panelCalls(sim, () => api.call('POST', '/v1/servers', { token, body: { ...paper, labels } }));
    expect(result.status, result.text).toBe(201);
    expect(result.body.labels).toEqual(labels);
    expect(Object.keys(calls).filter(isDelete)).toEqual([]);
  });
});
