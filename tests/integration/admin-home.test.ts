import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { customer, type Customer } from '../helpers/customer.ts';
import { expectLedgerInvariant, ledgerOf } from '../helpers/money.ts';
import { resetConfig } from '../../shared/config/env.ts';
import { appendLedger } from '../../shared/ledger/index.ts';

/**
 * GET /v1/admin/home against what its lists and the ledger say, after deploys, a suspension,
 * top-ups (through the sandbox's signed webhook), a refund, a grant and a replayed payment.
 * The table is this file's own, so "the whole ledger" is every account the admin list holds.
 */
let api: TestApi;

beforeAll(async () => {
  delete process.env.STRIPE_SECRET_KEY;
  delete process.env.STRIPE_WEBHOOK_SECRET;
  delete process.env.STRIPE_API_URL;
  resetConfig();
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0 } });
});
afterAll(async () => api?.stop());
afterEach(async () => {
  await expectLedgerInvariant();
});

type Home = {
  at: string;
  money: Record<'today' | 'month', { topUpCents: number; topUps: number; returnedCents: number; revenueCents: number }>;
  servers: { active: number; suspended: number; complete: boolean };
  accounts: { count: number; complete: boolean };
  pendingRepairs: { count: number; complete: boolean };
  webhookBacklog: { undispatched: number; deliveriesDue: number; complete: boolean };
  panels: { id: string; name: string; enabled: boolean; health: string; lastTestAt: string | null; serverCount: number }[];
};

async function home(): Promise<Home> {
  const res = await api.call('GET', '/v1/admin/home');
  expect(res.status, res.text).toBe(200);
  return res.body;
}

/** Every row of an admin list, page by page. */
async function all<T>(path: string): Promise<T[]> {
  const rows: T[] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const res = await api.call('GET', `${path}${sep}limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(res.status, res.text).toBe(200);
    rows.push(...res.body.data);
    cursor = res.body.nextCursor;
  } while (cursor);
  return rows;
}

/** The money figures summed straight from every account's ledger, for entries whose time starts with `prefix`. */
async function ledgerMoney(prefix: string) {
  const accounts = await all<{ id: string }>('/v1/admin/users');
  let topUpCents = 0;
  let topUps = 0;
  let returnedCents = 0;
  for (const { id } of accounts) {
    for (const e of await ledgerOf(id)) {
      if (!String(e.at).startsWith(prefix)) continue;
      if (e.type === 'topup') {
        topUpCents += Number(e.amountCents);
        topUps += 1;
        // A reversal's card money is its `moneyCents` (the bonus it also takes back is not money).
      } else if (e.type === 'refund' || e.type === 'dispute') returnedCents -= Number(e.moneyCents);
    }
  }
  return { topUpCents, topUps, returnedCents, revenueCents: topUpCents - returnedCents };
}

async function expectHomeEqualsListsAndLedger(h: Home) {
  expect(h.money.today).toEqual(await ledgerMoney(h.at.slice(0, 10)));
  expect(h.money.month).toEqual(await ledgerMoney(h.at.slice(0, 7)));
  expect(h.servers).toEqual({
    active: (await all('/v1/admin/servers?status=active')).length,
    suspended: (await all('/v1/admin/servers?status=suspended')).length,
    complete: true,
  });
  expect(h.accounts).toEqual({ count: (await all('/v1/admin/users')).length, complete: true });
  const instances = (await api.call('GET', '/v1/admin/instances')).body.data as { id: string; serverCount: number }[];
  expect(h.panels.map((p) => [p.id, p.serverCount])).toEqual(instances.map((i) => [i.id, i.serverCount]));
}

async function topUp(c: Customer, amountCents: number): Promise<string> {
  const res = await api.call('POST', '/v1/billing/checkout', { token: c.token, body: { amountCents } });
  expect(res.status, res.text).toBe(201);
  const done = await api.call('POST', `/dev/checkout/${res.body.invoiceId}/complete`, { token: null, body: { outcome: 'paid' } });
  expect(done.body).toEqual({ received: true, outcome: 'credited' });
  return res.body.invoiceId;
}

async function deploy(c: Customer, name: string): Promise<string> {
  const res = await api.call('POST', '/v1/servers', { token: c.token, body: { name, eggId: 1, ramMb: 512, cpuPercent: 50, diskMb: 1024 } });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

const state: { a?: Customer; b?: Customer; invoice?: string; servers: string[] } = { servers: [] };

describe('the admin home', () => {
  it('is for admins only', async () => {
    const c = await customer(api, 'home-outsider@example.com');
    expect((await api.call('GET', '/v1/admin/home', { token: c.token })).status).toBe(403);
  });

  it('starts with no money and the lists as they are', async () => {
    const h = await home();
    expect(h.money.today).toEqual({ topUpCents: 0, topUps: 0, returnedCents: 0, revenueCents: 0 });
    expect(h.servers).toEqual({ active: 0, suspended: 0, complete: true });
    expect(h.pendingRepairs).toEqual({ count: 0, complete: true });
    expect(h.panels.length).toBeGreaterThan(0);
    await expectHomeEqualsListsAndLedger(h);
  });

  it('after top-ups, a grant and deploys: money is the top-ups only, servers as listed', async () => {
    state.a = await customer(api, 'home-a@example.com');
    state.b = await customer(api, 'home-b@example.com', { grantCents: 5_000, grantBy: 'admin' });
    state.invoice = await topUp(state.a, 1_000);
    await topUp(state.b, 2_500);
    state.servers.push(await deploy(state.a, 'home one'), await deploy(state.b, 'home two'), await deploy(state.b, 'home three'));
    const h = await home();
    // Granted credit, the bonus and the deploys' charges are not money received.
    expect(h.money.today).toEqual({ topUpCents: 3_500, topUps: 2, returnedCents: 0, revenueCents: 3_500 });
    expect(h.servers).toMatchObject({ active: 3, suspended: 0 });
    expect(h.panels.reduce((n, p) => n + p.serverCount, 0)).toBe(3);
    await expectHomeEqualsListsAndLedger(h);
  });

  it('a suspension moves a server from active to suspended', async () => {
    const res = await api.call('POST', `/v1/admin/servers/${state.servers[1]}/suspend`);
    expect(res.status, res.text).toBe(200);
    const h = await home();
    expect(h.servers).toMatchObject({ active: 2, suspended: 1 });
    await expectHomeEqualsListsAndLedger(h);
  });

  it('a refund lowers revenue by the card money only (not the bonus it takes back); a replayed payment counts once', async () => {
    const refund = await api.call('POST', `/v1/admin/invoices/${state.invoice}/refund`, { body: { amountCents: 400, reason: 'asked' } });
    expect(refund.status, refund.text).toBe(200);
    const replay = await api.call('POST', `/dev/checkout/${state.invoice}/complete`, { token: null, body: { outcome: 'paid' } });
    expect(replay.body.outcome).not.toBe('credited');
    const h = await home();
    expect(h.money.today).toEqual({ topUpCents: 3_500, topUps: 2, returnedCents: 400, revenueCents: 3_100 });
    await expectHomeEqualsListsAndLedger(h);
  });

  it('counts a month by UTC day: another day of this month in the month only, last month in neither', async () => {
    const before = await home();
    const today = before.at.slice(0, 10);
    const otherDay = `${today.slice(0, 8)}${today.endsWith('-01') ? '02' : '01'}T12:00:00.000Z`;
    const lastMonth = new Date(Date.UTC(Number(today.slice(0, 4)), Number(today.slice(5, 7)) - 2, 15)).toISOString();
    await appendLedger(state.a!.id, [{ type: 'topup', amountCents: 700, idempotencyKey: 'home-test:other-day' }], {
      now: new Date(otherDay),
    });
    await appendLedger(state.a!.id, [{ type: 'topup', amountCents: 900, idempotencyKey: 'home-test:last-month' }], {
      now: new Date(lastMonth),
    });
    const h = await home();
    expect(h.money.today).toEqual(before.money.today);
    expect(h.money.month).toEqual({ ...before.money.month, topUpCents: 3_500 + 700, topUps: 3, revenueCents: 3_100 + 700 });
    await expectHomeEqualsListsAndLedger(h);
  });
});
