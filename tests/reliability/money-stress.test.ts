import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Stripe from 'stripe';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { startFakeStripe, type FakeStripe } from '../helpers/fake-stripe.ts';
import { expectLedgerInvariant } from '../helpers/money.ts';
import { setAttributes } from '../helpers/db.ts';
import { db, tableName } from '../../shared/db/client.ts';
import { chargeableHours, HOUR_MS, hourStart, type HistoryEvent } from '../../shared/pricing/hours.ts';
import { readWatermark } from '../../shared/billing/pass.ts';
import { mulberry32 } from '../helpers/random.ts';

/**
 * Money under stress: a seeded, randomized run over several accounts — deploys, resizes, deletes,
 * top-ups whose webhooks arrive duplicated and out of order, admin grants and deductions, billing
 * passes overlapping and re-run — checking after every step that each balance equals the sum of
 * its ledger, and after every pass that no server-hour was charged twice or missed and that no
 * invoice number repeats or is skipped. A failure prints the seed and the step, and replays with
 * STRESS_SEED=<seed>.
 *
 * Time is virtual: a clock moves forward a random number of minutes per step, every server event
 * the service records is moved to that clock, and passes run `at` it.
 */
const SEED = Number(process.env.STRESS_SEED ?? 20261121);
const STEPS = Number(process.env.STRESS_STEPS ?? 70);
/** The clock moves up to this many minutes between steps: 50 by default (hours), ~1,200 for a month (STRESS_MAX_STEP_MINUTES). */
const MAX_STEP_MINUTES = Number(process.env.STRESS_MAX_STEP_MINUTES ?? 50);
const WEBHOOK_SECRET = 'whsec_stress_secret';

let api: TestApi;
let stripeFake: FakeStripe;
const signer = new Stripe('sk_test_signer');

beforeAll(async () => {
  stripeFake = await startFakeStripe();
  process.env.STRIPE_SECRET_KEY = 'sk_test_stress';
  process.env.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET;
  process.env.STRIPE_API_URL = stripeFake.url;
  api = await startTestApi({ panel: { installMs: 20, transitionMs: 10, resourcesCacheMs: 0 } });
});
afterAll(async () => {
  await api?.stop();
  await stripeFake?.close();
});

async function scanKind(kind: string): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await db().send(
      new ScanCommand({
        TableName: tableName(),
        FilterExpression: 'kind = :k',
        ExpressionAttributeValues: { ':k': kind },
        ExclusiveStartKey: start,
        ConsistentRead: true,
      }),
    );
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}

describe('money under stress', () => {
  it(`seed ${SEED}, ${STEPS} steps of up to ${MAX_STEP_MINUTES} minutes: balances, server-hours, exact prices and invoice numbers stay exact`, async () => {
    const random = mulberry32(SEED);
    const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)]!;
    let clock = hourStart(Date.now()) - 30 * HOUR_MS + 7 * 60_000;
    const iso = (ms: number) => new Date(ms).toISOString();

    const accounts = await Promise.all(
      ['a', 'b', 'c', 'd'].map(async (n) => {
        const token = await api.session(`stress-${n}@example.com`);
        const { id } = (await api.call('GET', '/v1/account', { token })).body;
        return { token, id: id as string, servers: [] as string[], sessions: [] as Record<string, unknown>[] };
      }),
    );
    const log: string[] = [];
    const sizes = [
      { ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
      { ramMb: 2048, cpuPercent: 150, diskMb: 8192 },
      { ramMb: 4096, cpuPercent: 200, diskMb: 20480 },
    ];

    /**
     * Moves every server event recorded since the last call onto the virtual clock (the service
     * stamps real time): new history entries, a new server's creation, a new deletion or suspension.
     */
    const seen = new Map<string, { events: number; stamps: Record<string, unknown> }>();
    async function virtualize(): Promise<void> {
      for (const s of await scanKind('server')) {
        const before = seen.get(s.serverId as string) ?? { events: 0, stamps: {} };
        const history = (s.history as HistoryEvent[]).map((e, i) => (i >= before.events ? { ...e, at: iso(clock) } : e));
        const patch: Record<string, unknown> = { history };
        for (const field of ['createdAt', 'deletedAt', 'suspendedAt'] as const) {
          if (typeof s[field] === 'string' && s[field] !== before.stamps[field]) patch[field] = iso(clock);
        }
        await setAttributes({ PK: s.PK as string, SK: s.SK as string }, patch);
        seen.set(s.serverId as string, {
          events: history.length,
          stamps: { ...before.stamps, ...Object.fromEntries(['createdAt', 'deletedAt', 'suspendedAt'].map((f) => [f, patch[f] ?? s[f]])) },
        });
      }
    }

    const deliver = (type: string, session: Record<string, unknown>) => {
      const body = JSON.stringify({
        id: `evt_${Math.floor(random() * 1e12)}`,
        object: 'event',
        created: Math.floor(Date.now() / 1000),
        livemode: false,
        type,
        data: { object: session },
      });
      const signature = signer.webhooks.generateTestHeaderString({ payload: body, secret: WEBHOOK_SECRET });
      return api.call('POST', '/v1/webhooks/stripe', {
        token: null,
        rawBody: body,
        headers: { 'content-type': 'application/json', 'stripe-signature': signature },
      });
    };

    const actions: Record<string, () => Promise<string>> = {
      deploy: async () => {
        const a = pick(accounts);
        const res = await api.call('POST', '/v1/servers', {
          token: a.token,
          body: { name: `stress ${a.servers.length}`, eggId: pick([1, 2]) === 1 ? 1 : 1, ...pick(sizes) },
        });
        if (res.status === 201) a.servers.push(res.body.id);
        return `deploy ${a.id.slice(0, 4)} → ${res.status}`;
      },
      resize: async () => {
        const a = pick(accounts);
        if (!a.servers.length) return 'resize: none';
        const res = await api.call('PATCH', `/v1/servers/${pick(a.servers)}`, { token: a.token, body: pick(sizes) });
        return `resize → ${res.status}`;
      },
      delete: async () => {
        const a = pick(accounts);
        if (!a.servers.length) return 'delete: none';
        const id = pick(a.servers);
        const res = await api.call('DELETE', `/v1/servers/${id}`, { token: a.token });
        return `delete → ${res.status}`;
      },
      checkout: async () => {
        const a = pick(accounts);
        const res = await api.call('POST', '/v1/billing/checkout', {
          token: a.token,
          body: { amountCents: 500 + Math.floor(random() * 20) * 100 },
        });
        if (res.status === 201)
          a.sessions.push([...stripeFake.sessions.values()].find((s) => s.client_reference_id === res.body.invoiceId)!);
        return `checkout → ${res.status}`;
      },
      webhooks: async () => {
        const a = pick(accounts);
        if (!a.sessions.length) return 'webhooks: none';
        const session = pick(a.sessions);
        const paid = { ...session, status: 'complete', payment_status: 'paid', payment_intent: 'pi_x' };
        // Duplicated, reordered, concurrent: the outcome must be the same whatever the order.
        const events = [
          ['checkout.session.completed', paid],
          ['checkout.session.completed', paid],
          ['checkout.session.async_payment_succeeded', paid],
          ['checkout.session.expired', { ...session, status: 'expired' }],
        ] as const;
        const chosen = events.filter(() => random() < 0.7);
        const order = chosen.sort(() => random() - 0.5);
        const results = await Promise.all(order.map(([type, s]) => deliver(type, s)));
        return `webhooks ${order.map(([t]) => t.split('.').at(-1)).join(',')} → ${results.map((r) => r.body?.outcome ?? r.status).join(',')}`;
      },
      grant: async () => {
        const a = pick(accounts);
        const amount = pick([300, 1000, -200, -800]);
        const res = await api.call('POST', `/v1/admin/users/${a.id}/credits`, { body: { amountCents: amount, note: 'stress' } });
        return `grant ${amount} → ${res.status}`;
      },
      pass: async () => {
        await virtualize();
        const overlapping = random() < 0.4;
        const runs = overlapping ? [clock, clock] : [clock];
        const results = await Promise.all(runs.map((at) => api.call('POST', '/dev/billing/run', { token: null, body: { at: iso(at) } })));
        return `pass${overlapping ? ' ×2 overlapping' : ''} → ${results.map((r) => `${r.status}:${r.body.serverHoursCharged}`).join(' ')}`;
      },
      rerun: async () => {
        await virtualize();
        const res = await api.call('POST', '/dev/billing/run', {
          token: null,
          body: { at: iso(clock - Math.floor(random() * 3) * HOUR_MS) },
        });
        return `re-run → ${res.status}:${res.body.serverHoursCharged}`;
      },
    };
    const weights: [keyof typeof actions, number][] = [
      ['deploy', 4],
      ['resize', 2],
      ['delete', 1.5],
      ['checkout', 2],
      ['webhooks', 3],
      ['grant', 1.5],
      ['pass', 3],
      ['rerun', 1],
    ];
    const total = weights.reduce((s, [, w]) => s + w, 0);

    for (let step = 0; step < STEPS; step++) {
      clock += Math.floor(random() * MAX_STEP_MINUTES) * 60_000;
      let r = random() * total;
      const name =
        weights.find(([, w]) => {
          r -= w;
          return r < 0;
        })?.[0] ?? 'pass';
      const what = await actions[name]!();
      await virtualize();
      log.push(`${step} @${iso(clock).slice(5, 16)} ${what}`);
      try {
        await expectLedgerInvariant();
      } catch (err) {
        throw new Error(`seed ${SEED}, step ${step}: ${(err as Error).message}\n${log.slice(-10).join('\n')}`);
      }
    }
    // A last pass at the clock, so the final state is fully billed up to it.
    await virtualize();
    await api.call('POST', '/dev/billing/run', { token: null, body: { at: iso(clock) } });
    await expectLedgerInvariant();

    // No server-hour charged twice or missed: the ledger's charge lines against the histories.
    const watermark = await readWatermark();
    expect(watermark).not.toBeNull();
    const charged = new Map<string, number>();
    const duplicates: string[] = [];
    for (const entry of await scanKind('ledger')) {
      if (entry.type !== 'charge') continue;
      const ref = entry.reference as { hour: string; lines: { serverId: string; millicents?: number; cents?: number }[] };
      for (const line of ref.lines) {
        const key = `${line.serverId}@${ref.hour}`;
        if (charged.has(key)) duplicates.push(key);
        charged.set(key, line.millicents ?? (line.cents ?? 0) * 1000);
      }
    }
    expect(duplicates).toEqual([]);
    const expected = new Map<string, number>();
    for (const s of await scanKind('server')) {
      for (const { hour, millicents } of chargeableHours(
        s.history as HistoryEvent[],
        hourStart(Date.parse(s.createdAt as string)),
        watermark!,
      )) {
        expected.set(`${s.serverId}@${iso(hour)}`, millicents);
      }
    }
    const missed = [...expected].filter(([k]) => !charged.has(k)).map(([k]) => k);
    const extra = [...charged].filter(([k]) => !expected.has(k)).map(([k]) => k);
    const wrong = [...expected].filter(([k, c]) => charged.has(k) && charged.get(k) !== c).map(([k]) => k);
    expect({ missed, extra, wrong }, `seed ${SEED}\n${log.join('\n')}`).toEqual({ missed: [], extra: [], wrong: [] });
    expect(expected.size).toBeGreaterThan(10); // the run did bill something

    // Exact prices: each account has paid the whole cents of the sum of its exact server-hour
    // prices, never more, and carries the rest (under a cent) on its profile.
    const owed = new Map<string, { millicents: number; cents: number }>();
    for (const entry of await scanKind('ledger')) {
      if (entry.type !== 'charge') continue;
      const ref = entry.reference as { lines: { millicents?: number; cents?: number }[] };
      const sum = owed.get(entry.accountId as string) ?? { millicents: 0, cents: 0 };
      sum.millicents += ref.lines.reduce((s, l) => s + (l.millicents ?? (l.cents ?? 0) * 1000), 0);
      sum.cents += -Number(entry.amountCents);
      owed.set(entry.accountId as string, sum);
    }
    const priced = [...owed].filter(([, o]) => o.millicents % 1000 !== 0 || o.millicents > 0);
    expect(priced.length).toBeGreaterThan(0);
    for (const [accountId, o] of owed) {
      const profile = (await scanKind('account')).find((a) => a.accountId === accountId)!;
      expect({ accountId, cents: o.cents, carried: profile.accruedMillicents ?? 0 }).toEqual({
        accountId,
        cents: Math.floor(o.millicents / 1000),
        carried: o.millicents % 1000,
      });
    }

    // Invoice numbers: no repeat, no gap.
    const numbers = (await scanKind('invoice')).map((i) => Number(String(i.number).split('-')[2])).sort((x, y) => x - y);
    expect(numbers.length).toBeGreaterThan(2);
    expect(numbers).toEqual(Array.from({ length: numbers.length }, (_, i) => i + 1));
    // Every paid invoice was credited exactly once (topup + bonus entries match it).
    for (const invoice of (await scanKind('invoice')).filter((i) => i.status === 'paid')) {
      const entries = (await scanKind('ledger')).filter((e) => (e.reference as { invoiceId?: string }).invoiceId === invoice.invoiceId);
      expect(entries.reduce((sum, e) => sum + Number(e.amountCents), 0)).toBe(Number(invoice.creditedCents));
    }
  }, 240_000);
});
