import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, expectEnvelope, type TestApi } from '../helpers/stack.ts';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { queryPartition, setAttributes, getRaw } from '../helpers/db.ts';
import { keys } from '../../shared/db/keys.ts';
import { appendLedger } from '../../shared/ledger/index.ts';
import { customer } from '../helpers/customer.ts';
import { until } from '../helpers/until.ts';

/**
 * Servers over the local stack: DynamoDB Local, the panel simulator over HTTP, the API over HTTP.
 * Panel timeouts shortened (3 s) so the timeout paths run in seconds, yet far above what a panel
 * call takes on a busy machine, whose pauses the simulator shares (it runs in the test's process).
 * Installs end quickly; a test that looks at one installing holds it.
 */
process.env.PANEL_TIMEOUT_MS = '3000';
process.env.PANEL_CREATE_TIMEOUT_MS = '3000';

let api: TestApi;
let sim: PanelSim;
let instanceId: string;
beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 40, resourcesCacheMs: 0 } });
  sim = api.panel!.sim;
  instanceId = api.panel!.instanceId;
});
afterAll(async () => api?.stop());

const paper = (over: Record<string, unknown> = {}) => ({
  name: 'paper server',
  eggId: 1,
  ramMb: 1024,
  cpuPercent: 100,
  diskMb: 2048,
  ...over,
});

/** Panel servers that have no record here: must always be none once a request has ended. */
async function orphansOnPanel(): Promise<string[]> {
  const recorded = new Set<string>();
  let cursor: string | null = null;
  do {
    const page = await api.call('GET', `/v1/admin/servers?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
    for (const s of page.body.data) if (s.status !== 'deleted') recorded.add(s.id);
    cursor = page.body.nextCursor;
  } while (cursor);
  return (sim.snapshot() as { servers: { external_id: string | null }[] }).servers
    .map((s) => s.external_id ?? '(none)')
    .filter((e) => !recorded.has(e));
}

/** Counts panel requests that reached the simulator while `fn` ran (a catch-all fault that only counts). */
async function panelCallsDuring(fn: () => Promise<void>): Promise<number> {
  const id = sim.faults.add({ method: '*', path: '/api/', effect: { kind: 'latency', ms: 0 } });
  try {
    await fn();
    return sim.faults.list().find((f) => f.id === id)!.hits;
  } finally {
    sim.faults.remove(id);
  }
}

// One server's life in ordered steps (a file's tests run in order) sharing its state: a step that fails is reported on its own
// and the steps after it still run.
describe('the lifecycle: deploy → install → power → console → files → resize → delete', () => {
  let token: string;
  let accountId: string;
  let server: { id: string; identifier: string; createdAt: string };
  let panelUuid: string;
  const path = (sub = '') => `/v1/servers/${server.id}${sub}`;

  it('deploy: 201, on the panel under the service user with our id and every variable, counted on the account', async () => {
    ({ token, id: accountId } = await customer(api, 'life@example.com'));
    // The install lasts until this test ends it (the next step), however slow the machine.
    sim.holdInstalls();
    const created = await api.call('POST', '/v1/servers', {
      token,
      body: paper({ environment: { MINECRAFT_VERSION: '1.21.1' }, region: 'eu-central' }),
    });
    sim.holdInstalls(false);
    expect(created.status).toBe(201);
    server = created.body;
    expect(server).toMatchObject({
      name: 'paper server',
      eggId: 1,
      instanceId,
      region: 'eu-central',
      status: 'active',
      resources: { ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
      priceCentsPerHour: 1,
    });
    expect(server.identifier).toHaveLength(8);

    const panelView = sim.server(server.identifier)!;
    panelUuid = panelView.uuid;
    expect(panelView).toMatchObject({ external_id: server.id, owner_id: sim.serviceUserId, memory: 1024, disk: 2048 });
    expect(panelView.environment).toMatchObject({
      MINECRAFT_VERSION: '1.21.1',
      SERVER_JARFILE: 'server.jar',
      BUILD_NUMBER: expect.any(String),
    });
    expect(await getRaw(keys.account(accountId))).toMatchObject({ serverCount: 1, burnCentsPerHour: 1, burnMillicentsPerHour: 720 });
    expect((await getRaw(keys.instance(instanceId)))!.serverCount).toBeGreaterThanOrEqual(1);
  });

  it('while it installs: live installStatus installing, power refused 409; once the install ends: installed', async () => {
    const installing = await api.call('GET', path(), { token });
    expect(installing.body.live).toMatchObject({ available: true, installStatus: 'installing' });
    expectEnvelope(await api.call('POST', path('/power'), { token, body: { signal: 'start' } }), 409, 'conflict');
    expect(sim.endInstall(server.identifier)).toBe(true);
    await until(async () => (await api.call('GET', path(), { token })).body.live.installStatus === 'installed');
  });

  it('power start is accepted and the server runs, with its usage', async () => {
    expect((await api.call('POST', path('/power'), { token, body: { signal: 'start' } })).body).toEqual({
      id: server.id,
      signal: 'start',
      accepted: true,
    });
    await until(async () => (await api.call('GET', path('/resources'), { token })).body.powerState === 'running');
    const usage = await api.call('GET', path('/resources'), { token });
    expect(usage.body.resources).toMatchObject({
      memoryBytes: expect.any(Number),
      cpuAbsolute: expect.any(Number),
      networkRxBytes: expect.any(Number),
    });
    // The specification's shape: the power state at attributes.current_state, the panel's counters under attributes.resources.
    expect(usage.body.attributes).toMatchObject({
      current_state: 'running',
      resources: {
        memory_bytes: usage.body.resources.memoryBytes,
        cpu_absolute: usage.body.resources.cpuAbsolute,
        disk_bytes: usage.body.resources.diskBytes,
        network_rx_bytes: usage.body.resources.networkRxBytes,
        network_tx_bytes: usage.body.resources.networkTxBytes,
      },
    });
  });

  it('a command reaches the console; the console credentials name this server', async () => {
    expect((await api.call('POST', path('/command'), { token, body: { command: 'say hello from the api' } })).body).toEqual({
      id: server.id,
      sent: true,
    });
    expect(sim.console(server.identifier).join('\n')).toContain('say hello from the api');
    const consoleCreds = await api.call('GET', path('/console'), { token });
    expect(consoleCreds.body.websocket.socket).toContain(panelUuid);
    expect(consoleCreds.body.websocket.token.split('.')).toHaveLength(3);
  });

  it('files round-trip: write, read, list, download, delete', async () => {
    const written = await api.call('POST', path('/files/write'), { token, body: { file: 'config/motd.txt', content: 'Welcome ✓' } });
    expect(written.body).toEqual({ file: '/config/motd.txt', written: true, bytes: Buffer.byteLength('Welcome ✓') });
    expect(sim.readFile(server.identifier, '/config/motd.txt')).toBe('Welcome ✓');
    expect((await api.call('GET', path('/files/contents?file=/config/motd.txt'), { token })).body).toEqual({
      file: '/config/motd.txt',
      content: 'Welcome ✓',
    });
    const listing = await api.call('GET', path('/files?directory=/config'), { token });
    expect(listing.body.data.map((f: { name: string }) => f.name)).toEqual(['motd.txt']);
    const link = await api.call('GET', path('/files/download?file=config/motd.txt'), { token });
    expect(await (await fetch(link.body.url)).text()).toBe('Welcome ✓');
    expect((await api.call('POST', path('/files/delete'), { token, body: { root: '/config', files: ['motd.txt'] } })).body).toEqual({
      root: '/config',
      deleted: ['motd.txt'],
    });
    expect(sim.readFile(server.identifier, '/config/motd.txt')).toBeUndefined();
  });

  it('resize: the panel, the price, the history and the account burn follow', async () => {
    const resized = await api.call('PATCH', path(), { token, body: { ramMb: 4096, cpuPercent: 200, diskMb: 20480 } });
    expect(resized.status).toBe(200);
    expect(resized.body).toMatchObject({ resources: { ramMb: 4096, cpuPercent: 200, diskMb: 20480 }, priceCentsPerHour: 3 });
    expect(sim.server(server.identifier)).toMatchObject({ memory: 4096, disk: 20480 });
    const stored = await getRaw(keys.server(accountId, server.id));
    expect(resized.body.priceMillicentsPerHour).toBe(2400);
    expect(stored!.history).toEqual([
      { at: server.createdAt, status: 'active', priceCentsPerHour: 1, priceMillicentsPerHour: 720 },
      { at: resized.body.updatedAt, status: 'active', priceCentsPerHour: 3, priceMillicentsPerHour: 2400 },
    ]);
    expect(await getRaw(keys.account(accountId))).toMatchObject({ burnCentsPerHour: 3, burnMillicentsPerHour: 2400 });
  });

  it('delete: gone from the panel, idempotent, uncounted; control and resize refused after', async () => {
    const deleted = await api.call('DELETE', path(), { token });
    expect(deleted.body).toMatchObject({ id: server.id, status: 'deleted' });
    expect(sim.server(server.identifier)).toBeUndefined();
    const again = await api.call('DELETE', path(), { token });
    expect(again.body).toEqual(deleted.body);
    expect(await getRaw(keys.account(accountId))).toMatchObject({ serverCount: 0, burnCentsPerHour: 0 });
    const after = await api.call('GET', path(), { token });
    expect(after.body).toMatchObject({ status: 'deleted', deletedAt: deleted.body.deletedAt, live: { available: false } });
    expectEnvelope(await api.call('POST', path('/power'), { token, body: { signal: 'start' } }), 409, 'conflict');
    expectEnvelope(await api.call('PATCH', path(), { token, body: { ramMb: 1024, cpuPercent: 100, diskMb: 2048 } }), 409, 'conflict');
  });

  it("the account's log holds every step as a success; the list still shows the server", async () => {
    const actions = (await api.call('GET', '/v1/account/logs?limit=100', { token })).body.data.map(
      (e: { action: string; result: string }) => `${e.action}:${e.result}`,
    );
    for (const action of [
      'servers.create',
      'servers.power',
      'servers.command',
      'servers.files.write',
      'servers.files.delete',
      'servers.resize',
      'servers.delete',
    ]) {
      expect(actions).toContain(`${action}:success`);
    }
    const listed = await api.call('GET', '/v1/servers', { token });
    expect(listed.body.data.map((s: { id: string }) => s.id)).toEqual([server.id]);
  });
});

describe('admin listing', () => {
  it("admins list every account's servers", async () => {
    const { token } = await customer(api, 'listed@example.com');
    const created = (await api.call('POST', '/v1/servers', { token, body: paper() })).body;
    const all = await api.call('GET', '/v1/admin/servers?limit=100');
    expect(all.body.data.find((s: { id: string }) => s.id === created.id)).toMatchObject({
      accountId: expect.any(String),
      name: 'paper server',
    });
    expectEnvelope(await api.call('GET', '/v1/admin/servers', { token }), 403, 'forbidden');
  });
});

describe('deploy refusals change nothing', () => {
  it('insufficient credit: 402 with what is needed, nothing on the panel or on record', async () => {
    const { token, id } = await customer(api, 'poor@example.com');
    await appendLedger(id, [{ type: 'deduction', amountCents: -450, idempotencyKey: `poor:${id}` }]); // 50 cents left
    const before = (sim.snapshot() as { servers: unknown[] }).servers.length;
    const res = await api.call('POST', '/v1/servers', { token, body: paper() });
    expectEnvelope(res, 402, 'insufficient_credit');
    expect(res.body.error.details).toMatchObject({ balanceCents: 50, requiredCents: 100 });
    expect((sim.snapshot() as { servers: unknown[] }).servers.length).toBe(before);
    expect(await queryPartition(keys.serverPrefix(id))).toHaveLength(0);
  });

  it('runway counts every active server: 24 × (existing + new) hourly prices', async () => {
    const { token, id } = await customer(api, 'runway@example.com'); // 500 cents
    // 16384 MB / 400 % / 20480 MB: 16·400 + 4·300 + 20·10 = 7800 millicents (shown as 8 cents) → 187.2 cents for 24 h.
    const big = { ramMb: 16384, cpuPercent: 400, diskMb: 20480 };
    expect((await api.call('POST', '/v1/servers', { token, body: paper(big) })).body.priceCentsPerHour).toBe(8);
    expect((await api.call('POST', '/v1/servers', { token, body: paper(big) })).status).toBe(201); // 374.4 → 375 ≤ 500
    const third = await api.call('POST', '/v1/servers', { token, body: paper(big) }); // 24 × 23,400 = 561.6 → 562 > 500
    expectEnvelope(third, 402, 'insufficient_credit');
    expect(third.body.error.details).toMatchObject({ requiredCents: 562, hourlyCentsAfter: 24, hourlyMillicentsAfter: 23_400 });
    // A resize that raises the price needs the runway too; one that lowers it never does.
    await appendLedger(id, [{ type: 'deduction', amountCents: -110, idempotencyKey: `runway:${id}` }]); // 390 left
    const servers = (await api.call('GET', '/v1/servers', { token })).body.data;
    // 16384/400/102400 costs 8,600 millicents: 24 × (7,800 + 8,600) = 393.6 → 394 > 390.
    expectEnvelope(
      await api.call('PATCH', `/v1/servers/${servers[0].id}`, { token, body: { ramMb: 16384, cpuPercent: 400, diskMb: 102400 } }),
      402,
      'insufficient_credit',
    );
    expect(
      (await api.call('PATCH', `/v1/servers/${servers[0].id}`, { token, body: { ramMb: 1024, cpuPercent: 100, diskMb: 2048 } })).status,
    ).toBe(200);
    expect(await getRaw(keys.account(id))).toMatchObject({ burnCentsPerHour: 9, burnMillicentsPerHour: 8520 });
  });

  it('concurrent deploys cannot both spend the same runway', async () => {
    const { token, id } = await customer(api, 'race@example.com'); // 500 cents: room for two 8-cent servers, not three
    const big = paper({ ramMb: 16384, cpuPercent: 400, diskMb: 20480 });
    const results = await Promise.all([1, 2, 3].map(() => api.call('POST', '/v1/servers', { token, body: big })));
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 402]);
    expect(await getRaw(keys.account(id))).toMatchObject({ serverCount: 2, burnCentsPerHour: 16, burnMillicentsPerHour: 15_600 });
    expect(await orphansOnPanel()).toEqual([]);
  });

  it('platform caps and the per-account server limit: 422 limit_exceeded, no panel call', async () => {
    const { token } = await customer(api, 'caps@example.com', { grantCents: 100_000 });
    const calls = await panelCallsDuring(async () => {
      const res = await api.call('POST', '/v1/servers', { token, body: paper({ ramMb: 16385 }) });
      expectEnvelope(res, 422, 'limit_exceeded');
      expect(res.body.error.details.issues[0].field).toBe('body.ramMb');
    });
    expect(calls).toBe(0);
    await api.call('PUT', '/v1/admin/settings', { body: { maxServersPerAccount: 1 } });
    try {
      expect((await api.call('POST', '/v1/servers', { token, body: paper() })).status).toBe(201);
      expectEnvelope(await api.call('POST', '/v1/servers', { token, body: paper() }), 422, 'limit_exceeded');
    } finally {
      await api.call('PUT', '/v1/admin/settings', { body: { maxServersPerAccount: 10 } });
    }
  });

  it('no capacity: 503 listing every node and why', async () => {
    const { token } = await customer(api, 'huge@example.com', { grantCents: 1_000_000 });
    await api.call('PUT', '/v1/admin/settings', { body: { serverCaps: { maxRamMb: 200_000 } } });
    try {
      const res = await api.call('POST', '/v1/servers', { token, body: paper({ ramMb: 100_000 }) });
      expectEnvelope(res, 503, 'no_capacity');
      const reasons = res.body.error.details.candidates
        .map((c: { nodeName: string; reason: string }) => `${c.nodeName}:${c.reason}`)
        .sort();
      expect(reasons).toEqual(['fra-1:insufficient_memory', 'fra-2:insufficient_memory', 'nyc-1:insufficient_memory']);
      // An unknown region is a mistake in the request, not a lack of capacity.
      const region = await api.call('POST', '/v1/servers', { token, body: paper({ region: 'ap-south' }) });
      expectEnvelope(region, 400, 'validation_failed');
      expect(region.body.error.details.issues[0].field).toBe('body.region');
      // A known region that is full is no_capacity, naming each node.
      const full = await api.call('POST', '/v1/servers', { token, body: paper({ ramMb: 100_000, region: 'us-east' }) });
      expectEnvelope(full, 503, 'no_capacity');
      expect(
        full.body.error.details.candidates.map((c: { nodeName: string; reason: string }) => `${c.nodeName}:${c.reason}`).sort(),
      ).toEqual(['fra-1:region_mismatch', 'fra-2:region_mismatch', 'nyc-1:insufficient_memory']);
    } finally {
      await api.call('PUT', '/v1/admin/settings', { body: { serverCaps: { maxRamMb: 16384 } } });
    }
  });

  it('node maintenance moves placement to another node', async () => {
    const { token } = await customer(api, 'maint@example.com');
    sim.setNodeMaintenance(3, true);
    try {
      const res = await api.call('POST', '/v1/servers', { token, body: paper() });
      expect(res.status).toBe(201);
      expect(res.body.region).toBe('eu-central');
    } finally {
      sim.setNodeMaintenance(3, false);
    }
  });

  it('egg variables: not editable, breaking a rule, unknown; a foreign docker image; an unknown egg — 400, no panel create', async () => {
    const { token } = await customer(api, 'eggs@example.com');
    const cases: [Record<string, unknown>, string][] = [
      [paper({ environment: { DL_PATH: 'https://evil.example/x.jar' } }), 'body.environment.DL_PATH'],
      [paper({ environment: { MINECRAFT_VERSION: 'x'.repeat(21) } }), 'body.environment.MINECRAFT_VERSION'],
      [paper({ environment: { SERVER_JARFILE: 'server.zip' } }), 'body.environment.SERVER_JARFILE'],
      [paper({ environment: { NOT_A_VARIABLE: '1' } }), 'body.environment.NOT_A_VARIABLE'],
      [paper({ eggId: 3, environment: { RCON_PORT: '1' } }), 'body.environment.RCON_PORT'],
      [paper({ eggId: 3, environment: { WORLD_SIZE: '7000' } }), 'body.environment.WORLD_SIZE'],
      [paper({ eggId: 3, environment: { LEVEL: 'Moon' } }), 'body.environment.LEVEL'],
      [paper({ dockerImage: 'docker.io/attacker/miner:latest' }), 'body.dockerImage'],
      [paper({ eggId: 999 }), 'body.eggId'],
      [paper({ instanceId: '00000000-0000-4000-8000-000000000000' }), 'body.instanceId'],
    ];
    for (const [body, field] of cases) {
      const creates = sim.faults.add({ method: 'POST', path: '/api/application/servers', effect: { kind: 'latency', ms: 0 } });
      const res = await api.call('POST', '/v1/servers', { token, body });
      expectEnvelope(res, 400, 'validation_failed');
      expect(res.body.error.details.issues.map((i: { field: string }) => i.field)).toContain(field);
      expect(sim.faults.list().find((f) => f.id === creates)!.hits).toBe(0);
      sim.faults.remove(creates);
    }
    // An allowed image and valid values go through.
    const ok = await api.call('POST', '/v1/servers', {
      token,
      body: paper({ eggId: 3, dockerImage: 'ghcr.io/pterodactyl/games:rust', environment: { WORLD_SIZE: '4000', LEVEL: 'Barren' } }),
    });
    expect(ok.status).toBe(201);
    expect(sim.server(ok.body.identifier)!.environment).toMatchObject({
      WORLD_SIZE: '4000',
      LEVEL: 'Barren',
      RCON_PORT: expect.any(String),
    });
  });

  it('bad bodies: name outside 3–60, below the minimums, wrong types — 400 naming each field, no panel call', async () => {
    const { token } = await customer(api, 'badbody@example.com');
    const calls = await panelCallsDuring(async () => {
      const res = await api.call('POST', '/v1/servers', {
        token,
        body: { name: 'ab', eggId: '1', ramMb: 255, cpuPercent: 24, diskMb: 511, region: 5 },
      });
      expectEnvelope(res, 400, 'validation_failed');
      expect(res.body.error.details.issues.map((i: { field: string }) => i.field).sort()).toEqual([
        'body.cpuPercent',
        'body.diskMb',
        'body.eggId',
        'body.name',
        'body.ramMb',
        'body.region',
      ]);
      expectEnvelope(await api.call('POST', '/v1/servers', { token, body: paper({ name: 'x'.repeat(61) }) }), 400, 'validation_failed');
    });
    expect(calls).toBe(0);
  });
});

describe('the panel failing during create', () => {
  it('a create whose answer is lost is found by its external id: one server, recorded once', async () => {
    const { token, id } = await customer(api, 'lost@example.com');
    sim.faults.add({ method: 'POST', path: '/api/application/servers', count: 1, effect: { kind: 'lost_response' } });
    const res = await api.call('POST', '/v1/servers', { token, body: paper() });
    expect(res.status).toBe(201);
    const onPanel = (sim.snapshot() as { servers: { external_id: string | null }[] }).servers.filter((s) => s.external_id === res.body.id);
    expect(onPanel).toHaveLength(1);
    expect(await queryPartition(keys.serverPrefix(id))).toHaveLength(1);
    expect(await orphansOnPanel()).toEqual([]);
  });

  it('a panel that times out without creating: 504, nothing recorded or charged; the retry creates exactly one', async () => {
    const { token, id } = await customer(api, 'timeout@example.com');
    sim.faults.add({ method: 'POST', path: '/api/application/servers', count: 1, effect: { kind: 'timeout' } });
    const headers = { 'idempotency-key': 'deploy-timeout-1' };
    const failed = await api.call('POST', '/v1/servers', { token, body: paper(), headers });
    expectEnvelope(failed, 504, 'panel_timeout');
    expect(await queryPartition(keys.serverPrefix(id))).toHaveLength(0);
    expect(await getRaw(keys.account(id))).toMatchObject({ serverCount: 0, burnCentsPerHour: 0, balanceCents: 500 });
    expect(await queryPartition(keys.ledgerPrefix(id))).toHaveLength(1); // the trial only

    const retry = await api.call('POST', '/v1/servers', { token, body: paper(), headers });
    expect(retry.status).toBe(201);
    const replay = await api.call('POST', '/v1/servers', { token, body: paper(), headers });
    expect(replay.body.id).toBe(retry.body.id);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    const mine = (sim.snapshot() as { servers: { external_id: string | null }[] }).servers.filter((s) => s.external_id === retry.body.id);
    expect(mine).toHaveLength(1);
    expect(await queryPartition(keys.serverPrefix(id))).toHaveLength(1);
    expect(await orphansOnPanel()).toEqual([]);
  });

  it('a panel 5xx on create: 502, nothing recorded', async () => {
    const { token, id } = await customer(api, 'fivexx@example.com');
    sim.faults.add({ method: 'POST', path: '/api/application/servers', count: 1, effect: { kind: 'status', status: 500 } });
    expectEnvelope(await api.call('POST', '/v1/servers', { token, body: paper() }), 502, 'panel_error');
    expect(await queryPartition(keys.serverPrefix(id))).toHaveLength(0);
  });

  it('an unreachable panel on read: the stored server comes back with the live part unavailable', async () => {
    const { token } = await customer(api, 'unreach@example.com');
    const server = (await api.call('POST', '/v1/servers', { token, body: paper() })).body;
    sim.faults.add({ method: 'GET', path: '/api/application/servers/', count: 3, effect: { kind: 'status', status: 503 } });
    const res = await api.call('GET', `/v1/servers/${server.id}`, { token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: server.id, name: 'paper server', live: { available: false, installStatus: null } });
    sim.faults.clear();
  });
});

describe('control refusals', () => {
  let token: string;
  let serverId: string;
  beforeAll(async () => {
    ({ token } = await customer(api, 'control@example.com'));
    const server = (await api.call('POST', '/v1/servers', { token, body: paper() })).body;
    serverId = server.id;
    await until(async () => (await api.call('GET', `/v1/servers/${serverId}`, { token })).body.live.installStatus === 'installed');
  });

  it('bad control input is 400 with the field named and never reaches the panel', async () => {
    const calls = await panelCallsDuring(async () => {
      const cases: [string, string, Record<string, unknown> | undefined, string][] = [
        ['POST', 'power', { signal: 'explode' }, 'body.signal'],
        ['POST', 'command', { command: '' }, 'body.command'],
        ['POST', 'command', { command: 'say a\nstop' }, 'body.command'],
        ['POST', 'command', { command: 'x'.repeat(1025) }, 'body.command'],
        ['GET', 'files?directory=../../etc', undefined, 'query.directory'],
        ['GET', 'files/contents?file=/logs/../../../etc/passwd', undefined, 'query.file'],
        ['GET', 'files/contents?file=a%00b', undefined, 'query.file'],
        ['GET', 'files/contents', undefined, 'query.file'],
        ['GET', 'files/download?file=..', undefined, 'query.file'],
        ['POST', 'files/write', { file: '../x', content: 'a' }, 'body.file'],
        ['POST', 'files/write', { file: 'big.txt', content: 'x'.repeat(524_289) }, 'body.content'],
        ['POST', 'files/write', { file: 'x.txt' }, 'body.content'],
        ['POST', 'files/delete', { files: [] }, 'body.files'],
        ['POST', 'files/delete', { root: '/..', files: ['a'] }, 'body.root'],
        ['PATCH', '', { ramMb: 128, cpuPercent: 100, diskMb: 2048 }, 'body.ramMb'],
        ['PATCH', '', { ramMb: 1024 }, 'body.cpuPercent'],
      ];
      for (const [method, sub, body, field] of cases) {
        const res = await api.call(method, `/v1/servers/${serverId}${sub ? `/${sub}` : ''}`, { token, body });
        expectEnvelope(res, 400, 'validation_failed');
        expect(
          res.body.error.details.issues.map((i: { field: string }) => i.field),
          `${method} ${sub}`,
        ).toContain(field);
      }
      const capped = await api.call('PATCH', `/v1/servers/${serverId}`, { token, body: { ramMb: 1024, cpuPercent: 401, diskMb: 2048 } });
      expectEnvelope(capped, 422, 'limit_exceeded');
      expect(capped.body.error.details.issues[0].field).toBe('body.cpuPercent');
    });
    expect(calls).toBe(0);
  });

  it('a command to a stopped server is a 409, not a panel error', async () => {
    expectEnvelope(await api.call('POST', `/v1/servers/${serverId}/command`, { token, body: { command: 'say hi' } }), 409, 'conflict');
  });

  it('a suspended server refuses control with 409', async () => {
    const { id: accountId } = (await api.call('GET', '/v1/account', { token })).body;
    await setAttributes(keys.server(accountId, serverId), { status: 'suspended' }); // as the billing pass will
    try {
      for (const [method, sub, body] of [
        ['POST', 'power', { signal: 'start' }],
        ['GET', 'resources'],
        ['GET', 'console'],
        ['GET', 'files'],
      ] as const) {
        const res = await api.call(method, `/v1/servers/${serverId}/${sub}`, { token, body });
        expectEnvelope(res, 409, 'conflict');
        expect(res.body.error.message).toMatch(/suspended/);
      }
    } finally {
      await setAttributes(keys.server(accountId, serverId), { status: 'active' });
    }
  });

  it('without a client key: control is 400 no_client_key, deploy still works under a per-account panel user', async () => {
    await api.call('PATCH', `/v1/admin/instances/${instanceId}`, { body: { clientApiKey: null } });
    try {
      for (const [method, sub, body] of [
        ['POST', 'power', { signal: 'start' }],
        ['GET', 'resources'],
        ['POST', 'command', { command: 'x' }],
        ['GET', 'console'],
        ['GET', 'files'],
        ['GET', 'files/contents?file=a'],
        ['POST', 'files/write', { file: 'a', content: '' }],
        ['GET', 'files/download?file=a'],
        ['POST', 'files/delete', { files: ['a'] }],
      ] as const) {
        expectEnvelope(await api.call(method, `/v1/servers/${serverId}/${sub}`, { token, body }), 400, 'no_client_key');
      }
      const { token: other, id: otherId } = await customer(api, 'nokey@example.com');
      const res = await api.call('POST', '/v1/servers', { token: other, body: paper() });
      expect(res.status).toBe(201);
      const panelServer = sim.server(res.body.identifier)!;
      expect(panelServer.owner_id).not.toBe(sim.serviceUserId);
      const again = await api.call('POST', '/v1/servers', { token: other, body: paper() });
      expect(sim.server(again.body.identifier)!.owner_id).toBe(panelServer.owner_id); // one panel user per account
      expect(
        (sim.snapshot() as { users: { id: number; external_id: string | null }[] }).users.find((u) => u.id === panelServer.owner_id)!
          .external_id,
      ).toBe(`cp-account-${otherId}`);
    } finally {
      await api.call('PATCH', `/v1/admin/instances/${instanceId}`, { body: { clientApiKey: sim.clientKey } });
    }
  });
});

describe('isolation', () => {
  it("account B gets 404 on every route of account A's server, exactly as for an unknown id, and changes nothing", async () => {
    const a = await customer(api, 'owner-a@example.com');
    const b = await customer(api, 'intruder-b@example.com');
    const server = (await api.call('POST', '/v1/servers', { token: a.token, body: paper() })).body;
    const unknown = '00000000-0000-4000-8000-000000000000';
    const routes: [string, string, Record<string, unknown> | undefined][] = [
      ['GET', '', undefined],
      ['PATCH', '', { ramMb: 2048, cpuPercent: 100, diskMb: 2048 }],
      ['DELETE', '', undefined],
      ['POST', '/power', { signal: 'kill' }],
      ['GET', '/resources', undefined],
      ['POST', '/command', { command: 'stop' }],
      ['GET', '/console', undefined],
      ['GET', '/files', undefined],
      ['GET', '/files/contents?file=eula.txt', undefined],
      ['POST', '/files/write', { file: 'pwned.txt', content: 'x' }],
      ['GET', '/files/download?file=eula.txt', undefined],
      ['POST', '/files/delete', { files: ['eula.txt'] }],
    ];
    for (const [method, sub, body] of routes) {
      const foreign = await api.call(method, `/v1/servers/${server.id}${sub}`, { token: b.token, body });
      const missing = await api.call(method, `/v1/servers/${unknown}${sub}`, { token: b.token, body });
      expectEnvelope(foreign, 404, 'not_found');
      expect(foreign.body).toEqual(missing.body);
    }
    const still = await api.call('GET', `/v1/servers/${server.id}`, { token: a.token });
    expect(still.body).toMatchObject({ status: 'active', resources: { ramMb: 1024 } });
    expect(sim.server(server.identifier)).toBeDefined();
    expect((await api.call('GET', '/v1/servers', { token: b.token })).body.data).toEqual([]);
  });
});
