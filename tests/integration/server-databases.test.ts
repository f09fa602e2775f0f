import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databasesOf } from '../../dev/panel-sim/databases.ts';
import { type PanelSim, startPanelSim } from '../../dev/panel-sim/index.ts';
import { db, tableName } from '../../shared/db/client.ts';
import { customer } from '../helpers/customer.ts';
import { panelCalls as panelCallsOf } from '../helpers/panel-requests.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * Server databases (shared/servers/databases.ts) against the panel simulator's DatabaseController
 * (dev/panel-sim/databases.ts): the name and remote rules mirrored (what the panel refuses is our
 * 400 before any call), the panel's `feature_limits.databases` (raised here as an operator would:
 * the Application API's build PATCH), a panel without a database host, the password shown once and
 * never stored, logged or audited, one panel call per operation, and another account's server.
 */
let api: TestApi;
let sim: PanelSim;
let token: string;
let server: { id: string; identifier: string };
/** Every password the API handed out in this file. */
const passwords: string[] = [];

const path = (p = '') => `/v1/servers/${server.id}/databases${p}`;
const panelCalls = <T>(fn: () => Promise<T>) => panelCallsOf(sim, fn);
const simServer = () => sim.state.serverByIdentifier(server.identifier)!;
const panelPath = (p = '') => `/api/client/servers/${server.identifier}/databases${p}`;

/** The operator raises the server's database limit in the panel (PATCH /api/application/servers/{id}/build). */
async function setPanelDatabaseLimit(limit: number | null): Promise<void> {
  const s = simServer();
  const res = await fetch(`${sim.url}/api/application/servers/${s.id}/build`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${sim.appKey}`, accept: 'application/json', 'content-type': 'application/json' },
    body: JSON.stringify({
      allocation: s.allocation_id,
      memory: s.memory,
      swap: s.swap,
      disk: s.disk,
      io: s.io,
      cpu: s.cpu,
      threads: s.threads,
      feature_limits: { databases: limit, allocations: s.allocation_limit, backups: s.backup_limit },
    }),
  });
  expect(res.status, await res.text()).toBe(200);
  expect(simServer().database_limit).toBe(limit);
}

/** The same body straight to the simulated panel on the service user's client key. */
const panelCreate = async (body: unknown) =>
  fetch(`${sim.url}${panelPath()}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${sim.clientKey}`, accept: 'application/json', 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

const activity = async (action: string) => {
  const res = await api.call('GET', '/v1/account/logs?limit=100', { token });
  return (res.body.data as Array<{ action: string; result: string; details?: Record<string, unknown> }>).filter((e) => e.action === action);
};

/** Every item of this file's table, as one text. */
async function wholeTable(): Promise<string> {
  const items: unknown[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await db().send(new ScanCommand({ TableName: tableName(), ExclusiveStartKey: start }));
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start);
  return JSON.stringify(items);
}

/** What the service writes to stdout and stderr while `fn` runs, at LOG_LEVEL=debug. */
async function logsOf<T>(fn: () => Promise<T>): Promise<{ result: T; logs: string }> {
  const chunks: string[] = [];
  const out = process.stdout.write.bind(process.stdout);
  const err = process.stderr.write.bind(process.stderr);
  const level = process.env.LOG_LEVEL;
  process.env.LOG_LEVEL = 'debug';
  process.stdout.write = ((chunk: string | Uint8Array) => chunks.push(String(chunk)) > 0) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array) => chunks.push(String(chunk)) > 0) as typeof process.stderr.write;
  try {
    return { result: await fn(), logs: chunks.join('') };
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
    if (level === undefined) delete process.env.LOG_LEVEL;
    else process.env.LOG_LEVEL = level;
  }
}

beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 200, transitionMs: 20, resourcesCacheMs: 0 } });
  sim = api.panel!.sim;
  ({ token } = await customer(api, 'server-databases@example.com', { grantCents: 10_000 }));
  const created = await api.call('POST', '/v1/servers', {
    token,
    body: { name: 'databases', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
  });
  expect(created.status, created.text).toBe(201);
  server = { id: created.body.id, identifier: created.body.identifier };
  await until(async () => (await api.call('GET', `/v1/servers/${server.id}`, { token })).body.live?.installStatus === 'installed');
});
afterAll(async () => {
  await api?.stop();
});

describe('the rules mirror the panel: bad input is our 400, before any panel call', () => {
  /** [what, body, whether the panel refuses it too (default yes)] */
  const refused: Array<[string, Record<string, unknown>, boolean?]> = [
    ['a name shorter than 3', { name: 'ab' }],
    ['a name longer than 48', { name: 'a'.repeat(49) }],
    ['a space in the name', { name: 'my db' }],
    ['a dot in the name', { name: 'my.db' }],
    // The panel trims first (TrimStrings) and takes it; the document's pattern does not, so neither do we.
    ['a space around the name', { name: ' plugins ' }, false],
    ['a quote in the name', { name: "x'; DROP DATABASE y; --" }],
    ['a space in remote', { name: 'good_name', remote: '10.0.0.1 x' }],
    ['a semicolon in remote', { name: 'good_name', remote: '%;' }],
    ['an empty remote', { name: 'good_name', remote: '' }],
  ];
  for (const [what, body, panelRefuses = true] of refused) {
    it(`${what}: 400 here${panelRefuses ? ', and the panel refuses it too (422)' : ''}`, async () => {
      const { result, calls } = await panelCalls(() => api.call('POST', path(), { token, body }));
      expectEnvelope(result, 400, 'validation_failed');
      expect(calls).toEqual({});
      if (!panelRefuses) return;
      const panel = await panelCreate({ database: body.name, remote: body.remote ?? '%' });
      expect(panel.status).toBe(422);
    });
  }

  it('a field the panel does not take is refused', async () => {
    expectEnvelope(await api.call('POST', path(), { token, body: { name: 'good_name', host: 1 } }), 400, 'validation_failed');
  });
});

describe('the limit is the panel feature limit (0 at deploy)', () => {
  it('with the limit at 0 a create is 422 limit_exceeded naming the limit, in one panel call', async () => {
    expect(simServer().database_limit).toBe(0);
    const { result, calls } = await panelCalls(() => api.call('POST', path(), { token, body: { name: 'plugins' } }));
    expectEnvelope(result, 422, 'limit_exceeded');
    const body = result.body;
    expect(body.error.message).toContain('database limit is 0');
    expect(body.error.details).toEqual({ limit: 0 });
    // The refusal, then a read of the server's feature limits for the number.
    expect(calls).toEqual({ [`POST ${panelPath()}`]: 1, [`GET /api/client/servers/${server.identifier}`]: 1 });
    expect(databasesOf(sim.state).of(simServer())).toHaveLength(0);
  });
});

describe('create, list, rotate, delete', () => {
  let databaseId: string;
  let firstPassword: string;

  it('create answers 201 with the host, the name the panel stored and the password: one panel call', async () => {
    await setPanelDatabaseLimit(2);
    const { result: res, calls } = await panelCalls(() => api.call('POST', path(), { token, body: { name: 'plugins' } }));
    expect(res.status, res.text).toBe(201);
    expect(calls).toEqual({ [`POST ${panelPath()}`]: 1 });
    const stored = databasesOf(sim.state).of(simServer());
    expect(stored).toHaveLength(1);
    expect(res.body).toEqual({
      id: stored[0]!.hashid,
      name: `s${simServer().id}_plugins`,
      username: stored[0]!.username,
      host: { address: '10.10.1.10', port: 3306 },
      remote: '%',
      maxConnections: 0,
      password: stored[0]!.password,
    });
    expect(res.body.password).toHaveLength(24);
    databaseId = res.body.id;
    firstPassword = res.body.password;
    passwords.push(firstPassword);
  });

  it('the list shows it, never with a password: one panel call', async () => {
    const { result: res, calls } = await panelCalls(() => api.call('GET', path(), { token }));
    expect(res.status, res.text).toBe(200);
    expect(calls).toEqual({ [`GET ${panelPath()}`]: 1 });
    expect(res.body.data).toHaveLength(1);
    expect(res.body.data[0]).toMatchObject({ id: databaseId, host: { address: '10.10.1.10', port: 3306 }, remote: '%' });
    expect(res.body.data[0]).not.toHaveProperty('password');
    expect(res.text).not.toContain(firstPassword);
  });

  it('the same name again is 409 (the panel: taken on this server)', async () => {
    expectEnvelope(await api.call('POST', path(), { token, body: { name: 'plugins', remote: '10.0.0.%' } }), 409, 'conflict');
  });

  it('rotate answers a new password (the panel has it, the old one is gone): one panel call', async () => {
    const { result: res, calls } = await panelCalls(() => api.call('POST', path(`/${databaseId}/rotate-password`), { token }));
    expect(res.status, res.text).toBe(200);
    expect(calls).toEqual({ [`POST ${panelPath(`/${databaseId}/rotate-password`)}`]: 1 });
    expect(res.body.password).not.toBe(firstPassword);
    expect(databasesOf(sim.state).of(simServer())[0]!.password).toBe(res.body.password);
    passwords.push(res.body.password);
  });

  it('the second database fits the limit of 2, the third is 422 limit_exceeded', async () => {
    const second = await api.call('POST', path(), { token, body: { name: 'web-shop', remote: '10.0.0.%' } });
    expect(second.status, second.text).toBe(201);
    expect(second.body.remote).toBe('10.0.0.%');
    passwords.push(second.body.password);
    const third = await api.call('POST', path(), { token, body: { name: 'third' } });
    expectEnvelope(third, 422, 'limit_exceeded');
    expect(third.body.error.details).toEqual({ limit: 2 });
    expect(third.body.error.message).toContain('limit of 2 databases');
  });

  it('delete: one panel call, gone from the panel; an unknown one is 404', async () => {
    const { result: res, calls } = await panelCalls(() => api.call('DELETE', path(`/${databaseId}`), { token }));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ id: databaseId, deleted: true });
    expect(calls).toEqual({ [`DELETE ${panelPath(`/${databaseId}`)}`]: 1 });
    expect(
      databasesOf(sim.state)
        .of(simServer())
        .map((d) => d.hashid),
    ).not.toContain(databaseId);
    expectEnvelope(await api.call('DELETE', path(`/${databaseId}`), { token }), 404, 'not_found');
    expectEnvelope(await api.call('POST', path(`/${databaseId}/rotate-password`), { token }), 404, 'not_found');
  });

  it('each change is in the activity log, by name and id, never with a password', async () => {
    const created = (await activity('servers.databases.create')).find((e) => e.details?.databaseId === databaseId);
    expect(created).toMatchObject({ result: 'success', details: { databaseId, name: `s${simServer().id}_plugins`, remote: '%' } });
    const rotated = (await activity('servers.databases.rotate_password')).filter((e) => e.result === 'success');
    expect(rotated[rotated.length - 1]).toMatchObject({ details: { databaseId, name: `s${simServer().id}_plugins` } });
    const deleted = (await activity('servers.databases.delete')).filter((e) => e.result === 'success');
    expect(deleted).toHaveLength(1);
    expect(deleted[0]).toMatchObject({ details: { databaseId } });
    // A refusal is logged as such, with what was asked.
    expect((await activity('servers.databases.create')).find((e) => e.details?.name === 'third')).toMatchObject({ result: 'failure' });
    const all = await api.call('GET', '/v1/account/logs?limit=100', { token });
    for (const p of passwords) expect(all.text).not.toContain(p);
  });
});

describe('passwords are never stored or logged', () => {
  it('a create and a rotate at debug level: no password in any log line', async () => {
    const { result, logs } = await logsOf(async () => {
      // With an Idempotency-Key: a create must not leave an idempotency record holding the password.
      const created = await api.call('POST', path(), { token, body: { name: 'logged' }, headers: { 'idempotency-key': 'db-logged-1' } });
      const rotated = await api.call('POST', path(`/${created.body.id}/rotate-password`), { token });
      // A refused create logs the panel's refusal: the capture does see the service's lines.
      const refused = await api.call('POST', path(), { token, body: { name: 'over_limit' } });
      return { created, rotated, refused };
    });
    expect(result.created.status, result.created.text).toBe(201);
    expect(result.rotated.status, result.rotated.text).toBe(200);
    expectEnvelope(result.refused, 422, 'limit_exceeded');
    expect(logs).toContain('panel call refused');
    passwords.push(result.created.body.password, result.rotated.body.password);
    for (const p of passwords) expect(logs.includes(p), 'a password is in a log line').toBe(false);
  });

  it('no password anywhere in the table (idempotency records, activity, server records)', async () => {
    expect(passwords.length).toBeGreaterThanOrEqual(5);
    const table = await wholeTable();
    expect(table).toContain(server.id);
    for (const p of passwords) expect(table.includes(p), 'a password is in the table').toBe(false);
  });
});

describe('a panel without a database host', () => {
  it('the simulator seeds one host linked to fra-1, none with `databaseHost: false`', async () => {
    expect(databasesOf(sim.state).hosts).toMatchObject([{ host: '10.10.1.10', port: 3306, node_id: 1 }]);
    const bare = await startPanelSim({ databaseHost: false });
    try {
      expect(databasesOf(bare.state).hosts).toEqual([]);
    } finally {
      await bare.close();
    }
  });

  it('a create is 409 conflict saying so, and the admin instance view shows it', async () => {
    const store = databasesOf(sim.state);
    const hosts = store.hosts;
    store.hosts = [];
    try {
      await setPanelDatabaseLimit(10);
      const res = await api.call('POST', path(), { token, body: { name: 'nohost' } });
      expectEnvelope(res, 409, 'conflict');
      expect(res.body.error.message).toContain('no database host');
      const instances = await api.call('GET', '/v1/admin/instances');
      const instance = instances.body.data.find((i: { id: string }) => i.id === api.panel!.instanceId);
      expect(instance.databaseHost).toMatchObject({ available: false });
    } finally {
      store.hosts = hosts;
    }
  });

  it('a host on another node only, with allow_random off: 409 too; the host back: the view says available', async () => {
    const store = databasesOf(sim.state);
    const [host] = store.hosts;
    const node = host!.node_id;
    store.allowRandom = false;
    host!.node_id = simServer().node_id + 100;
    try {
      expectEnvelope(await api.call('POST', path(), { token, body: { name: 'elsewhere' } }), 409, 'conflict');
    } finally {
      store.allowRandom = true;
      host!.node_id = node;
    }
    const res = await api.call('POST', path(), { token, body: { name: 'back_again' } });
    expect(res.status, res.text).toBe(201);
    const instances = await api.call('GET', '/v1/admin/instances');
    const instance = instances.body.data.find((i: { id: string }) => i.id === api.panel!.instanceId);
    expect(instance.databaseHost).toMatchObject({ available: true });
  });
});

describe("another account's server", () => {
  it('is 404 on every database route, and nothing reaches the panel', async () => {
    const other = await customer(api, 'server-databases-other@example.com', { grantCents: 1_000 });
    const [db1] = databasesOf(sim.state).of(simServer());
    const { calls } = await panelCalls(async () => {
      expectEnvelope(await api.call('GET', path(), { token: other.token }), 404, 'not_found');
      expectEnvelope(await api.call('POST', path(), { token: other.token, body: { name: 'stolen' } }), 404, 'not_found');
      expectEnvelope(await api.call('POST', path(`/${db1!.hashid}/rotate-password`), { token: other.token }), 404, 'not_found');
      expectEnvelope(await api.call('DELETE', path(`/${db1!.hashid}`), { token: other.token }), 404, 'not_found');
    });
    expect(calls).toEqual({});
    expect(databasesOf(sim.state).of(simServer())[0]!.password).toBe(db1!.password);
  });
});
