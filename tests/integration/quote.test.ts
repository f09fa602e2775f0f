import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { db, tableName } from '../../shared/db/client.ts';
import { customer } from '../helpers/customer.ts';
import { startTestApi, expectEnvelope, type TestApi } from '../helpers/stack.ts';

/**
 * POST /v1/servers/quote, the deploy's dry run: the same checks and errors, the same price, the
 * placement it would choose, and no side effect. Over DynamoDB Local and the simulator.
 */
let api: TestApi;
let sim: PanelSim;

beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 40 } });
  sim = api.panel!.sim;
});
afterAll(async () => api?.stop());

const body = { name: 'quoted', eggId: 1, ramMb: 1536, cpuPercent: 150, diskMb: 3072 };
const quote = (token: string, b: unknown) => api.call('POST', '/v1/servers/quote', { token, body: b });
const deploy = (token: string, b: unknown) => api.call('POST', '/v1/servers', { token, body: b });

/**
 * Every item in the table (DynamoDB Local; this file's table only) but the rate-limit windows: any
 * request counts against its caller's limit, one `RATE#` item a minute, quote or not.
 */
async function itemCount(): Promise<number> {
  let count = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db().send(
      new ScanCommand({
        TableName: tableName(),
        Select: 'COUNT',
        FilterExpression: 'NOT begins_with(PK, :rate)',
        ExpressionAttributeValues: { ':rate': 'RATE#' },
        ExclusiveStartKey: start,
      }),
    );
    count += page.Count ?? 0;
    start = page.LastEvaluatedKey;
  } while (start);
  return count;
}

/** Panel requests that change something (anything but GET), by route. */
async function panelWrites(): Promise<number> {
  const { requests } = (await (await fetch(`${sim.url}/__sim/requests`)).json()) as { requests: Record<string, number> };
  return Object.entries(requests)
    .filter(([route]) => !route.startsWith('GET '))
    .reduce((n, [, v]) => n + v, 0);
}

describe('POST /v1/servers/quote', () => {
  it('prices, places and checks the runway as the deploy then does, exactly', async () => {
    const { token } = await customer(api, 'quote@example.com', { grantCents: 10_000 });
    const q = await quote(token, { ...body, region: 'us-east' });
    expect(q.status, q.text).toBe(200);
    expect(q.body.deployable).toBe(true);
    const balance = (await api.call('GET', '/v1/account', { token })).body.balanceCents;
    expect(q.body.runway).toMatchObject({ passes: true, balanceCents: balance, shortfallCents: 0 });
    expect(q.body.monthly).toEqual({ hours: 730, estimateCents: Math.ceil((q.body.priceMillicentsPerHour * 730) / 1000), capHours: null });

    const created = await deploy(token, { ...body, region: 'us-east' });
    expect(created.status, created.text).toBe(201);
    expect(created.body.priceMillicentsPerHour).toBe(q.body.priceMillicentsPerHour);
    expect(created.body.priceCentsPerHour).toBe(q.body.priceCentsPerHour);
    expect(created.body.instanceId).toBe(q.body.placement.instanceId);
    expect(created.body.region).toBe(q.body.placement.region);
    expect(q.body.runway.hourlyMillicentsAfter).toBe(q.body.priceMillicentsPerHour);
  });

  it('50 quotes change nothing: no item, no ledger entry, no panel write', async () => {
    const { token } = await customer(api, 'quote-idle@example.com', { grantCents: 10_000 });
    await quote(token, body); // the copies are read once, as any deploy would
    const [items, writes, ledger] = await Promise.all([itemCount(), panelWrites(), api.call('GET', '/v1/account/transactions', { token })]);
    for (let i = 0; i < 50; i++) expect((await quote(token, body)).status).toBe(200);
    expect(await itemCount()).toBe(items);
    expect(await panelWrites()).toBe(writes);
    expect((await api.call('GET', '/v1/account/transactions', { token })).body).toEqual(ledger.body);
    expect((await api.call('GET', '/v1/servers', { token })).body.data).toEqual([]);
  });

  it('short of credit: the runway fails with the shortfall, and the deploy then asks for the same amount', async () => {
    const { token, id } = await customer(api, 'quote-poor@example.com');
    // The trial credit taken back down to 50 cents: less than 24 hours of 8 GiB and 4 cores.
    const balance = (await api.call('GET', '/v1/account', { token })).body.balanceCents;
    const deducted = await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: 50 - balance, note: 'quote test' } });
    expect(deducted.status, deducted.text).toBe(200);
    const big = { ...body, ramMb: 8192, cpuPercent: 400, diskMb: 8192 };
    const q = await quote(token, big);
    expect(q.status, q.text).toBe(200);
    expect(q.body.deployable).toBe(false);
    const { runway } = q.body;
    expect(runway.passes).toBe(false);
    expect(runway.shortfallCents).toBe(runway.requiredCents - runway.balanceCents);
    const refused = await deploy(token, big);
    expectEnvelope(refused, 402, 'insufficient_credit');
    expect(refused.body.error.details).toMatchObject({ requiredCents: runway.requiredCents, balanceCents: runway.balanceCents });
  });

  it('refuses what the deploy refuses, with the same answer', async () => {
    const { token } = await customer(api, 'quote-bad@example.com', { grantCents: 10_000 });
    const settings = (await api.call('GET', '/v1/admin/settings')).body;
    const cases = [
      { ...body, environment: { NO_SUCH_VARIABLE: 'x' } },
      { ...body, region: 'atlantis' },
      { ...body, dockerImage: 'ghcr.io/not/offered' },
      { ...body, ramMb: settings.serverCaps.maxRamMb + 1 },
      { ...body, eggId: 999_999 },
      { ...body, name: 'x' },
      { ...body, extra: true },
    ];
    for (const bad of cases) {
      const [q, d] = [await quote(token, bad), await deploy(token, bad)];
      expect(q.status, JSON.stringify(bad)).toBe(d.status);
      expect(q.body, JSON.stringify(bad)).toEqual(d.body);
    }
  });

  it('nothing fits: the placement lists every node and why, as the deploy’s no_capacity does', async () => {
    const { token } = await customer(api, 'quote-big@example.com', { grantCents: 1_000_000 });
    const largest = Math.max(...[...sim.state.nodes.values()].map((n) => n.memory));
    const { serverCaps } = (await api.call('GET', '/v1/admin/settings')).body;
    await api.call('PUT', '/v1/admin/settings', { body: { serverCaps: { ...serverCaps, maxRamMb: largest * 4 } } });
    onTestFinished(async () => {
      await api.call('PUT', '/v1/admin/settings', { body: { serverCaps } });
    });
    const huge = { ...body, ramMb: largest * 3 };
    const q = await quote(token, huge);
    expect(q.status, q.text).toBe(200);
    expect(q.body.deployable).toBe(false);
    expect(q.body.placement.instanceId).toBeNull();
    const d = await deploy(token, huge);
    expectEnvelope(d, 503, 'no_capacity');
    const reasons = (list: { nodeName: string; reason: string }[]) => list.map((r) => `${r.nodeName}:${r.reason}`).sort();
    expect(reasons(q.body.placement.rejected)).toEqual(reasons(d.body.error.details.candidates));
  });

  it('a budget the deploy would overrun: budget fails with the message the deploy gives', async () => {
    const { token } = await customer(api, 'quote-budget@example.com', { grantCents: 10_000 });
    expect((await api.call('PUT', '/v1/account/budget', { token, body: { monthlyCapCents: 1, action: 'refuse' } })).status).toBe(200);
    const q = await quote(token, body);
    expect(q.body.budget.passes).toBe(false);
    expect(q.body.deployable).toBe(false);
    const d = await deploy(token, body);
    expectEnvelope(d, 422, 'limit_exceeded');
    expect(q.body.budget.message).toBe(d.body.error.message);
  });
});
