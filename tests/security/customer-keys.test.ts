import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { keys } from '../../shared/db/keys.ts';
import { labelKeyProblem } from '../../shared/labels.ts';
import { customer } from '../helpers/customer.ts';
import { setAttributes } from '../helpers/db.ts';
import { mulberry32 } from '../helpers/random.ts';
import { expectEnvelope, startTestApi, type ApiResponse, type TestApi } from '../helpers/stack.ts';

/**
 * Customer keys are data (a property test over every write that takes a map keyed by the caller):
 * server labels at deploy and by PATCH, API key labels at creation and by PATCH, webhook endpoint
 * labels at creation and by PATCH, egg variables at deploy and by the startup change. Keys are the
 * names JavaScript gives meaning to (every Object.prototype name, `__proto__`, `constructor`,
 * `prototype`, `toJSON`, `then`) mixed with random ones, from a seeded generator
 * (`CUSTOMER_KEYS_SEED=<n>` replays a run). Every write answers without a 5xx; a map the rules
 * accept reads back exactly (the write's answer, GET, lists, the event and the activity log), and
 * label selectors match it as an own-key oracle does; a key the rules refuse is a 400 naming it,
 * and nothing changes. Nothing is mocked: DynamoDB Local and the panel simulator over HTTP.
 */
// Hundreds of selector reads from one account in well under a minute: the request limits are lifted
// (per credential here, per account in beforeAll); they are tested in http-conventions and rate-limit.
process.env.RATE_LIMIT_PER_MINUTE = '1000000';

const SEED = Number(process.env.CUSTOMER_KEYS_SEED ?? 20261129);
const ROUNDS = 4;
const rand = mulberry32(SEED);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;

const DANGEROUS = [
  ...new Set([...Object.getOwnPropertyNames(Object.prototype), '__proto__', 'constructor', 'prototype', 'toJSON', 'then']),
];
/** The dangerous names the label rules accept (the rest start with `_`: not label keys). */
const LABEL_KEYS = DANGEROUS.filter((k) => labelKeyProblem(k) === undefined);
const NOT_LABEL_KEYS = DANGEROUS.filter((k) => labelKeyProblem(k) !== undefined && k !== '__proto__');

const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const name = (max = 12): string => {
  const n = 1 + Math.floor(rand() * max);
  let s = pick([...ALNUM]);
  for (let i = 1; i < n; i++) s += i === n - 1 ? pick([...ALNUM]) : pick([...`${ALNUM}-_.`]);
  return s;
};
const labelKey = (): string => {
  const base = rand() < 0.6 ? pick(LABEL_KEYS) : name();
  return rand() < 0.25 ? `example.com/${base}` : base;
};
/**
 * A map built by entries (a key is an own data property whatever it is called): random keys, and
 * with `every`, each dangerous name the label rules accept, so each write meets all of them at least once.
 */
const labelsOf = (every = false): Record<string, string> => {
  const entries: [string, string][] = every ? LABEL_KEYS.map((k) => [k, rand() < 0.2 ? '' : name()]) : [];
  const n = 1 + Math.floor(rand() * 8);
  for (let i = 0; i < n; i++) entries.push([labelKey(), rand() < 0.2 ? '' : rand() < 0.5 ? pick(LABEL_KEYS) : name()]);
  return Object.fromEntries(entries);
};

/** Compared as entries: equality that no prototype name can bend. */
const entries = (m: Record<string, string> | undefined) => Object.entries(m ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
const expectMap = (got: Record<string, string> | undefined, want: Record<string, string>, what: string) =>
  expect(entries(got), what).toEqual(entries(want));
const expectNo5xx = (res: ApiResponse) => expect(res.status, `${res.status} ${res.text}`).toBeLessThan(500);
const expectOk = (res: ApiResponse) => {
  expectNo5xx(res);
  expect([200, 201], res.text).toContain(res.status);
};

/** The selector terms the maps suggest (each key as k=v, k!=v, k and !k), and a few on dangerous names a map may lack. */
function selectorsFor(maps: Record<string, string>[]): string[] {
  const terms: string[] = [];
  for (const m of maps) {
    for (const [k, v] of Object.entries(m)) terms.push(`${k}=${v}`, `${k}!=${v}`, k, `!${k}`);
  }
  terms.push(`${pick(LABEL_KEYS)}`, `!${pick(LABEL_KEYS)}`, `${pick(LABEL_KEYS)}=${name()}`);
  return [...new Set(terms)];
}

/** What a term says of one map, by own keys only (through a Map). */
function oracle(term: string, labels: Record<string, string>): boolean {
  const own = new Map(Object.entries(labels));
  const ne = term.indexOf('!=');
  const eq = term.indexOf('=');
  if (ne > 0) return own.get(term.slice(0, ne)) !== term.slice(ne + 2);
  if (eq > 0) return own.get(term.slice(0, eq)) === term.slice(eq + 1);
  if (term.startsWith('!')) return !own.has(term.slice(1));
  return own.has(term);
}

let api: TestApi;
let sim: PanelSim;
let token: string;
beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 40 }, webhooks: false });
  sim = api.panel!.sim;
  expect((await api.call('PUT', '/v1/admin/settings', { body: { accountRequestsPerMinute: 1_000_000 } })).status).toBe(200);
  ({ token } = await customer(api, 'keys@example.com', { grantCents: 100_000 }));
});
afterAll(async () => api?.stop());

/** A body sent as written: `JSON.stringify` of an object cannot hold a `__proto__` key. */
const json = (rawBody: string) => ({ token, rawBody, headers: { 'content-type': 'application/json' } });

const paper = { name: 'keys server', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 };
const HOOK = 'http://127.0.0.1:9/hook';

describe(`customer keys are data (seed ${SEED})`, () => {
  const servers: { id: string; identifier: string; labels: Record<string, string> }[] = [];

  it('deploy: labels round-trip on the answer, GET, the list, the server.created event and an idempotent replay', async () => {
    for (const i of [0, 1]) {
      const labels = labelsOf(i === 0);
      const headers = { 'idempotency-key': `keys-deploy-${SEED}-${i}` };
      const res = await api.call('POST', '/v1/servers', { token, body: { ...paper, labels }, headers });
      expectOk(res);
      expectMap(res.body.labels, labels, 'deploy answer');
      const replay = await api.call('POST', '/v1/servers', { token, body: { ...paper, labels }, headers });
      expect(replay.status, replay.text).toBe(201);
      expect(replay.body.id).toBe(res.body.id);
      expectMap(replay.body.labels, labels, 'idempotent replay');
      servers.push({ id: res.body.id, identifier: res.body.identifier, labels });
    }
    for (const s of servers) expectMap((await api.call('GET', `/v1/servers/${s.id}`, { token })).body.labels, s.labels, 'GET');
    const events = await api.call('GET', '/v1/events?limit=100', { token });
    for (const s of servers) {
      const created = events.body.data.find(
        (e: { type: string; data: { id: string } }) => e.type === 'server.created' && e.data.id === s.id,
      );
      expectMap(created?.data.labels, s.labels, 'server.created event');
    }
  });

  for (let round = 0; round < ROUNDS; round++) {
    it(`round ${round}: server labels PATCH round-trips, selectors match as own keys, refused keys change nothing`, async () => {
      for (const [i, s] of servers.entries()) {
        const labels = labelsOf(i === round % 2);
        const res = await api.call('PATCH', `/v1/servers/${s.id}`, { token, body: { labels } });
        expectOk(res);
        expectMap(res.body.labels, labels, 'PATCH answer');
        s.labels = labels;
        expectMap((await api.call('GET', `/v1/servers/${s.id}`, { token })).body.labels, labels, 'GET after PATCH');
      }
      const log = await api.call('GET', '/v1/account/logs?limit=1', { token });
      expect(log.body.data[0].action).toBe('servers.labels');
      expectMap(log.body.data[0].details.labels.to, servers[1]!.labels, 'activity log');

      const listed = (await api.call('GET', '/v1/servers?limit=100', { token })).body.data as {
        id: string;
        labels: Record<string, string>;
      }[];
      for (const s of servers) expectMap(listed.find((l) => l.id === s.id)?.labels, s.labels, 'list');

      for (const term of selectorsFor(servers.map((s) => s.labels))) {
        const res = await api.call('GET', `/v1/servers?limit=100&label_selector=${encodeURIComponent(term)}`, { token });
        expectOk(res);
        const want = servers.filter((s) => oracle(term, s.labels)).map((s) => s.id);
        expect(res.body.data.map((s: { id: string }) => s.id).sort(), `selector ${term}`).toEqual(want.sort());
      }

      const s = servers[round % servers.length]!;
      const bad = pick(NOT_LABEL_KEYS);
      const refused = await api.call('PATCH', `/v1/servers/${s.id}`, { token, body: { labels: { [bad]: 'x', ok: 'y' } } });
      expectEnvelope(refused, 400, 'validation_failed');
      expect(refused.body.error.details.issues.map((i: { field: string }) => i.field)).toContain(`body.labels.${bad}`);
      const proto = await api.call('PATCH', `/v1/servers/${s.id}`, json('{"labels":{"__proto__":"x"}}'));
      expectEnvelope(proto, 400, 'validation_failed');
      expect(proto.body.error.message).toContain('__proto__');
      expectMap((await api.call('GET', `/v1/servers/${s.id}`, { token })).body.labels, s.labels, 'unchanged after refusals');
    });

    it(`round ${round}: API key and webhook endpoint labels round-trip at creation and by PATCH`, async () => {
      const keyLabels = labelsOf(round === 0);
      const key = await api.call('POST', '/v1/keys', { token, body: { name: `key ${round}`, labels: keyLabels } });
      expectOk(key);
      expectMap(key.body.labels, keyLabels, 'key create answer');
      const keyUpdate = labelsOf(round === 1);
      const patched = await api.call('PATCH', `/v1/keys/${key.body.id}`, { token, body: { labels: keyUpdate } });
      expectOk(patched);
      expectMap(patched.body.labels, keyUpdate, 'key PATCH answer');
      const keyList = (await api.call('GET', '/v1/keys?limit=100', { token })).body.data as {
        id: string;
        labels: Record<string, string>;
      }[];
      expectMap(keyList.find((k) => k.id === key.body.id)?.labels, keyUpdate, 'key list');

      const hookLabels = labelsOf(round === 0);
      const hook = await api.call('POST', '/v1/webhook-endpoints', { token, body: { url: HOOK, labels: hookLabels } });
      expectOk(hook);
      expectMap(hook.body.labels, hookLabels, 'endpoint create answer');
      const hookUpdate = labelsOf(round === 1);
      const hookPatched = await api.call('PATCH', `/v1/webhook-endpoints/${hook.body.id}`, { token, body: { labels: hookUpdate } });
      expectOk(hookPatched);
      expectMap(hookPatched.body.labels, hookUpdate, 'endpoint PATCH answer');
      expectMap((await api.call('GET', `/v1/webhook-endpoints/${hook.body.id}`, { token })).body.labels, hookUpdate, 'endpoint GET');
      await api.call('DELETE', `/v1/webhook-endpoints/${hook.body.id}`, { token });
    });
  }

  describe('egg variables named like Object.prototype members', () => {
    /** Every dangerous name the panel takes as a variable name (`\w{1,191}`); `__proto__` is refused at the body's parse. */
    const NAMES = DANGEROUS.filter((n) => /^\w{1,191}$/.test(n) && n !== '__proto__');
    const someValue = () => (rand() < 0.2 ? '' : name(20));
    let server: { id: string; identifier: string };

    beforeAll(async () => {
      const now = new Date();
      for (const env of NAMES) {
        const id = sim.state.nextId('egg_variables');
        sim.state.eggVariables.set(id, {
          id,
          egg_id: 1,
          name: `Variable ${env}`,
          description: 'A name JavaScript gives meaning to.',
          env_variable: env,
          default_value: 'default',
          user_viewable: true,
          user_editable: true,
          rules: 'nullable|string|max:40',
          created_at: now,
          updated_at: now,
        });
      }
      // The service reads the panel's eggs again (its copy is shared and refreshed on a schedule).
      await setAttributes(keys.panelEggs(api.panel!.instanceId), { freshUntil: 0 });
    });

    it('deploy sends each as its own variable; the panel holds every value', async () => {
      const environment = Object.fromEntries(NAMES.map((n) => [n, someValue()]));
      const res = await api.call('POST', '/v1/servers', { token, body: { ...paper, name: 'env server', environment } });
      expectOk(res);
      server = { id: res.body.id, identifier: res.body.identifier };
      const onPanel = sim.server(server.identifier)!.environment as Record<string, unknown>;
      for (const n of NAMES) {
        expect(Object.hasOwn(onPanel, n), n).toBe(true);
        expect(onPanel[n], n).toBe(environment[n]);
      }
    });

    it('the startup change sets them, and GET reads them back', async () => {
      const changed = Object.fromEntries(NAMES.filter(() => rand() < 0.5).map((n) => [n, `${name(20)}x`]));
      const res = await api.call('PUT', `/v1/servers/${server.id}/startup`, { token, body: { variables: changed } });
      expectOk(res);
      expect([...res.body.changed].sort()).toEqual(Object.keys(changed).sort());
      const read = await api.call('GET', `/v1/servers/${server.id}/startup`, { token });
      const values = new Map((read.body.variables as { env: string; value: string }[]).map((v) => [v.env, v.value]));
      for (const [n, v] of Object.entries(changed)) expect(values.get(n), n).toBe(v);
    });

    it('a variable named `__proto__` is a 400 naming it, nothing sent to the panel', async () => {
      const before = sim.server(server.identifier)!.environment;
      const res = await api.call('PUT', `/v1/servers/${server.id}/startup`, json('{"variables":{"__proto__":"x"}}'));
      expectEnvelope(res, 400, 'validation_failed');
      expect(sim.server(server.identifier)!.environment).toEqual(before);
    });
  });
});
