import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * File names with `%` in them: the panel URL-decodes the name of a download once more before it
 * signs the link (rawurldecode in FileController::download), so a file named `a%41.txt` would come
 * out as `aA.txt` unless the name is encoded for it. The simulator decodes as the panel does; our
 * client encodes so that the extra decode yields the intended file.
 */
let api: TestApi;
let sim: PanelSim;
let token: string;
let serverId: string;
let identifier: string;

beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 200, transitionMs: 20, resourcesCacheMs: 0 } });
  sim = api.panel!.sim;
  token = await api.session('file-names@example.com');
  const created = await api.call('POST', '/v1/servers', {
    token,
    body: { name: 'file names', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
  });
  expect(created.status).toBe(201);
  serverId = created.body.id;
  identifier = created.body.identifier;
  await until(async () => (await api.call('GET', `/v1/servers/${serverId}`, { token })).body.live?.installStatus === 'installed');
  for (const [file, content] of [
    ['a%41.txt', 'the file named a%41.txt'],
    ['aA.txt', 'the file named aA.txt'],
    ['b+c %zz.txt', 'plus, space and a lone percent'],
  ]) {
    const written = await api.call('POST', `/v1/servers/${serverId}/files/write`, { token, body: { file, content } });
    expect(written.status).toBe(200);
  }
});
afterAll(async () => api?.stop());

const download = (file: string) => api.call('GET', `/v1/servers/${serverId}/files/download?${new URLSearchParams({ file })}`, { token });

describe('download links of files whose names hold %', () => {
  it('writes the files under their literal names', () => {
    expect(sim.readFile(identifier, '/a%41.txt')).toBe('the file named a%41.txt');
    expect(sim.readFile(identifier, '/aA.txt')).toBe('the file named aA.txt');
  });

  it('the simulated panel decodes the name once more, as the panel does (a%41.txt → aA.txt)', async () => {
    const res = await fetch(`${sim.url}/api/client/servers/${identifier}/files/download?${new URLSearchParams({ file: '/a%41.txt' })}`, {
      headers: { authorization: `Bearer ${sim.clientKey}`, accept: 'application/json' },
    });
    expect(res.status).toBe(200);
    const { attributes } = (await res.json()) as { attributes: { url: string } };
    expect(await (await fetch(attributes.url)).text()).toBe('the file named aA.txt');
  });

  it('GET /v1/servers/:id/files/download?file=/a%41.txt gives a link to a%41.txt itself, used once', async () => {
    const link = await download('/a%41.txt');
    expect(link.status).toBe(200);
    expect(link.body.file).toBe('/a%41.txt');
    const first = await fetch(link.body.url);
    expect(first.status).toBe(200);
    expect(await first.text()).toBe('the file named a%41.txt');
    expect((await fetch(link.body.url)).status).toBe(404);
  });

  it('keeps +, spaces and a lone % as they are', async () => {
    const link = await download('/b+c %zz.txt');
    expect(await (await fetch(link.body.url)).text()).toBe('plus, space and a lone percent');
  });

  it('still downloads plain names', async () => {
    const link = await download('/aA.txt');
    expect(await (await fetch(link.body.url)).text()).toBe('the file named aA.txt');
  });
});
