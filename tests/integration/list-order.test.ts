import { randomUUID } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { getRaw } from '../helpers/db.ts';
import { keys } from '../../shared/db/keys.ts';
import { db, tableName } from '../../shared/db/client.ts';
import { appendLedger } from '../../shared/ledger/index.ts';
import { createApiKey } from '../../shared/api-keys/index.ts';
import { isTimeOrderedId } from '../../shared/ids.ts';
import type { Scope } from '../../shared/api/scopes.ts';

/**
 * GET /v1/servers and GET /v1/keys are newest first (docs/api.md "Lists"), and paging with a small
 * limit walks the same order with no duplicate and no gap: ids are time-ordered (shared/ids.ts)
 * and the listings read the sort key descending. Rows with random v4 ids from before list after
 * every newer row.
 */
let api: TestApi;
let token: string;
let accountId: string;
beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 100, transitionMs: 20, resourcesCacheMs: 0 } });
  token = await api.session('order@example.com');
  accountId = (await api.call('GET', '/v1/account', { token })).body.id;
  await appendLedger(accountId, [{ type: 'grant', amountCents: 100_000, idempotencyKey: `test-topup:${accountId}` }]);
});
afterAll(async () => api?.stop());

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every page of a listing with `limit`, in order. */
async function walk(path: string, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res = await api.call('GET', `${path}?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { token });
    expect(res.status).toBe(200);
    expect(res.body.data.length).toBeLessThanOrEqual(limit);
    ids.push(...res.body.data.map((x: { id: string }) => x.id));
    cursor = res.body.nextCursor;
    pages += 1;
    expect(pages).toBeLessThan(50);
  } while (cursor);
  return ids;
}

describe('GET /v1/keys', () => {
  const made: string[] = [];

  it('lists keys newest first: some made with pauses, some in a tight loop, some in the same millisecond', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await api.call('POST', '/v1/keys', { token, body: { name: `paused ${i}` } });
      expect(res.status).toBe(201);
      made.push(res.body.id);
      await pause(5);
    }
    for (let i = 0; i < 3; i++) {
      const res = await api.call('POST', '/v1/keys', { token, body: { name: `tight ${i}` } });
      expect(res.status).toBe(201);
      made.push(res.body.id);
    }
    // Made in one process without yielding between them: the ids are taken in call order, most
    // in the same millisecond, and must still list in that order.
    const principal = { accountId, email: 'order@example.com', scopes: new Set<Scope>(['account:read', 'keys:write']) };
    const burst = await Promise.all(Array.from({ length: 4 }, (_, i) => createApiKey(principal, { name: `burst ${i}` })));
    made.push(...burst.map((b) => b.key.id));
    expect(made.every(isTimeOrderedId)).toBe(true);

    const res = await api.call('GET', '/v1/keys?limit=100', { token });
    const listed: string[] = res.body.data.map((k: { id: string }) => k.id);
    // The session's account has no other key; the listing is exactly ours, newest first.
    expect(listed).toEqual([...made].reverse());
    const created = res.body.data.map((k: { createdAt: string }) => k.createdAt);
    expect([...created].sort().reverse()).toEqual(created);
  });

  it('pages of 2 walk the same order, no duplicate, no gap', async () => {
    const paged = await walk('/v1/keys', 2);
    expect(paged).toEqual([...made].reverse());
    expect(await walk('/v1/keys', 3)).toEqual(paged);
  });

  it('a key from before time-ordered ids (a random v4 id) lists after every newer key', async () => {
    const template = await getRaw(keys.apiKey(accountId, made[0]!));
    const legacyId = randomUUID();
    await db().send(
      new PutCommand({
        TableName: tableName(),
        Item: { ...template, ...keys.apiKey(accountId, legacyId), keyId: legacyId, hash: 'legacy', createdAt: '2020-01-01T00:00:00.000Z' },
      }),
    );
    expect(await walk('/v1/keys', 2)).toEqual([...[...made].reverse(), legacyId]);
    // A Get by id finds it under the key it was stored with: revoking it works.
    expect((await api.call('DELETE', `/v1/keys/${legacyId}`, { token })).status).toBe(200);
    expect((await api.call('DELETE', `/v1/keys/${made[0]}`, { token })).status).toBe(200);
  });
});

describe('GET /v1/servers', () => {
  const made: string[] = [];
  const deploy = async (name: string) => {
    const res = await api.call('POST', '/v1/servers', {
      token,
      body: { name, eggId: 1, ramMb: 256, cpuPercent: 50, diskMb: 512, region: 'eu-central' },
    });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };

  it('lists servers newest first: some deployed with pauses, some in a tight loop', async () => {
    for (let i = 0; i < 3; i++) {
      made.push(await deploy(`paused ${i}`));
      await pause(5);
    }
    for (let i = 0; i < 4; i++) made.push(await deploy(`tight ${i}`));
    expect(made.every(isTimeOrderedId)).toBe(true);

    const res = await api.call('GET', '/v1/servers?limit=100', { token });
    expect(res.body.data.map((s: { id: string }) => s.id)).toEqual([...made].reverse());
  });

  it('pages of 2 walk the same order, no duplicate, no gap', async () => {
    const paged = await walk('/v1/servers', 2);
    expect(paged).toEqual([...made].reverse());
    expect(new Set(paged).size).toBe(made.length);
  });

  it('the server is found by id under its time-ordered key (GET, DELETE)', async () => {
    const id = made[0]!;
    expect((await api.call('GET', `/v1/servers/${id}`, { token })).status).toBe(200);
    expect((await api.call('DELETE', `/v1/servers/${id}`, { token })).status).toBe(200);
    const after = await walk('/v1/servers', 2);
    expect(after).toEqual([...made].reverse());
    const listed = (await api.call('GET', '/v1/servers?limit=100', { token })).body.data;
    expect(listed.find((s: { id: string }) => s.id === id).status).toBe('deleted');
  });
});
