import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { runPassInProcess } from '../../shared/billing/pass.ts';
import { keys } from '../../shared/db/keys.ts';
import { writeItem } from '../../shared/db/write.ts';
import { HOUR_MS, hourStart, lastBillableHour } from '../../shared/pricing/hours.ts';
import { hoursOwedThisMonth, monthHours, projectMonth } from '../../shared/servers/cost.ts';
import { forgetLiveState } from '../../shared/servers/live.ts';
import { SAMPLE_BUCKET_MS, SAMPLE_TTL_SECONDS } from '../../shared/servers/usage-history.ts';
import { customer } from '../helpers/customer.ts';
import { getRaw, queryPartition, setAttributes } from '../helpers/db.ts';
import { ledgerOf } from '../helpers/money.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * Usage history and cost over the local stack: DynamoDB Local, the panel simulator over HTTP (its
 * request counter through /__sim/), the API over HTTP, the billing pass in process. A refresh is
 * driven as tests/integration/live-state.test.ts does (the stored asOf moved back past the
 * interval); the next sample bucket is reached by moving the stack's test clock, never by waiting.
 */
const TTL_MS = 600_000;
process.env.LIVE_STATE_TTL_MS = String(TTL_MS);
process.env.LIVE_STATE_TRANSITION_TTL_MS = '60000';

let api: TestApi;
let sim: PanelSim;
beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0 } });
  sim = api.panel!.sim;
});
afterAll(async () => api?.stop());

interface Deployed {
  id: string;
  identifier: string;
  token: string;
  accountId: string;
}

let customers = 0;
async function deployInstalled(grantCents = 0): Promise<Deployed> {
  const who = await customer(api, `usage-${++customers}@example.com`, { grantCents });
  const created = await api.call('POST', '/v1/servers', {
    token: who.token,
    body: { name: 'graphs', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
  });
  expect(created.status, created.text).toBe(201);
  await until(() => sim.server(created.body.identifier)?.status === null, { what: 'the install' });
  await forgetLiveState(created.body.id);
  return { id: created.body.id, identifier: created.body.identifier, token: who.token, accountId: who.id };
}

/** The stored live state made older than the interval: the next read refreshes it. */
async function aged(server: Deployed): Promise<void> {
  const item = await getRaw(keys.liveState(server.id));
  if (item?.asOf)
    await setAttributes(keys.liveState(server.id), { asOf: new Date(Date.parse(item.asOf as string) - TTL_MS - 1).toISOString() });
}

const read = (server: Deployed) => api.call('GET', `/v1/servers/${server.id}`, { token: server.token });
const samplesOf = (server: Deployed) => queryPartition(keys.usageSamplePrefix(server.id));

/** Panel requests about this server (the Application API's and the Client API's paths) while `fn` ran. */
async function panelCallsDuring(server: Deployed, fn: () => Promise<unknown>): Promise<number> {
  const paths = [`/api/application/servers/${sim.server(server.identifier)!.id}`, `/api/client/servers/${server.identifier}`];
  const count = async () =>
    Object.entries(((await (await fetch(`${sim.url}/__sim/requests`)).json()) as { requests: Record<string, number> }).requests)
      .filter(([request]) => paths.some((p) => request.includes(p)))
      .reduce((sum, [, n]) => sum + n, 0);
  const before = await count();
  await fn();
  return (await count()) - before;
}

/** Moves the test clock to one minute into the next sample bucket. */
function toNextBucket(): void {
  const now = api.clock.now();
  api.clock.advance((Math.floor(now / SAMPLE_BUCKET_MS) + 1) * SAMPLE_BUCKET_MS + 60_000 - now);
}

describe('usage samples from the live-state refresh', () => {
  let server: Deployed;
  beforeAll(async () => {
    server = await deployInstalled();
  });

  it('keeps one sample per bucket, with a TTL, and costs no panel call of its own', async () => {
    toNextBucket();
    // A refresh asks the Application API once and the Client API once: with or without sampling.
    expect(await panelCallsDuring(server, () => read(server))).toBe(2);
    await aged(server);
    expect(await panelCallsDuring(server, () => read(server))).toBe(2);
    const samples = await samplesOf(server);
    expect(samples).toHaveLength(1); // the second refresh was in the same bucket
    const [sample] = samples;
    expect(sample).toMatchObject({ kind: 'usage-sample', cpu: expect.any(Number), mem: expect.any(Number), disk: expect.any(Number) });
    const at = Date.parse(sample!.at as string);
    expect(Number(sample!.expiresAt)).toBe(Math.floor(at / 1000) + SAMPLE_TTL_SECONDS);

    toNextBucket();
    await aged(server);
    expect(await panelCallsDuring(server, () => read(server))).toBe(2);
    toNextBucket();
    await aged(server);
    await read(server);
    expect(await samplesOf(server)).toHaveLength(3);

    // Reads within the interval: no refresh, no sample, no panel call.
    toNextBucket();
    expect(await panelCallsDuring(server, () => read(server))).toBe(0);
    expect(await samplesOf(server)).toHaveLength(3);

    // The history itself asks the panel nothing.
    let history: Awaited<ReturnType<typeof api.call>> | undefined;
    expect(
      await panelCallsDuring(server, async () => {
        history = await api.call('GET', `/v1/servers/${server.id}/usage/history?window=hour`, { token: server.token });
      }),
    ).toBe(0);
    expect(history!.status, history!.text).toBe(200);
    expect(history!.body).toMatchObject({ window: 'hour', pointSeconds: 300 });
    expect(history!.body.points).toHaveLength(3);
  });

  it('refuses an unknown window and a stranger', async () => {
    const bad = await api.call('GET', `/v1/servers/${server.id}/usage/history?window=month`, { token: server.token });
    expectEnvelope(bad, 400, 'validation_failed');
    const stranger = await api.session('usage-stranger@example.com');
    expectEnvelope(await api.call('GET', `/v1/servers/${server.id}/usage/history`, { token: stranger }), 404, 'not_found');
    expectEnvelope(await api.call('GET', `/v1/servers/${server.id}/cost`, { token: stranger }), 404, 'not_found');
  });
});

describe('windows and downsampling', () => {
  let server: Deployed;
  beforeAll(async () => {
    server = await deployInstalled();
  });

  /** A sample written as the refresh writes it, `minutesAgo` before the test clock. */
  async function sampleAt(minutesAgo: number, values: { cpu: number; mem: number; rx: number; tx: number }): Promise<void> {
    const at = api.clock.now() - minutesAgo * 60_000;
    const bucket = new Date(Math.floor(at / SAMPLE_BUCKET_MS) * SAMPLE_BUCKET_MS).toISOString();
    await writeItem({
      Put: {
        Item: {
          ...keys.usageSample(server.id, bucket),
          kind: 'usage-sample',
          at: new Date(at).toISOString(),
          disk: 1000,
          ...values,
          expiresAt: Math.floor(at / 1000) + SAMPLE_TTL_SECONDS,
        },
      },
    });
  }

  it('averages samples per point, turns counters into rates, and keeps each window to its span', async () => {
    // Aligned to an hour so the three samples fall in one hourly point of the week window.
    api.clock.advance(hourStart(api.clock.now()) + HOUR_MS + 40 * 60_000 - api.clock.now());
    await sampleAt(30, { cpu: 10, mem: 100, rx: 0, tx: 0 });
    await sampleAt(25, { cpu: 20, mem: 200, rx: 3000, tx: 600 }); // +3000 B in 300 s: 10 B/s
    await sampleAt(20, { cpu: 60, mem: 600, rx: 9000, tx: 0 }); // +6000 B: 20 B/s; tx went down (a restart): no rate
    await sampleAt(2 * 60, { cpu: 90, mem: 900, rx: 0, tx: 0 }); // outside the hour, inside the day
    await sampleAt(3 * 24 * 60, { cpu: 50, mem: 500, rx: 0, tx: 0 }); // outside the day

    const get = async (window: string) => {
      const res = await api.call('GET', `/v1/servers/${server.id}/usage/history?window=${window}`, { token: server.token });
      expect(res.status, res.text).toBe(200);
      return res.body as {
        points: {
          at: string;
          samples: number;
          cpuAbsolute: number;
          memoryBytes: number;
          networkRxBytesPerSecond: number | null;
          networkTxBytesPerSecond: number | null;
        }[];
      };
    };
    const hour = await get('hour');
    expect(hour.points.map((p) => p.cpuAbsolute)).toEqual([10, 20, 60]);
    expect(hour.points.map((p) => p.networkRxBytesPerSecond)).toEqual([null, 10, 20]);
    expect(hour.points.map((p) => p.networkTxBytesPerSecond)).toEqual([null, 2, null]);

    const day = await get('day');
    // 15-minute points: 2 h ago; :10; :15 and :20 together.
    expect(day.points.map((p) => p.samples)).toEqual([1, 1, 2]);
    expect(day.points[2]).toMatchObject({ cpuAbsolute: 40, memoryBytes: 400, networkRxBytesPerSecond: 15, networkTxBytesPerSecond: 2 });
    expect(day.points[1]).toMatchObject({ cpuAbsolute: 10, networkRxBytesPerSecond: 0 }); // after the sample 2 h before

    const week = await get('week');
    expect(week.points.map((p) => p.samples)).toEqual([1, 1, 3]);
    expect(week.points[0]!.cpuAbsolute).toBe(50);
    expect(Date.parse(week.points[2]!.at) % HOUR_MS).toBe(0);
  });
});

describe('cost this month', () => {
  it('equals the ledger after a billing pass, and projects at the exact price', async () => {
    const server = await deployInstalled(10_000);
    const stored = await getRaw(keys.server(server.accountId, server.id));
    const price = Number(stored!.priceMillicentsPerHour);
    const now = api.clock.now();
    // Created three hours ago (or at the month's start), as billing.test.ts moves a server's life back.
    const createdMs = Math.max(monthHours(now).first, hourStart(now) - 3 * HOUR_MS);
    const createdAt = new Date(createdMs).toISOString();
    await setAttributes(keys.server(server.accountId, server.id), {
      createdAt,
      history: [{ at: createdAt, status: 'active', priceCentsPerHour: stored!.priceCentsPerHour, priceMillicentsPerHour: price }],
    });

    const before = await api.call('GET', `/v1/servers/${server.id}/cost`, { token: server.token });
    expect(before.status, before.text).toBe(200);
    expect(before.body).toMatchObject({ soFarCents: 0, soFarMillicents: 0 });

    await runPassInProcess(new Date(now));
    const month = new Date(now).toISOString().slice(0, 7);
    const lines = (await ledgerOf(server.accountId))
      .filter((e) => e.type === 'charge' && String((e.reference as { hour: string }).hour).startsWith(month))
      .flatMap((e) => (e.reference as { lines: { serverId: string; millicents: number }[] }).lines)
      .filter((l) => l.serverId === server.id);
    const ledgerMillicents = lines.reduce((sum, l) => sum + l.millicents, 0);
    expect(lines.length).toBeGreaterThan(0);

    const cost = (await api.call('GET', `/v1/servers/${server.id}/cost`, { token: server.token })).body;
    expect(cost.soFarMillicents).toBe(ledgerMillicents);
    expect(cost.soFarCents).toBe(Math.floor(ledgerMillicents / 1000));
    // Every hour after the last one billed, to the month's end, at the exact price.
    const hoursToCome = (monthHours(now).last - lastBillableHour(now)) / HOUR_MS;
    expect(cost).toMatchObject({ month, hoursToCome, priceMillicentsPerHour: price });
    expect(cost.projectedMillicents).toBe(ledgerMillicents + hoursToCome * price);
    expect(cost.projectedCents).toBe(Math.floor((ledgerMillicents + hoursToCome * price) / 1000));
  });
});

describe('projection arithmetic', () => {
  const at = (iso: string) => Date.parse(iso);
  const server = (createdAt: string, price: number, more: { at: string; status: 'active' | 'suspended' }[] = []) => ({
    createdAt,
    history: [
      { at: createdAt, status: 'active' as const, priceCentsPerHour: Math.ceil(price / 1000), priceMillicentsPerHour: price },
      ...more.map((m) => ({ ...m, priceCentsPerHour: 1, priceMillicentsPerHour: price })),
    ],
  });

  it('counts to the end of the month, not into the next one', () => {
    // 30 November 22:30, billed through 21:00: this hour and the next are left of November.
    const owed = hoursOwedThisMonth(
      server('2026-11-30T10:00:00.000Z', 1_370),
      at('2026-11-30T21:00:00.000Z'),
      at('2026-11-30T22:30:00.000Z'),
    );
    expect(owed.map((h) => new Date(h.hour).toISOString())).toEqual(['2026-11-30T22:00:00.000Z', '2026-11-30T23:00:00.000Z']);
    // December has 31 days; February 2028 has 29.
    expect(hoursOwedThisMonth(server('2026-12-01T00:10:00.000Z', 1_000), null, at('2026-12-01T00:30:00.000Z'))).toHaveLength(31 * 24);
    expect(hoursOwedThisMonth(server('2028-02-01T00:00:00.000Z', 1_000), null, at('2028-02-01T00:30:00.000Z'))).toHaveLength(29 * 24);
    // A server created last month is owed from this month's first hour only.
    expect(hoursOwedThisMonth(server('2026-10-20T00:00:00.000Z', 1_000), null, at('2026-11-30T23:59:00.000Z'))).toHaveLength(30 * 24);
  });

  it('stops at a suspension and rounds down as the ledger does', () => {
    const owed = hoursOwedThisMonth(
      server('2026-11-30T10:00:00.000Z', 1_370, [{ at: '2026-11-30T12:30:00.000Z', status: 'suspended' }]),
      null,
      at('2026-11-30T11:10:00.000Z'),
    );
    expect(owed).toHaveLength(3); // 10, 11 and 12 (active for part of it)
    expect(projectMonth(2_500, owed, null)).toEqual({
      soFarCents: 2,
      soFarMillicents: 2_500,
      projectedCents: 6, // 2,500 + 3 × 1,370 = 6,610 millicents
      projectedMillicents: 6_610,
      hoursToCome: 3,
    });
  });

  it('applies the monthly cap as the pass does', () => {
    // Cap of 10 hours at 1,000: 8,500 paid leaves 1,500, whatever the hours to come.
    expect(
      projectMonth(
        8_500,
        Array.from({ length: 5 }, () => ({ millicents: 1_000 })),
        10,
      ),
    ).toMatchObject({
      projectedMillicents: 10_000,
      projectedCents: 10,
    });
  });
});
