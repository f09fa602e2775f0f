import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookLoop } from '../../dev/webhook-loop.ts';
import type { WebhookDeliveryItem } from '../../shared/db/items.ts';
import { keys } from '../../shared/db/keys.ts';
import { transact } from '../../shared/db/write.ts';
import { DEFAULT_TIMEOUT_MS, deliveryIdOf, dispatchFor, PER_ACCOUNT_CONCURRENCY } from '../../shared/webhooks/dispatch.ts';
import { eventWrite } from '../../shared/webhooks/events.ts';
import { getRaw } from '../helpers/db.ts';
import { closeServer, listenLocal } from '../helpers/local-server.ts';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { customer } from '../helpers/customer.ts';
import { sleep, within } from '../helpers/until.ts';

/**
 * The adversary: an account whose 10 endpoints (the most it may have) point at a receiver that
 * accepts the connection and never answers, with 100 events due (1,000 deliveries, each attempt
 * cut at the 5 s timeout). Another account's delivery must still arrive within 10 s of its event,
 * through the local loop and through an AWS-style run, and the attacker must never hold more than
 * its own PER_ACCOUNT_CONCURRENCY connections. Real receivers on 127.0.0.1, DynamoDB Local.
 */
let api: TestApi;
beforeAll(async () => {
  // No background loop: each test runs the dispatcher it measures.
  api = await startTestApi({ webhooks: false });
});
afterAll(async () => api?.stop());

/** Accepts every request and never answers; counts the requests open at once. */
class HangingReceiver {
  open = 0;
  maxOpen = 0;
  total = 0;
  private server: Server | undefined;
  port = 0;

  async start(): Promise<this> {
    this.server = createServer((req) => {
      this.open++;
      this.total++;
      this.maxOpen = Math.max(this.maxOpen, this.open);
      req.on('close', () => this.open--);
    });
    this.port = await listenLocal(this.server);
    return this;
  }

  url(n: number): string {
    return `http://127.0.0.1:${this.port}/hang/${n}`;
  }

  async stop(): Promise<void> {
    await closeServer(this.server);
  }
}

/** Answers 200 at once; records when each event id arrived. */
class Receiver {
  readonly arrived = new Map<string, number>();
  private server: Server | undefined;
  port = 0;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const at = Date.now();
        const { id } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string };
        if (!this.arrived.has(id)) this.arrived.set(id, at);
        res.writeHead(200);
        res.end('ok');
      });
    });
    this.port = await listenLocal(this.server);
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  async stop(): Promise<void> {
    await closeServer(this.server);
  }
}

const hanging = new HangingReceiver();
const victimReceiver = new Receiver();
beforeAll(async () => {
  await hanging.start();
  await victimReceiver.start();
});
afterAll(async () => {
  await hanging.stop();
  await victimReceiver.stop();
});

async function endpoint(token: string, url: string): Promise<string> {
  const res = await api.call('POST', '/v1/webhook-endpoints', { token, body: { url } });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

/** An event as a producer writes it (in a transaction); its id and when it was made. */
async function emit(accountId: string): Promise<{ id: string; at: number }> {
  const at = Date.now();
  const write = eventWrite(accountId, 'balance.low', { balanceCents: 100, thresholdCents: 500 }, new Date(at));
  await transact([write]);
  return { id: (write as unknown as { Put: { Item: { eventId: string } } }).Put.Item.eventId, at };
}

/** The attacker: 10 endpoints on the hanging receiver and 100 events. */
async function attacker(email: string): Promise<{ accountId: string; endpointIds: string[]; eventIds: string[] }> {
  const { token, id } = await customer(api, email);
  const endpointIds: string[] = [];
  for (let n = 0; n < 10; n++) endpointIds.push(await endpoint(token, hanging.url(n)));
  const eventIds: string[] = [];
  for (let n = 0; n < 100; n++) eventIds.push((await emit(id)).id);
  return { accountId: id, endpointIds, eventIds };
}

/** The victim's events, one every `gapMs`, each awaited at its receiver: the latencies (ms; Infinity if not within 15 s). */
async function victimLatencies(accountId: string, count: number, gapMs: number): Promise<number[]> {
  const latencies: number[] = [];
  for (let n = 0; n < count; n++) {
    if (n) await sleep(gapMs);
    const event = await emit(accountId);
    const arrived = await within(() => victimReceiver.arrived.has(event.id), 15_000);
    latencies.push(arrived ? victimReceiver.arrived.get(event.id)! - event.at : Number.POSITIVE_INFINITY);
  }
  return latencies;
}

/** Once the attack is under way (its attempts hang on the receiver): the victim's events, each within 10 s; the latencies printed. */
async function victimWithin10s(dispatcher: string, accountId: string, count: number, gapMs: number): Promise<void> {
  expect(await within(() => hanging.open >= PER_ACCOUNT_CONCURRENCY, 20_000)).toBe(true);
  const latencies = await victimLatencies(accountId, count, gapMs);
  console.log(
    `victim's delivery latency with the attacker's 10 hanging endpoints and 100 events due (${dispatcher}): ${latencies.join(' ms, ')} ms`,
  );
  for (const ms of latencies) expect(ms).toBeLessThan(10_000);
}

describe('one account with hanging receivers cannot delay another account’s webhooks', () => {
  it('local loop: 10 hanging endpoints, 100 events due; the other account’s deliveries arrive within 10 s, the attacker holds only its own slots', async () => {
    const attack = await attacker('hanging-loop@example.com');
    const victim = await customer(api, 'victim-loop@example.com');
    await endpoint(victim.token, victimReceiver.url);

    hanging.maxOpen = 0;
    const loop = startWebhookLoop({ timeoutMs: DEFAULT_TIMEOUT_MS });
    try {
      // Three events of the other account, 3 s apart: while the first hanging attempts run, as they
      // are cut at 5 s and the next ones start, and once their 5 s retries come due as well.
      await victimWithin10s('local loop', victim.id, 3, 3_000);
      // The attacker's hanging attempts never held more than its own slots.
      expect(hanging.maxOpen).toBeLessThanOrEqual(PER_ACCOUNT_CONCURRENCY);
      expect(hanging.total).toBeGreaterThanOrEqual(PER_ACCOUNT_CONCURRENCY);
    } finally {
      await loop.stop();
    }

    // Nothing of the attacker's was lost on the way: each event is still in the outbox, or every
    // delivery of it exists, still pending (made, failed and rescheduled, or deferred), with a next attempt.
    let attempted = 0;
    let fannedOut = 0;
    for (const eventId of attack.eventIds) {
      const deliveries = await Promise.all(
        attack.endpointIds.map(
          async (endpointId) =>
            (await getRaw(keys.webhookDelivery(endpointId, deliveryIdOf(eventId, endpointId)))) as unknown as
              | WebhookDeliveryItem
              | undefined,
        ),
      );
      if ((await getRaw(keys.event(attack.accountId, eventId)))?.GSI2PK) continue;
      fannedOut++;
      for (const d of deliveries) {
        expect(d?.status).toBe('pending');
        expect(d!.nextAttemptAt).not.toBeNull();
        attempted += d!.attempts.length;
      }
    }
    expect(fannedOut).toBeGreaterThan(0);
    expect(attempted).toBe(hanging.total);
  }, 90_000);

  it('AWS run (dispatchFor): an event made while the run is busy with a hanging account is delivered within 10 s, and the run ends on time', async () => {
    await attacker('hanging-run@example.com');
    const victim = await customer(api, 'victim-run@example.com');
    await endpoint(victim.token, victimReceiver.url);

    hanging.maxOpen = 0;
    const runMs = 12_000;
    const started = Date.now();
    const run = dispatchFor(runMs);
    try {
      await victimWithin10s('AWS run', victim.id, 2, 2_000);
    } finally {
      const summary = await run;
      // Attempts not started when the time is up stay due for the next run; those in flight are awaited (≤ 5 s).
      expect(Date.now() - started).toBeLessThan(runMs + DEFAULT_TIMEOUT_MS + 3_000);
      expect(summary.deferred).toBeGreaterThan(0);
    }
    // Two attackers now (the previous test's deliveries come due again): still at most 4 connections each.
    expect(hanging.maxOpen).toBeLessThanOrEqual(2 * PER_ACCOUNT_CONCURRENCY);
  }, 90_000);
});
