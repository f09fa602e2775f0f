import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { startTestApi, expectEnvelope, type TestApi } from '../helpers/stack.ts';
import { getRaw, queryPartition, setAttributes } from '../helpers/db.ts';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import type { WebhookDeliveryItem } from '../../shared/db/items.ts';
import { newId } from '../../shared/ids.ts';
import { customer } from '../helpers/customer.ts';

/**
 * The API of outbound webhook endpoints: CRUD, scopes, the secret shown once, rotation, deliveries.
 * Deliveries are stored here as the dispatcher leaves them, and no dispatcher runs in this process,
 * so what the API shows and changes is all that moves them (delivery itself:
 * tests/integration/webhook-delivery.test.ts).
 */
let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({ webhooks: false });
});
afterAll(async () => api?.stop());

const HOOK = 'http://127.0.0.1:9/hook';

describe('webhook endpoints', () => {
  it('create shows the secret once; get, list and the activity log never show it', async () => {
    const { token } = await customer(api, 'wh-crud@example.com');
    const created = await api.call('POST', '/v1/webhook-endpoints', {
      token,
      body: { url: HOOK, events: ['server.created', 'invoice.paid'], description: 'ops' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      url: HOOK,
      events: ['server.created', 'invoice.paid'],
      description: 'ops',
      enabled: true,
      disabledReason: null,
      failingSince: null,
      previousSecretExpiresAt: null,
    });
    const secret = created.body.secret as string;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    const one = await api.call('GET', `/v1/webhook-endpoints/${created.body.id}`, { token });
    expect(one.status).toBe(200);
    expect(one.body).toEqual(Object.fromEntries(Object.entries(created.body).filter(([k]) => k !== 'secret')));
    const list = await api.call('GET', '/v1/webhook-endpoints', { token });
    expect(list.body.data.map((e: { id: string }) => e.id)).toEqual([created.body.id]);
    const logs = await api.call('GET', '/v1/account/logs', { token });
    expect(logs.body.data[0]).toMatchObject({
      action: 'webhooks.create',
      target: `webhook-endpoint:${created.body.id}`,
      result: 'success',
    });
    for (const text of [one.text, list.text, logs.text]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain('whsec_');
    }
  });

  it('omitted or empty events mean every type; repeated or unknown types are refused', async () => {
    const { token } = await customer(api, 'wh-events@example.com');
    const all = await api.call('POST', '/v1/webhook-endpoints', { token, body: { url: HOOK } });
    expect(all.body.events).toEqual([]);
    expect(all.body.description).toBeNull();
    expectEnvelope(
      await api.call('POST', '/v1/webhook-endpoints', { token, body: { url: HOOK, events: ['server.created', 'server.created'] } }),
      400,
      'validation_failed',
    );
    expectEnvelope(
      await api.call('POST', '/v1/webhook-endpoints', { token, body: { url: HOOK, events: ['nope'] } }),
      400,
      'validation_failed',
    );
  });

  it('url rules: loopback http locally, https anywhere; other http, ftp and credentials refused', async () => {
    const { token } = await customer(api, 'wh-urls@example.com');
    for (const url of ['http://127.0.0.1:4000/in', 'http://localhost:4000/in', 'https://hooks.example.com/in']) {
      expect((await api.call('POST', '/v1/webhook-endpoints', { token, body: { url } })).status, url).toBe(201);
    }
    for (const url of ['http://example.com/hook', 'ftp://example.com/hook', 'https://user:pw@example.com/hook', 'not a url']) {
      const res = await api.call('POST', '/v1/webhook-endpoints', { token, body: { url } });
      expectEnvelope(res, 400, 'validation_failed');
      expect(res.body.error.details.issues[0].field).toBe('body.url');
    }
    const [first] = (await api.call('GET', '/v1/webhook-endpoints', { token })).body.data;
    expectEnvelope(
      await api.call('PATCH', `/v1/webhook-endpoints/${first.id}`, { token, body: { url: 'http://example.com/x' } }),
      400,
      'validation_failed',
    );
  });

  it('at most 10 endpoints per account, also when created at once; a deletion makes room', async () => {
    const { token, id } = await customer(api, 'wh-limit@example.com');
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => api.call('POST', '/v1/webhook-endpoints', { token, body: { url: `${HOOK}/${i}` } })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(10);
    for (const r of results.filter((r) => r.status !== 201)) expectEnvelope(r, 422, 'limit_exceeded');
    expect((await getRaw(keys.account(id)))!.webhookEndpointCount).toBe(10);
    const listed = await api.call('GET', '/v1/webhook-endpoints?limit=100', { token });
    expect(listed.body.data).toHaveLength(10);

    // Newest first, and paged with a cursor.
    const page1 = await api.call('GET', '/v1/webhook-endpoints?limit=4', { token });
    const page2 = await api.call('GET', `/v1/webhook-endpoints?limit=4&cursor=${encodeURIComponent(page1.body.nextCursor)}`, { token });
    const ids = [...page1.body.data, ...page2.body.data].map((e: { id: string }) => e.id);
    expect(ids).toEqual(listed.body.data.slice(0, 8).map((e: { id: string }) => e.id));
    const created = listed.body.data.map((e: { createdAt: string }) => e.createdAt);
    expect([...created].sort().reverse()).toEqual(created);

    const gone = await api.call('DELETE', `/v1/webhook-endpoints/${listed.body.data[0].id}`, { token });
    expect(gone.body).toEqual({ id: listed.body.data[0].id, deleted: true, stoppedDeliveries: 0 });
    expectEnvelope(await api.call('GET', `/v1/webhook-endpoints/${listed.body.data[0].id}`, { token }), 404, 'not_found');
    expectEnvelope(await api.call('DELETE', `/v1/webhook-endpoints/${listed.body.data[0].id}`, { token }), 404, 'not_found');
    expect((await api.call('POST', '/v1/webhook-endpoints', { token, body: { url: HOOK } })).status).toBe(201);
    expectEnvelope(await api.call('POST', '/v1/webhook-endpoints', { token, body: { url: HOOK } }), 422, 'limit_exceeded');
  });

  it('PATCH changes what is given; enabling clears why the service disabled it', async () => {
    const { token, id } = await customer(api, 'wh-patch@example.com');
    const { body: ep } = await api.call('POST', '/v1/webhook-endpoints', { token, body: { url: HOOK, description: 'first' } });
    const changed = await api.call('PATCH', `/v1/webhook-endpoints/${ep.id}`, {
      token,
      body: { url: 'https://hooks.example.com/new', events: ['balance.low'], description: null, enabled: false },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({
      url: 'https://hooks.example.com/new',
      events: ['balance.low'],
      description: null,
      enabled: false,
    });
    expect(changed.text).not.toContain('whsec_');
    // As the dispatcher leaves an endpoint it gave up on.
    const failingSince = new Date(Date.now() - 3 * 86_400_000).toISOString();
    await db().send(
      new PutCommand({
        TableName: tableName(),
        Item: { ...(await getRaw(keys.webhookEndpoint(id, ep.id))), enabled: false, disabledReason: 'failing', failingSince },
      }),
    );
    expect((await api.call('GET', `/v1/webhook-endpoints/${ep.id}`, { token })).body).toMatchObject({
      enabled: false,
      disabledReason: 'failing',
      failingSince,
    });
    const enabled = await api.call('PATCH', `/v1/webhook-endpoints/${ep.id}`, { token, body: { enabled: true } });
    expect(enabled.body).toMatchObject({ enabled: true, disabledReason: null, failingSince: null, url: 'https://hooks.example.com/new' });
    expectEnvelope(
      await api.call('PATCH', '/v1/webhook-endpoints/00000000-0000-4000-8000-000000000000', { token, body: { enabled: true } }),
      404,
      'not_found',
    );
  });

  it('rotation: a new secret once, the previous one kept 24 hours, neither in the activity log', async () => {
    const { token, id } = await customer(api, 'wh-rotate@example.com');
    const { body: ep } = await api.call('POST', '/v1/webhook-endpoints', { token, body: { url: HOOK } });
    const before = Date.now();
    const rotated = await api.call('POST', `/v1/webhook-endpoints/${ep.id}/rotate-secret`, { token });
    expect(rotated.status).toBe(200);
    expect(Object.keys(rotated.body).sort()).toEqual(['previousSecretExpiresAt', 'secret']);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(ep.secret);
    const expires = Date.parse(rotated.body.previousSecretExpiresAt);
    expect(expires - before).toBeGreaterThanOrEqual(24 * 3_600_000 - 1000);
    expect(expires - Date.now()).toBeLessThanOrEqual(24 * 3_600_000 + 1000);
    const stored = (await getRaw(keys.webhookEndpoint(id, ep.id)))!;
    expect(stored).toMatchObject({
      secret: rotated.body.secret,
      previousSecret: ep.secret,
      previousSecretExpiresAt: rotated.body.previousSecretExpiresAt,
    });
    const view = await api.call('GET', `/v1/webhook-endpoints/${ep.id}`, { token });
    expect(view.body.previousSecretExpiresAt).toBe(rotated.body.previousSecretExpiresAt);
    const logs = await api.call('GET', '/v1/account/logs', { token });
    expect(logs.body.data[0]).toMatchObject({ action: 'webhooks.rotate', target: `webhook-endpoint:${ep.id}` });
    for (const text of [view.text, logs.text]) {
      expect(text).not.toContain(rotated.body.secret);
      expect(text).not.toContain(ep.secret);
    }
  });

  it('an idempotent replay of a create returns the endpoint without its secret', async () => {
    const { token } = await customer(api, 'wh-idem@example.com');
    const headers = { 'idempotency-key': 'create-hook-1' };
    const first = await api.call('POST', '/v1/webhook-endpoints', { token, headers, body: { url: HOOK } });
    const again = await api.call('POST', '/v1/webhook-endpoints', { token, headers, body: { url: HOOK } });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.id).toBe(first.body.id);
    expect(again.body.secret).toBeUndefined();
    expect((await api.call('GET', '/v1/webhook-endpoints', { token })).body.data).toHaveLength(1);
  });

  it('scopes: webhooks:read reads, webhooks:write changes; a key with only servers:read gets 403', async () => {
    const { token } = await customer(api, 'wh-scopes@example.com');
    const key = async (scopes: string[]) =>
      (await api.call('POST', '/v1/keys', { token, body: { name: scopes.join(' '), scopes } })).body.secret as string;
    const serversOnly = await key(['servers:read']);
    const reader = await key(['webhooks:read']);
    const writer = await key(['webhooks:write']);
    const { body: ep } = await api.call('POST', '/v1/webhook-endpoints', { token: writer, body: { url: HOOK } });
    expect(ep.id).toBeDefined();
    for (const [method, path] of [
      ['GET', '/v1/webhook-endpoints'],
      ['GET', `/v1/webhook-endpoints/${ep.id}`],
      ['GET', '/v1/events'],
      ['POST', `/v1/webhook-endpoints/${ep.id}/rotate-secret`],
      ['DELETE', `/v1/webhook-endpoints/${ep.id}`],
    ] as const) {
      expectEnvelope(await api.call(method, path, { token: serversOnly }), 403, 'forbidden');
    }
    expect((await api.call('GET', `/v1/webhook-endpoints/${ep.id}`, { token: reader })).status).toBe(200);
    expect((await api.call('GET', '/v1/events', { token: reader })).status).toBe(200);
    expectEnvelope(await api.call('POST', `/v1/webhook-endpoints/${ep.id}/rotate-secret`, { token: reader }), 403, 'forbidden');
    expectEnvelope(await api.call('GET', '/v1/webhook-endpoints', { token: writer }), 403, 'forbidden');
    // Sessions hold every scope of the account.
    expect((await api.call('GET', '/v1/webhook-endpoints', { token })).status).toBe(200);
  });

  it("another account's endpoint is 404 like an unknown one", async () => {
    const a = await customer(api, 'wh-owner@example.com');
    const b = await customer(api, 'wh-other@example.com');
    const { body: ep } = await api.call('POST', '/v1/webhook-endpoints', { token: a.token, body: { url: HOOK } });
    for (const [method, path] of [
      ['GET', `/v1/webhook-endpoints/${ep.id}`],
      ['PATCH', `/v1/webhook-endpoints/${ep.id}`],
      ['DELETE', `/v1/webhook-endpoints/${ep.id}`],
      ['POST', `/v1/webhook-endpoints/${ep.id}/rotate-secret`],
      ['GET', `/v1/webhook-endpoints/${ep.id}/deliveries`],
    ] as const) {
      const res = await api.call(method, path, { token: b.token, ...(method === 'PATCH' ? { body: { enabled: false } } : {}) });
      expectEnvelope(res, 404, 'not_found');
    }
    expect((await api.call('GET', '/v1/webhook-endpoints', { token: b.token })).body.data).toEqual([]);
    expect((await api.call('GET', `/v1/webhook-endpoints/${ep.id}`, { token: a.token })).body.enabled).toBe(true);
  });
});

describe('bad input never stores a bad row', () => {
  // `new URL` percent-encodes what is not ASCII: `é` is stored as `%C3%A9`, six characters.
  const ORIGIN = 'https://hooks.example.com/';
  const encodedLength = (n: number) => ORIGIN.length + 6 * n;

  it('a url under 2,048 characters as sent but over it once encoded is 400 on create and PATCH, and stores nothing', async () => {
    const { token, id } = await customer(api, 'wh-long-url@example.com');
    const sent = `${ORIGIN}${'é'.repeat(994)}`; // 1,020 characters, as the report found; 5,990 once encoded
    expect(sent.length).toBeLessThan(2048);
    for (const idempotencyKey of [undefined, 'long-url-1']) {
      const res = await api.call('POST', '/v1/webhook-endpoints', {
        token,
        body: { url: sent },
        ...(idempotencyKey ? { headers: { 'idempotency-key': idempotencyKey } } : {}),
      });
      expectEnvelope(res, 400, 'validation_failed');
      expect(res.body.error.details.issues[0].field).toBe('body.url');
      expect(res.body.error.message).toContain(`this one is ${encodedLength(994)}`);
    }
    // Nothing stored: no endpoint, no count taken from the limit of 10.
    expect(await queryPartition(keys.webhookEndpointPrefix(id))).toEqual([]);
    expect((await getRaw(keys.account(id)))!.webhookEndpointCount ?? 0).toBe(0);
    const list = await api.call('GET', '/v1/webhook-endpoints', { token });
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([]);

    // At the bound once encoded: stored as encoded, shown whole; one character more is refused.
    const fits = Math.floor((2048 - ORIGIN.length) / 6);
    const atBound = `${ORIGIN}${'é'.repeat(fits)}${'a'.repeat(2048 - encodedLength(fits))}`;
    const created = await api.call('POST', '/v1/webhook-endpoints', { token, body: { url: atBound } });
    expect(created.status, created.text).toBe(201);
    expect(created.body.url).toHaveLength(2048);
    expect(created.body.url).toBe(new URL(atBound).href);
    expectEnvelope(await api.call('POST', '/v1/webhook-endpoints', { token, body: { url: `${atBound}é` } }), 400, 'validation_failed');

    const before = await getRaw(keys.webhookEndpoint(id, created.body.id));
    expectEnvelope(
      await api.call('PATCH', `/v1/webhook-endpoints/${created.body.id}`, { token, body: { url: sent } }),
      400,
      'validation_failed',
    );
    expect(await getRaw(keys.webhookEndpoint(id, created.body.id))).toEqual(before);
    expect((await api.call('GET', '/v1/webhook-endpoints', { token })).status).toBe(200);
  });

  it('a row earlier code stored with an over-long url lists, reads and deletes with 200 (shown cut to the bound)', async () => {
    const { token, id } = await customer(api, 'wh-legacy-url@example.com');
    const { body: ep } = await api.call('POST', '/v1/webhook-endpoints', { token, body: { url: HOOK } });
    // What the create stored before the bound held for the encoded form.
    const stored = new URL(`${ORIGIN}${'é'.repeat(1000)}`).href;
    await setAttributes(keys.webhookEndpoint(id, ep.id), { url: stored });
    const list = await api.call('GET', '/v1/webhook-endpoints', { token });
    expect(list.status, list.text).toBe(200);
    expect(list.body.data[0].url).toBe(stored.slice(0, 2048));
    const one = await api.call('GET', `/v1/webhook-endpoints/${ep.id}`, { token });
    expect(one.status).toBe(200);
    expect(one.body.url).toBe(stored.slice(0, 2048));
    // Fixed by a PATCH, or deleted by id; the list answers throughout.
    const fixed = await api.call('PATCH', `/v1/webhook-endpoints/${ep.id}`, { token, body: { description: 'still here' } });
    expect(fixed.status, fixed.text).toBe(200);
    expect((await api.call('DELETE', `/v1/webhook-endpoints/${ep.id}`, { token })).status).toBe(200);
    expect((await api.call('GET', '/v1/webhook-endpoints', { token })).body.data).toEqual([]);
  });
});

describe('deliveries of an endpoint', () => {
  /** A delivery as the dispatcher stores it (the dispatcher itself is tested with the delivery side). */
  async function storeDelivery(accountId: string, endpointId: string, fields: Partial<WebhookDeliveryItem> = {}) {
    const deliveryId = newId();
    const now = new Date().toISOString();
    const item: WebhookDeliveryItem = {
      ...keys.webhookDelivery(endpointId, deliveryId),
      kind: 'webhookDelivery',
      deliveryId,
      endpointId,
      accountId,
      eventId: newId(),
      eventType: 'server.created',
      status: 'failed',
      attempts: [{ at: now, status: 500, durationMs: 12, error: null, responseExcerpt: 'oops' }],
      nextAttemptAt: null,
      createdAt: now,
      updatedAt: now,
      expiresAt: Math.floor(Date.now() / 1000) + 30 * 86_400,
      ...fields,
    };
    await db().send(new PutCommand({ TableName: tableName(), Item: item }));
    return item;
  }

  it('lists newest first with paging, and redelivers now', async () => {
    const { token, id } = await customer(api, 'wh-deliveries@example.com');
    const { body: ep } = await api.call('POST', '/v1/webhook-endpoints', { token, body: { url: HOOK } });
    const stored = [];
    for (let i = 0; i < 3; i++) stored.push(await storeDelivery(id, ep.id));
    const page1 = await api.call('GET', `/v1/webhook-endpoints/${ep.id}/deliveries?limit=2`, { token });
    expect(page1.status).toBe(200);
    const page2 = await api.call(
      'GET',
      `/v1/webhook-endpoints/${ep.id}/deliveries?limit=2&cursor=${encodeURIComponent(page1.body.nextCursor)}`,
      {
        token,
      },
    );
    expect([...page1.body.data, ...page2.body.data].map((d: { id: string }) => d.id)).toEqual(stored.map((d) => d.deliveryId).reverse());
    expect(page1.body.data[0]).toMatchObject({
      endpointId: ep.id,
      eventType: 'server.created',
      status: 'failed',
      attempts: [{ status: 500 }],
    });

    const target = stored[0]!;
    const again = await api.call('POST', `/v1/webhook-endpoints/${ep.id}/deliveries/${target.deliveryId}/redeliver`, { token });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: target.deliveryId, status: 'pending' });
    expect(Date.parse(again.body.nextAttemptAt)).toBeLessThanOrEqual(Date.now());
    const logs = await api.call('GET', '/v1/account/logs', { token });
    expect(logs.body.data[0]).toMatchObject({ action: 'webhooks.redeliver', target: `webhook-delivery:${target.deliveryId}` });

    expectEnvelope(
      await api.call('POST', `/v1/webhook-endpoints/${ep.id}/deliveries/00000000-0000-4000-8000-000000000000/redeliver`, { token }),
      404,
      'not_found',
    );
    // Another account cannot redeliver it, even knowing both ids.
    const other = await customer(api, 'wh-deliveries-other@example.com');
    expectEnvelope(
      await api.call('POST', `/v1/webhook-endpoints/${ep.id}/deliveries/${target.deliveryId}/redeliver`, { token: other.token }),
      404,
      'not_found',
    );
    // A disabled endpoint must be enabled first.
    await api.call('PATCH', `/v1/webhook-endpoints/${ep.id}`, { token, body: { enabled: false } });
    expectEnvelope(
      await api.call('POST', `/v1/webhook-endpoints/${ep.id}/deliveries/${target.deliveryId}/redeliver`, { token }),
      409,
      'conflict',
    );
  });

  it('deleting an endpoint stops its pending deliveries (out of the retry queue)', async () => {
    const { token, id } = await customer(api, 'wh-delete-pending@example.com');
    const { body: ep } = await api.call('POST', '/v1/webhook-endpoints', { token, body: { url: HOOK } });
    const due = new Date(Date.now() + 3_600_000).toISOString();
    const pending = await storeDelivery(id, ep.id, { status: 'pending', nextAttemptAt: due });
    await db().send(new PutCommand({ TableName: tableName(), Item: { ...pending, ...keys.deliveryDue(pending.deliveryId, due) } }));
    const done = await storeDelivery(id, ep.id, { status: 'succeeded' });
    const res = await api.call('DELETE', `/v1/webhook-endpoints/${ep.id}`, { token });
    expect(res.body).toEqual({ id: ep.id, deleted: true, stoppedDeliveries: 1 });
    const after = (await getRaw(keys.webhookDelivery(ep.id, pending.deliveryId)))!;
    expect(after).toMatchObject({ status: 'failed', nextAttemptAt: null });
    expect(after.GSI2PK).toBeUndefined();
    expect((await getRaw(keys.webhookDelivery(ep.id, done.deliveryId)))!.status).toBe('succeeded');
    expect(await queryPartition(keys.webhookEndpointPrefix(id))).toEqual([]);
    expect((await getRaw(keys.account(id)))!.webhookEndpointCount).toBe(0);
  });
});
