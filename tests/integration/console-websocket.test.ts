import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * The console through a real websocket: credentials from GET /v1/servers/:id/console, the
 * simulator's Wings websocket at the returned address, Wings' protocol (auth, status, console
 * output, stats, send command, token expiring/expired, jwt error, daemon error) and its Origin check.
 */

// Wings' `remote`: the panel's public URL, while the service reaches the panel at the simulator's
// own address (http://127.0.0.1:<port>), so the registered URL is not an Origin Wings accept.
const WINGS_REMOTE = 'https://panel.example.com';

// The console options of the simulator (dev/stack.ts passes a panel's options through to
// startPanelSim): the socket address points at the simulator, token expiry checked every 200 ms.
const panelOptions = {
  installMs: 300,
  transitionMs: 40,
  resourcesCacheMs: 0,
  wingsAddress: 'simulator' as const,
  tokenCheckMs: 200,
  consoleStatsMs: 500,
  remote: WINGS_REMOTE,
};

let api: TestApi;
let sim: PanelSim;
let token: string;
let server: { id: string; identifier: string };
const sockets: WebSocket[] = [];

interface Frame {
  event: string;
  args?: string[];
}

/** A console client: every frame received, in order, and a way to wait for one. */
async function connect(socket: string, origin: string, onUpgrade?: (status: number) => void) {
  const ws = new WebSocket(socket, { origin });
  sockets.push(ws);
  ws.once('upgrade', (res) => onUpgrade?.(res.statusCode ?? 0));
  const frames: Frame[] = [];
  ws.on('message', (data) => frames.push(JSON.parse(data.toString()) as Frame));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return {
    frames,
    send: (event: string, args?: string[]) => ws.send(JSON.stringify(args ? { event, args } : { event })),
    /** the first frame (from `from` on) matching, waiting up to `ms` */
    next: async (match: (f: Frame) => boolean, from = 0, ms = 5000): Promise<Frame> => {
      let found: Frame | undefined;
      await until(
        () => {
          found = frames.slice(from).find(match);
          return found !== undefined;
        },
        { ms },
      ).catch(() => {
        throw new Error(`no matching frame; got ${JSON.stringify(frames)}`);
      });
      return found!;
    },
  };
}

/** The upgrade's HTTP status when the server refuses it. */
function refusedStatus(socket: string, headers: { origin?: string }): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(socket, headers);
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.on('open', () => {
      ws.terminate();
      reject(new Error('the upgrade was accepted'));
    });
    ws.on('error', () => undefined);
  });
}

const credentials = async () => {
  const res = await api.call('GET', `/v1/servers/${server.id}/console`, { token });
  expect(res.status).toBe(200);
  return res.body as { socket: string; token: string; expiresAt: string; origin: string; websocket: { token: string; socket: string } };
};

beforeAll(async () => {
  api = await startTestApi({ panel: panelOptions });
  sim = api.panel!.sim;
  token = await api.session('console@example.com');
  const created = await api.call('POST', '/v1/servers', {
    token,
    body: { name: 'console server', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
  });
  expect(created.status).toBe(201);
  server = created.body;
  const set = await api.call('PATCH', `/v1/admin/instances/${api.panel!.instanceId}`, { body: { wingsOrigin: WINGS_REMOTE } });
  expect(set.status).toBe(200);
  await until(async () => (await api.call('GET', `/v1/servers/${server.id}`, { token })).body.live?.installStatus === 'installed');
  expect((await api.call('POST', `/v1/servers/${server.id}/power`, { token, body: { signal: 'start' } })).body.accepted).toBe(true);
  await until(() => sim.powerState(server.identifier) === 'running');
});

afterAll(async () => {
  for (const ws of sockets) ws.terminate();
  await api?.stop();
});

describe('the console websocket', () => {
  it('GET /v1/servers/:id/console: socket, token, expiresAt, origin (and the old fields)', async () => {
    const creds = await credentials();
    const uuid = sim.server(server.identifier)!.uuid;
    expect(creds.socket).toBe(`${sim.url.replace(/^http/, 'ws')}/api/servers/${uuid}/ws`);
    expect(creds.origin).toBe(WINGS_REMOTE);
    expect(creds.token.split('.')).toHaveLength(3);
    const left = Date.parse(creds.expiresAt) - Date.now();
    expect(left).toBeGreaterThan(590_000);
    expect(left).toBeLessThanOrEqual(600_000);
    expect(creds.websocket).toEqual({ token: creds.token, socket: creds.socket });
  });

  it('authenticates, streams status, logs and stats, and shows commands from the socket and from POST /command', async () => {
    const creds = await credentials();
    const c = await connect(creds.socket, creds.origin);
    c.send('auth', [creds.token]);
    await c.next((f) => f.event === 'auth success');
    expect(await c.next((f) => f.event === 'status')).toEqual({ event: 'status', args: ['running'] });

    const logsFrom = c.frames.length;
    c.send('send logs');
    await c.next((f) => f.event === 'console output' && (f.args?.[0] ?? '').startsWith('container@pterodactyl~'), logsFrom);

    c.send('send command', ['say from the socket']);
    await c.next((f) => f.event === 'console output' && f.args?.[0] === '> say from the socket');

    const api204 = await api.call('POST', `/v1/servers/${server.id}/command`, { token, body: { command: 'say from the api' } });
    expect(api204.body).toEqual({ id: server.id, sent: true });
    await c.next((f) => f.event === 'console output' && f.args?.[0] === '> say from the api');
    expect(sim.commands(server.identifier)).toEqual(expect.arrayContaining(['say from the socket', 'say from the api']));

    const stats = JSON.parse((await c.next((f) => f.event === 'stats')).args![0]!);
    expect(stats).toMatchObject({ state: 'running', memory_bytes: expect.any(Number), network: { rx_bytes: expect.any(Number) } });
    expect(stats.memory_bytes).toBeGreaterThan(0);

    const from = c.frames.length;
    c.send('set state', ['restart']);
    await c.next((f) => f.event === 'status' && f.args?.[0] === 'stopping', from);
    await c.next((f) => f.event === 'status' && f.args?.[0] === 'running', from);
  });

  it('refuses an upgrade whose Origin is neither the panel URL nor allowed (403)', async () => {
    const creds = await credentials();
    expect(await refusedStatus(creds.socket, { origin: 'https://evil.example' })).toBe(403);
    expect(await refusedStatus(creds.socket, {})).toBe(403);
  });

  it("sends the instance's wingsOrigin as origin: Wings whose remote is not the registered URL refuse it (403) until it is set (101)", async () => {
    const path = `/v1/admin/instances/${api.panel!.instanceId}`;
    const unset = await api.call('PATCH', path, { body: { wingsOrigin: null } });
    expect(unset.body.wingsOrigin).toBeNull();
    const before = await credentials();
    expect(before.origin).toBe(sim.url);
    expect(await refusedStatus(before.socket, { origin: before.origin })).toBe(403);

    // normalized to an origin; a path is refused with nothing changed
    const bad = await api.call('PATCH', path, { body: { wingsOrigin: 'https://panel.example.com/panel' } });
    expect(bad.status).toBe(400);
    const listed = (await api.call('GET', '/v1/admin/instances')).body.data as { id: string; wingsOrigin: string | null }[];
    expect(listed.find((i) => i.id === api.panel!.instanceId)?.wingsOrigin).toBeNull();
    const set = await api.call('PATCH', path, { body: { wingsOrigin: 'https://PANEL.example.com/' } });
    expect(set.body.wingsOrigin).toBe(WINGS_REMOTE);

    const after = await credentials();
    expect(after.origin).toBe(WINGS_REMOTE);
    let status = 0;
    const c = await connect(after.socket, after.origin, (s) => {
      status = s;
    });
    expect(status).toBe(101);
    c.send('auth', [after.token]);
    await c.next((f) => f.event === 'auth success');
  });

  it('answers an empty or badly signed auth with `daemon error`, as Wings does', async () => {
    const creds = await credentials();
    const c = await connect(creds.socket, creds.origin);
    const generic = /^Error Event \[[0-9a-f-]{36}\]: an unexpected error was encountered while handling this request$/;
    c.send('auth', ['']);
    expect((await c.next((f) => f.event === 'daemon error')).args?.[0]).toMatch(generic);
    const [h, p, sig] = creds.token.split('.') as [string, string, string];
    const from = c.frames.length;
    c.send('auth', [`${h}.${p}.${sig.startsWith('A') ? 'B' : 'A'}${sig.slice(1)}`]);
    expect((await c.next((f) => f.event === 'daemon error', from)).args?.[0]).toMatch(generic);
    expect(c.frames.map((f) => f.event)).toEqual(['daemon error', 'daemon error']);
  });

  it('accepts a token for another server with `auth success`, then answers `jwt error` (server uuid mismatch)', async () => {
    const creds = await credentials();
    const own = sim.server(server.identifier)!;
    const node = sim.state.nodes.get(own.node_id)!;
    const other = sim.wings.signJwt(node, { server_uuid: randomUUID(), permissions: ['*'] }, 600, randomUUID(), sim.url);
    const c = await connect(creds.socket, creds.origin);
    c.send('auth', [other]);
    await c.next((f) => f.event === 'auth success');
    expect(await c.next((f) => f.event === 'jwt error')).toEqual({ event: 'jwt error', args: ['jwt: server uuid mismatch'] });
    expect(c.frames.some((f) => f.event === 'status')).toBe(false);
    const from = c.frames.length;
    c.send('send command', ['say with the wrong token']);
    await c.next((f) => f.event === 'jwt error', from);
    expect(sim.commands(server.identifier)).not.toContain('say with the wrong token');
  });

  it('warns before the token expires, then replaces every event with `jwt error` (exp claim is invalid) until a fresh `auth`', async () => {
    const creds = await credentials();
    const c = await connect(creds.socket, creds.origin);
    c.send('auth', [sim.consoleToken(server.identifier, 2)]);
    await c.next((f) => f.event === 'auth success');
    await c.next((f) => f.event === 'token expiring');
    // Wings sends `token expired` through SendJson, which refuses it for an expired token
    expect(await c.next((f) => f.event === 'jwt error', 0, 6000)).toEqual({ event: 'jwt error', args: ['jwt: exp claim is invalid'] });
    const expiredAt = c.frames.findIndex((f) => f.event === 'jwt error');

    // output meanwhile does not reach the socket: each event is replaced by the same `jwt error`
    const from = c.frames.length;
    expect((await api.call('POST', `/v1/servers/${server.id}/command`, { token, body: { command: 'say while expired' } })).body.sent).toBe(
      true,
    );
    await until(() => sim.console(server.identifier).includes('> say while expired'));
    await c.next((f) => f.event === 'jwt error', from);
    c.send('send command', ['say after expiry']);
    await until(() => c.frames.slice(from).filter((f) => f.event === 'jwt error').length >= 2);
    expect(sim.commands(server.identifier)).not.toContain('say after expiry');
    expect(c.frames.slice(expiredAt).filter((f) => f.event !== 'jwt error')).toEqual([]);
    expect(c.frames.slice(expiredAt).every((f) => f.args?.[0] === 'jwt: exp claim is invalid')).toBe(true);

    const fresh = await credentials();
    const again = c.frames.length;
    c.send('auth', [fresh.token]);
    await c.next((f) => f.event === 'auth success', again);
    c.send('send logs');
    await c.next((f) => f.event === 'console output' && f.args?.[0] === '> say while expired', again);
    c.send('send command', ['say after refresh']);
    await c.next((f) => f.event === 'console output' && f.args?.[0] === '> say after refresh', again);
  });

  it('answers `auth` with an expired token by `token expired`, sent as `jwt error` on a socket without a token', async () => {
    const creds = await credentials();
    const c = await connect(creds.socket, creds.origin);
    c.send('auth', [sim.consoleToken(server.identifier, -1)]);
    expect(await c.next((f) => f.event === 'jwt error')).toEqual({ event: 'jwt error', args: ['jwt: no jwt present'] });
  });
});
