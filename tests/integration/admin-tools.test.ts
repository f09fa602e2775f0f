import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, expectEnvelope, type TestApi } from '../helpers/stack.ts';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { customer, type Customer } from '../helpers/customer.ts';
import { getRaw, setAttributes } from '../helpers/db.ts';
import { keys } from '../../shared/db/keys.ts';
import { db, tableName } from '../../shared/db/client.ts';
import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { until } from '../helpers/until.ts';
import { runInstallWatch } from '../../shared/servers/install-watch.ts';

/**
 * The admin tools (docs/api.md "Admin in brief"): account search and view, an operator's server
 * actions. Real parts only: DynamoDB Local, the panel simulator over HTTP, the local sandbox
 * checkout for top-ups (no STRIPE_SECRET_KEY), the billing pass through POST /dev/billing/run.
 * Locally there is no API Gateway authorizer; the admin pipeline's own check is what refuses a
 * customer here (tests/infra/authorizer.test.ts covers the authorizer in front of /v1/admin/*).
 */
let api: TestApi;
let sim: PanelSim;
beforeAll(async () => {
  delete process.env.STRIPE_SECRET_KEY;
  delete process.env.STRIPE_WEBHOOK_SECRET;
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0 } });
  sim = api.panel!.sim;
});
afterAll(async () => api?.stop());

interface Deployed {
  id: string;
  identifier: string;
}

async function deploy(token: string, name: string): Promise<Deployed> {
  const res = await api.call('POST', '/v1/servers', { token, body: { name, eggId: 1, ramMb: 512, cpuPercent: 50, diskMb: 1024 } });
  expect(res.status, res.text).toBe(201);
  return { id: res.body.id, identifier: res.body.identifier };
}

const serverOf = async (c: Customer, id: string) => (await api.call('GET', `/v1/servers/${id}`, { token: c.token })).body;

/** A top-up through the sandbox checkout: the same signed webhook path a paid Stripe session takes. */
async function topUp(c: Customer, amountCents: number): Promise<void> {
  const res = await api.call('POST', '/v1/billing/checkout', { token: c.token, body: { amountCents } });
  expect(res.status, res.text).toBe(201);
  const done = await api.call('POST', `/dev/checkout/${res.body.invoiceId}/complete`, { token: null, body: { outcome: 'paid' } });
  expect(done.body).toEqual({ received: true, outcome: 'credited' });
}

async function auditActions(): Promise<{ action: string; target: string; result: string; details: Record<string, unknown> }[]> {
  return (await api.call('GET', '/v1/admin/logs?limit=100')).body.data;
}

describe('access', () => {
  it('a customer key gets 403 on each admin tool, and nothing changes', async () => {
    const c = await customer(api, 'tools-outsider@example.com', { grantCents: 10_000 });
    const server = await deploy(c.token, 'not yours to suspend');
    const calls: [string, string][] = [
      ['GET', '/v1/admin/users?email=tools'],
      ['GET', `/v1/admin/users/${c.id}`],
      ['POST', `/v1/admin/servers/${server.id}/suspend`],
      ['POST', `/v1/admin/servers/${server.id}/unsuspend`],
      ['POST', `/v1/admin/servers/${server.id}/reinstall`],
      ['DELETE', `/v1/admin/servers/${server.id}`],
    ];
    for (const [method, path] of calls) expectEnvelope(await api.call(method, path, { token: c.token }), 403, 'forbidden');
    expect((await serverOf(c, server.id)).status).toBe('active');
    expect(sim.server(server.identifier)!.status).not.toBe('suspended');
  });
});

describe('GET /v1/admin/users: search', () => {
  let alice: Customer;
  let alan: Customer;
  beforeAll(async () => {
    alice = await customer(api, 'Search-Alice@Example.com');
    alan = await customer(api, 'search-alan@example.com');
    await customer(api, 'search-bob@example.com');
  });

  it('by e-mail prefix, case-insensitive; an exact id', async () => {
    const res = await api.call('GET', '/v1/admin/users?email=SEARCH-AL');
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.map((a: { email: string }) => a.email).sort()).toEqual(['search-alan@example.com', 'search-alice@example.com']);
    expect(res.body.data[0]).toMatchObject({ serverCount: 0, isAdmin: false });
    const one = await api.call('GET', '/v1/admin/users?email=search-alice@');
    expect(one.body.data.map((a: { id: string }) => a.id)).toEqual([alice.id]);
    const byId = await api.call('GET', `/v1/admin/users?accountId=${alan.id}`);
    expect(byId.body).toEqual({ data: [expect.objectContaining({ id: alan.id, email: 'search-alan@example.com' })], nextCursor: null });
    expect((await api.call('GET', `/v1/admin/users?accountId=${alan.id}&email=search-bo`)).body.data).toEqual([]);
    expect((await api.call('GET', '/v1/admin/users?email=nobody-has-this')).body.data).toEqual([]);
  });

  it('pages through the matches; the cursor is bound to the prefix', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    let first: string | null = null;
    do {
      const qs: string = `email=search-a&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const res = await api.call('GET', `/v1/admin/users?${qs}`);
      expect(res.status, res.text).toBe(200);
      seen.push(...res.body.data.map((a: { email: string }) => a.email));
      cursor = res.body.nextCursor;
      first ??= cursor;
    } while (cursor && ++pages < 20);
    expect(seen.sort()).toEqual(['search-alan@example.com', 'search-alice@example.com']);
    expectEnvelope(
      await api.call('GET', `/v1/admin/users?email=search-b&limit=1&cursor=${encodeURIComponent(first!)}`),
      400,
      'invalid_cursor',
    );
  });

  it('without a filter lists every account, as before', async () => {
    const res = await api.call('GET', '/v1/admin/users?limit=100');
    expect(res.body.data.map((a: { id: string }) => a.id)).toEqual(expect.arrayContaining([alice.id, alan.id]));
  });

  it('bad input is a 400 naming the field', async () => {
    for (const [qs, field] of [
      [`email=${'a'.repeat(255)}`, 'query.email'],
      ['email=a%01b', 'query.email'],
      ['email=', 'query.email'],
      ['email=..', 'query.email'],
      ['email=a%5Cb', 'query.email'],
      ['email=a@b@c', 'query.email'],
      ['accountId=not-a-uuid', 'query.accountId'],
    ] as const) {
      const res = await api.call('GET', `/v1/admin/users?${qs}`);
      expectEnvelope(res, 400, 'validation_failed');
      expect(res.body.error.details.issues.map((i: { field: string }) => i.field)).toContain(field);
    }
  });
});

describe('GET /v1/admin/users/:id', () => {
  it('profile, balance, limits, trial, servers; 404 for an unknown id', async () => {
    const c = await customer(api, 'view-me@example.com', { grantCents: 5_000, grantBy: 'admin' });
    const a = await deploy(c.token, 'first');
    const b = await deploy(c.token, 'second');
    await api.call('POST', '/v1/keys', { token: c.token, body: { name: 'ci', scopes: ['servers:read'] } });
    expect((await api.call('PUT', `/v1/admin/users/${c.id}/limits`, { body: { requestsPerMinute: 100 } })).status).toBe(200);
    const res = await api.call('GET', `/v1/admin/users/${c.id}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.account).toMatchObject({ id: c.id, email: 'view-me@example.com', balanceCents: 5_500, serverCount: 2 });
    expect(res.body.limits).toMatchObject({
      accountId: c.id,
      overrides: { maxApiKeys: null, requestsPerMinute: 100, maxServers: null },
      effective: { requestsPerMinute: 100, maxServers: 10, trial: false },
      apiKeyCount: 1,
    });
    expect(res.body.trial).toEqual({ granted: true, active: false, paidAt: expect.any(String) });
    expect(res.body.servers.count).toBe(2);
    expect(res.body.servers.data.map((s: { id: string }) => s.id)).toEqual([b.id, a.id]);
    expect(res.body.servers.data[0].accountId).toBe(c.id);
    expect(res.body.servers.nextCursor).toBeNull();

    const trial = await customer(api, 'view-trial@example.com');
    expect((await api.call('GET', `/v1/admin/users/${trial.id}`)).body.trial).toEqual({ granted: true, active: true, paidAt: null });

    expectEnvelope(await api.call('GET', '/v1/admin/users/00000000-0000-4000-8000-000000000000'), 404, 'not_found');
    expectEnvelope(await api.call('GET', '/v1/admin/users/nope'), 400, 'validation_failed');
  });

  it('the servers cursor continues on GET /v1/admin/servers?accountId=', async () => {
    const c = await customer(api, 'many-servers@example.com', { grantCents: 50_000 });
    // 11 servers: one more than maxServersPerAccount (10), by the account's override.
    expect((await api.call('PUT', `/v1/admin/users/${c.id}/limits`, { body: { maxServers: 11 } })).status).toBe(200);
    const deployed: string[] = [];
    for (let i = 0; i < 11; i++) deployed.push((await deploy(c.token, `server ${i}`)).id);
    const view = (await api.call('GET', `/v1/admin/users/${c.id}`)).body;
    expect(view.servers.data).toHaveLength(10);
    expect(view.servers.nextCursor).toEqual(expect.any(String));
    const next = await api.call(
      'GET',
      `/v1/admin/servers?accountId=${c.id}&limit=10&cursor=${encodeURIComponent(view.servers.nextCursor)}`,
    );
    expect(next.status, next.text).toBe(200);
    expect(next.body.data.map((s: { id: string }) => s.id)).toEqual([deployed[0]]);
  });
});

describe('PUT /v1/admin/users/:id/limits: the server limit', () => {
  it('an override replaces maxServersPerAccount for one account; lowering it deletes nothing; null removes it', async () => {
    const c = await customer(api, 'server-limit@example.com', { grantCents: 20_000 });
    const set = await api.call('PUT', `/v1/admin/users/${c.id}/limits`, { body: { maxServers: 1 } });
    expect(set.status, set.text).toBe(200);
    expect(set.body.overrides).toEqual({ maxApiKeys: null, requestsPerMinute: null, maxServers: 1 });
    expect(set.body.effective.maxServers).toBe(1);
    const first = await deploy(c.token, 'the one allowed');
    const refused = await api.call('POST', '/v1/servers', {
      token: c.token,
      body: { name: 'one too many', eggId: 1, ramMb: 512, cpuPercent: 50, diskMb: 1024 },
    });
    expectEnvelope(refused, 422, 'limit_exceeded');
    expect(refused.body.error.details).toMatchObject({ serverCount: 1, maxServersPerAccount: 1 });
    // Lowered below what the account holds: nothing is deleted.
    await api.call('PUT', `/v1/admin/users/${c.id}/limits`, { body: { maxServers: 0 } });
    expect((await serverOf(c, first.id)).status).toBe('active');
    for (const body of [{ maxServers: -1 }, { maxServers: 1.5 }, { maxServers: 10_001 }, { maxServers: '2' }]) {
      expectEnvelope(await api.call('PUT', `/v1/admin/users/${c.id}/limits`, { body }), 400, 'validation_failed');
    }
    expect((await getRaw(keys.account(c.id)))!.limits).toEqual({ maxServers: 0 });
    const cleared = await api.call('PUT', `/v1/admin/users/${c.id}/limits`, { body: { maxServers: null } });
    expect(cleared.body.effective.maxServers).toBe(10);
    await deploy(c.token, 'allowed again');
    const log = (await auditActions()).find(
      (e) => e.action === 'accounts.limits' && e.target === `account:${c.id}` && e.result === 'success',
    );
    expect(log!.details).toEqual({
      before: { maxApiKeys: null, requestsPerMinute: null, maxServers: 0 },
      after: { maxApiKeys: null, requestsPerMinute: null, maxServers: null },
    });
  });
});

describe("an operator's suspension", () => {
  it('a top-up lifts the balance suspension but not the admin one; only an admin lifts that', async () => {
    const c = await customer(api, 'abuser@example.com', { grantCents: 1_000 });
    const held = await deploy(c.token, 'held by the operator');
    const billed = await deploy(c.token, 'suspended for balance');

    const suspended = await api.call('POST', `/v1/admin/servers/${held.id}/suspend`);
    expect(suspended.status, suspended.text).toBe(200);
    expect(suspended.body).toMatchObject({ id: held.id, accountId: c.id, status: 'suspended', suspendedReason: 'admin' });
    expect(sim.server(held.identifier)!.status).toBe('suspended');
    // Twice is the same answer, and the customer cannot act on it.
    expect((await api.call('POST', `/v1/admin/servers/${held.id}/suspend`)).body.suspendedReason).toBe('admin');
    const power = await api.call('POST', `/v1/servers/${held.id}/power`, { token: c.token, body: { signal: 'start' } });
    expectEnvelope(power, 409, 'conflict');
    expect(power.body.error.message).toContain('operator');

    // The balance runs out: the billing suspends the other server.
    expect((await api.call('POST', `/v1/admin/users/${c.id}/credits`, { body: { amountCents: -2_000, note: 'overdrawn' } })).status).toBe(
      200,
    );
    await api.call('POST', '/dev/billing/run', { token: null, body: {} });
    expect(await serverOf(c, billed.id)).toMatchObject({ status: 'suspended', suspendedReason: 'balance' });
    expect(await serverOf(c, held.id)).toMatchObject({ status: 'suspended', suspendedReason: 'admin' });
    // An admin may not lift the billing's suspension by hand: a grant does.
    expectEnvelope(await api.call('POST', `/v1/admin/servers/${billed.id}/unsuspend`), 409, 'conflict');

    // The customer pays: the balance suspension ends, the operator's does not (record and panel).
    await topUp(c, 5_000);
    expect(await serverOf(c, billed.id)).toMatchObject({ status: 'active', suspendedReason: null });
    expect(sim.server(billed.identifier)!.status).not.toBe('suspended');
    expect(await serverOf(c, held.id)).toMatchObject({ status: 'suspended', suspendedReason: 'admin' });
    expect(sim.server(held.identifier)!.status).toBe('suspended');
    // Nor does the next billing pass.
    await api.call('POST', '/dev/billing/run', { token: null, body: {} });
    expect((await serverOf(c, held.id)).status).toBe('suspended');

    const lifted = await api.call('POST', `/v1/admin/servers/${held.id}/unsuspend`);
    expect(lifted.status, lifted.text).toBe(200);
    expect(lifted.body).toMatchObject({ status: 'active', suspendedReason: null });
    expect(sim.server(held.identifier)!.status).not.toBe('suspended');
    // Unsuspending an active server changes nothing.
    expect((await api.call('POST', `/v1/admin/servers/${held.id}/unsuspend`)).body.status).toBe('active');

    const log = await auditActions();
    expect(log.find((e) => e.action === 'servers.admin_suspend' && e.result === 'success')).toMatchObject({
      target: `server:${held.id}`,
      details: { accountId: c.id, reason: 'admin' },
    });
    expect(log.find((e) => e.action === 'servers.admin_unsuspend' && e.result === 'success')).toMatchObject({
      target: `server:${held.id}`,
    });
  });

  it('over a balance suspension it takes the reason; lifted while the balance is still out it stays suspended for balance', async () => {
    const c = await customer(api, 'overdrawn-twice@example.com', { grantCents: 1_000 });
    const server = await deploy(c.token, 'both');
    await api.call('POST', `/v1/admin/users/${c.id}/credits`, { body: { amountCents: -2_000, note: 'overdrawn' } });
    await api.call('POST', '/dev/billing/run', { token: null, body: {} });
    expect((await serverOf(c, server.id)).suspendedReason).toBe('balance');

    expect((await api.call('POST', `/v1/admin/servers/${server.id}/suspend`)).body.suspendedReason).toBe('admin');
    const lifted = await api.call('POST', `/v1/admin/servers/${server.id}/unsuspend`);
    expect(lifted.body).toMatchObject({ status: 'suspended', suspendedReason: 'balance' });
    expect(sim.server(server.identifier)!.status).toBe('suspended');
    // Now a grant lifts it, as any balance suspension.
    await api.call('POST', `/v1/admin/users/${c.id}/credits`, { body: { amountCents: 5_000, note: 'paid by phone' } });
    expect((await serverOf(c, server.id)).status).toBe('active');
  });

  it('unknown, bad and deleted ids', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    for (const action of ['suspend', 'unsuspend', 'reinstall']) {
      expectEnvelope(await api.call('POST', `/v1/admin/servers/${unknown}/${action}`), 404, 'not_found');
      expectEnvelope(await api.call('POST', `/v1/admin/servers/x/${action}`), 400, 'validation_failed');
    }
    expectEnvelope(await api.call('DELETE', `/v1/admin/servers/${unknown}`), 404, 'not_found');
  });
});

describe('force delete and reinstall', () => {
  it('reinstall runs the install again on the panel; a suspended server is 409', async () => {
    const c = await customer(api, 'reinstall-me@example.com', { grantCents: 5_000 });
    const server = await deploy(c.token, 'reinstalled by support');
    await until(async () => (await serverOf(c, server.id)).live.installStatus === 'installed');
    // The install watch (not running in this file) ends the deploy's watch; a reinstall before would read the panel once to end it.
    await runInstallWatch();
    const res = await api.call('POST', `/v1/admin/servers/${server.id}/reinstall`);
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({ id: server.id, installStatus: 'installing' });
    expect((await auditActions()).find((e) => e.action === 'servers.admin_reinstall')).toMatchObject({
      target: `server:${server.id}`,
      result: 'success',
    });
    await until(async () => (await serverOf(c, server.id)).live.installStatus === 'installed');
    await runInstallWatch();
    await api.call('POST', `/v1/admin/servers/${server.id}/suspend`);
    expectEnvelope(await api.call('POST', `/v1/admin/servers/${server.id}/reinstall`), 409, 'conflict');
  });

  it("deletes on the panel and closes the record, as the owner's delete; twice answers the first", async () => {
    const c = await customer(api, 'delete-me@example.com', { grantCents: 5_000 });
    const server = await deploy(c.token, 'removed by support');
    const res = await api.call('DELETE', `/v1/admin/servers/${server.id}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ id: server.id, status: 'deleted', deletedAt: expect.any(String), panel: 'deleted' });
    expect(sim.server(server.identifier)).toBeUndefined();
    expect(await serverOf(c, server.id)).toMatchObject({ status: 'deleted' });
    expect((await getRaw(keys.account(c.id)))!.serverCount).toBe(0);
    expect((await api.call('DELETE', `/v1/admin/servers/${server.id}`)).body.deletedAt).toBe(res.body.deletedAt);
    expect((await auditActions()).find((e) => e.action === 'servers.admin_delete')).toMatchObject({
      target: `server:${server.id}`,
      details: { accountId: c.id, panel: 'deleted' },
    });
  });

  // Last in the file: it takes the instance away for a moment. A registered panel cannot be
  // removed while it hosts servers (DELETE /v1/admin/instances/:id is 409), so the record is removed
  // from the table directly: the only way to produce a server whose panel is gone.
  it('a server whose panel is gone: the record is closed and the answer says so', async () => {
    const c = await customer(api, 'orphan@example.com', { grantCents: 5_000 });
    const server = await deploy(c.token, 'orphaned');
    const instanceKey = keys.instance(api.panel!.instanceId);
    const instance = await getRaw(instanceKey);
    await db().send(new DeleteCommand({ TableName: tableName(), Key: instanceKey }));
    try {
      const res = await api.call('DELETE', `/v1/admin/servers/${server.id}`);
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({ id: server.id, status: 'deleted', panel: 'gone' });
      expect(await serverOf(c, server.id)).toMatchObject({ status: 'deleted' });
    } finally {
      await db().send(new PutCommand({ TableName: tableName(), Item: instance }));
      await setAttributes(instanceKey, { serverCount: Number(instance!.serverCount ?? 1) - 1 });
    }
  });
});
