import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { newId } from '../../shared/ids.ts';
import { customer } from '../helpers/customer.ts';
import { getRaw } from '../helpers/db.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';

/**
 * Labels and the server list filters over the local stack (DynamoDB Local, the simulator over HTTP).
 * Two servers are deployed for real; the rest of the set (other regions, instances, statuses, a
 * record from before labels) is written straight to the table: one simulator has one region and
 * instance, and suspending or deleting servers for real would make this file slow without reading
 * the table any differently.
 */
let api: TestApi;
let sim: PanelSim;
let instanceId: string;
beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 40 } });
  sim = api.panel!.sim;
  instanceId = api.panel!.instanceId;
});
afterAll(async () => api?.stop());

const panelRequests = async () =>
  Object.values(((await (await fetch(`${sim.url}/__sim/requests`)).json()) as { requests: Record<string, number> }).requests).reduce(
    (a, b) => a + b,
    0,
  );

const paper = (over: Record<string, unknown> = {}) => ({
  name: 'paper server',
  eggId: 1,
  ramMb: 1024,
  cpuPercent: 100,
  diskMb: 2048,
  ...over,
});

type Listed = { id: string; name: string; labels: Record<string, string>; status: string; region: string | null; instanceId: string };

/** A server record as deploy writes it, straight to the table. */
async function seed(
  accountId: string,
  over: { name: string; labels?: Record<string, string>; status?: string; region?: string | null; instanceId?: string },
) {
  const serverId = newId();
  const now = new Date().toISOString();
  const item: Record<string, unknown> = {
    ...keys.server(accountId, serverId),
    ...keys.serversListing(accountId, now, serverId),
    kind: 'server',
    serverId,
    accountId,
    instanceId: over.instanceId ?? instanceId,
    panelServerId: 9000,
    identifier: serverId.slice(0, 8),
    uuid: serverId,
    name: over.name,
    eggId: 1,
    nestId: 1,
    nodeId: 1,
    allocationId: 1,
    region: over.region === undefined ? 'eu-central' : over.region,
    dockerImage: 'img',
    resources: { ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
    priceCentsPerHour: 1,
    priceMillicentsPerHour: 600,
    history: [],
    status: over.status ?? 'active',
    createdAt: now,
    updatedAt: now,
    ...(over.status === 'deleted' ? { deletedAt: now } : {}),
    ...(over.status === 'suspended' ? { suspendedAt: now, suspendedReason: 'balance' } : {}),
    ...(over.labels ? { labels: over.labels } : {}),
  };
  await db().send(new PutCommand({ TableName: tableName(), Item: item }));
  return serverId;
}

describe('labels on servers', () => {
  let token: string;
  let accountId: string;
  let prod: string;
  let bare: string;

  it('set at create, returned on create, GET and the list; none given is {}', async () => {
    ({ token, id: accountId } = await customer(api, 'labels@example.com', { grantCents: 10_000 }));
    const a = await api.call('POST', '/v1/servers', { token, body: paper({ labels: { env: 'prod', 'example.com/team': 'blue' } }) });
    expect(a.status, a.text).toBe(201);
    expect(a.body.labels).toEqual({ env: 'prod', 'example.com/team': 'blue' });
    prod = a.body.id;
    const b = await api.call('POST', '/v1/servers', { token, body: paper({ name: 'bare server' }) });
    expect(b.status, b.text).toBe(201);
    expect(b.body.labels).toEqual({});
    bare = b.body.id;
    expect((await api.call('GET', `/v1/servers/${prod}`, { token })).body.labels).toEqual({ env: 'prod', 'example.com/team': 'blue' });
    const list = await api.call('GET', '/v1/servers', { token });
    expect(list.body.data.map((s: Listed) => [s.id, s.labels])).toEqual([
      [bare, {}],
      [prod, { env: 'prod', 'example.com/team': 'blue' }],
    ]);
  });

  it('bad labels at create: 400 naming the key, nothing deployed', async () => {
    const before = await panelRequests();
    const res = await api.call('POST', '/v1/servers', { token, body: paper({ labels: { 'bad key': 'x' } }) });
    expectEnvelope(res, 400, 'validation_failed');
    expect(JSON.stringify(res.body.error.details)).toContain('bad key');
    const many = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v']));
    expectEnvelope(await api.call('POST', '/v1/servers', { token, body: paper({ labels: many }) }), 400, 'validation_failed');
    expect(await panelRequests()).toBe(before);
    expect((await api.call('GET', '/v1/servers', { token })).body.data).toHaveLength(2);
  });

  it('a labels-only PATCH replaces the map with no panel call, and is in the activity log', async () => {
    const before = await panelRequests();
    const res = await api.call('PATCH', `/v1/servers/${prod}`, { token, body: { labels: { env: 'staging' } } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.labels).toEqual({ env: 'staging' });
    expect(await panelRequests()).toBe(before);
    expect((await getRaw(keys.server(accountId, prod)))!.labels).toEqual({ env: 'staging' });
    const log = await api.call('GET', '/v1/account/logs?limit=5', { token });
    const entry = log.body.data.find((e: { action: string }) => e.action === 'servers.labels');
    expect(entry, log.text).toBeDefined();
    // `{}` removes them all.
    expect((await api.call('PATCH', `/v1/servers/${prod}`, { token, body: { labels: {} } })).body.labels).toEqual({});
  });

  it('a bad PATCH changes nothing; a rename with labels does both', async () => {
    await api.call('PATCH', `/v1/servers/${prod}`, { token, body: { labels: { env: 'prod' } } });
    expectEnvelope(
      await api.call('PATCH', `/v1/servers/${prod}`, { token, body: { labels: { env: 'no good' } } }),
      400,
      'validation_failed',
    );
    expect((await getRaw(keys.server(accountId, prod)))!.labels).toEqual({ env: 'prod' });
    const both = await api.call('PATCH', `/v1/servers/${bare}`, { token, body: { name: 'renamed server', labels: { env: 'dev' } } });
    expect(both.status, both.text).toBe(200);
    expect(both.body).toMatchObject({ name: 'renamed server', labels: { env: 'dev' } });
    expect((await getRaw(keys.server(accountId, bare)))!).toMatchObject({ name: 'renamed server', labels: { env: 'dev' } });
  });

  it('a deleted server cannot be labelled: 409, nothing written', async () => {
    const gone = await seed(accountId, { name: 'gone', status: 'deleted' });
    expectEnvelope(await api.call('PATCH', `/v1/servers/${gone}`, { token, body: { labels: { a: 'b' } } }), 409, 'conflict');
    expect((await getRaw(keys.server(accountId, gone)))!.labels).toBeUndefined();
  });
});

describe('filters on GET /v1/servers and the admin list', () => {
  let token: string;
  let accountId: string;
  const otherInstance = '0190a000-0000-7000-8000-000000000001';
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    ({ token, id: accountId } = await customer(api, 'filters@example.com'));
    // Oldest first: the list shows them newest first.
    ids.old = await seed(accountId, { name: 'mc-old' }); // a record from before labels: no attribute
    ids.prod = await seed(accountId, { name: 'mc-prod', labels: { env: 'prod', tier: 'gold' } });
    ids.dev = await seed(accountId, { name: 'mc-dev', labels: { env: 'dev' }, region: 'us-east' });
    ids.susp = await seed(accountId, { name: 'rust-1', labels: { env: 'prod' }, status: 'suspended' });
    ids.gone = await seed(accountId, { name: 'rust-2', labels: { env: 'prod', legacy: '' }, status: 'deleted', instanceId: otherInstance });
    ids.none = await seed(accountId, { name: 'ark', labels: {}, region: null });
  });

  const names = async (query: string, who: { token?: string } = {}) => {
    const res = await api.call('GET', `/v1/servers?limit=100&${query}`, { token, ...who });
    expect(res.status, res.text).toBe(200);
    expect(res.body.nextCursor).toBeNull();
    return res.body.data.map((s: Listed) => s.name);
  };
  const sel = (s: string) => `label_selector=${encodeURIComponent(s)}`;

  it('no filter: all six, newest first', async () => {
    expect(await names('')).toEqual(['ark', 'rust-2', 'rust-1', 'mc-dev', 'mc-prod', 'mc-old']);
  });

  it('k=v', async () => {
    expect(await names(sel('env=prod'))).toEqual(['rust-2', 'rust-1', 'mc-prod']);
  });
  it('k!=v (a server without the label matches)', async () => {
    expect(await names(sel('env!=prod'))).toEqual(['ark', 'mc-dev', 'mc-old']);
  });
  it('k', async () => {
    expect(await names(sel('legacy'))).toEqual(['rust-2']);
    expect(await names(sel('env'))).toEqual(['rust-2', 'rust-1', 'mc-dev', 'mc-prod']);
  });
  it('!k (old records without labels included)', async () => {
    expect(await names(sel('!env'))).toEqual(['ark', 'mc-old']);
  });
  it('comma is and; with the other filters', async () => {
    expect(await names(sel('env=prod, !legacy'))).toEqual(['rust-1', 'mc-prod']);
    expect(await names(sel('env=prod,tier=gold'))).toEqual(['mc-prod']);
    expect(await names(`${sel('env=prod')}&status=active`)).toEqual(['mc-prod']);
  });
  it('status, region, instanceId, name_prefix', async () => {
    expect(await names('status=suspended')).toEqual(['rust-1']);
    expect(await names('status=deleted')).toEqual(['rust-2']);
    expect(await names('region=us-east')).toEqual(['mc-dev']);
    expect(await names(`instanceId=${otherInstance}`)).toEqual(['rust-2']);
    expect(await names('name_prefix=mc-')).toEqual(['mc-dev', 'mc-prod', 'mc-old']);
    expect(await names('name_prefix=mc-&region=eu-central')).toEqual(['mc-prod', 'mc-old']);
  });

  it('paging a filtered list one at a time finds exactly the matches, in order', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await api.call('GET', `/v1/servers?limit=1&${sel('env!=dev')}${cursor ? `&cursor=${cursor}` : ''}`, { token });
      expect(res.status, res.text).toBe(200);
      seen.push(...res.body.data.map((s: Listed) => s.name));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor && pages < 20);
    expect(seen).toEqual(['ark', 'rust-2', 'rust-1', 'mc-prod', 'mc-old']);
  });

  it('a bad selector is 400 naming the problem; a bad status 400', async () => {
    const res = await api.call('GET', `/v1/servers?${sel('k==v')}`, { token });
    expectEnvelope(res, 400, 'validation_failed');
    expect(res.body.error.details.issues).toEqual([
      expect.objectContaining({ field: 'query.label_selector', message: '`k==v` is not a selector term (use k=v, k!=v, k or !k)' }),
    ]);
    expectEnvelope(await api.call('GET', `/v1/servers?${sel('a,,b')}`, { token }), 400, 'validation_failed');
    expectEnvelope(await api.call('GET', '/v1/servers?status=gone', { token }), 400, 'validation_failed');
  });

  it('a cursor of one filter is refused under another (400 invalid_cursor)', async () => {
    const first = await api.call('GET', `/v1/servers?limit=1&${sel('env=prod')}`, { token });
    expect(first.body.nextCursor).toBeTruthy();
    const c = first.body.nextCursor;
    expectEnvelope(await api.call('GET', `/v1/servers?limit=1&${sel('env=dev')}&cursor=${c}`, { token }), 400, 'invalid_cursor');
    expectEnvelope(await api.call('GET', `/v1/servers?limit=1&cursor=${c}`, { token }), 400, 'invalid_cursor');
    expect((await api.call('GET', `/v1/servers?limit=1&${sel('env=prod')}&cursor=${c}`, { token })).status).toBe(200);
  });

  it('the admin list: the same filters, across accounts or for one account', async () => {
    const admin = async (query: string) => {
      const out: string[] = [];
      let cursor: string | null = null;
      do {
        const res = await api.call('GET', `/v1/admin/servers?limit=2&${query}${cursor ? `&cursor=${cursor}` : ''}`);
        expect(res.status, res.text).toBe(200);
        out.push(...res.body.data.map((s: Listed & { accountId: string }) => `${s.name}@${s.accountId === accountId ? 'me' : 'other'}`));
        cursor = res.body.nextCursor;
      } while (cursor);
      return out;
    };
    const other = await customer(api, 'filters-other@example.com');
    await seed(other.id, { name: 'mc-other', labels: { env: 'prod' } });
    // 'paper server' is the first describe's server, labelled env=prod there.
    expect(await admin(sel('env=prod'))).toEqual(['mc-other@other', 'rust-2@me', 'rust-1@me', 'mc-prod@me', 'paper server@other']);
    expect(await admin(`${sel('env=prod')}&accountId=${accountId}`)).toEqual(['rust-2@me', 'rust-1@me', 'mc-prod@me']);
    expect(await admin(`accountId=${other.id}`)).toEqual(['mc-other@other']);
    expect(await admin('name_prefix=mc-&status=active')).toEqual(
      expect.arrayContaining(['mc-other@other', 'mc-prod@me', 'mc-old@me', 'mc-dev@me']),
    );
    expectEnvelope(await api.call('GET', `/v1/admin/servers?${sel('!')}`), 400, 'validation_failed');
  });
});

describe('labels on API keys and webhook endpoints', () => {
  it('API keys: set at creation and by PATCH (the whole map, nothing else), returned by the create and the list; bad labels 400', async () => {
    const { token } = await customer(api, 'key-labels@example.com');
    const made = await api.call('POST', '/v1/keys', { token, body: { name: 'ci', labels: { 'example.com/owner': 'ci', env: '' } } });
    expect(made.status, made.text).toBe(201);
    expect(made.body.labels).toEqual({ 'example.com/owner': 'ci', env: '' });
    const plain = await api.call('POST', '/v1/keys', { token, body: { name: 'plain' } });
    expect(plain.body.labels).toEqual({});
    const list = await api.call('GET', '/v1/keys', { token });
    expect(Object.fromEntries(list.body.data.map((k: { name: string; labels: object }) => [k.name, k.labels]))).toMatchObject({
      ci: { 'example.com/owner': 'ci', env: '' },
      plain: {},
    });
    expectEnvelope(
      await api.call('POST', '/v1/keys', { token, body: { name: 'bad', labels: { 'a/b/c': 'x' } } }),
      400,
      'validation_failed',
    );

    // PATCH replaces the map; the key's name and scopes are not PATCH's to change.
    const patched = await api.call('PATCH', `/v1/keys/${made.body.id}`, { token, body: { labels: { team: 'ops' } } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ id: made.body.id, name: 'ci', labels: { team: 'ops' }, scopes: made.body.scopes });
    expect(patched.body).not.toHaveProperty('secret');
    const listed = (await api.call('GET', '/v1/keys', { token })).body.data.find((k: { id: string }) => k.id === made.body.id);
    expect(listed.labels).toEqual({ team: 'ops' });
    expectEnvelope(
      await api.call('PATCH', `/v1/keys/${made.body.id}`, { token, body: { labels: {}, name: 'renamed' } }),
      400,
      'validation_failed',
    );
    expectEnvelope(
      await api.call('PATCH', `/v1/keys/${made.body.id}`, { token, body: { labels: { 'a/b/c': 'x' } } }),
      400,
      'validation_failed',
    );
    expect((await api.call('GET', '/v1/keys', { token })).body.data.find((k: { id: string }) => k.id === made.body.id).labels).toEqual({
      team: 'ops',
    });
    // Another account's key is an unknown key.
    const other = await customer(api, 'key-labels-other@example.com');
    expectEnvelope(await api.call('PATCH', `/v1/keys/${made.body.id}`, { token: other.token, body: { labels: {} } }), 404, 'not_found');
    const log = (await api.call('GET', '/v1/account/logs', { token })).body.data;
    expect(log.map((e: { action: string }) => e.action)).toContain('keys.labels');
  });

  it('webhook endpoints: set at creation and by PATCH (the whole map), returned by GET and the list', async () => {
    const { token } = await customer(api, 'hook-labels@example.com');
    const made = await api.call('POST', '/v1/webhook-endpoints', {
      token,
      body: { url: 'http://127.0.0.1:9/hook', labels: { team: 'ops' } },
    });
    expect(made.status, made.text).toBe(201);
    expect(made.body.labels).toEqual({ team: 'ops' });
    const patched = await api.call('PATCH', `/v1/webhook-endpoints/${made.body.id}`, {
      token,
      body: { labels: { team: 'sre', tier: '1' } },
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.labels).toEqual({ team: 'sre', tier: '1' });
    expect((await api.call('GET', `/v1/webhook-endpoints/${made.body.id}`, { token })).body.labels).toEqual({ team: 'sre', tier: '1' });
    expect((await api.call('GET', '/v1/webhook-endpoints', { token })).body.data[0].labels).toEqual({ team: 'sre', tier: '1' });
    expectEnvelope(
      await api.call('PATCH', `/v1/webhook-endpoints/${made.body.id}`, { token, body: { labels: { team: 'a b' } } }),
      400,
      'validation_failed',
    );
    expect((await api.call('GET', `/v1/webhook-endpoints/${made.body.id}`, { token })).body.labels).toEqual({ team: 'sre', tier: '1' });
  });
});
