import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { customer } from '../helpers/customer.ts';
import { startTestApi, type TestApi } from '../helpers/stack.ts';

/**
 * The typed client as its users get it: `npm pack` of clients/typescript, the tarball's contents
 * checked, installed with `--offline` into a fresh project (so it can need nothing from a
 * registry), a sample program using it type-checked by the repo's TypeScript against the
 * installed declarations only (no @types/node, no path into the repo), then run against the local
 * stack: deploy → waitFor installed → list with the iterator → delete.
 *
 * The sample talks to the stack through a small proxy in this file that answers the first request
 * of a few operations with 429 `rate_limited` and `Retry-After: 1`. It stands in for the service's
 * own limit, which would take 240 requests in a minute to reach; the proxy's answer has the same
 * status, header and envelope. It shows a GET and a create (with the key the client adds) sent
 * again once and succeeding, and a POST without a key (power) not sent again. Everything else
 * passes through unchanged.
 *
 * Each child process (npm, tsc, the sample) runs asynchronously: the stack and the proxy live in
 * this process's event loop and must keep answering while the sample runs.
 */
const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');
const packageDir = join(root, 'clients/typescript');
const NAME = '@hosting-control-plane/client';

let api: TestApi;
let work: string;
let proxy: Server;
let proxyUrl: string;
/** Every request the proxy saw: `METHOD /path`, the Idempotency-Key sent, and the status answered. */
const seen: { op: string; key: string | null; status: number }[] = [];
/** `METHOD /path` patterns whose first request the proxy answers 429; each refuses once. */
const refuseOnce = new Map<RegExp, boolean>([
  [/^GET \/v1\/account$/, false],
  [/^POST \/v1\/servers$/, false],
  [/^POST \/v1\/servers\/[^/]+\/power$/, false],
]);

beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0 } });
  work = mkdtempSync(join(tmpdir(), 'client-package-'));
  proxy = createServer(async (req, res) => {
    const op = `${req.method} ${new URL(req.url!, 'http://x').pathname}`;
    const key = (req.headers['idempotency-key'] as string | undefined) ?? null;
    const rule = [...refuseOnce.keys()].find((pattern) => pattern.test(op) && !refuseOnce.get(pattern));
    if (rule) {
      refuseOnce.set(rule, true);
      seen.push({ op, key, status: 429 });
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
      res.end(
        JSON.stringify({
          error: {
            code: 'rate_limited',
            message: 'Rate limit of 240 requests per minute exceeded; retry in 1 s',
            details: { limit: 240, retryAfterSeconds: 1, scope: 'client' },
          },
        }),
      );
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter(([name]) => !['host', 'connection', 'content-length'].includes(name)) as [string, string][],
    );
    const body = chunks.length ? Buffer.concat(chunks) : undefined;
    const answer = await fetch(`${api.baseUrl}${req.url}`, { method: req.method, headers, body });
    const text = Buffer.from(await answer.arrayBuffer());
    seen.push({ op, key, status: answer.status });
    const passed = [...answer.headers].filter(
      ([name]) => !['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(name),
    );
    res.writeHead(answer.status, Object.fromEntries(passed));
    res.end(text);
  });
  await new Promise<void>((done) => proxy.listen(0, '127.0.0.1', done));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
}, 120_000);

afterAll(async () => {
  await new Promise((done) => proxy?.close(done));
  await api?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** The sample a user would write; `config` is inlined so it needs nothing from the environment. */
const sample = (config: { baseUrl: string; token: string; instanceId: string }) => `
import {
  API_VERSION,
  ControlPlaneError,
  createControlPlaneClient,
  typedError,
  type Schema,
} from '${NAME}';

const config = ${JSON.stringify(config)};
const api = createControlPlaneClient({ baseUrl: config.baseUrl, token: config.token });

// Retried once after the proxy's 429 (GET is safe to repeat).
const account = await api.GET('/v1/account');
if (!account.data) throw new Error('account: ' + account.response.status);

const eggs = await api.GET('/v1/eggs');
const paper = eggs.data!.data.find((e) => e.instanceId === config.instanceId && e.name.includes('Paper'))!;

// Deploy two (no Idempotency-Key given: the client adds one, so the proxy's 429 on the first is retried).
const deployed: Schema<'Server'>[] = [];
for (const name of ['package-a', 'package-b']) {
  const created = await api.POST('/v1/servers', {
    body: { name, eggId: paper.eggId, instanceId: config.instanceId, region: 'eu-central', ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
  });
  if (!created.data) throw new Error('deploy: ' + JSON.stringify(created.error));
  deployed.push(created.data);
}

// A refused body: the details of validation_failed are typed.
const refused = await api.POST('/v1/servers', {
  body: { name: 'too small', eggId: paper.eggId, ramMb: 1, cpuPercent: 100, diskMb: 2048 },
});
const refusal = typedError(refused.error);
if (refusal?.error.code !== 'validation_failed') throw new Error('expected validation_failed');
const refusedFields: string[] = refusal.error.details!.issues.map((issue) => issue.field);

const installed: string[] = [];
for (const server of deployed) {
  const ready = await api.waitFor(server.id, 'installed', { intervalMs: 100, timeoutMs: 60_000 });
  installed.push(ready.live.installStatus ?? 'null');
}

// Every server, one per page: the iterator follows nextCursor.
const listed: string[] = [];
for await (const server of api.paginate('/v1/servers', { query: { limit: 1 } })) listed.push(server.id);

// A POST without an Idempotency-Key is not sent again: the proxy's 429 comes back as is, typed.
const power = await api.POST('/v1/servers/{id}/power', { params: { path: { id: deployed[0]!.id } }, body: { signal: 'start' } });
const limited = typedError(power.error);
const powerAnswer = { status: power.response.status, retryAfter: power.response.headers.get('retry-after'), scope: limited?.error.code === 'rate_limited' ? limited.error.details?.scope : null };

const deleted: string[] = [];
for (const server of deployed) {
  const gone = await api.DELETE('/v1/servers/{id}', { params: { path: { id: server.id } } });
  deleted.push(gone.data!.status);
}

// A helper's failure is a ControlPlaneError with the code and typed details.
let missing: { status: number; code: string } | null = null;
try {
  await api.waitFor('00000000-0000-7000-8000-000000000000', 'installed');
} catch (err) {
  if (err instanceof ControlPlaneError) missing = { status: err.status, code: err.code };
}

console.log(JSON.stringify({ version: API_VERSION, email: account.data.email, refusedFields, ids: deployed.map((s) => s.id), installed, listed, powerAnswer, deleted, missing }));
`;

describe('the packed client', () => {
  it('packs without tests, sources or secrets, installs offline, type-checks and runs a deploy journey', async () => {
    // Pack: prepack builds dist/ (tsc, vendored openapi-fetch).
    await run('npm', ['pack', '--pack-destination', work], { cwd: packageDir });
    const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'))!;
    const { version } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version: string };
    expect(tarball).toBe(`hosting-control-plane-client-${version}.tgz`);

    const files = (await run('tar', ['tzf', join(work, tarball)])).stdout.trim().split('\n').sort();
    expect(files).toContain('package/package.json');
    expect(files).toContain('package/README.md');
    expect(files).toContain('package/dist/index.js');
    expect(files).toContain('package/dist/index.d.ts');
    expect(files).toContain('package/dist/vendor/LICENSE-openapi-fetch');
    for (const file of files) {
      expect(file, file).toMatch(/^package\/(package\.json|README\.md|dist\/.+)$/);
      expect(file, file).not.toMatch(/\.test\.|\/tests?\/|\.env|\.map$|openapi\.json$|\.pem$|\.key$|secret/i);
      if (file.startsWith('package/dist/')) expect(file, file).toMatch(/(\.js|\.d\.ts|\/LICENSE-[\w-]+)$/);
    }
    const unpacked = join(work, 'unpacked');
    await run('mkdir', ['-p', unpacked]);
    await run('tar', ['xzf', join(work, tarball), '-C', unpacked]);
    for (const file of files.filter((f) => !f.endsWith('/'))) {
      const text = readFileSync(join(unpacked, file), 'utf8');
      // The document's example secret says what it is ("…ample signing secret only" in base64); nothing else may look like one.
      const secrets = [
        ...text.matchAll(/sk_(live|test)_[A-Za-z0-9]{8,}|whsec_[A-Za-z0-9+/]{20,}|-----BEGIN [A-Z ]*PRIVATE KEY|AKIA[0-9A-Z]{16}/g),
      ]
        .map((m) => m[0])
        .filter((s) => !(s.startsWith('whsec_') && Buffer.from(s.slice(6), 'base64').toString().includes('ample signing secret only')));
      expect(secrets, file).toEqual([]);
      expect(text, file).not.toContain(root);
    }

    // A fresh project, the tarball installed with no registry.
    const project = join(work, 'project');
    await run('mkdir', ['-p', project]);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'sample', private: true, type: 'module' }));
    await run('npm', ['install', join(work, tarball), '--offline', '--no-audit', '--no-fund'], { cwd: project });
    const installed = JSON.parse(readFileSync(join(project, 'node_modules', NAME, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(installed.version).toBe(version);
    expect(installed.dependencies).toBeUndefined();

    const { token, id } = await customer(api, 'package@example.com', { grantCents: 10_000 });
    const instanceId = api.panel!.instanceId;
    writeFileSync(join(project, 'sample.ts'), sample({ baseUrl: proxyUrl, token, instanceId }));
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'es2023',
          lib: ['es2023', 'dom', 'dom.asynciterable'],
          types: [],
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          noEmit: true,
        },
        files: ['sample.ts'],
      }),
    );
    // The repo's TypeScript, the installed declarations only (a type error fails here with tsc's message).
    await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(project, 'tsconfig.json')], {
      cwd: project,
    }).catch((err: { stdout?: string }) => {
      throw new Error(`the sample does not type-check against the installed package:\n${err.stdout}`);
    });

    const simCalls = async () =>
      ((await (await fetch(`${api.panel!.sim.url}/__sim/requests`)).json()) as { requests: Record<string, number> }).requests;
    const before = await simCalls();
    const { stdout } = await run(process.execPath, ['sample.ts'], { cwd: project });
    const after = await simCalls();
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!);

    expect(result).toMatchObject({
      version,
      email: 'package@example.com',
      refusedFields: ['body.ramMb'],
      installed: ['installed', 'installed'],
    });
    expect(result.listed).toEqual([...result.ids].reverse()); // newest first, across two pages of one
    expect(result.deleted).toEqual(['deleted', 'deleted']);
    expect(result.missing).toEqual({ status: 404, code: 'not_found' });

    // The 429s: GET /v1/account and the first create sent again once, after Retry-After, and answered.
    const ops = (pattern: RegExp) => seen.filter((s) => pattern.test(s.op));
    expect(ops(/^GET \/v1\/account$/).map((s) => s.status)).toEqual([429, 200]);
    const creates = ops(/^POST \/v1\/servers$/);
    expect(creates.map((s) => s.status)).toEqual([429, 201, 201, 400]);
    // The client's own key: the same UUID on the refused create and its retry, a new one on each other create.
    const [limitedCreate, retriedCreate, secondCreate, invalidCreate] = creates.map((s) => s.key);
    expect(limitedCreate).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(retriedCreate).toBe(limitedCreate);
    expect(new Set([limitedCreate, secondCreate, invalidCreate]).size).toBe(3);
    // The power POST carries no key and is not sent again: the caller gets the 429 with its typed details.
    expect(ops(/\/power$/)).toEqual([{ op: `POST /v1/servers/${result.ids[0]}/power`, key: null, status: 429 }]);
    expect(result.powerAnswer).toEqual({ status: 429, retryAfter: '1', scope: 'client' });

    // What the journey cost the panel (the service's work, not the client's: reported, not asserted).
    const panelCalls = Object.entries(after)
      .map(
        ([op, n]) =>
          [op.replace(/\/(\d+|[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}|[0-9a-f]{8})(?=\/|$)/g, '/:id'), n - (before[op] ?? 0)] as const,
      )
      .filter(([, n]) => n > 0);
    const byOp = new Map<string, number>();
    for (const [op, n] of panelCalls) byOp.set(op, (byOp.get(op) ?? 0) + n);
    const reads = ops(/^GET \/v1\/servers\/[^/]+$/).length;
    console.log(
      `client package journey (${id}): ${reads} GET /v1/servers/:id by waitFor; panel calls ${JSON.stringify(Object.fromEntries(byOp))}`,
    );
  }, 300_000);
});
