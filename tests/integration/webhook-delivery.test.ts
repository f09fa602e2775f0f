import { WEBHOOK_PAYLOADS } from '../../shared/api/schemas/events.ts';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookLoop } from '../../dev/webhook-loop.ts';
import type { WebhookDeliveryItem } from '../../shared/db/items.ts';
import { keys } from '../../shared/db/keys.ts';
import { transact } from '../../shared/db/write.ts';
import { appendLedger } from '../../shared/ledger/index.ts';
import { deliveryIdOf, drainOutbox, RETRY_WINDOW_MS, runDueDeliveries } from '../../shared/webhooks/dispatch.ts';
import { eventWrite } from '../../shared/webhooks/events.ts';
import { sendWebhook } from '../../shared/webhooks/send.ts';
import { inAwsStage } from '../helpers/aws-stage.ts';
import { getRaw } from '../helpers/db.ts';
import { closeServer, listenLocal } from '../helpers/local-server.ts';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { customer } from '../helpers/customer.ts';
import { within } from '../helpers/until.ts';

/**
 * Webhook delivery end to end: endpoints made through the API, events from the service's own
 * changes (or written with `eventWrite`, as a producer does), the dispatcher run with a chosen
 * `now` to move through the 3-day retry schedule, and real receivers on 127.0.0.1 that check every
 * request with the `standardwebhooks` library, as a customer's code would.
 */
let api: TestApi;
beforeAll(async () => {
  // No background loop: each test drives the dispatcher itself, with its own clock.
  api = await startTestApi({ panel: { installMs: 100, transitionMs: 20, resourcesCacheMs: 0 }, webhooks: false });
});
afterAll(async () => api?.stop());

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  json: { id: string; type: string; timestamp: string; data: Record<string, unknown> };
}

type Answer = { status: number; body?: string; headers?: Record<string, string> } | 'destroy';

/** A receiver on 127.0.0.1: records every request and answers what `answer` says (200 by default). */
class Receiver {
  readonly received: Received[] = [];
  answer: () => Answer = () => ({ status: 200, body: 'ok' });
  private server: Server | undefined;
  port = 0;

  async start(port = 0): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        this.received.push({ headers: req.headers, body, json: JSON.parse(body) });
        const a = this.answer();
        if (a === 'destroy') return void req.socket.destroy();
        res.writeHead(a.status, a.headers);
        res.end(a.body ?? '');
      });
    });
    this.port = await listenLocal(this.server, port);
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  async stop(): Promise<void> {
    await closeServer(this.server);
    this.server = undefined;
  }

  /** Whether a request verifies with a secret, by the standardwebhooks library. */
  static verifies(r: Received, secret: string): boolean {
    try {
      new Webhook(secret).verify(r.body, r.headers as Record<string, string>);
      return true;
    } catch {
      return false;
    }
  }
}

const receivers: Receiver[] = [];
const receiver = async (): Promise<Receiver> => {
  const r = await new Receiver().start();
  receivers.push(r);
  return r;
};
afterAll(async () => {
  for (const r of receivers) await r.stop();
});

async function endpoint(token: string, url: string, events?: string[]): Promise<{ id: string; secret: string }> {
  const res = await api.call('POST', '/v1/webhook-endpoints', { token, body: { url, ...(events ? { events } : {}) } });
  expect(res.status, res.text).toBe(201);
  return { id: res.body.id, secret: res.body.secret };
}

/** An event as a producer writes it: in a transaction (here alone). */
async function emit(accountId: string, data: Record<string, unknown> = {}, now = new Date()): Promise<string> {
  const write = eventWrite(accountId, 'balance.low', { balanceCents: 100, thresholdCents: 500, ...data }, now);
  await transact([write]);
  return (write as unknown as { Put: { Item: { eventId: string } } }).Put.Item.eventId;
}

/** One dispatcher pass at `now`: fan-out, then the due attempts. */
async function pump(now = new Date()) {
  await drainOutbox(now);
  return runDueDeliveries(now, { timeoutMs: 2000 });
}

const delivery = async (endpointId: string, eventId: string) =>
  (await getRaw(keys.webhookDelivery(endpointId, deliveryIdOf(eventId, endpointId)))) as unknown as WebhookDeliveryItem;

const later = (from: Date, ms: number) => new Date(from.getTime() + ms);
const MIN = 60_000;
const HOUR = 3_600_000;

describe('delivery', () => {
  it('delivers server.created, signed (verified by standardwebhooks), as {id, type, timestamp, data}; the filter picks the types', async () => {
    const { token, id: accountId } = await customer(api, 'deploy@example.com', { grantCents: 10_000 });
    const all = await receiver();
    const created = await receiver();
    const deleted = await receiver();
    const epAll = await endpoint(token, all.url);
    const epCreated = await endpoint(token, created.url, ['server.created']);
    await endpoint(token, deleted.url, ['server.deleted']);

    const res = await api.call('POST', '/v1/servers', {
      token,
      body: { name: 'hooked', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
    });
    expect(res.status, res.text).toBe(201);
    await pump();

    expect(created.received).toHaveLength(1);
    const got = created.received[0]!;
    expect(got.json.type).toBe('server.created');
    expect(got.json.data).toMatchObject({ id: res.body.id, name: 'hooked' });
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.headers['webhook-id']).toBe(got.json.id);
    expect(Receiver.verifies(got, epCreated.secret)).toBe(true);
    expect(Receiver.verifies(got, epAll.secret)).toBe(false);
    expect(Math.abs(Number(got.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    // Every type reaches the endpoint without a filter; none of these reach the server.deleted one.
    expect(all.received.map((r) => r.json.type)).toContain('server.created');
    for (const r of all.received) expect(Receiver.verifies(r, epAll.secret)).toBe(true);
    // Each body is what the document's `webhooks` entry for its type says (shared/api/schemas/events.ts).
    for (const r of [...all.received, ...created.received]) {
      const payload = WEBHOOK_PAYLOADS.find((p) => p.type === r.json.type)!.schema.safeParse(r.json);
      expect(payload.success, `${r.json.type}: ${payload.error?.message}`).toBe(true);
    }
    expect(deleted.received).toHaveLength(0);

    // The delivery is recorded as succeeded, with its attempt.
    const d = await delivery(epCreated.id, got.json.id);
    expect(d).toMatchObject({ status: 'succeeded', nextAttemptAt: null, accountId, eventType: 'server.created' });
    expect(d.attempts).toHaveLength(1);
    expect(d.attempts[0]).toMatchObject({ status: 200, error: null, responseExcerpt: 'ok' });
    expect(d.GSI2PK).toBeUndefined();

    // A second pass delivers nothing again (the outbox is empty, nothing is due).
    await pump();
    expect(created.received).toHaveLength(1);
  });

  it('a fan-out run twice makes each delivery once (deterministic ids, conditional puts)', async () => {
    const { token, id: accountId } = await customer(api, 'twice@example.com');
    const r = await receiver();
    const ep = await endpoint(token, r.url);
    const eventId = await emit(accountId);
    const now = new Date();
    await drainOutbox(now);
    // As if the process had died before taking the event out of the outbox: put it back.
    await transact([
      {
        name: 'outbox',
        Update: {
          Key: keys.event(accountId, eventId),
          UpdateExpression: 'SET GSI2PK = :pk, GSI2SK = :sk',
          ExpressionAttributeValues: { ':pk': keys.outboxEntry(eventId).GSI2PK, ':sk': eventId },
        },
      },
    ]);
    await drainOutbox(now);
    await runDueDeliveries(now, { timeoutMs: 2000 });
    expect(r.received.map((x) => x.json.id)).toEqual([eventId]);
    expect((await delivery(ep.id, eventId)).status).toBe('succeeded');
  });

  it('a receiver that is down, then failing, then back gets every event once it is back, with the same webhook-id on each retry', async () => {
    const { token, id: accountId } = await customer(api, 'down@example.com');
    const r = await receiver();
    const ep = await endpoint(token, r.url);
    const port = r.port;
    await r.stop(); // connection refused

    const t0 = new Date();
    const ids = [await emit(accountId, { n: 1 }, t0), await emit(accountId, { n: 2 }, t0), await emit(accountId, { n: 3 }, t0)];
    expect((await pump(t0)).retrying).toBe(3);
    const first = await delivery(ep.id, ids[0]!);
    expect(first.attempts[0]).toMatchObject({ status: null, error: 'connection_failed: ECONNREFUSED' });
    expect(first.nextAttemptAt).toBe(later(t0, 5_000).toISOString());
    expect((await getRaw(keys.webhookEndpoint(accountId, ep.id)))!.failingSince).toBe(t0.toISOString());

    // Up again, but answering 500.
    await r.start(port);
    r.answer = () => ({ status: 500, body: 'down for maintenance' });
    // Not due yet: nothing is sent before its time.
    await pump(later(t0, 4_000));
    expect(r.received).toHaveLength(0);
    await pump(later(t0, 5_000));
    expect(r.received).toHaveLength(3);
    expect((await delivery(ep.id, ids[1]!)).attempts[1]).toMatchObject({
      status: 500,
      error: 'http_500',
      responseExcerpt: 'down for maintenance',
    });

    // Back: the next attempt (5 minutes later) succeeds.
    r.answer = () => ({ status: 204 });
    await pump(later(t0, 5_000 + 5 * MIN));
    expect(r.received).toHaveLength(6);
    const byId = new Map<string, Received[]>();
    for (const got of r.received) {
      expect(Receiver.verifies(got, ep.secret)).toBe(true);
      expect(got.headers['webhook-id']).toBe(got.json.id);
      byId.set(got.json.id, [...(byId.get(got.json.id) ?? []), got]);
    }
    expect([...byId.keys()].sort()).toEqual([...ids].sort());
    for (const id of ids) {
      const d = await delivery(ep.id, id);
      expect(d.status).toBe('succeeded');
      expect(d.attempts.map((a) => a.status)).toEqual([null, 500, 204]);
    }
    // A success clears the endpoint's failing mark.
    expect((await getRaw(keys.webhookEndpoint(accountId, ep.id)))!.failingSince).toBeNull();
  });

  it('follows no redirect (a 3xx is a failed attempt) and keeps at most 256 bytes of a response', async () => {
    const { token, id: accountId } = await customer(api, 'redirect@example.com');
    const target = await receiver();
    const redirecting = await receiver();
    redirecting.answer = () => ({ status: 307, headers: { location: target.url } });
    const chatty = await receiver();
    chatty.answer = () => ({ status: 400, body: 'x'.repeat(10_000) });
    const epRedirect = await endpoint(token, redirecting.url);
    const epChatty = await endpoint(token, chatty.url);

    const eventId = await emit(accountId);
    await pump();
    expect(redirecting.received).toHaveLength(1);
    expect(target.received).toHaveLength(0);
    expect((await delivery(epRedirect.id, eventId)).attempts[0]).toMatchObject({ status: 307, error: 'redirect_not_followed' });
    const stored = (await delivery(epChatty.id, eventId)).attempts[0]!;
    expect(stored).toMatchObject({ status: 400, error: 'http_400' });
    expect(stored.responseExcerpt).toBe('x'.repeat(256));
    for (const ep of [epRedirect, epChatty])
      expect((await api.call('DELETE', `/v1/webhook-endpoints/${ep.id}`, { token })).status).toBe(200);
  });

  it('a receiver that does not answer in time is a failed attempt (timeout)', async () => {
    const hanging = createServer(() => {
      /* never answers */
    });
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    try {
      const started = Date.now();
      const result = await sendWebhook({
        url: new URL(`http://127.0.0.1:${(hanging.address() as AddressInfo).port}/`),
        body: '{}',
        headers: { 'content-type': 'application/json' },
        timeoutMs: 300,
        guarded: false,
      });
      expect(result).toMatchObject({ status: null, error: 'timeout' });
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      hanging.closeAllConnections();
      hanging.close();
    }
  });
});

describe('secrets, redelivery, disabling', () => {
  it('after a rotation both secrets sign for 24 hours, then only the new one', async () => {
    const { token, id: accountId } = await customer(api, 'rotate@example.com');
    const r = await receiver();
    const ep = await endpoint(token, r.url);
    const rotated = await api.call('POST', `/v1/webhook-endpoints/${ep.id}/rotate-secret`, { token });
    expect(rotated.status, rotated.text).toBe(200);
    const newSecret = rotated.body.secret as string;
    expect(newSecret).not.toBe(ep.secret);

    const now = new Date();
    await emit(accountId, {}, now);
    await pump(now);
    expect(r.received).toHaveLength(1);
    expect(Receiver.verifies(r.received[0]!, newSecret)).toBe(true);
    expect(Receiver.verifies(r.received[0]!, ep.secret)).toBe(true);
    expect(String(r.received[0]!.headers['webhook-signature']).split(' ')).toHaveLength(2);

    const dayLater = later(now, 24 * HOUR + MIN);
    await emit(accountId, {}, dayLater);
    await pump(dayLater);
    expect(r.received).toHaveLength(2);
    expect(Receiver.verifies(r.received[1]!, newSecret)).toBe(true);
    expect(Receiver.verifies(r.received[1]!, ep.secret)).toBe(false);
  });

  it('a manual redelivery sends the event again with the same webhook-id', async () => {
    const { token, id: accountId } = await customer(api, 'redeliver@example.com');
    const r = await receiver();
    const ep = await endpoint(token, r.url);
    const eventId = await emit(accountId);
    await pump();
    expect(r.received).toHaveLength(1);
    const deliveryId = deliveryIdOf(eventId, ep.id);
    const res = await api.call('POST', `/v1/webhook-endpoints/${ep.id}/deliveries/${deliveryId}/redeliver`, { token });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: deliveryId, status: 'pending' });
    await pump();
    expect(r.received).toHaveLength(2);
    expect(r.received[1]!.headers['webhook-id']).toBe(r.received[0]!.headers['webhook-id']);
    expect(r.received[1]!.body).toBe(r.received[0]!.body);
    expect(Receiver.verifies(r.received[1]!, ep.secret)).toBe(true);
    expect((await delivery(ep.id, eventId)).attempts).toHaveLength(2);
  });

  it('retries over 3 days (5 s, 5 min, 30 min, 2 h, 5 h, 10 h …), then fails the delivery and disables the endpoint, telling the account (webhook_endpoint.disabled)', async () => {
    const { token, id: accountId } = await customer(api, 'failing@example.com');
    const broken = await receiver();
    broken.answer = () => ({ status: 503 });
    const healthy = await receiver();
    const epBroken = await endpoint(token, broken.url);
    const epHealthy = await endpoint(token, healthy.url, ['webhook_endpoint.disabled']);

    const t0 = new Date();
    const eventId = await emit(accountId, {}, t0);
    await pump(t0);
    const due: string[] = [];
    for (let i = 0; i < 40; i++) {
      const d = await delivery(epBroken.id, eventId);
      if (d.status !== 'pending') break;
      due.push(d.nextAttemptAt!);
      await pump(new Date(d.nextAttemptAt!));
    }
    const offsets = due.map((at) => Date.parse(at) - t0.getTime());
    expect(offsets.slice(0, 6)).toEqual([
      5_000,
      5_000 + 5 * MIN,
      5_000 + 35 * MIN,
      5_000 + 155 * MIN,
      5_000 + 455 * MIN,
      5_000 + 1055 * MIN,
    ]);
    expect(offsets.at(-1)).toBe(RETRY_WINDOW_MS);
    expect(due).toHaveLength(12); // 13 attempts in all, the last at exactly 3 days
    const d = await delivery(epBroken.id, eventId);
    expect(d).toMatchObject({ status: 'failed', nextAttemptAt: null });
    expect(d.attempts).toHaveLength(due.length + 1);
    expect(broken.received).toHaveLength(due.length + 1);
    expect(new Set(broken.received.map((x) => x.headers['webhook-id']))).toEqual(new Set([eventId]));

    // Disabled at the last failure, 3 days after the first.
    const shown = await api.call('GET', `/v1/webhook-endpoints/${epBroken.id}`, { token });
    expect(shown.body).toMatchObject({ enabled: false, disabledReason: 'failing', failingSince: t0.toISOString() });
    // The account hears of it: an event (GET /v1/events) delivered to its other endpoint.
    const events = await api.call('GET', '/v1/events?type=webhook_endpoint.disabled', { token });
    expect(events.status, events.text).toBe(200);
    expect(events.body.data).toHaveLength(1);
    expect(events.body.data[0].data).toMatchObject({ id: epBroken.id, disabledReason: 'failing' });
    await pump(later(t0, RETRY_WINDOW_MS));
    expect(healthy.received).toHaveLength(1);
    expect(healthy.received[0]!.json).toMatchObject({ type: 'webhook_endpoint.disabled', data: { id: epBroken.id } });
    expect(Receiver.verifies(healthy.received[0]!, epHealthy.secret)).toBe(true);
    // A disabled endpoint gets no new deliveries.
    await emit(accountId, {}, later(t0, RETRY_WINDOW_MS));
    await pump(later(t0, RETRY_WINDOW_MS + MIN));
    expect(broken.received).toHaveLength(due.length + 1);
  });
});

describe('safe targets', () => {
  it('in AWS a receiver on a loopback address is refused: target_refused, nothing sent (literal address and resolved name)', async () => {
    const { token, id: accountId } = await customer(api, 'ssrf@example.com');
    const r = await receiver();
    // Made in the local stack, where any https URL is accepted; delivered as in AWS.
    const ep = await endpoint(token, `https://127.0.0.1:${r.port}/hook`);
    const eventId = await emit(accountId);
    await inAwsStage(() => pump());
    expect((await delivery(ep.id, eventId)).attempts[0]).toMatchObject({ status: null, error: 'target_refused: loopback address' });
    expect(r.received).toHaveLength(0);

    // A name is resolved and every address checked before connecting, by the connection's own lookup.
    const byName = await sendWebhook({
      url: new URL(`http://localhost:${r.port}/`),
      body: '{}',
      headers: {},
      timeoutMs: 2000,
      guarded: true,
    });
    expect(byName).toMatchObject({ status: null, error: 'target_refused: loopback address' });
    expect(r.received).toHaveLength(0);
    expect((await api.call('DELETE', `/v1/webhook-endpoints/${ep.id}`, { token })).status).toBe(200);
  });
});

describe('the local loop, the whole chain', () => {
  it('delivers the events of several changes through the running loop, each verified', async () => {
    const { token, id: accountId } = await customer(api, 'chain@example.com', { grantCents: 10_000 });
    const r = await receiver();
    const ep = await endpoint(token, r.url);
    const loop = startWebhookLoop({ intervalMs: 50, timeoutMs: 2000 });
    try {
      const server = await api.call('POST', '/v1/servers', {
        token,
        body: { name: 'chain', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
      });
      expect(server.status, server.text).toBe(201);
      await appendLedger(accountId, [{ type: 'grant', amountCents: 500, idempotencyKey: `test-chain:${accountId}` }]);
      await emit(accountId);
      const types = () => new Set(r.received.map((x) => x.json.type));
      await within(() => types().has('server.created') && types().has('balance.low'), 15_000);
      expect(types()).toContain('server.created');
      expect(types()).toContain('balance.low');
      for (const got of r.received) {
        expect(Receiver.verifies(got, ep.secret)).toBe(true);
        expect(got.headers['webhook-id']).toBe(got.json.id);
      }
      // Every event of the account (GET /v1/events) reached the endpoint, each once.
      const listed = await api.call('GET', '/v1/events?limit=100', { token });
      const eventIds = (listed.body.data as { id: string }[]).map((e) => e.id);
      await within(() => r.received.length >= eventIds.length, 15_000);
      expect(r.received.map((x) => x.json.id).sort()).toEqual([...eventIds].sort());
    } finally {
      await loop.stop();
    }
  });
});
