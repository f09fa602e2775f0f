import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, expectEnvelope, type TestApi } from '../helpers/stack.ts';
import { BatchWriteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { getRaw, queryPartition } from '../helpers/db.ts';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { transact } from '../../shared/db/write.ts';
import { EVENT_TYPES, type EventType, eventItem, eventWrite } from '../../shared/webhooks/events.ts';
import { EVENT_SAMPLES, sampleServer } from '../helpers/event-samples.ts';
import { drainOutbox } from '../../shared/webhooks/dispatch.ts';
import { customer as newCustomer } from '../helpers/customer.ts';

/**
 * Scopes hold through events (docs/webhooks.md): the abuser is a key of the account that holds
 * webhooks:read or webhooks:write but not billing:read (or servers:read), and tries to read through
 * events and endpoints what GET /v1/account/transactions, /v1/invoices or /v1/servers refuse it:
 * the list, paging, a cursor of a fuller key, an id learnt elsewhere, `?type=`, an endpoint of its
 * own, and re-pointing an endpoint the owner made. Events come from the real changes (an admin
 * credit, a sandbox top-up and an expired checkout, a deploy on the panel simulator); balance.low
 * is written with the pass's own event writer (the pass itself: tests/integration/events.test.ts).
 * No dispatcher runs in this process: the fan-out is run here with drainOutbox.
 */
let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0 }, webhooks: false });
});
afterAll(async () => api?.stop());

const HOOK = 'http://127.0.0.1:9/hook';
/** The scope matrix as docs/webhooks.md states it (written out here, not imported: the test holds the code to it). */
const EVENT_SCOPES: Record<EventType, string> = {
  'server.created': 'servers:read',
  'server.resized': 'servers:read',
  'server.suspended': 'servers:read',
  'server.unsuspended': 'servers:read',
  'server.deleted': 'servers:read',
  'server.installed': 'servers:read',
  'server.reinstalled': 'servers:read',
  'server.install_failed': 'servers:read',
  'balance.low': 'billing:read',
  'invoice.paid': 'billing:read',
  'invoice.void': 'billing:read',
  'invoice.refunded': 'billing:read',
  'invoice.disputed': 'billing:read',
  'credit_note.issued': 'billing:read',
  'ledger.entry': 'billing:read',
  'account.debt': 'billing:read',
  'account.debt_settled': 'billing:read',
  'balance.runway_warning': 'billing:read',
  'auto_topup.failed': 'billing:read',
  'auto_topup.disabled': 'billing:read',
  'webhook_endpoint.disabled': 'webhooks:read',
  'api_key.created': 'account:read',
  'account.sftp_password_set': 'servers:read',
  'account.email_change_requested': 'account:read',
  'account.email_changed': 'account:read',
};
/** What the endpoint-writing keys below read besides webhooks: not billing, not account (api_key.created). */
const WRITER_READS = ['webhooks:read', 'servers:read'];
const BILLING_TYPES = EVENT_TYPES.filter((t) => EVENT_SCOPES[t] === 'billing:read');

interface EventView {
  id: string;
  type: EventType;
}

async function customer(email: string) {
  const { token, id } = await newCustomer(api, email);
  const key = async (scopes: string[]) => {
    const res = await api.call('POST', '/v1/keys', { token, body: { name: scopes.join(' '), scopes } });
    expect(res.status, res.text).toBe(201);
    return res.body.secret as string;
  };
  return { token, id: id as string, key };
}

/** Every event a credential is shown, newest first, through the API's paging at `limit` a page. */
async function eventsOf(token: string, limit: number, type?: string): Promise<EventView[]> {
  const all: EventView[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 200; pages++) {
    const query = new URLSearchParams({ limit: String(limit), ...(cursor ? { cursor } : {}), ...(type ? { type } : {}) });
    const page = await api.call('GET', `/v1/events?${query}`, { token });
    expect(page.status, page.text).toBe(200);
    all.push(...page.body.data);
    cursor = page.body.nextCursor;
    if (!cursor) return all;
  }
  throw new Error('the listing did not end');
}

/** One account with an event of every type but webhook_endpoint.disabled, billing and server events interleaved. */
async function accountWithEvents(email: string) {
  const c = await customer(email);
  const grant = async (amountCents: number) =>
    expect((await api.call('POST', `/v1/admin/users/${c.id}/credits`, { body: { amountCents, note: 'scope test' } })).status).toBe(200);
  await grant(10_000);
  const server = await api.call('POST', '/v1/servers', {
    token: c.token,
    body: { name: 'scoped', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
  });
  expect(server.status, server.text).toBe(201);
  const paid = (await api.call('POST', '/v1/billing/checkout', { token: c.token, body: { amountCents: 1000 } })).body.invoiceId;
  await api.call('POST', `/dev/checkout/${paid}/complete`, { token: null, body: { outcome: 'paid' } });
  // invoice.refunded through the admin refund the sandbox simulates; invoice.disputed written with the events' own writer.
  expect((await api.call('POST', `/v1/admin/invoices/${paid}/refund`, { body: { amountCents: 100, reason: 'scope test' } })).status).toBe(
    200,
  );
  const paidView = (await api.call('GET', `/v1/invoices/${paid}`, { token: c.token })).body;
  await transact([eventWrite(c.id, 'invoice.disputed', { ...paidView, status: 'disputed', disputedCents: 100 })]);
  const voided = (await api.call('POST', '/v1/billing/checkout', { token: c.token, body: { amountCents: 1000 } })).body.invoiceId;
  await api.call('POST', `/dev/checkout/${voided}/complete`, { token: null, body: { outcome: 'expired' } });
  await transact([eventWrite(c.id, 'balance.low', { balanceCents: 499, thresholdCents: 500 })]);
  // The auto top-up's events with their own writer (the real ones: tests/integration/auto-topup.test.ts).
  await transact([
    eventWrite(c.id, 'auto_topup.failed', { ...EVENT_SAMPLES['auto_topup.failed'](), invoiceId: voided }),
    eventWrite(c.id, 'auto_topup.disabled', EVENT_SAMPLES['auto_topup.disabled']()),
  ]);
  // The debt events with their own writer too (the real ones: tests/integration/debt.test.ts).
  await transact([
    eventWrite(c.id, 'account.debt', { ...EVENT_SAMPLES['account.debt'](), invoiceId: paid }),
    eventWrite(c.id, 'account.debt_settled', { ...EVENT_SAMPLES['account.debt_settled'](), invoiceId: voided }),
  ]);
  // The runway warning with its own writer (the real one: tests/integration/grace-period.test.ts).
  await transact([eventWrite(c.id, 'balance.runway_warning', EVENT_SAMPLES['balance.runway_warning']())]);
  await grant(1);
  const all = await eventsOf(c.token, 100);
  // The session holds every scope: it sees every event, and the fixture has each billing type.
  expect(new Set(all.map((e) => e.type))).toEqual(new Set([...BILLING_TYPES, 'server.created']));
  return { ...c, all };
}

describe('GET /v1/events shows a credential only what its scopes read elsewhere', () => {
  it('webhooks:read alone sees no ledger, balance or invoice event: not listed at any page size, not by id, not by ?type=', async () => {
    const a = await accountWithEvents('scopes-reader@example.com');
    const reader = await a.key(['webhooks:read']);
    // What the same key gets from the billing routes themselves.
    expectEnvelope(await api.call('GET', '/v1/account/transactions', { token: reader }), 403, 'forbidden');

    for (const limit of [1, 2, 100]) expect(await eventsOf(reader, limit)).toEqual([]);
    for (const event of a.all) {
      const res = await api.call('GET', `/v1/events/${event.id}`, { token: reader });
      // Like an unknown id: nothing tells that the id exists or what it is.
      expectEnvelope(res, 404, 'not_found');
      expect(res.text).not.toContain(event.type);
    }
    for (const type of BILLING_TYPES) {
      const res = await api.call('GET', `/v1/events?type=${type}`, { token: reader });
      expectEnvelope(res, 403, 'forbidden');
      expect(res.body.error.details).toEqual({ requiredScope: 'billing:read', eventType: type });
    }
    // A cursor made by the session's listing does not widen what the key is shown.
    const first = await api.call('GET', '/v1/events?limit=1', { token: a.token });
    const after = await api.call('GET', `/v1/events?limit=100&cursor=${encodeURIComponent(first.body.nextCursor)}`, {
      token: reader,
    });
    expect(after.status).toBe(200);
    expect(after.body.data).toEqual([]);
  });

  it('each credential sees exactly the session’s list cut to its readable types, in order, through every page', async () => {
    const a = await accountWithEvents('scopes-mixed@example.com');
    for (const scopes of [
      ['webhooks:read', 'servers:read'],
      ['webhooks:read', 'billing:read'],
      ['webhooks:read', 'billing:read', 'servers:read'],
    ]) {
      const token = await a.key(scopes);
      const expected = a.all.filter((e) => scopes.includes(EVENT_SCOPES[e.type]));
      expect(expected.length).toBeGreaterThan(0);
      for (const limit of [1, 3, 100]) expect(await eventsOf(token, limit), `${scopes} at ${limit}`).toEqual(expected);
      for (const event of a.all) {
        const res = await api.call('GET', `/v1/events/${event.id}`, { token });
        expect(res.status, `${scopes} ${event.type}`).toBe(scopes.includes(EVENT_SCOPES[event.type]) ? 200 : 404);
      }
    }
  });

  it('a sparse filter is bounded: a page cut short carries a cursor, and paging still finds every readable event', async () => {
    const c = await customer('scopes-sparse@example.com');
    // 1,200 unreadable events between two readable ones: more than one page's bounded reads.
    await transact([eventWrite(c.id, 'server.created', sampleServer({ name: 'oldest' }))]);
    // Written in batches (the writer's items, without the outbox entry): only the listing reads them.
    for (let i = 0; i < 1200; i += 25) {
      const items = Array.from({ length: 25 }, () => {
        const { GSI2PK: _pk, GSI2SK: _sk, ...item } = eventItem(c.id, 'ledger.entry', EVENT_SAMPLES['ledger.entry']());
        return { PutRequest: { Item: item } };
      });
      await db().send(new BatchWriteCommand({ RequestItems: { [tableName()]: items } }));
    }
    await transact([
      eventWrite(c.id, 'server.deleted', sampleServer({ name: 'newest', status: 'deleted', deletedAt: new Date().toISOString() })),
    ]);
    const walk = async (token: string, query: string) => {
      let cursor: string | null = null;
      const seen: string[] = [];
      let pages = 0;
      do {
        const res = await api.call('GET', `/v1/events?limit=5${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { token });
        expect(res.status).toBe(200);
        seen.push(...res.body.data.map((e: EventView) => e.type));
        cursor = res.body.nextCursor;
        pages++;
      } while (cursor);
      return { seen, pages };
    };
    // Each page reads at most 10 queries of 100 items, so 1,202 take more than one page: the scope
    // filter of a narrow key, and a `?type=` of the session, alike.
    const narrow = await walk(await c.key(['webhooks:read', 'servers:read']), '');
    expect(narrow.seen).toEqual(['server.deleted', 'server.created']);
    expect(narrow.pages).toBeGreaterThan(1);
    const byType = await walk(c.token, '&type=server.created');
    expect(byType.seen).toEqual(['server.created']);
    expect(byType.pages).toBeGreaterThan(1);
  }, 60_000);
});

describe('an endpoint is sent only the types its creating credential could read', () => {
  it('webhooks:write cannot subscribe to billing events, and an endpoint it makes for "every type" gets none of them', async () => {
    const c = await customer('scopes-writer@example.com');
    const writer = await c.key(['webhooks:write', 'webhooks:read', 'servers:read']);
    for (const type of BILLING_TYPES) {
      const res = await api.call('POST', '/v1/webhook-endpoints', { token: writer, body: { url: HOOK, events: [type, 'server.created'] } });
      expectEnvelope(res, 403, 'forbidden');
      expect(res.body.error.details).toEqual({ requiredScope: 'billing:read', eventType: type });
    }
    // Refused creates stored nothing, not even a count.
    expect(await queryPartition(keys.webhookEndpointPrefix(c.id))).toEqual([]);
    expect((await getRaw(keys.account(c.id)))!.webhookEndpointCount ?? 0).toBe(0);

    const own = await api.call('POST', '/v1/webhook-endpoints', { token: writer, body: { url: HOOK } });
    expect(own.status, own.text).toBe(201);
    expect(own.body.events).toEqual([]);
    expect(own.body.receivedTypes).toEqual(EVENT_TYPES.filter((t) => WRITER_READS.includes(EVENT_SCOPES[t])));
    const full = await api.call('POST', '/v1/webhook-endpoints', { token: c.token, body: { url: HOOK } });
    expect(full.body.receivedTypes).toEqual(EVENT_TYPES);

    // A billing event and a server event, fanned out.
    await api.call('POST', `/v1/admin/users/${c.id}/credits`, { body: { amountCents: 5000, note: 'fan-out' } });
    await transact([eventWrite(c.id, 'server.created', sampleServer())]);
    await drainOutbox();
    const typesTo = async (endpointId: string) =>
      ((await api.call('GET', `/v1/webhook-endpoints/${endpointId}/deliveries`, { token: c.token })).body.data as { eventType: string }[])
        .map((d) => d.eventType)
        .sort();
    expect(await typesTo(own.body.id)).toEqual(['server.created']);
    // The session's endpoint also gets the writer key's api_key.created (account:read, which the key lacks).
    expect(await typesTo(full.body.id)).toEqual(['api_key.created', 'ledger.entry', 'server.created']);
  });

  it('a key cannot re-point or re-tune an endpoint that carries events it cannot read; it can its own', async () => {
    const c = await customer('scopes-repoint@example.com');
    const writer = await c.key(['webhooks:write', 'webhooks:read', 'servers:read']);
    const owners = (await api.call('POST', '/v1/webhook-endpoints', { token: c.token, body: { url: HOOK } })).body;
    const before = await getRaw(keys.webhookEndpoint(c.id, owners.id));
    for (const body of [{ url: 'http://127.0.0.1:9/attacker' }, { events: ['server.created'] }, { events: [] }]) {
      const res = await api.call('PATCH', `/v1/webhook-endpoints/${owners.id}`, { token: writer, body });
      expectEnvelope(res, 403, 'forbidden');
      expect(res.body.error.details.requiredScope).toBe('billing:read');
    }
    expect(await getRaw(keys.webhookEndpoint(c.id, owners.id))).toEqual(before);
    // What does not move events elsewhere stays open to webhooks:write.
    expect((await api.call('PATCH', `/v1/webhook-endpoints/${owners.id}`, { token: writer, body: { description: 'ops' } })).status).toBe(
      200,
    );

    // An endpoint stored before scopes were recorded was sent every type, and still is; it is guarded alike.
    const legacy = (await api.call('POST', '/v1/webhook-endpoints', { token: c.token, body: { url: HOOK } })).body;
    const { scopes: _recorded, ...asStoredBefore } = (await getRaw(keys.webhookEndpoint(c.id, legacy.id)))!;
    await db().send(new PutCommand({ TableName: tableName(), Item: asStoredBefore }));
    const stored = await getRaw(keys.webhookEndpoint(c.id, legacy.id));
    expect(stored!.scopes).toBeUndefined();
    expect((await api.call('GET', `/v1/webhook-endpoints/${legacy.id}`, { token: c.token })).body.receivedTypes).toEqual(EVENT_TYPES);
    expectEnvelope(
      await api.call('PATCH', `/v1/webhook-endpoints/${legacy.id}`, { token: writer, body: { url: 'http://127.0.0.1:9/attacker' } }),
      403,
      'forbidden',
    );

    // The key's own endpoint: it changes it freely within what it reads.
    const own = (await api.call('POST', '/v1/webhook-endpoints', { token: writer, body: { url: HOOK, events: ['server.created'] } })).body;
    const moved = await api.call('PATCH', `/v1/webhook-endpoints/${own.id}`, {
      token: writer,
      body: { url: 'http://127.0.0.1:9/new', events: [] },
    });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.receivedTypes).toEqual(EVENT_TYPES.filter((t) => WRITER_READS.includes(EVENT_SCOPES[t])));
    // The owner widens it knowingly: its scopes are recorded from then on.
    const widened = await api.call('PATCH', `/v1/webhook-endpoints/${own.id}`, { token: c.token, body: { events: ['ledger.entry'] } });
    expect(widened.body.receivedTypes).toEqual(['ledger.entry']);
  });
});
