import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Stripe from 'stripe';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { startFakeStripe, type FakeStripe } from '../helpers/fake-stripe.ts';
import { startPanelSim, type PanelSim } from '../../dev/panel-sim/index.ts';
import { allItems, requireOk, until, clip, rng, send, type RawRequest, type RawResponse } from './support.ts';

/**
 * No secret in any response or log line. A representative run — a second panel registered with
 * its keys and tested, a customer deploying and controlling servers, a top-up through Stripe (a
 * local fake of its API) and a signed webhook, API keys created, listed, used and revoked,
 * provoked failures (wrong panel keys, panel faults and timeouts, a failing Stripe, bad input,
 * bad credentials), a billing pass — with every log line (LOG_LEVEL=debug) and every response
 * (status, headers, body) captured. None may carry a panel key, an API key secret other than in
 * the response that created it, the admin key, the Stripe secret key or the webhook secret; and
 * the table never holds an API key secret or a panel key.
 */
// Seeded, so a failure names the same secrets on every run; long and random enough to match nothing else.
const seeded = rng(0x5ec2e75);
const alnum = (n: number) => {
  const chars = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  return Array.from({ length: n }, () => chars[seeded.int(chars.length)]).join('');
};
const STRIPE_SECRET_KEY = `sk_test_${alnum(32)}`;
const WEBHOOK_SECRET = `whsec_${alnum(32)}`;
const APP_KEY_2 = `ptla_${alnum(11)}${alnum(32)}`;
const CLIENT_KEY_2 = `ptlc_${alnum(11)}${alnum(32)}`;
const WRONG_APP_KEY = `ptla_${alnum(11)}${alnum(32)}`;
const WRONG_CLIENT_KEY = `ptlc_${alnum(11)}${alnum(32)}`;

process.env.LOG_LEVEL = 'debug';
process.env.PANEL_TIMEOUT_MS = '800';
process.env.PANEL_CREATE_TIMEOUT_MS = '5000';

interface Captured {
  label: string;
  text: string;
  /** The API key secret this response created (it may carry that one). */
  created?: string;
}

const logs: string[] = [];
const responses: Captured[] = [];
const createdSecrets: string[] = [];
/** Outbound webhook signing secrets: shown once (create, rotate), stored to sign, never echoed or logged. */
const signingSecrets: string[] = [];
let restore: (() => void) | undefined;

let api: TestApi;
let sim2: PanelSim;
let stripeFake: FakeStripe;

/** Every write to stdout/stderr (the service's log lines) and every console call, kept. */
function captureOutput(): () => void {
  const out = process.stdout.write.bind(process.stdout);
  const err = process.stderr.write.bind(process.stderr);
  const hook = (original: typeof out) =>
    ((chunk: unknown, ...rest: unknown[]) => {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8');
      logs.push(text);
      // The service's JSON log lines are kept, not echoed; anything else passes through.
      if (text.startsWith('{"level"')) {
        const cb = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
        cb?.();
        return true;
      }
      return (original as (...a: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof process.stdout.write;
  process.stdout.write = hook(out);
  process.stderr.write = hook(err);
  const methods = ['log', 'info', 'warn', 'error', 'debug'] as const;
  const saved = methods.map((m) => console[m]);
  methods.forEach((m, i) => {
    console[m] = (...args: unknown[]) => {
      logs.push(args.map((a) => (typeof a === 'string' ? a : safeJson(a))).join(' '));
      saved[i]!.apply(console, args);
    };
  });
  return () => {
    process.stdout.write = out;
    process.stderr.write = err;
    methods.forEach((m, i) => {
      console[m] = saved[i]!;
    });
  };
}

function safeJson(v: unknown): string {
  try {
    return v instanceof Error ? `${v.name}: ${v.message}\n${v.stack}` : JSON.stringify(v);
  } catch {
    return String(v);
  }
}

/** One API call, its whole answer (status line, headers, body) recorded. */
async function call(
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  const req: RawRequest = {
    method,
    path,
    headers: {
      ...headers,
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined && typeof body !== 'string' ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  };
  const res = await send(api.baseUrl, req);
  const created =
    method === 'POST' && /^\/v1\/(keys|webhook-endpoints)/.test(path) && typeof res.json?.secret === 'string'
      ? (res.json.secret as string)
      : undefined;
  if (created) (created.startsWith('whsec_') ? signingSecrets : createdSecrets).push(created);
  responses.push({
    label: `${method} ${path} → ${res.status}`,
    text: `${res.status}\n${JSON.stringify(res.headers)}\n${res.text}`,
    ...(created ? { created } : {}),
  });
  return res;
}

const must = async (method: string, path: string, token: string | null, body?: unknown, headers?: Record<string, string>) =>
  requireOk(await call(method, path, token, body, headers), `${method} ${path}`);

/** The secret itself, its base64, or any 16-character stretch of it (a truncated or masked leak). */
function leakOf(haystack: string, secret: string): string | undefined {
  if (haystack.includes(secret)) return 'whole';
  if (haystack.includes(Buffer.from(secret).toString('base64'))) return 'base64';
  for (let i = 0; i + 16 <= secret.length; i++) {
    const part = secret.slice(i, i + 16);
    if (haystack.includes(part)) return `part "${part}"`;
  }
  return undefined;
}

beforeAll(async () => {
  restore = captureOutput();
  stripeFake = await startFakeStripe();
  process.env.STRIPE_SECRET_KEY = STRIPE_SECRET_KEY;
  process.env.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET;
  process.env.STRIPE_API_URL = stripeFake.url;
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0 } });
  sim2 = await startPanelSim({
    seed: 'default',
    appKey: APP_KEY_2,
    clientKey: CLIENT_KEY_2,
    installMs: 50,
    transitionMs: 20,
    resourcesCacheMs: 0,
  });
}, 60_000);

afterAll(async () => {
  restore?.();
  await api?.stop();
  await sim2?.close();
  await stripeFake?.close();
});

describe('secrets never leave the service', () => {
  it('a representative run, with failures provoked', async () => {
    const admin = api.adminApiKey;
    const sim1 = api.panel!.sim;

    // -- an admin registers and tests a second panel --------------------------------------------
    const second = await must('POST', '/v1/admin/instances', admin, {
      name: 'Second panel',
      baseUrl: sim2.url,
      appApiKey: APP_KEY_2,
      clientApiKey: CLIENT_KEY_2,
      priority: 10,
    });
    expect(second).toMatchObject({ hasClientKey: true, enabled: true });
    expect((await must('POST', `/v1/admin/instances/${second.id}/test`, admin)).ok).toBe(true);
    await must('GET', '/v1/admin/instances', admin);

    // -- a customer: catalog, deploys on both panels, control, files -----------------------------
    const token = (await must('POST', '/dev/session', null, { email: 'secrets-customer@example.com' })).token as string;
    const me = await must('GET', '/v1/account', token);
    await must('POST', `/v1/admin/users/${me.id}/credits`, admin, { amountCents: 20_000, note: 'secrets run' });
    for (const path of ['/v1/instances', '/v1/regions', '/v1/eggs', `/v1/eggs/${second.id}/1`, '/v1/billing/config'])
      await must('GET', path, token);
    const onSecond = await must('POST', '/v1/servers', token, {
      name: 'on the second panel',
      eggId: 1,
      ramMb: 1024,
      cpuPercent: 100,
      diskMb: 2048,
      instanceId: second.id,
    });
    const onFirst = await must('POST', '/v1/servers', token, {
      name: 'on the first panel',
      eggId: 1,
      ramMb: 1024,
      cpuPercent: 100,
      diskMb: 2048,
      instanceId: api.panel!.instanceId,
    });
    for (const server of [onSecond, onFirst]) {
      await until(async () => (await must('GET', `/v1/servers/${server.id}`, token)).live.installStatus === 'installed');
      await must('POST', `/v1/servers/${server.id}/power`, token, { signal: 'start' });
      await until(async () => (await must('GET', `/v1/servers/${server.id}/resources`, token)).powerState === 'running');
      await must('POST', `/v1/servers/${server.id}/command`, token, { command: 'say secrets test' });
      const creds = await must('GET', `/v1/servers/${server.id}/console`, token);
      expect(creds.websocket.token.split('.')).toHaveLength(3);
      await must('POST', `/v1/servers/${server.id}/files/write`, token, { file: 'config/motd.txt', content: 'hello' });
      await must('GET', `/v1/servers/${server.id}/files?directory=/config`, token);
      await must('GET', `/v1/servers/${server.id}/files/contents?file=config/motd.txt`, token);
      await must('GET', `/v1/servers/${server.id}/files/download?file=config/motd.txt`, token);
      await must('POST', `/v1/servers/${server.id}/files/delete`, token, { root: '/config', files: ['motd.txt'] });
    }
    await must('PATCH', `/v1/servers/${onFirst.id}`, token, { ramMb: 2048, cpuPercent: 100, diskMb: 4096 });

    // -- API keys: created (one with an Idempotency-Key, replayed), listed, used, revoked -------
    const k1 = await must('POST', '/v1/keys', token, { name: 'ci' }, { 'idempotency-key': 'secrets-k1' });
    const replay = await call('POST', '/v1/keys', token, { name: 'ci' }, { 'idempotency-key': 'secrets-k1' });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json.secret).toBeUndefined();
    const k2 = await must('POST', '/v1/keys', token, { name: 'deploy', scopes: ['servers:read', 'servers:write'] });
    const k3 = await must('POST', '/v1/keys', token, { name: 'short-lived', expiresInDays: 1 });
    const adminKey2 = await must('POST', '/v1/keys', admin, { name: 'second admin key' });
    await must('GET', '/v1/keys?limit=100', token);
    await must('GET', '/v1/keys?limit=100', admin);
    await must('GET', '/v1/servers', k2.secret);
    await must('GET', '/v1/account', k1.secret);
    await must('GET', '/v1/admin/users', adminKey2.secret);
    await must('DELETE', `/v1/keys/${k3.id}`, token);
    expect((await call('GET', '/v1/account', k3.secret)).status).toBe(401);
    expect((await call('POST', '/v1/keys', token, { name: 'other body' }, { 'idempotency-key': 'secrets-k1' })).status).toBe(409);

    // -- a top-up through Stripe and its signed webhook; a failing Stripe; a forged webhook -----
    const checkout = await must('POST', '/v1/billing/checkout', token, {
      amountCents: 2500,
      successUrl: 'https://dashboard.example.com/paid',
    });
    expect(stripeFake.requests.at(-1)?.authorization).toBe(`Bearer ${STRIPE_SECRET_KEY}`); // the key is really in use
    const session = [...stripeFake.sessions.values()].find((s) => s.client_reference_id === checkout.invoiceId)!;
    const payload = JSON.stringify({
      id: 'evt_secrets_1',
      object: 'event',
      api_version: '2025-01-27',
      created: Math.floor(Date.now() / 1000),
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      type: 'checkout.session.completed',
      data: { object: { ...session, status: 'complete', payment_status: 'paid', payment_intent: 'pi_secrets' } },
    });
    const signature = new Stripe('sk_test_signer').webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET });
    expect(
      (await must('POST', '/v1/webhooks/stripe', null, payload, { 'content-type': 'application/json', 'stripe-signature': signature }))
        .outcome,
    ).toBe('credited');
    const forged = new Stripe('sk_test_signer').webhooks.generateTestHeaderString({ payload, secret: 'whsec_someone_else' });
    expect(
      (await call('POST', '/v1/webhooks/stripe', null, payload, { 'content-type': 'application/json', 'stripe-signature': forged })).status,
    ).toBe(400);
    stripeFake.failNext(500);
    expect((await call('POST', '/v1/billing/checkout', token, { amountCents: 1500 })).status).toBeGreaterThanOrEqual(500);
    await must('GET', '/v1/invoices', token);
    await must('GET', `/v1/invoices/${checkout.invoiceId}`, token);

    // -- wrong panel keys: the instance test reports them; then the right keys again ------------
    await must('PATCH', `/v1/admin/instances/${second.id}`, admin, { appApiKey: WRONG_APP_KEY });
    const badApp = await must('POST', `/v1/admin/instances/${second.id}/test`, admin);
    expect(badApp.checks.find((c: { name: string }) => c.name === 'application_api').ok).toBe(false);
    await must('PATCH', `/v1/admin/instances/${second.id}`, admin, { appApiKey: APP_KEY_2, clientApiKey: WRONG_CLIENT_KEY });
    const badClient = await must('POST', `/v1/admin/instances/${second.id}/test`, admin);
    expect(badClient.checks.find((c: { name: string }) => c.name === 'client_api').ok).toBe(false);
    // A control call through the wrong client key fails as a panel error.
    expect((await call('GET', `/v1/servers/${onSecond.id}/console`, token)).status).toBeGreaterThanOrEqual(400);
    await must('PATCH', `/v1/admin/instances/${second.id}`, admin, { clientApiKey: CLIENT_KEY_2 });
    expect((await must('POST', `/v1/admin/instances/${second.id}/test`, admin)).ok).toBe(true);

    // -- panel faults: errors, retries, a timeout ------------------------------------------------
    sim1.faults.add({
      method: 'GET',
      path: `/api/client/servers/${onFirst.identifier}/files/list`,
      count: 5,
      effect: { kind: 'status', status: 500 },
    });
    expect((await call('GET', `/v1/servers/${onFirst.id}/files?directory=/`, token)).status).toBe(502);
    sim1.faults.add({ method: 'POST', path: `/api/client/servers/${onFirst.identifier}/command`, count: 1, effect: { kind: 'timeout' } });
    expect((await call('POST', `/v1/servers/${onFirst.id}/command`, token, { command: 'say slow' })).status).toBe(504);
    sim1.faults.add({ method: 'GET', path: '/api/application/nodes', count: 5, effect: { kind: 'status', status: 503 } });
    await call('GET', '/v1/regions', token);
    sim1.faults.clear();

    // -- bad input and bad credentials -------------------------------------------------------------
    await call('POST', '/v1/keys', token, '{"name":', { 'content-type': 'application/json' });
    await call('POST', '/v1/servers', token, { name: 'x', eggId: 'one' });
    await call('GET', '/v1/account', 'cp_test_notarealkeyatallxxxxxxxxxxxxxxxxxxxxx');
    await call('GET', '/v1/account', `${k1.secret.slice(0, -1)}${k1.secret.endsWith('a') ? 'b' : 'a'}`);
    await call('GET', `/v1/servers/00000000-0000-4000-8000-000000000000`, token);
    await call('POST', `/v1/admin/instances`, admin, { name: 'bad', baseUrl: 'ftp://nope', appApiKey: WRONG_APP_KEY });

    // -- outbound webhooks: an endpoint (its receiver does not answer), a rotation, the listings ---
    const hook = await must('POST', '/v1/webhook-endpoints', token, { url: 'http://127.0.0.1:9/hook', description: 'secrets run' });
    await must('POST', `/v1/webhook-endpoints/${hook.id}/rotate-secret`, token);
    await must('PATCH', `/v1/webhook-endpoints/${hook.id}`, token, { events: ['server.deleted', 'ledger.entry'] });
    await must('GET', '/v1/webhook-endpoints', token);
    await must('GET', `/v1/webhook-endpoints/${hook.id}`, token);
    await must('GET', `/v1/webhook-endpoints/${hook.id}/deliveries`, token);
    await must('GET', '/v1/events?limit=100', token);

    // -- a billing pass, the logs, the listings ---------------------------------------------------
    await must('POST', '/dev/billing/run', null, { at: new Date(Date.now() + 2 * 3_600_000).toISOString() });
    await must('DELETE', `/v1/servers/${onFirst.id}`, token);
    for (const path of ['/v1/account/logs?limit=100', '/v1/account/transactions?limit=100', '/v1/account/budget', '/v1/servers'])
      await must('GET', path, token);
    for (const path of ['/v1/admin/logs?limit=100', '/v1/admin/users', '/v1/admin/servers', '/v1/admin/settings', '/v1/admin/instances'])
      await must('GET', path, admin);
    for (const path of ['/v1/health', '/openapi.json', '/docs']) await must('GET', path, null);
  }, 60_000);

  it('no response and no log line carries a secret', () => {
    // The capture really saw the service log (debug level) and the answers.
    expect(logs.join('').length).toBeGreaterThan(1000);
    expect(logs.some((l) => l.includes('"stripe webhook"'))).toBe(true);
    expect(responses.length).toBeGreaterThan(60);
    expect(createdSecrets.length).toBeGreaterThanOrEqual(4);

    const secrets: [string, string][] = [
      ['panel 1 application key', api.panel!.sim.appKey],
      ['panel 1 client key', api.panel!.sim.clientKey],
      ['panel 2 application key', APP_KEY_2],
      ['panel 2 client key', CLIENT_KEY_2],
      ['wrong application key sent by the admin', WRONG_APP_KEY],
      ['wrong client key sent by the admin', WRONG_CLIENT_KEY],
      ['admin API key', api.adminApiKey],
      ['Stripe secret key', STRIPE_SECRET_KEY],
      ['Stripe webhook secret', WEBHOOK_SECRET],
      ...createdSecrets.map((s, i): [string, string] => [`API key secret #${i + 1}`, s]),
      ...signingSecrets.map((s, i): [string, string] => [`webhook signing secret #${i + 1}`, s]),
    ];
    expect(signingSecrets).toHaveLength(2); // created, then rotated
    const found: string[] = [];
    for (const [name, secret] of secrets) {
      for (const r of responses) {
        if (r.created === secret) continue;
        const how = leakOf(r.text, secret);
        if (how)
          found.push(
            `${name} (${how}) in the response to ${r.label}: ${clip(r.text.slice(Math.max(0, r.text.indexOf(secret.slice(0, 16)) - 100)), 300)}`,
          );
      }
      logs.forEach((line) => {
        const how = leakOf(line, secret);
        if (how) found.push(`${name} (${how}) in a log line: ${clip(line, 300)}`);
      });
    }
    const lines = logs
      .join('')
      .split('\n')
      .filter((l) => l.startsWith('{"level"'));
    console.log(
      `secrets: ${secrets.length} secrets checked against ${responses.length} responses and ${lines.length} log lines (${['debug', 'info', 'warn', 'error'].map((lvl) => `${lvl} ${lines.filter((l) => l.startsWith(`{"level":"${lvl}"`)).length}`).join(', ')})`,
    );
    expect(found, found.slice(0, 20).join('\n')).toEqual([]);
  });

  it('the table never stores an API key secret, a panel key or a Stripe secret', async () => {
    const items = await allItems();
    expect(items.length).toBeGreaterThan(50);
    const secrets: [string, string][] = [
      ['panel 1 application key', api.panel!.sim.appKey],
      ['panel 1 client key', api.panel!.sim.clientKey],
      ['panel 2 application key', APP_KEY_2],
      ['panel 2 client key', CLIENT_KEY_2],
      ['wrong application key', WRONG_APP_KEY],
      ['wrong client key', WRONG_CLIENT_KEY],
      ['admin API key', api.adminApiKey],
      ['Stripe secret key', STRIPE_SECRET_KEY],
      ['Stripe webhook secret', WEBHOOK_SECRET],
      ...createdSecrets.map((s, i): [string, string] => [`API key secret #${i + 1}`, s]),
    ];
    const found: string[] = [];
    for (const item of items) {
      const text = JSON.stringify(item);
      for (const [name, secret] of secrets) {
        const how = leakOf(text, secret);
        if (how) found.push(`${name} (${how}) in ${item.PK} | ${item.SK}: ${clip(text, 300)}`);
      }
    }
    expect(found, found.slice(0, 20).join('\n')).toEqual([]);
  });
});
