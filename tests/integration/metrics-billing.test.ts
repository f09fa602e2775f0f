import { createServer, type Server } from 'node:http';
import type { SQSEvent } from 'aws-lambda';
import { DeleteCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { worker } from '../../functions/billing-pass/handler.ts';
import { openPassRecord } from '../../shared/billing/fanout.ts';
import { planPass, readWatermark, runPassInProcess } from '../../shared/billing/pass.ts';
import { db, tableName } from '../../shared/db/client.ts';
import type { WebhookDeliveryItem } from '../../shared/db/items.ts';
import { keys } from '../../shared/db/keys.ts';
import { BILLING_SHARDS } from '../../shared/db/table.ts';
import { transact } from '../../shared/db/write.ts';
import { HOUR_MS, hourStart } from '../../shared/pricing/hours.ts';
import { deliveryIdOf, dispatchFor, drainOutbox, RETRY_WINDOW_MS, runDueDeliveries } from '../../shared/webhooks/dispatch.ts';
import { eventWrite } from '../../shared/webhooks/events.ts';
import { customer } from '../helpers/customer.ts';
import { getRaw, setAttributes } from '../helpers/db.ts';
import { closeServer, listenLocal } from '../helpers/local-server.ts';
import { captureMetrics } from '../helpers/metrics.ts';
import { expectLedgerInvariant, ledgerOf } from '../helpers/money.ts';
import { startTestApi, type TestApi } from '../helpers/stack.ts';

/**
 * The metric lines (CloudWatch EMF, shared/observability/metrics.ts) of billing passes,
 * suspensions and webhook deliveries, counted from real journeys: DynamoDB Local, the panel
 * simulator over HTTP, the API in this process, receivers on 127.0.0.1. Time moves as in
 * tests/integration/billing.test.ts (servers' histories written into the past, passes run `at`
 * chosen instants) and tests/integration/webhook-delivery.test.ts (the dispatcher run at a chosen `now`).
 */
let api: TestApi;
let sim: PanelSim;
beforeAll(async () => {
  // No background loops: the webhook dispatcher and the repair pass would emit lines of their own
  // at moments the tests do not choose; each test drives what it counts.
  api = await startTestApi({
    panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0, rateLimits: { application: 100_000, client: 100_000 } },
    webhooks: false,
    repairs: false,
  });
  sim = api.panel!.sim;
});
afterAll(async () => api?.stop());

let capture: ReturnType<typeof captureMetrics>;
let H0 = 0;
beforeEach(async () => {
  // As billing.test.ts: each test from an empty watermark six hours back.
  await db().send(new DeleteCommand({ TableName: tableName(), Key: keys.billingWatermark() }));
  H0 = hourStart(Date.now()) - 6 * HOUR_MS;
  capture = captureMetrics();
});
afterEach(async () => {
  capture.stop();
  await expectLedgerInvariant();
  // Nothing left billable: a later test's pass charges only its own servers.
  for (let shard = 0; shard < BILLING_SHARDS; shard++) {
    const out = await db().send(
      new QueryCommand({
        TableName: tableName(),
        IndexName: 'GSI2',
        KeyConditionExpression: 'GSI2PK = :pk',
        ExpressionAttributeValues: { ':pk': keys.billableShard(shard) },
      }),
    );
    for (const item of out.Items ?? []) {
      await db().send(
        new UpdateCommand({ TableName: tableName(), Key: { PK: item.PK, SK: item.SK }, UpdateExpression: 'REMOVE GSI2PK, GSI2SK' }),
      );
    }
  }
});

const t = (hours: number, minutes = 0) => H0 + hours * HOUR_MS + minutes * 60_000;
const iso = (ms: number) => new Date(ms).toISOString();
const small = { name: 'metered', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 }; // 1 cent an hour
const medium = { ramMb: 4096, cpuPercent: 200, diskMb: 20480 }; // 3 cents an hour

/** Deploys through the API, then moves the server's life into the past: created at `createdMs`. */
async function deployAt(token: string, accountId: string, createdMs: number, body: Record<string, unknown> = small) {
  const server = (await api.call('POST', '/v1/servers', { token, body: { ...small, ...body } })).body;
  expect(server.id).toEqual(expect.any(String));
  await setAttributes(keys.server(accountId, server.id), {
    createdAt: iso(createdMs),
    history: [{ at: iso(createdMs), status: 'active', priceCentsPerHour: server.priceCentsPerHour }],
  });
  return server as { id: string; identifier: string };
}

/** Server-hours the ledger charged these accounts: one line of a charge entry each. */
async function serverHoursInLedger(...accountIds: string[]): Promise<number> {
  let hours = 0;
  for (const id of accountIds) {
    for (const e of await ledgerOf(id)) {
      if (e.type === 'charge') hours += (e.reference as { lines: unknown[] }).lines.length;
    }
  }
  return hours;
}

const sum = (lines: { value: number }[]) => lines.reduce((s, m) => s + m.value, 0);
/** The Reason of each line of a suspension metric, in order. */
const reasons = (name: 'Suspensions' | 'Unsuspensions') => capture.named(name).map((m) => m.fields.Reason);

describe('a billing pass', () => {
  it('in one process: one BillingPassDuration line; ServerHoursCharged, one line per shard, adds up to the ledger', async () => {
    const a = await customer(api, 'pass-a@example.com', { grantCents: 1000 });
    const b = await customer(api, 'pass-b@example.com', { grantCents: 1000 });
    await deployAt(a.token, a.id, t(0, 5));
    await deployAt(a.token, a.id, t(1, 10), medium);
    await deployAt(b.token, b.id, t(0, 30));
    const summary = await runPassInProcess(new Date(t(3, 5)));
    expect(summary.errors).toBe(0);
    // 3 + 2 + 3 hours (0, 1, 2; 1, 2; 0, 1, 2).
    expect(await serverHoursInLedger(a.id, b.id)).toBe(8);

    const duration = capture.named('BillingPassDuration');
    expect(duration).toHaveLength(1);
    expect(duration[0]).toMatchObject({ unit: 'Milliseconds', sets: [[]] });
    expect(duration[0]!.value).toBeGreaterThanOrEqual(0);
    const charged = capture.named('ServerHoursCharged');
    expect(charged).toHaveLength(BILLING_SHARDS);
    expect(sum(charged)).toBe(8);
    expect(summary.serverHoursCharged).toBe(8);

    // Run again: nothing more charged, and the lines say so.
    capture.metrics.length = 0;
    await runPassInProcess(new Date(t(3, 5)));
    expect(sum(capture.named('ServerHoursCharged'))).toBe(0);
    expect(await serverHoursInLedger(a.id, b.id)).toBe(8);
  });

  it('through the queue (the AWS shape): the shard that completes the pass emits BillingPassDuration, once', async () => {
    const { token, id } = await customer(api, 'pass-queue@example.com', { grantCents: 1000 });
    await deployAt(token, id, t(0, 30));
    await deployAt(token, id, t(0, 40));
    const plan = await planPass(new Date(t(2, 5)));
    await openPassRecord(plan);
    const message = (shard: number) => ({
      messageId: `m${shard}`,
      body: JSON.stringify({ at: plan.at, throughHour: plan.throughHour, fromWatermark: plan.fromWatermark, shard }),
    });
    const records = (shards: number[]) => ({ Records: shards.map(message) }) as unknown as SQSEvent;
    expect((await worker(records(plan.shards.slice(0, 10)))).batchItemFailures).toEqual([]);
    expect(capture.named('BillingPassDuration')).toEqual([]); // not complete yet
    expect((await worker(records(plan.shards.slice(10)))).batchItemFailures).toEqual([]);
    expect(await readWatermark()).toBe(t(1));
    const duration = capture.named('BillingPassDuration');
    expect(duration).toHaveLength(1);
    expect(duration[0]!.value).toBeGreaterThanOrEqual(0);
    expect(capture.named('ServerHoursCharged')).toHaveLength(BILLING_SHARDS);
    expect(sum(capture.named('ServerHoursCharged'))).toBe(4);
    expect(await serverHoursInLedger(id)).toBe(4);

    // The queue redelivers every shard: no second duration, no hour counted twice.
    await worker(records(plan.shards));
    expect(capture.named('BillingPassDuration')).toHaveLength(1);
    expect(capture.named('ServerHoursCharged')).toHaveLength(2 * BILLING_SHARDS);
    expect(sum(capture.named('ServerHoursCharged'))).toBe(4);
  });
});

describe('suspensions and unsuspensions', () => {
  it('by reason: balance from a pass, lifted by a grant; admin, which a top-up does not lift', async () => {
    const { token, id } = await customer(api, 'suspend-metrics@example.com');
    const a = await deployAt(token, id, t(0, 0), medium); // 3 cents an hour
    const b = await deployAt(token, id, t(0, 0), medium);
    // Leave 4 cents: hour 0 costs 6, the balance ends at -2 and both servers are suspended.
    const left = await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: -496, note: 'test: leave 4 cents' } });
    expect(left.body.balanceCents).toBe(4);
    const summary = await runPassInProcess(new Date(t(1, 5)));
    expect(summary.suspended).toBe(2);
    expect(sim.server(a.identifier)!.status).toBe('suspended');
    expect(sim.server(b.identifier)!.status).toBe('suspended');
    expect(reasons('Suspensions')).toEqual(['balance', 'balance']);
    expect(capture.named('Suspensions')[0]).toMatchObject({ unit: 'Count', sets: [[], ['Reason']] });
    expect(reasons('Unsuspensions')).toEqual([]);
    // A pass that finds them suspended already suspends nothing more.
    await runPassInProcess(new Date(t(1, 10)));
    expect(reasons('Suspensions')).toHaveLength(2);

    // A grant brings the balance above zero: both unsuspended, by the reason they had.
    await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: 1000, note: 'goodwill' } });
    expect(sim.server(a.identifier)!.status).not.toBe('suspended');
    expect(reasons('Unsuspensions')).toEqual(['balance', 'balance']);

    // An operator suspends A.
    capture.metrics.length = 0;
    const suspended = await api.call('POST', `/v1/admin/servers/${a.id}/suspend`);
    expect(suspended.status, suspended.text).toBe(200);
    expect(sim.server(a.identifier)!.status).toBe('suspended');
    expect(reasons('Suspensions')).toEqual(['admin']);

    // The balance at zero again: the next pass suspends B (A is suspended already).
    await api.call('POST', `/v1/admin/users/${id}/credits`, {
      body: { amountCents: -Number((await getRaw(keys.account(id)))!.balanceCents), note: 'test: empty' },
    });
    await runPassInProcess(new Date(t(1, 15)));
    expect(sim.server(b.identifier)!.status).toBe('suspended');
    expect(reasons('Suspensions')).toEqual(['admin', 'balance']);

    // The customer tops up (the sandbox's checkout, through the same signed webhook as Stripe's):
    // B comes back; A stays suspended on the panel, and no line counts it.
    capture.metrics.length = 0;
    const checkout = await api.call('POST', '/v1/billing/checkout', { token, body: { amountCents: 1000 } });
    expect(checkout.status, checkout.text).toBe(201);
    const paid = await api.call('POST', `/dev/checkout/${checkout.body.invoiceId}/complete`, { token: null, body: { outcome: 'paid' } });
    expect(paid.body).toMatchObject({ outcome: 'credited' });
    expect(sim.server(b.identifier)!.status).not.toBe('suspended');
    expect(sim.server(a.identifier)!.status).toBe('suspended');
    expect(reasons('Unsuspensions')).toEqual(['balance']);
    expect(reasons('Suspensions')).toEqual([]);

    // The operator lifts A.
    const lifted = await api.call('POST', `/v1/admin/servers/${a.id}/unsuspend`);
    expect(lifted.status, lifted.text).toBe(200);
    expect(sim.server(a.identifier)!.status).not.toBe('suspended');
    expect(reasons('Unsuspensions')).toEqual(['balance', 'admin']);
  });

  it('a panel that refuses to suspend: no line until the server is suspended on the panel and in the record', async () => {
    const { token, id } = await customer(api, 'suspend-refused@example.com');
    const server = await deployAt(token, id, t(0, 0), medium);
    await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: -499, note: 'test: leave 1 cent' } });
    sim.faults.add({ method: 'POST', path: /\/suspend$/, count: 10, effect: { kind: 'status', status: 503 } });
    try {
      const failing = await runPassInProcess(new Date(t(1, 5)));
      expect(failing.panelErrors).toBeGreaterThanOrEqual(1);
      expect(sim.server(server.identifier)!.status).not.toBe('suspended');
      expect(reasons('Suspensions')).toEqual([]);
    } finally {
      sim.faults.clear();
    }
    await runPassInProcess(new Date(t(1, 10)));
    expect(sim.server(server.identifier)!.status).toBe('suspended');
    expect(reasons('Suspensions')).toEqual(['balance']);
  });
});

// ---- webhooks ----

/** A receiver on 127.0.0.1 answering `status` to everything, counting what it got. */
async function receiver(status: number): Promise<{ url: string; received: number; close: () => Promise<void> }> {
  const state = { received: 0 };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      state.received++;
      res.writeHead(status);
      res.end('down for maintenance');
    });
  });
  const port = await listenLocal(server);
  return {
    url: `http://127.0.0.1:${port}/hook`,
    get received() {
      return state.received;
    },
    close: () => closeServer(server),
  };
}

async function emit(accountId: string, now: Date): Promise<string> {
  const write = eventWrite(accountId, 'balance.low', { balanceCents: 100, thresholdCents: 500 }, now);
  await transact([write]);
  return (write as unknown as { Put: { Item: { eventId: string } } }).Put.Item.eventId;
}

const outcomes = () => capture.named('WebhookDeliveries').map((m) => m.fields.Outcome);
const backlog = () => capture.named('WebhookBacklogOldestAge').map((m) => m.value);

describe('webhook deliveries', () => {
  it('an endpoint answering 500: failed attempts, a backlog age while due, then given up and the endpoint disabled', async () => {
    const { token, id } = await customer(api, 'hook-metrics@example.com');
    const broken = await receiver(500);
    try {
      const created = await api.call('POST', '/v1/webhook-endpoints', { token, body: { url: broken.url } });
      expect(created.status, created.text).toBe(201);
      const endpointId = created.body.id as string;
      const t0 = new Date();
      const eventId = await emit(id, t0);
      const delivery = async () =>
        (await getRaw(keys.webhookDelivery(endpointId, deliveryIdOf(eventId, endpointId)))) as unknown as WebhookDeliveryItem;

      // The first attempt, at the moment it is due: failed, and the backlog is 0 s old.
      await drainOutbox(t0);
      await runDueDeliveries(t0, { timeoutMs: 2000 });
      expect(broken.received).toBe(1);
      expect(outcomes()).toEqual(['failed']);
      expect(backlog()).toEqual([0]);
      expect(capture.named('WebhookDeliveries')[0]).toMatchObject({ unit: 'Count', sets: [[], ['Outcome']] });

      // The retry is due 5 s later; a run a minute after that finds it 60 s old.
      const due = Date.parse((await delivery()).nextAttemptAt!);
      expect(due).toBe(t0.getTime() + 5_000);
      await runDueDeliveries(new Date(due + 60_000), { timeoutMs: 2000 });
      expect(backlog()).toEqual([0, 60]);
      expect(outcomes()).toEqual(['failed', 'failed']);

      // Through the 3-day schedule, each run at the moment the retry is due.
      for (let i = 0; i < 40; i++) {
        const d = await delivery();
        if (d.status !== 'pending') break;
        await runDueDeliveries(new Date(d.nextAttemptAt!), { timeoutMs: 2000 });
      }
      expect((await delivery()).status).toBe('failed');
      const attempts = broken.received;
      expect(attempts).toBeGreaterThan(3);
      // One line per attempt: every one failed, the last given up.
      expect(outcomes()).toHaveLength(attempts);
      expect(outcomes().at(-1)).toBe('given-up');
      expect(outcomes().filter((o) => o === 'failed')).toHaveLength(attempts - 1);
      expect(capture.named('WebhookEndpointsDisabled').map((m) => m.value)).toEqual([1]);
      expect((await getRaw(keys.webhookEndpoint(id, endpointId)))!.enabled).toBe(false);
      // One backlog line per run.
      expect(backlog()).toHaveLength(attempts);

      // Drained: a run with nothing due says 0.
      await runDueDeliveries(new Date(t0.getTime() + RETRY_WINDOW_MS + 60_000));
      expect(backlog().at(-1)).toBe(0);
      expect(outcomes()).toHaveLength(attempts);
    } finally {
      await broken.close();
    }
  }, 60_000);

  it('a dispatcher run (the AWS function) emits one backlog line, the oldest its polls saw, and one line per attempt', async () => {
    const { token, id } = await customer(api, 'hook-run@example.com');
    const ok = await receiver(204);
    try {
      const created = await api.call('POST', '/v1/webhook-endpoints', { token, body: { url: ok.url } });
      expect(created.status, created.text).toBe(201);
      // An event fanned out 30 s ago, not sent since.
      const then = new Date(Date.now() - 30_000);
      await emit(id, then);
      await drainOutbox(then);
      const summary = await dispatchFor(2_000, { pollMs: 100, timeoutMs: 2000 });
      expect(summary.succeeded).toBe(1);
      expect(ok.received).toBe(1);
      expect(outcomes()).toEqual(['delivered']);
      const ages = backlog();
      expect(ages).toHaveLength(1);
      expect(ages[0]).toBeGreaterThanOrEqual(30);
      expect(ages[0]).toBeLessThan(120);
    } finally {
      await ok.close();
    }
  });
});
