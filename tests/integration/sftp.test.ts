import { ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { runRepairs } from '../../shared/servers/repairs.ts';
import { customer } from '../helpers/customer.ts';
import { getRaw } from '../helpers/db.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * SFTP without breaking isolation, over DynamoDB Local and the panel simulator: an account's
 * password is asked of the panel exactly as Wings asks it (`POST /api/remote/sftp/auth` with the
 * node's daemon token), and opens that account's servers and nothing else. Every log line of the
 * run is kept to prove the password is in none of them.
 */
process.env.LOG_LEVEL = 'debug';

let api: TestApi;
let sim: PanelSim;
const logs: string[] = [];
let restoreOutput: () => void = () => {};

beforeAll(async () => {
  restoreOutput = captureOutput();
  // The pending-repair pass runs only when a test runs it (runRepairs), so its panel calls can be counted.
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 40, resourcesCacheMs: 0 }, repairs: false });
  sim = api.panel!.sim;
});
afterAll(async () => {
  restoreOutput();
  await api?.stop();
});

/** Every log line of the service (stdout, stderr, console) is kept, not echoed. */
function captureOutput(): () => void {
  const out = process.stdout.write.bind(process.stdout);
  const err = process.stderr.write.bind(process.stderr);
  const hook = (original: typeof out) =>
    ((chunk: unknown, ...rest: unknown[]) => {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8');
      logs.push(text);
      if (text.startsWith('{"level"')) {
        (rest.find((r) => typeof r === 'function') as (() => void) | undefined)?.();
        return true;
      }
      return (original as (...a: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof process.stdout.write;
  process.stdout.write = hook(out);
  process.stderr.write = hook(err);
  const methods = ['log', 'info', 'warn', 'error', 'debug'] as const;
  const saved = methods.map((m) => console[m]);
  for (const m of methods)
    console[m] = (...args: unknown[]) => void logs.push(args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' '));
  return () => {
    process.stdout.write = out;
    process.stderr.write = err;
    methods.forEach((m, i) => {
      console[m] = saved[i]!;
    });
  };
}

interface Server {
  id: string;
  identifier: string;
  sftp: { host: string | null; port: number | null; username: string; enabled: boolean };
}

const deploy = async (token: string, region: string): Promise<Server> => {
  const res = await api.call('POST', '/v1/servers', {
    token,
    body: { name: 'sftp server', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048, region },
  });
  expect(res.status, res.text).toBe(201);
  await until(() => sim.server(res.body.identifier)?.status === null);
  return res.body;
};

/** What Wings sends when an SFTP client logs in to a server of its node: the node's token, the typed username and password. */
async function sftpLogin(identifier: string, username: string, password: string, ip = '203.0.113.7') {
  const node = sim.state.nodes.get(sim.server(identifier)?.node_id ?? [...sim.state.nodes.keys()][0]!)!;
  const res = await fetch(`${sim.url}/api/remote/sftp/auth`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${node.daemon_token_id}.${node.daemon_token}`,
      'content-type': 'application/json',
      accept: 'application/json',
    },
    body: JSON.stringify({ type: 'password', username, password, ip }),
  });
  return { status: res.status, body: (await res.json()) as { server?: string; permissions?: string[]; errors?: { detail: string }[] } };
}

/** Application and Client API requests the panel received during `fn` (not Wings' remote calls). */
async function panelCallsDuring(fn: () => Promise<void>): Promise<Record<string, number>> {
  const read = async () => ((await (await fetch(`${sim.url}/__sim/requests`)).json()) as { requests: Record<string, number> }).requests;
  const before = await read();
  await fn();
  const after = await read();
  const delta: Record<string, number> = {};
  for (const [k, n] of Object.entries(after)) {
    const d = n - (before[k] ?? 0);
    if (d <= 0 || k.includes('/api/remote/')) continue;
    const named = k.replace(/\/servers\/[^/]+\/users$/, '/servers/{s}/users').replace(/\/users\/\d+$/, '/users/{id}');
    delta[named] = (delta[named] ?? 0) + d;
  }
  return delta;
}

const appApi = (method: string, path: string) =>
  fetch(`${sim.url}/api/application${path}`, { method, headers: { authorization: `Bearer ${sim.appKey}`, accept: 'application/json' } });

describe('SFTP: an account opens its own servers and no other', () => {
  let alice: { token: string; id: string };
  let bob: { token: string; id: string };
  let a1: Server;
  let a2: Server;
  let b1: Server;
  let first: string;
  let second: string;
  let bobPassword: string;

  it('every server view says where and as whom, before any password: not enabled', async () => {
    alice = await customer(api, 'sftp-alice@example.com', { grantCents: 20_000 });
    bob = await customer(api, 'sftp-bob@example.com', { grantCents: 20_000 });
    a1 = await deploy(alice.token, 'us-east');
    a2 = await deploy(alice.token, 'eu-central');
    b1 = await deploy(bob.token, 'us-east');
    for (const s of [a1, a2, b1]) {
      const node = sim.state.nodes.get(sim.server(s.identifier)!.node_id)!;
      expect(s.sftp).toEqual({
        host: node.fqdn,
        port: node.daemon_sftp,
        username: expect.stringMatching(/^cp[0-9a-f]{16}\./),
        enabled: false,
      });
      expect(s.sftp.username.endsWith(`.${s.identifier}`)).toBe(true);
    }
    expect(a1.sftp.username.split('.')[0]).toBe(a2.sftp.username.split('.')[0]);
    expect(a1.sftp.username.split('.')[0]).not.toBe(b1.sftp.username.split('.')[0]);
  });

  it('no password yet: the panel refuses the login', async () => {
    expect((await sftpLogin(a1.identifier, a1.sftp.username, 'anything')).status).toBe(403);
  });

  it('the first set: a user, its password and two subusers on the panel; the answer shows the password once', async () => {
    let res!: Awaited<ReturnType<TestApi['call']>>;
    const calls = await panelCallsDuring(async () => {
      res = await api.call('POST', '/v1/account/sftp-password', { token: alice.token, body: {} });
    });
    expect(res.status, res.text).toBe(200);
    first = res.body.password;
    expect(first).toMatch(/^[\w-]{32}$/);
    expect(res.body.servers).toHaveLength(2);
    for (const s of [a1, a2]) expect(res.body.servers).toContainEqual({ serverId: s.id, ...s.sftp, enabled: true });
    // 1 lookup by external id, 1 create with the password, 1 subuser add per server.
    expect(calls).toEqual({
      [`GET /api/application/users/external/cp-account-${alice.id}`]: 1,
      'POST /api/application/users': 1,
      'POST /api/client/servers/{s}/users': 2,
    });
    const user = [...sim.state.users.values()].find((u) => u.username === a1.sftp.username.split('.')[0])!;
    expect(user.root_admin).toBe(false);
    expect(user.email).toMatch(/@users\.control-plane\.invalid$/);
    expect(sim.state.servers.size).toBeGreaterThan(0);
    expect([...sim.state.servers.values()].some((s) => s.owner_id === user.id)).toBe(false);
  });

  it("the password opens each of the account's servers, with file permissions only", async () => {
    for (const s of [a1, a2]) {
      const login = await sftpLogin(s.identifier, s.sftp.username, first);
      expect(login.status, JSON.stringify(login.body)).toBe(200);
      expect(login.body.server).toBe(sim.server(s.identifier)!.uuid);
      expect(login.body.permissions).toEqual(expect.arrayContaining(['file.sftp', 'file.read', 'file.update']));
      expect(login.body.permissions).not.toContain('control.start');
      expect(login.body.permissions).not.toContain('*');
    }
    const view = await api.call('GET', `/v1/servers/${a1.id}`, { token: alice.token });
    expect(view.body.sftp).toEqual({ ...a1.sftp, enabled: true });
  });

  it("and not another account's server, nor with a wrong password", async () => {
    const aliceUser = a1.sftp.username.split('.')[0];
    const other = await sftpLogin(b1.identifier, `${aliceUser}.${b1.identifier}`, first);
    expect(other.status).toBe(403);
    expect(other.body.errors?.[0]?.detail).toBe('You do not have permission to access SFTP for this server.');
    expect((await sftpLogin(b1.identifier, b1.sftp.username, first)).status).toBe(403);
    expect((await sftpLogin(a1.identifier, a1.sftp.username, `${first}x`)).status).toBe(403);
  });

  it('another account gets its own login, which opens only its server', async () => {
    const res = await api.call('POST', '/v1/account/sftp-password', { token: bob.token, body: {} });
    expect(res.status, res.text).toBe(200);
    bobPassword = res.body.password;
    expect(bobPassword).not.toBe(first);
    expect((await sftpLogin(b1.identifier, b1.sftp.username, bobPassword)).status).toBe(200);
    const bobUser = b1.sftp.username.split('.')[0];
    expect((await sftpLogin(a1.identifier, `${bobUser}.${a1.identifier}`, bobPassword)).status).toBe(403);
    expect((await sftpLogin(a1.identifier, a1.sftp.username, bobPassword)).status).toBe(403);
  });

  it('a second set replaces the password: one panel call, the first password refused', async () => {
    let res!: Awaited<ReturnType<TestApi['call']>>;
    const calls = await panelCallsDuring(async () => {
      res = await api.call('POST', '/v1/account/sftp-password', { token: alice.token, body: {} });
    });
    expect(res.status, res.text).toBe(200);
    second = res.body.password;
    expect(second).not.toBe(first);
    expect(calls).toEqual({ 'PATCH /api/application/users/{id}': 1 });
    expect((await sftpLogin(a2.identifier, a2.sftp.username, first)).status).toBe(403);
    expect((await sftpLogin(a2.identifier, a2.sftp.username, second)).status).toBe(200);
  });

  it('the panel refuses SFTP to a suspended server by itself (409), and opens it again after', async () => {
    const panelId = sim.server(a1.identifier)!.id;
    expect((await appApi('POST', `/servers/${panelId}/suspend`)).status).toBe(204);
    const login = await sftpLogin(a1.identifier, a1.sftp.username, second);
    expect(login.status).toBe(409);
    expect(login.body.errors?.[0]?.detail).toMatch(/suspended/);
    expect((await appApi('POST', `/servers/${panelId}/unsuspend`)).status).toBe(204);
    expect((await sftpLogin(a1.identifier, a1.sftp.username, second)).status).toBe(200);
  });

  it('a deleted server: the login no longer opens it (the panel drops the subuser with the server)', async () => {
    const deleted = await api.call('DELETE', `/v1/servers/${a2.id}`, { token: alice.token });
    expect(deleted.status, deleted.text).toBe(200);
    expect(sim.server(a2.identifier)).toBeUndefined();
    // Asked through the node it ran on: the panel finds no such server there.
    const node = [...sim.state.nodes.values()].find((n) => n.fqdn === a2.sftp.host)!;
    const res = await fetch(`${sim.url}/api/remote/sftp/auth`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${node.daemon_token_id}.${node.daemon_token}`,
        'content-type': 'application/json',
        accept: 'application/json',
      },
      body: JSON.stringify({ type: 'password', username: a2.sftp.username, password: second, ip: '203.0.113.7' }),
    });
    expect(res.status).toBe(403);
    expect((await api.call('GET', `/v1/servers/${a2.id}`, { token: alice.token })).body.sftp.enabled).toBe(false);
  });

  it('after deletion, a new set covers only the servers left', async () => {
    const res = await api.call('POST', '/v1/account/sftp-password', { token: alice.token, body: {} });
    expect(res.status, res.text).toBe(200);
    expect(res.body.servers.map((s: { serverId: string }) => s.serverId)).toEqual([a1.id]);
    second = res.body.password;
    expect((await sftpLogin(a1.identifier, a1.sftp.username, second)).status).toBe(200);
  });

  it('a server deployed after the set: the repair pass grants it once the install ends (the panel refuses subusers before)', async () => {
    sim.holdInstalls();
    const res = await api.call('POST', '/v1/servers', {
      token: alice.token,
      body: { name: 'sftp later', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048, region: 'us-east' },
    });
    expect(res.status, res.text).toBe(201);
    const a3: Server = res.body;
    expect(a3.sftp).toMatchObject({ username: `${a1.sftp.username.split('.')[0]}.${a3.identifier}`, enabled: false });
    try {
      const installing = await panelCallsDuring(async () => {
        expect(await runRepairs(new Date(Date.now() + 1000))).toMatchObject({ due: 1, failed: 1 });
      });
      expect(installing).toEqual({ 'POST /api/client/servers/{s}/users': 1 });
      expect((await sftpLogin(a3.identifier, a3.sftp.username, second)).status).toBe(403);
      expect(sim.endInstall(a3.identifier)).toBe(true);
    } finally {
      sim.holdInstalls(false);
    }
    // The retry is due after its backoff: run the pass as if that time had come.
    const installed = await panelCallsDuring(async () => {
      expect(await runRepairs(new Date(Date.now() + 20 * 60_000))).toMatchObject({ due: 1, repaired: 1 });
    });
    expect(installed).toEqual({ 'POST /api/client/servers/{s}/users': 1 });
    expect((await sftpLogin(a3.identifier, a3.sftp.username, second)).status).toBe(200);
    expect((await api.call('GET', `/v1/servers/${a3.id}`, { token: alice.token })).body.sftp.enabled).toBe(true);
  });

  it('bad input changes nothing: a password of the caller is refused, and an account without servers gets 409', async () => {
    const chosen = await api.call('POST', '/v1/account/sftp-password', { token: alice.token, body: { password: 'mine-1234567890' } });
    expectEnvelope(chosen, 400, 'validation_failed');
    expect((await sftpLogin(a1.identifier, a1.sftp.username, second)).status).toBe(200);
    const empty = await customer(api, 'sftp-empty@example.com');
    expectEnvelope(await api.call('POST', '/v1/account/sftp-password', { token: empty.token, body: {} }), 409, 'conflict');
    const readOnly = await api.call('POST', '/v1/keys', { token: alice.token, body: { name: 'ro', scopes: ['servers:read'] } });
    expectEnvelope(await api.call('POST', '/v1/account/sftp-password', { token: readOnly.body.secret, body: {} }), 403, 'forbidden');
  });

  it('a set the panel refuses: an error without the password, and the old password still opens the server', async () => {
    const fault = sim.faults.add({
      method: 'PATCH',
      path: /^\/api\/application\/users\/\d+$/,
      count: 3,
      effect: { kind: 'status', status: 500 },
    });
    try {
      const res = await api.call('POST', '/v1/account/sftp-password', { token: alice.token, body: {} });
      expectEnvelope(res, 502, 'panel_error');
      expect(res.text).not.toContain('password');
    } finally {
      sim.faults.remove(fault);
    }
    expect((await sftpLogin(a1.identifier, a1.sftp.username, second)).status).toBe(200);
  });

  it('a server recorded before SFTP was kept: host and port null, the username still known', async () => {
    await db().send(
      new UpdateCommand({ TableName: tableName(), Key: keys.server(alice.id, a1.id), UpdateExpression: 'REMOVE sftp, sftpGrantedAt' }),
    );
    const view = await api.call('GET', `/v1/servers/${a1.id}`, { token: alice.token });
    expect(view.body.sftp).toEqual({ host: null, port: null, username: a1.sftp.username, enabled: false });
  });

  it('the passwords are in no log line, no later answer, no activity entry and no stored item', async () => {
    const passwords = [first, second, bobPassword];
    const activity = await api.call('GET', '/v1/account/logs?limit=100', { token: alice.token });
    // The newest set that succeeded (the last one, with the deleted server gone).
    const entry = activity.body.data.find(
      (e: { action: string; result: string }) => e.action === 'sftp.password' && e.result === 'success',
    );
    expect(entry).toMatchObject({ details: { servers: 1, enabled: 1 } });
    const later = [
      activity.text,
      (await api.call('GET', '/v1/servers', { token: alice.token })).text,
      (await api.call('GET', `/v1/servers/${a1.id}`, { token: alice.token })).text,
      (await api.call('GET', '/v1/account', { token: alice.token })).text,
    ];
    const items = JSON.stringify((await db().send(new ScanCommand({ TableName: tableName() }))).Items);
    // The pipeline logs no success; the lookups' 404s and the refused sets above are logged (warn).
    expect(logs.filter((l) => l.includes('"level":"warn"')).length).toBeGreaterThanOrEqual(5);
    for (const p of passwords) {
      expect(logs.some((l) => l.includes(p))).toBe(false);
      expect(later.some((t) => t.includes(p))).toBe(false);
      expect(items.includes(p)).toBe(false);
    }
    // What the profile keeps: the panel user's id per instance, nothing about the password.
    expect((await getRaw(keys.account(alice.id)))?.sftpUsers).toEqual({ [api.panel!.instanceId]: expect.any(Number) });
  });
});
