import { panelCalls as panelCallsOf, panelRequests, totalRequests } from '../helpers/panel-requests.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gunzipSync } from 'node:zlib';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { customer } from '../helpers/customer.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';
import { keys } from '../../shared/db/keys.ts';
import { queryPartition, setAttributes } from '../helpers/db.ts';

// How long a compress or decompress is waited for: the panel's 15 minutes in production, short here
// so that the "still running when the request gives up" path runs (the wait is the behaviour under test).
process.env.PANEL_ARCHIVE_WAIT_MS = '3000';

/**
 * The file operations beyond list/read/write/delete (shared/servers/files.ts) against the panel
 * simulator over real HTTP: create a folder, rename/move, the signed upload address (a real
 * multipart POST to the simulated Wings), compress and decompress (real tar.gz). Each change is on
 * the panel's (Wings') filesystem and in the account's activity log; bad input changes nothing and
 * costs no panel call; every operation's panel calls are counted.
 */
let api: TestApi;
let sim: PanelSim;
let token: string;
let serverId: string;
let identifier: string;

const requests = () => panelRequests(sim);
const total = totalRequests;
const panelCalls = <T>(fn: () => Promise<T>) => panelCallsOf(sim, fn);

const activity = async (action: string) => {
  const res = await api.call('GET', '/v1/account/logs?limit=100', { token });
  return (res.body.data as Array<{ action: string; target: string; result: string; details?: Record<string, unknown> }>).filter(
    (e) => e.action === action,
  );
};

const call = (method: string, path: string, body?: unknown) =>
  api.call(method, `/v1/servers/${serverId}${path}`, { token, ...(body === undefined ? {} : { body }) });

/** An origin in the simulated Wings' `allowed_origins`, as a dashboard on another origin would be. */
const DASHBOARD = 'https://dashboard.example.com';

beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 200, transitionMs: 20, resourcesCacheMs: 0, allowedOrigins: [DASHBOARD] } });
  sim = api.panel!.sim;
  ({ token } = await customer(api, 'server-files@example.com', { grantCents: 10_000 }));
  const created = await api.call('POST', '/v1/servers', {
    token,
    body: { name: 'file ops', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
  });
  expect(created.status, created.text).toBe(201);
  serverId = created.body.id;
  identifier = created.body.identifier;
  await until(async () => (await api.call('GET', `/v1/servers/${serverId}`, { token })).body.live?.installStatus === 'installed');
  const written = await call('POST', '/files/write', { file: 'world/level.dat', content: 'the level' });
  expect(written.status, written.text).toBe(200);
  expect((await call('POST', '/files/write', { file: 'world/region/r.0.0.mca', content: 'region bytes' })).status).toBe(200);
});
afterAll(async () => api?.stop());

describe('mkdir', () => {
  it('creates the directory and its parents on the panel: one panel call, an activity entry', async () => {
    const { result: res, calls } = await panelCalls(() => call('POST', '/files/mkdir', { root: '/', name: 'plugins/config' }));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ root: '/', created: '/plugins/config' });
    expect(calls).toEqual({ [`POST /api/client/servers/${identifier}/files/create-folder`]: 1 });
    expect(sim.files(identifier)).toHaveProperty('plugins/config/');
    const listed = await api.call('GET', `/v1/servers/${serverId}/files?directory=/plugins`, { token });
    expect(listed.body.data.map((f: { name: string }) => f.name)).toEqual(['config']);
    const [entry] = await activity('servers.files.mkdir');
    expect(entry).toMatchObject({ target: `server:${serverId}`, result: 'success', details: { root: '/', name: 'plugins/config' } });
  });

  it('an existing name is a 400 naming the field, and the failure is logged', async () => {
    const res = await call('POST', '/files/mkdir', { name: 'plugins' });
    expectEnvelope(res, 400, 'validation_failed');
    expect(res.body.error.message).toMatch(/body\.name .*already exists/);
    expect((await activity('servers.files.mkdir')).some((e) => e.result === 'failure')).toBe(true);
  });

  it('a bad body is refused before any panel call', async () => {
    const before = total(await requests());
    for (const body of [{}, { name: '../escape' }, { name: 'a', extra: 1 }, { name: 'x\u0000y' }]) {
      expectEnvelope(await call('POST', '/files/mkdir', body), 400, 'validation_failed');
    }
    expect(total(await requests())).toBe(before);
  });
});

describe('rename and move', () => {
  it('renames in place and moves into another directory in one panel call', async () => {
    expect((await call('POST', '/files/write', { file: 'notes.txt', content: 'notes' })).status).toBe(200);
    expect((await call('POST', '/files/write', { file: 'old.txt', content: 'old' })).status).toBe(200);
    const { result: res, calls } = await panelCalls(() =>
      call('POST', '/files/rename', {
        files: [
          { from: 'notes.txt', to: 'readme.txt' },
          { from: '/old.txt', to: 'plugins/old.txt' },
        ],
      }),
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      root: '/',
      renamed: [
        { from: 'notes.txt', to: 'readme.txt' },
        { from: 'old.txt', to: 'plugins/old.txt' },
      ],
    });
    expect(calls).toEqual({ [`PUT /api/client/servers/${identifier}/files/rename`]: 1 });
    expect(sim.readFile(identifier, 'readme.txt')).toBe('notes');
    expect(sim.readFile(identifier, 'plugins/old.txt')).toBe('old');
    expect(sim.readFile(identifier, 'notes.txt')).toBeUndefined();
    const [entry] = await activity('servers.files.rename');
    expect(entry?.details).toEqual({
      root: '/',
      files: [
        { from: 'notes.txt', to: 'readme.txt' },
        { from: 'old.txt', to: 'plugins/old.txt' },
      ],
    });
  });

  it('a missing source is 404; an empty list or a `..` is 400 with no panel call', async () => {
    expectEnvelope(await call('POST', '/files/rename', { files: [{ from: 'nope.txt', to: 'x.txt' }] }), 404, 'not_found');
    const before = total(await requests());
    expectEnvelope(await call('POST', '/files/rename', { files: [] }), 400, 'validation_failed');
    expectEnvelope(await call('POST', '/files/rename', { files: [{ from: 'a', to: '../../etc/passwd' }] }), 400, 'validation_failed');
    expect(total(await requests())).toBe(before);
  });
});

describe('upload through the signed address', () => {
  it('answers a Wings address with the directory; a multipart POST of `files` lands there', async () => {
    const { result: link, calls } = await panelCalls(() =>
      api.call('GET', `/v1/servers/${serverId}/files/upload?directory=/plugins`, { token }),
    );
    expect(link.status, link.text).toBe(200);
    expect(calls).toEqual({ [`GET /api/client/servers/${identifier}/files/upload`]: 1 });
    expect(link.body.directory).toBe('/plugins');
    const url = new URL(link.body.url);
    expect(url.pathname).toBe('/upload/file');
    expect(url.searchParams.get('directory')).toBe('/plugins');
    expect(url.searchParams.get('token')).toBeTruthy();
    expect(Date.parse(link.body.expiresAt)).toBeGreaterThan(Date.now());

    const form = new FormData();
    form.append('files', new Blob([Buffer.from('plugin jar bytes \u0000\u0001')]), 'plugin.jar');
    form.append('files', new Blob(['second']), 'second.txt');
    const posted = await fetch(link.body.url, { method: 'POST', body: form });
    expect(posted.status).toBe(200);
    expect(sim.readFile(identifier, 'plugins/plugin.jar')).toBe('plugin jar bytes \u0000\u0001');
    const read = await api.call('GET', `/v1/servers/${serverId}/files/contents?file=/plugins/second.txt`, { token });
    expect(read.body.content).toBe('second');

    // Single use, as Wings: the same address again is refused and writes nothing.
    const again = new FormData();
    again.append('files', new Blob(['again']), 'again.txt');
    expect((await fetch(link.body.url, { method: 'POST', body: again })).status).toBe(404);
    expect(sim.readFile(identifier, 'plugins/again.txt')).toBeUndefined();

    const [entry] = await activity('servers.files.upload');
    expect(entry).toMatchObject({ result: 'success', details: { directory: '/plugins' } });
  });

  it('a browser may upload from an allowed origin: the simulated Wings answers CORS as Wings does', async () => {
    const link = await api.call('GET', `/v1/servers/${serverId}/files/upload?directory=/cors`, { token });
    // The preflight an XMLHttpRequest with upload progress makes: 204 naming the allowed origin.
    const preflight = await fetch(link.body.url, {
      method: 'OPTIONS',
      headers: { origin: DASHBOARD, 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    const form = new FormData();
    form.append('files', new Blob(['from the dashboard']), 'dash.txt');
    const posted = await fetch(link.body.url, { method: 'POST', body: form, headers: { origin: DASHBOARD } });
    expect(posted.status).toBe(200);
    expect(posted.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
    expect(sim.readFile(identifier, 'cors/dash.txt')).toBe('from the dashboard');
    // Another origin is answered with the panel's own (Wings' `remote`), so a browser refuses to read it.
    const other = await fetch(link.body.url, { method: 'OPTIONS', headers: { origin: 'https://elsewhere.example' } });
    expect(other.headers.get('access-control-allow-origin')).toBe(sim.url);
  });

  it('the simulated Wings refuses a form without `files` and a forged token', async () => {
    const link = await api.call('GET', `/v1/servers/${serverId}/files/upload`, { token });
    const form = new FormData();
    form.append('other', new Blob(['x']), 'x.txt');
    const res = await fetch(link.body.url, { method: 'POST', body: form });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'No files were found on the request body.' });
    const forged = new URL(link.body.url);
    forged.searchParams.set('token', `${forged.searchParams.get('token')}x`);
    const f2 = new FormData();
    f2.append('files', new Blob(['x']), 'x.txt');
    expect((await fetch(forged, { method: 'POST', body: f2 })).status).toBe(500);
  });
});

describe('compress and decompress', () => {
  let archive: string;

  it('compress answers the archive entry (archive-<time>.tar.gz in root); it is a real tar.gz', async () => {
    const { result: res, calls } = await panelCalls(() => call('POST', '/files/compress', { root: '/', files: ['world', 'readme.txt'] }));
    expect(res.status, res.text).toBe(200);
    expect(calls).toEqual({ [`POST /api/client/servers/${identifier}/files/compress`]: 1 });
    archive = res.body.name;
    expect(archive).toMatch(/^archive-\d{4}-\d{2}-\d{2}T\d{6}Z\.tar\.gz$/);
    expect(res.body).toMatchObject({ isFile: true, mimetype: 'application/tar+gzip' });
    expect(res.body.size).toBeGreaterThan(0);
    const link = await api.call('GET', `/v1/servers/${serverId}/files/download?file=/${archive}`, { token });
    const bytes = Buffer.from(await (await fetch(link.body.url)).arrayBuffer());
    const tar = gunzipSync(bytes).toString('latin1');
    expect(tar).toContain('world/level.dat');
    expect(tar).toContain('the level');
    expect(tar.slice(257, 262)).toBe('ustar');
    const [entry] = await activity('servers.files.compress');
    expect(entry?.details).toMatchObject({ root: '/', files: ['world', 'readme.txt'], archive });
  });

  it('decompress puts the files back (round trip) in one panel call', async () => {
    expect((await call('POST', '/files/delete', { files: ['world', 'readme.txt'] })).status).toBe(200);
    expect(sim.readFile(identifier, 'world/level.dat')).toBeUndefined();
    const { result: res, calls } = await panelCalls(() => call('POST', '/files/decompress', { file: archive }));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ root: '/', file: archive, decompressed: true });
    expect(calls).toEqual({ [`POST /api/client/servers/${identifier}/files/decompress`]: 1 });
    expect(sim.readFile(identifier, 'world/level.dat')).toBe('the level');
    expect(sim.readFile(identifier, 'world/region/r.0.0.mca')).toBe('region bytes');
    expect(sim.readFile(identifier, 'readme.txt')).toBe('notes');
    expect((await activity('servers.files.decompress'))[0]?.details).toEqual({ root: '/', file: archive });
  });

  it('decompress into another root extracts there', async () => {
    expect((await call('POST', '/files/rename', { files: [{ from: archive, to: `plugins/${archive}` }] })).status).toBe(200);
    expect((await call('POST', '/files/decompress', { root: '/plugins', file: archive })).status).toBe(200);
    expect(sim.readFile(identifier, 'plugins/world/level.dat')).toBe('the level');
  });

  it('a file that is not an archive is a 400; a missing one 404; missing files to compress 404', async () => {
    const notArchive = await call('POST', '/files/decompress', { file: 'readme.txt' });
    expectEnvelope(notArchive, 400, 'validation_failed');
    expect(notArchive.body.error.message).toMatch(/format Wings does not understand/);
    expectEnvelope(await call('POST', '/files/decompress', { file: 'missing.tar.gz' }), 404, 'not_found');
    expectEnvelope(await call('POST', '/files/compress', { files: ['nothing-here'] }), 404, 'not_found');
    const before = total(await requests());
    expectEnvelope(await call('POST', '/files/compress', { files: [] }), 400, 'validation_failed');
    expectEnvelope(await call('POST', '/files/decompress', {}), 400, 'validation_failed');
    expect(total(await requests())).toBe(before);
  });
});

describe('long archives: sent to the panel once', () => {
  const compressPath = () => `POST /api/client/servers/${identifier}/files/compress`;
  const decompressPath = () => `POST /api/client/servers/${identifier}/files/decompress`;
  const archivesInRoot = () => Object.keys(sim.files(identifier)).filter((p) => /^archive-[^/]*\.tar\.gz$/.test(p));
  let archive: string;

  it('a compress the panel is still on when the request gives up: 504 saying so, sent once', async () => {
    const before = archivesInRoot().length;
    sim.holdArchives();
    const { result: res, calls } = await panelCalls(() => call('POST', '/files/compress', { files: ['world'] }));
    expectEnvelope(res, 504, 'panel_timeout');
    expect(res.body.error.message).toMatch(/still working on the compress; it was not sent again/);
    expect(calls).toEqual({ [compressPath()]: 1 });
    expect(sim.heldArchives()).toBe(1);
    expect(archivesInRoot()).toHaveLength(before);
  });

  it('the same compress again while it runs is 409 naming the first, and nothing is sent', async () => {
    const [running] = await queryPartition(keys.archiveOperationPrefix(serverId));
    const { result: res, calls } = await panelCalls(() => call('POST', '/files/compress', { files: ['world'] }));
    expectEnvelope(res, 409, 'operation_in_progress');
    expect(res.body.error.details).toMatchObject({ operation: 'compress', operationId: running?.operationId });
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(calls).toEqual({});
    expect(sim.heldArchives()).toBe(1);
  });

  it('the panel finishes it: one archive, from one panel call', async () => {
    const before = archivesInRoot().length;
    expect(sim.endArchives()).toBe(1);
    await until(() => archivesInRoot().length === before + 1, { what: 'the archive' });
    archive = archivesInRoot().at(-1)!;
  });

  it("once the panel's own wait is over, the same compress is a new one (sent)", async () => {
    sim.holdArchives(false);
    for (const item of await queryPartition(keys.archiveOperationPrefix(serverId))) {
      await setAttributes({ PK: String(item.PK), SK: String(item.SK) }, { settlesAt: Date.now() - 1 });
    }
    const { result: res, calls } = await panelCalls(() => call('POST', '/files/compress', { files: ['world'] }));
    expect(res.status, res.text).toBe(200);
    expect(calls).toEqual({ [compressPath()]: 1 });
    expect(await queryPartition(keys.archiveOperationPrefix(serverId))).toEqual([]);
  });

  it('a decompress the panel is still on is neither retried nor sent again', async () => {
    expect((await call('POST', '/files/delete', { files: ['world/level.dat'] })).status).toBe(200);
    sim.holdArchives();
    const first = await panelCalls(() => call('POST', '/files/decompress', { file: archive }));
    expectEnvelope(first.result, 504, 'panel_timeout');
    expect(first.calls).toEqual({ [decompressPath()]: 1 });
    const again = await panelCalls(() => call('POST', '/files/decompress', { file: archive }));
    expectEnvelope(again.result, 409, 'operation_in_progress');
    expect(again.calls).toEqual({});
    sim.holdArchives(false);
    expect(sim.readFile(identifier, 'world/level.dat')).toBeUndefined();
    expect(sim.endArchives()).toBe(1);
    await until(() => sim.readFile(identifier, 'world/level.dat') === 'the level', { what: 'the extraction' });
  });
});

describe('ownership and state', () => {
  it("another account's server is 404 for every new file route, with no panel call", async () => {
    const other = await customer(api, 'server-files-other@example.com');
    const before = total(await requests());
    const as = (method: string, path: string, body?: unknown) =>
      api.call(method, `/v1/servers/${serverId}${path}`, { token: other.token, ...(body === undefined ? {} : { body }) });
    expectEnvelope(await as('POST', '/files/mkdir', { name: 'x' }), 404, 'not_found');
    expectEnvelope(await as('POST', '/files/rename', { files: [{ from: 'a', to: 'b' }] }), 404, 'not_found');
    expectEnvelope(await as('GET', '/files/upload'), 404, 'not_found');
    expectEnvelope(await as('POST', '/files/compress', { files: ['world'] }), 404, 'not_found');
    expectEnvelope(await as('POST', '/files/decompress', { file: 'a.tar.gz' }), 404, 'not_found');
    expect(total(await requests())).toBe(before);
  });

  it('a change while another operation holds the server is 409 operation_in_progress, nothing sent', async () => {
    sim.faults.add({ method: 'POST', path: `/api/client/servers/${identifier}/files/create-folder`, effect: { kind: 'hold' }, count: 1 });
    const first = call('POST', '/files/mkdir', { name: 'held' });
    await until(async () => sim.faults.held() === 1);
    const second = await call('POST', '/files/compress', { files: ['plugins'] });
    expectEnvelope(second, 409, 'operation_in_progress');
    sim.faults.release();
    expect((await first).status).toBe(200);
  });
});
