import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { keys } from '../../shared/db/keys.ts';
import { customer } from '../helpers/customer.ts';
import { getRaw, setAttributes } from '../helpers/db.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * Startup settings (GET/PUT /v1/servers/:id/startup) over DynamoDB Local and the panel simulator,
 * whose startup route re-writes every egg variable and sets one missing from the change to '', as
 * the panel's StartupModificationService does. Egg 1 of the seed (paper): MINECRAFT_VERSION,
 * SERVER_JARFILE (regex .jar), BUILD_NUMBER editable; DL_PATH neither viewable nor editable.
 * Egg 3 (rust): RCON_PORT viewable but not editable, RCON_PASS a secret the customer sets.
 */
let api: TestApi;
let sim: PanelSim;
let token: string;
let accountId: string;
let paper: string;
let rust: string;

const deploy = async (body: Record<string, unknown>) => {
  const res = await api.call('POST', '/v1/servers', { token, body: { ramMb: 1024, cpuPercent: 100, diskMb: 2048, ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
};

beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 40 } });
  sim = api.panel!.sim;
  ({ token, id: accountId } = await customer(api, 'startup@example.com', { grantCents: 100_000 }));
  paper = await deploy({ name: 'paper startup', eggId: 1, environment: { MINECRAFT_VERSION: '1.20.4', BUILD_NUMBER: '42' } });
  rust = await deploy({
    name: 'rust startup',
    eggId: 3,
    environment: { HOSTNAME: 'my rust', WORLD_SIZE: '3000', MAX_PLAYERS: '40', RCON_PASS: 'Secret.rcon-1' },
  });
});
afterAll(async () => api?.stop());

const path = (id: string) => `/v1/servers/${id}/startup`;
const onPanel = (id: string) => [...sim.state.servers.values()].find((s) => s.external_id === id)!;
/** The panel's environment of a server (its egg variables, by env name). */
const panelEnv = (id: string) => sim.state.environment(onPanel(id));

/** Panel requests made while `fn` ran, by `METHOD /path` (the simulator's own counts). */
async function panelCalls(fn: () => Promise<void>): Promise<Record<string, number>> {
  const read = async () => ((await (await fetch(`${sim.url}/__sim/requests`)).json()) as { requests: Record<string, number> }).requests;
  const before = await read();
  await fn();
  const after = await read();
  return Object.fromEntries(
    Object.entries(after)
      .map(([route, n]) => [route, n - (before[route] ?? 0)] as const)
      .filter(([, n]) => n > 0),
  );
}

describe('GET /v1/servers/:id/startup', () => {
  it("shows the viewable variables with their current values, the image and the egg's images; one panel call", async () => {
    const panelId = onPanel(paper).id;
    let body: Record<string, unknown> = {};
    const calls = await panelCalls(async () => {
      const res = await api.call('GET', path(paper), { token });
      expect(res.status, res.text).toBe(200);
      body = res.body;
    });
    expect(calls).toEqual({ [`GET /api/application/servers/${panelId}`]: 1 });
    const variables = body.variables as { env: string; value: string; editable: boolean; default: string | null; rules: string }[];
    expect(variables.map((v) => v.env)).toEqual(['MINECRAFT_VERSION', 'SERVER_JARFILE', 'BUILD_NUMBER']);
    expect(variables.find((v) => v.env === 'MINECRAFT_VERSION')).toMatchObject({ value: '1.20.4', default: 'latest', editable: true });
    expect(variables.find((v) => v.env === 'SERVER_JARFILE')!.rules).toContain('regex');
    expect(body.dockerImage).toBe(onPanel(paper).image);
    expect(Object.values(body.dockerImages as Record<string, string>)).toContain(body.dockerImage);
    expect(body.startup).toBe(onPanel(paper).startup);
    // Not viewable: neither listed nor its value anywhere in the answer.
    expect(JSON.stringify(body)).not.toContain('DL_PATH');
  });

  it('a variable the panel shows but does not let users change reads editable: false', async () => {
    const res = await api.call('GET', path(rust), { token });
    expect(res.status, res.text).toBe(200);
    expect(res.body.variables.find((v: { env: string }) => v.env === 'RCON_PORT')).toMatchObject({ editable: false });
  });
});

describe('PUT /v1/servers/:id/startup', () => {
  it('changes one variable on the panel and keeps every other value (none is overwritten with an empty one); two panel calls', async () => {
    const before = panelEnv(paper);
    // A value the simulator keeps for the hidden variable, so losing it would show.
    const dl = [...sim.state.eggVariables.values()].find((v) => v.egg_id === 1 && v.env_variable === 'DL_PATH')!;
    onPanel(paper).variables.set(dl.id, 'https://downloads.example.com/paper.jar');
    const panelId = onPanel(paper).id;
    let body: Record<string, unknown> = {};
    const calls = await panelCalls(async () => {
      const res = await api.call('PUT', path(paper), { token, body: { variables: { MINECRAFT_VERSION: '1.21' } } });
      expect(res.status, res.text).toBe(200);
      body = res.body;
    });
    expect(calls).toEqual({ [`GET /api/application/servers/${panelId}`]: 1, [`PATCH /api/application/servers/${panelId}/startup`]: 1 });
    expect(body).toMatchObject({ changed: ['MINECRAFT_VERSION'], appliesAt: 'next_start' });
    expect(panelEnv(paper)).toMatchObject({
      MINECRAFT_VERSION: '1.21',
      BUILD_NUMBER: before.BUILD_NUMBER,
      SERVER_JARFILE: before.SERVER_JARFILE,
      DL_PATH: 'https://downloads.example.com/paper.jar',
    });
    expect((await api.call('GET', path(paper), { token })).body.variables[0]).toMatchObject({ env: 'MINECRAFT_VERSION', value: '1.21' });
  });

  it('the activity log names the changed variables, never their values', async () => {
    const changed = await api.call('PUT', path(rust), { token, body: { variables: { RCON_PASS: 'Other.rcon-2', MAX_PLAYERS: '40' } } });
    expect(changed.status, changed.text).toBe(200);
    // MAX_PLAYERS already was 40: only the password changed.
    expect(changed.body.changed).toEqual(['RCON_PASS']);
    expect(panelEnv(rust).RCON_PASS).toBe('Other.rcon-2');
    const logs = await api.call('GET', '/v1/account/logs?limit=100', { token });
    const entries = logs.body.data.filter((e: { action: string }) => e.action === 'servers.startup');
    expect(entries[0]).toMatchObject({ target: `server:${rust}`, result: 'success', details: { variables: ['RCON_PASS'] } });
    expect(JSON.stringify(logs.body)).not.toContain('Other.rcon-2');
  });

  it('a new docker image from the egg: on the panel, on the record, in the log', async () => {
    const images = (await api.call('GET', path(paper), { token })).body.dockerImages as Record<string, string>;
    const other = Object.values(images).find((i) => i !== onPanel(paper).image)!;
    const res = await api.call('PUT', path(paper), { token, body: { dockerImage: other } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ dockerImage: other, changed: ['dockerImage'] });
    expect(onPanel(paper).image).toBe(other);
    expect(panelEnv(paper).MINECRAFT_VERSION).toBe('1.21');
    expect((await getRaw(keys.server(accountId, paper)))!.dockerImage).toBe(other);
    const logs = await api.call('GET', '/v1/account/logs?limit=100', { token });
    expect(logs.body.data.find((e: { action: string }) => e.action === 'servers.startup').details).toEqual({
      variables: [],
      dockerImage: other,
    });
  });

  it('refused before any panel call: a rule broken, a variable not editable, hidden or unknown, an image not the egg’s', async () => {
    const env = panelEnv(paper);
    const image = onPanel(paper).image;
    const cases: [string, Record<string, unknown>, string, RegExp][] = [
      [paper, { variables: { SERVER_JARFILE: 'server.zip' } }, 'body.variables.SERVER_JARFILE', /invalid format/],
      [paper, { variables: { MINECRAFT_VERSION: 'x'.repeat(21) } }, 'body.variables.MINECRAFT_VERSION', /at most 20/],
      [paper, { variables: { DL_PATH: 'https://evil.example.com/x.jar' } }, 'body.variables.DL_PATH', /not editable/],
      [paper, { variables: { NOT_A_VARIABLE: '1' } }, 'body.variables.NOT_A_VARIABLE', /not a variable/],
      [paper, { dockerImage: 'ghcr.io/evil/miner:latest' }, 'body.dockerImage', /egg's images/],
      [rust, { variables: { RCON_PORT: '28017' } }, 'body.variables.RCON_PORT', /not editable/],
      [rust, { variables: { WORLD_SIZE: '99' } }, 'body.variables.WORLD_SIZE', /between 1000 and 6000/],
    ];
    const calls = await panelCalls(async () => {
      for (const [id, body, field, message] of cases) {
        const res = await api.call('PUT', path(id), { token, body });
        expectEnvelope(res, 400, 'validation_failed');
        const issue = (res.body.error.details.issues as { field: string; message: string }[]).find((i) => i.field === field);
        expect(issue?.message, `${field}: ${res.text}`).toMatch(message);
      }
    });
    expect(calls).toEqual({});
    expect(panelEnv(paper)).toEqual(env);
    expect(onPanel(paper).image).toBe(image);
  });

  it('bad bodies: 400 from the schema', async () => {
    for (const body of [{}, { variables: {} }, { variables: { A: 1 } }, { dockerImage: '' }, { image: 'x' }]) {
      expectEnvelope(await api.call('PUT', path(paper), { token, body }), 400, 'validation_failed');
    }
  });

  it('a suspended server: 409 conflict, no panel call; GET still reads', async () => {
    await setAttributes(keys.server(accountId, paper), { status: 'suspended' });
    try {
      const calls = await panelCalls(async () => {
        expectEnvelope(await api.call('PUT', path(paper), { token, body: { variables: { BUILD_NUMBER: '7' } } }), 409, 'conflict');
      });
      expect(calls).toEqual({});
      expect((await api.call('GET', path(paper), { token })).status).toBe(200);
    } finally {
      await setAttributes(keys.server(accountId, paper), { status: 'active' });
    }
  });

  it('a change while another operation holds the server: 409 operation_in_progress, nothing sent', async () => {
    const panelId = onPanel(paper).id;
    const held = sim.faults.add({
      method: 'PATCH',
      path: `/api/application/servers/${panelId}/details`,
      count: 1,
      effect: { kind: 'hold' },
    });
    const rename = api.call('PATCH', `/v1/servers/${paper}`, { token, body: { name: 'renamed paper' } });
    try {
      await until(() => sim.faults.held() === 1, { what: 'the rename to reach the panel' });
      const calls = await panelCalls(async () => {
        const res = await api.call('PUT', path(paper), { token, body: { variables: { BUILD_NUMBER: '8' } } });
        expectEnvelope(res, 409, 'operation_in_progress');
        expect(res.body.error.details.operation).toBe('rename');
      });
      expect(calls).toEqual({});
    } finally {
      sim.faults.release();
    }
    expect((await rename).status).toBe(200);
    sim.faults.remove(held);
    expect(panelEnv(paper).BUILD_NUMBER).not.toBe('8');
  });

  it("another account's server is 404 for both", async () => {
    const other = await customer(api, 'startup-other@example.com', { grantCents: 10_000 });
    expectEnvelope(await api.call('GET', path(paper), { token: other.token }), 404, 'not_found');
    expectEnvelope(
      await api.call('PUT', path(paper), { token: other.token, body: { variables: { BUILD_NUMBER: '9' } } }),
      404,
      'not_found',
    );
  });
});

describe("a startup change reaches the simulated server's next start", () => {
  it('the start line carries the startup command with the new values, and the game prints them', async () => {
    const id = await deploy({
      name: 'rust next start',
      eggId: 3,
      environment: { HOSTNAME: 'before', WORLD_SIZE: '3000', MAX_PLAYERS: '40', RCON_PASS: 'Secret.rcon-2' },
    });
    await until(() => onPanel(id).installed_at !== null && onPanel(id).status === null, { what: 'the install to finish' });
    const change = await api.call('PUT', path(id), { token, body: { variables: { WORLD_SIZE: '4500', HOSTNAME: 'after' } } });
    expect(change.status, change.text).toBe(200);
    const power = await api.call('POST', `/v1/servers/${id}/power`, { token, body: { signal: 'start' } });
    expect(power.status, power.text).toBeLessThan(300);
    const lines = () => sim.console(onPanel(id).uuid);
    await until(() => lines().some((l) => l.includes('procedural map of size')), { what: 'the boot lines' });
    const start = lines().find((l) => l.startsWith('container@pterodactyl~ '))!;
    expect(start).toContain('+server.worldsize \\"4500\\"');
    expect(start).toContain('+server.hostname \\"after\\"');
    expect(start).not.toContain('before');
    expect(lines()).toContainEqual(expect.stringContaining('Generating procedural map of size 4500'));
  });
});
