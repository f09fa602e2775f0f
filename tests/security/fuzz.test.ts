import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { routeEntries, toTemplatePath } from '../../shared/api/routes.ts';
import { generateApiKey } from '../../shared/auth/api-key-format.ts';
import { mintToken } from '../../dev/local-idp.ts';
import { LOCAL_ISSUER } from '../../dev/stack.ts';
import {
  businessItems,
  clip,
  deref,
  jsonRequest,
  requireOk,
  until,
  describeExchange,
  digestDiff,
  example,
  pool,
  responseProblems,
  rng,
  schemaTypes,
  schemaValid,
  send,
  SessionTokens,
  zodJsonSchema,
  type RawRequest,
  type RawResponse,
  type Schema,
} from './support.ts';

/**
 * A seeded fuzzer over every operation of the OpenAPI document the running API serves, plus the
 * hidden local routes. For every response: never a 5xx, every error exactly the envelope with a
 * known code matching its status, a request id; requests the document declares invalid are
 * refused; and no rejected request changes a business item of the table (a digest before and
 * after each batch; requests that may legitimately succeed run one at a time with their own digest).
 *
 * FUZZ_SEED=<n> replays another sequence; the default seed is fixed, so a failure reproduces.
 */
// Thousands of refused requests from one address: the per-IP limit would turn the run into 429s
// (it is tested in http-conventions), so it is lifted here.
process.env.RATE_LIMIT_PER_MINUTE = '1000000';
process.env.PANEL_TIMEOUT_MS = '3000';
process.env.PANEL_CREATE_TIMEOUT_MS = '5000';

const SEED = Number(process.env.FUZZ_SEED ?? 0x5eed_f022);
const CONCURRENCY = 6;
const MAX_CASES_PER_PUBLIC_OP = 14; // requests without a credential share one per-IP budget (240/min)
const MAY_SUCCEED_PER_OP = 6;

type Cred = 'none' | 'owner' | 'admin' | 'other' | 'scopeless' | 'adminScopeless' | { header: string };

interface Op {
  id: string;
  method: string;
  template: string;
  hidden: boolean;
  group: string | undefined;
  pathParams: { name: string; schema: Schema }[];
  queryParams: { name: string; schema: Schema; required: boolean }[];
  body: Schema | undefined;
  rawBody: boolean;
  security: boolean;
  admin: boolean;
  scope: string | undefined;
  idempotent: boolean;
}

interface Case {
  op: Op;
  category: string;
  label: string;
  method: string;
  path: string;
  cred: Cred;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** The request is invalid (by the document or the documented rules): it must be refused. */
  reject: boolean;
  /** Pinned statuses, when the contract names them. */
  statuses?: number[];
  /** Statuses the answer must not have (credential-less routes must not ask for one). */
  notStatuses?: number[];
  /** Valid by the document: may be accepted, so it runs alone with its own digest. */
  maySucceed?: boolean;
}

interface Outcome {
  c: Case;
  req: RawRequest;
  res: RawResponse;
}

let api: TestApi;
let doc: Schema;
const rand = rng(SEED);
const fx = {} as {
  owner: SessionTokens;
  admin: SessionTokens;
  other: SessionTokens;
  accountId: string;
  serverId: string;
  keyId: string;
  invoiceId: string;
  instanceId: string;
  spareInstanceId: string;
  readOnlyKey: string;
  billingReadKey: string;
  adminNoAdminKey: string;
  keysCursor: string;
  expiredSession: string;
};
const ops: Op[] = [];
const plan = { byOp: new Map<string, Case[]>(), batches: [] as Case[][], maySucceed: [] as Case[] };
const problems: string[] = [];

// ---- the operations -------------------------------------------------------------------------------

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

function opsFromDocument(document: Schema): Op[] {
  const out: Op[] = [];
  for (const [template, item] of Object.entries(document.paths as Record<string, Record<string, Schema>>)) {
    for (const m of METHODS) {
      const o = item[m];
      if (!o) continue;
      const params = (o.parameters ?? []) as Schema[];
      const bodySchema = o.requestBody?.content?.['application/json']?.schema as Schema | undefined;
      const scope = o['x-required-scope'] as string | undefined;
      out.push({
        id: o.operationId,
        method: m.toUpperCase(),
        template,
        hidden: false,
        group: undefined,
        pathParams: params.filter((p) => p.in === 'path').map((p) => ({ name: p.name, schema: p.schema })),
        queryParams: params.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema, required: !!p.required })),
        body: bodySchema,
        rawBody: !!bodySchema && schemaTypes(bodySchema, document).includes('string'),
        // A bearer credential (the webhook's signature scheme is checked by its own cases, not as a credential).
        security: Array.isArray(o.security) && o.security.some((r: Record<string, unknown>) => 'bearer' in r || 'adminBearer' in r),
        admin: scope === 'admin',
        scope,
        idempotent: params.some((p) => p.in === 'header' && /^idempotency-key$/i.test(p.name)),
      });
    }
  }
  return out;
}

/** The routes the document leaves out (the docs page, its assets, the local-only /dev routes). */
function hiddenOps(): Op[] {
  const js = zodJsonSchema;
  return routeEntries()
    .filter(([, def]) => def.hidden || def.group === 'dev')
    .map(([id, def]) => {
      const props = (schema: unknown) => {
        if (!schema) return [];
        const s = js(schema);
        return Object.entries((s.properties ?? {}) as Record<string, Schema>).map(([name, p]) => ({
          name,
          schema: p,
          required: (s.required ?? []).includes(name),
        }));
      };
      return {
        id,
        method: def.method,
        template: toTemplatePath(def.path),
        hidden: true,
        group: def.group,
        pathParams: props(def.params),
        queryParams: props(def.query),
        body: def.body ? js(def.body) : undefined,
        rawBody: !!def.rawBody,
        security: def.auth === 'bearer',
        admin: !!def.admin,
        scope: def.scope,
        idempotent: !!def.idempotent,
      };
    });
}

// ---- inputs ---------------------------------------------------------------------------------------

/** Valid values by property name, for baselines the service accepts (sacrificial where it acts). */
const overrides = (): Record<string, unknown> => ({
  name: 'fuzz probe',
  eggId: 1,
  ramMb: 1024,
  cpuPercent: 100,
  diskMb: 2048,
  signal: 'start',
  command: 'say fuzz',
  file: 'fuzz.txt',
  content: 'fuzz',
  files: ['fuzz-absent.txt'],
  root: '/',
  amountCents: 1000,
  note: 'fuzz',
  // A panel registered by the fuzzer is disabled and has keys that open nothing.
  baseUrl: 'http://127.0.0.1:9/panel',
  appApiKey: 'ptla_fuzz_not_a_real_key',
  clientApiKey: 'ptlc_fuzz_not_a_real_key',
  enabled: false,
  priority: 9000,
  monthlyCapCents: 100_000,
  action: 'refuse',
  email: 'fuzz-session@example.com',
  outcome: 'paid',
  topUpBonusPercent: 5,
  expiresInDays: 30,
  successUrl: 'https://example.com/paid',
  cancelUrl: 'https://example.com/cancelled',
  // A schedule's cron fields (a generated string is not a cron field).
  minute: '0',
  hour: '4',
  dayOfMonth: '*',
  month: '*',
  dayOfWeek: '*',
  // A file mode (chmod): octal digits.
  mode: '644',
  // A storefront picture (plans, egg looks): https only.
  pictureUrl: 'https://example.com/fuzz.png',
});

const UNICODE = [
  '\u202Egnp.exe\u202C',
  'مرحبا بالعالم',
  'שלום עולם',
  '🎉🔥 emoji 👨‍👩‍👧‍👦',
  'nul\u0000byte',
  'lone \ud800 high surrogate',
  'lone \udfff low surrogate',
  '\ufeffbom',
  'zero\u200bwidth\u200djoiner',
  'Z̷̧̛a̶l̵g̸o̷ text',
  'line\nbreak',
  'tab\there',
  '\u2028\u2029separators',
  'ＦＵＬＬＷＩＤＴＨ',
  "'; DROP TABLE accounts; --",
  '<script>alert(1)</script>',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template-injection probe, sent as literal text
  '${7*7}{{7*7}}%s%n',
  '../../etc/passwd',
  '\u0001\u001f\u007f',
  'İıßẞ',
];
const NUMBERS = [1e308, -1e308, 2 ** 53, 2 ** 53 - 1, -(2 ** 53), -1, 0, 1.5, 2 ** 31, 2 ** 31 - 1, -(2 ** 31), 5e-324, 1e-7];
const RAW_NUMBERS = ['1e400', '-1e400', '123456789012345678901234567890', '-0', '1E2', '0x10', '01', '.5'];
const WRONG_TYPES: unknown[] = [123, 1.5, -1, true, false, null, '', 'string', '123', [], [1], {}, { a: 1 }];
const MALFORMED = [
  '{',
  '}',
  '{"a":',
  '{"a":1,}',
  "{'a':1}",
  '[',
  'nul',
  'NaN',
  'undefined',
  '{"a":1}{"b":2}',
  '\u0000',
  '{"a":"\\x41"}',
  '{"a":"\\u12"}',
  '{"a":01}',
  '{"a":1e}',
  '{"a":+1}',
  '{"a":Infinity}',
  '{"a":"unterminated}',
  '{"__proto__":{"isAdmin":true}}',
  '{"constructor":{"prototype":{"isAdmin":true}}}',
  '\ufeff{}',
  '{} trailing',
  '/*c*/{}',
  '   ',
  `${'['.repeat(20_000)}${']'.repeat(20_000)}`,
  `{"a":${'['.repeat(20_000)}`,
];
const NON_OBJECT = ['null', '[]', '"str"', '123', 'true', '[{}]'];
const NON_JSON_TYPES: (string | undefined)[] = [
  undefined,
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'application/octet-stream',
  'application/xml',
  'text/json',
  'application/jsonx',
  'json',
  '*/*',
];
const JSONISH_TYPES = [
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/problem+json',
  'application/json;charset=iso-8859-1',
];
const FILE_FIELDS = new Set(['file', 'root', 'files', 'directory']);

/** The documented path rules (docs/api.md: no `..`, NUL or control characters) the schema cannot say. */
function breaksPathRules(value: unknown, key?: string): boolean {
  if (Array.isArray(value)) return value.some((v) => breaksPathRules(v, key));
  if (value && typeof value === 'object') return Object.entries(value).some(([k, v]) => breaksPathRules(v, k));
  if (typeof value !== 'string' || !key || !FILE_FIELDS.has(key)) return false;
  return /[\u0000-\u001f\u007f]/.test(value) || value.split(/[\\/]/).includes('..');
}

const clone = <T>(v: T): T => structuredClone(v);

function setAt(obj: unknown, path: (string | number)[], value: unknown): unknown {
  const root = clone(obj ?? {}) as Record<string | number, unknown>;
  let node = root;
  path.forEach((part, i) => {
    if (i === path.length - 1) node[part] = value;
    else {
      if (!node[part] || typeof node[part] !== 'object') node[part] = typeof path[i + 1] === 'number' ? [] : {};
      node = node[part] as Record<string | number, unknown>;
    }
  });
  return root;
}

function deleteAt(obj: unknown, path: (string | number)[]): unknown {
  const root = clone(obj) as Record<string | number, unknown>;
  let node = root;
  for (const part of path.slice(0, -1)) node = node[part] as Record<string | number, unknown>;
  delete node[path.at(-1)!];
  return root;
}

interface Field {
  path: (string | number)[];
  schema: Schema;
  required: boolean;
}

/** The body's fields: top-level properties, one level of nested objects, and array items. */
function fieldsOf(schema: Schema | undefined, prefix: (string | number)[] = [], depth = 0): Field[] {
  const s = deref(schema, doc);
  if (!s || depth > 2) return [];
  const out: Field[] = [];
  const required: string[] = s.required ?? [];
  for (const [name, propRaw] of Object.entries((s.properties ?? {}) as Record<string, Schema>)) {
    const prop = deref(propRaw, doc)!;
    const path = [...prefix, name];
    out.push({ path, schema: prop, required: required.includes(name) });
    const types = schemaTypes(prop, doc);
    if (types.includes('object') && prop.properties) out.push(...fieldsOf(prop, path, depth + 1));
    if (types.includes('array') && prop.items) out.push({ path: [...path, 0], schema: deref(prop.items, doc)!, required: false });
  }
  return out;
}

// ---- cases ----------------------------------------------------------------------------------------

const ownerOf = (op: Op): Cred => (!op.security ? 'none' : op.admin ? 'admin' : 'owner');
const accountOwnedId = (op: Op) => /^\/v1\/(servers|keys|invoices)\/\{id\}/.test(op.template);

function paramValue(op: Op, name: string, schema: Schema): string {
  if (name === 'id') {
    if (op.template.startsWith('/v1/servers/')) return fx.serverId;
    if (op.template.startsWith('/v1/keys/')) return fx.keyId;
    if (op.template.startsWith('/v1/invoices/')) return fx.invoiceId;
    if (op.template.startsWith('/v1/admin/instances/')) return fx.spareInstanceId;
    if (op.template.startsWith('/v1/admin/users/')) return fx.accountId;
  }
  if (name === 'instanceId') return fx.instanceId;
  if (name === 'invoiceId') return fx.invoiceId;
  if (name === 'eggId') return '1';
  if (name === 'file') return 'swagger-ui.css';
  // A route added later: a value from its schema (for a uuid, the uuid of nothing).
  return String(example(schema, doc, {}, undefined, rand.uuid));
}

function fillPath(op: Op, replace: Record<string, string> = {}): string {
  return op.template.replace(/\{(\w+)\}/g, (_m, name: string) => {
    if (name in replace) return replace[name]!;
    const p = op.pathParams.find((x) => x.name === name);
    return encodeURIComponent(paramValue(op, name, p?.schema ?? { type: 'string' }));
  });
}

function requiredQuery(op: Op): string {
  return op.queryParams
    .filter((q) => q.required)
    .map(
      (q) => `${q.name}=${q.name === 'file' ? 'fuzz.txt' : encodeURIComponent(String(example(q.schema, doc, {}, undefined, rand.uuid)))}`,
    )
    .join('&');
}

function buildCases(op: Op): Case[] {
  const cases: Case[] = [];
  const mutating = op.method !== 'GET';
  const basePath = fillPath(op);
  const baseQuery = requiredQuery(op);
  const url = (path = basePath, query = baseQuery) => (query ? `${path}?${query}` : path);
  const baseline = op.body ? example(op.body, doc, overrides(), undefined, rand.uuid) : undefined;
  const encode = (b: unknown) => (op.rawBody ? String(typeof b === 'string' ? b : JSON.stringify(b)) : JSON.stringify(b));
  const jsonHeaders: Record<string, string> = op.body ? { 'content-type': 'application/json' } : {};
  const baseBody = op.body ? encode(baseline) : undefined;
  /** A body the schema refuses, for cases about something else. */
  const invalidBody = op.body
    ? op.rawBody
      ? 'not-json-and-unsigned'
      : JSON.stringify(Array.isArray(baseline) ? { __fuzz: 1 } : { ...(baseline as object), __fuzz_extra: 1 })
    : undefined;
  const add = (
    c: Omit<Case, 'op' | 'method' | 'cred' | 'headers' | 'path'> & Partial<Pick<Case, 'method' | 'cred' | 'headers' | 'path'>>,
  ) => cases.push({ op, method: op.method, cred: ownerOf(op), headers: { ...jsonHeaders }, path: url(), body: baseBody, ...c });

  // -- credentials ----------------------------------------------------------------------------
  if (op.security) {
    const bad: [string, string | undefined][] = [
      ['none', undefined],
      ['empty bearer', 'Bearer'],
      ['basic', 'Basic dXNlcjpwYXNzd29yZA=='],
      ['garbage', 'Bearer not-a-token'],
      ['checksummed unknown key', `Bearer ${generateApiKey('cp_test')}`],
      ['bad checksum', `Bearer cp_test_${'A'.repeat(32)}zzzzzz`],
      ['jwt garbage', 'Bearer a.b.c'],
      [
        'alg none jwt',
        `Bearer ${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ iss: LOCAL_ISSUER, sub: 'local|admin@localhost', email: 'admin@localhost', exp: 9_999_999_999 })).toString('base64url')}.`,
      ],
      ['8 KB token', `Bearer ${'x'.repeat(8000)}`],
      ['two tokens', 'Bearer abc def'],
      ['expired session', `Bearer ${fx.expiredSession}`],
    ];
    for (const [label, header] of bad)
      add({ category: 'credentials', label, cred: header === undefined ? 'none' : { header }, reject: true, statuses: [401] });
    if (op.admin) {
      add({ category: 'credentials', label: 'non-admin session', cred: 'owner', reject: true, statuses: [403] });
      add({ category: 'credentials', label: 'admin key without the admin scope', cred: 'adminScopeless', reject: true, statuses: [403] });
    } else if (op.scope) {
      add({ category: 'credentials', label: `key without ${op.scope}`, cred: 'scopeless', reject: true, statuses: [403] });
    }
    if (accountOwnedId(op)) add({ category: 'credentials', label: "another account's id", cred: 'other', reject: true, statuses: [404] });
  } else {
    // No credential needed: a garbage one must not be asked about (the body is invalid, so nothing runs).
    // A mutating public route without a body would act on such a request: nothing to learn there.
    if (!mutating || op.body) {
      for (const header of ['Bearer not-a-token', `Bearer ${generateApiKey('cp_test')}`]) {
        add({
          category: 'credentials',
          label: 'garbage on a public route',
          cred: { header },
          body: invalidBody,
          reject: mutating,
          notStatuses: [401, 403],
        });
      }
    }
  }

  // -- path ------------------------------------------------------------------------------------
  for (const p of op.pathParams) {
    const valid = encodeURIComponent(paramValue(op, p.name, p.schema));
    const isUuid = deref(p.schema, doc)?.format === 'uuid';
    // A change of one server's part (a backup) takes the server's lease: two well-formed ids of the
    // same batch reach it together, and the second is 409 operation_in_progress, as any caller would be.
    const leased = mutating && p.name !== 'id' && op.template.startsWith('/v1/servers/{id}/') ? [409] : [];
    const tricks: [string, number[] | undefined][] = [
      ['..', undefined],
      ['.', undefined],
      ['%2e%2e', undefined],
      ['%2E%2E', undefined],
      ['..%2f..%2fv1%2faccount', undefined],
      ['%2f', undefined],
      ['a%2fb', isUuid ? [400] : undefined],
      ['%00', isUuid ? [400] : undefined],
      [`${valid}%00`, isUuid ? [400] : undefined],
      ['%ZZ', undefined],
      ['%', undefined],
      ['%F0%9F%98%80', isUuid ? [400] : undefined],
      ['%E2%80%AE', isUuid ? [400] : undefined],
      ['%ED%A0%80', undefined],
      ['%C0%AE%C0%AE', undefined],
      ['a'.repeat(4000), [400]],
      ['00000000-0000-0000-0000-000000000000', isUuid ? [400, 404, ...leased] : undefined],
      [rand.uuid(), isUuid ? [404, ...leased] : undefined],
      ['null', isUuid ? [400] : undefined],
      ['-1', isUuid ? [400] : undefined],
      ['1e999', isUuid ? [400] : undefined],
      ['9'.repeat(400), [400]],
      [`%20${valid}`, isUuid ? [400] : undefined],
      [`${valid}%0a`, isUuid ? [400] : undefined],
      ['%27%20OR%20%271%27%3D%271', isUuid ? [400] : undefined],
      ['__proto__', isUuid ? [400] : undefined],
      ['constructor', isUuid ? [400] : undefined],
      [`${valid};x=1`, isUuid ? [400] : undefined],
    ];
    if (!mutating) tricks.push([valid.toUpperCase(), undefined], [`${valid}/`, undefined]);
    for (const [value, statuses] of rand.sample(tricks, 14)) {
      add({
        category: 'path',
        label: `${p.name}=${clip(value, 40)}`,
        path: url(fillPath(op, { [p.name]: value })),
        reject: mutating,
        statuses,
      });
    }
  }
  const pathTricks: [string, string][] = [
    ['leading //', `/${basePath}`],
    ['inner //', basePath.replace(/^\/(\w+)\//, '/$1//')],
    ['upper case', basePath.toUpperCase()],
    ['encoded slash', basePath.replace(/^\/(\w+)\//, '/$1%2F')],
    ['trailing %00', `${basePath}%00`],
    ['trailing /..', `${basePath}/..`],
    ['trailing ;', `${basePath};`],
  ];
  if (!mutating) pathTricks.push(['trailing /', `${basePath}/`], ['inner /./', basePath.replace(/^\/(\w+)\//, '/$1/./')]);
  for (const [label, path] of rand.sample(pathTricks, 5)) add({ category: 'path', label, path: url(path), reject: mutating });

  // -- query -----------------------------------------------------------------------------------
  const queryTricks: [string, string, number[] | undefined][] = [];
  for (const q of op.queryParams) {
    const rest = op.queryParams.filter((x) => x.required && x.name !== q.name).map((x) => `${x.name}=fuzz.txt`);
    const withRest = (v: string) => [...rest, `${q.name}=${v}`].join('&');
    if (q.name === 'limit') {
      for (const v of ['-1', '0', '101', '1000000000', '1e9', '1.5', 'abc', '', 'NaN', 'Infinity', '%00', '1%00', '9'.repeat(400)])
        queryTricks.push([`limit=${v}`, withRest(v), [400]]);
      queryTricks.push(['limit=0x10', withRest('0x10'), undefined]);
      queryTricks.push(['limit twice', 'limit=1&limit=2', [400]]);
    } else if (q.name === 'cursor') {
      const forged = Buffer.from(JSON.stringify({ PK: `ACCOUNT#${fx.accountId}`, SK: 'KEY#' })).toString('base64url');
      for (const v of [
        'x',
        'garbage%3D%3D',
        '%00',
        'a'.repeat(5000),
        forged,
        encodeURIComponent(fx.keysCursor),
        '%F0%9F%98%80',
        'null',
        '%5B%5D',
      ]) {
        queryTricks.push([`cursor=${clip(v, 30)}`, withRest(v), [400]]);
      }
    } else {
      const bad = [
        '..',
        '../../etc/passwd',
        '%2Fa%2F..%2F..%2Fb',
        'x%00.txt',
        '%01',
        '..%5C..%5Cwindows',
        'a'.repeat(1100),
        '',
        '%2e%2e%2f',
      ];
      for (const v of bad) queryTricks.push([`${q.name}=${clip(v, 30)}`, withRest(v), [400]]);
      for (const v of ['/etc/passwd', '~', '.', '/', 'fuzz.txt', '%F0%9F%98%80.txt', '%E2%80%AEtxt.exe', `${encodeURIComponent('Z̷a̶l̵g̸o̷')}`])
        queryTricks.push([`${q.name}=${clip(v, 30)}`, withRest(v), undefined]);
      queryTricks.push([`${q.name} twice`, [...rest, `${q.name}=a`, `${q.name}=b`].join('&'), undefined]);
    }
  }
  if (op.queryParams.length) {
    const strict = op.queryParams.some((q) => q.name === 'file' || q.name === 'directory');
    queryTricks.push(['unknown parameter', [baseQuery, 'foo=bar'].filter(Boolean).join('&'), strict ? [400] : undefined]);
    queryTricks.push([
      '__proto__ parameter',
      [baseQuery, '__proto__=1', 'constructor%5Bprototype%5D%5Bx%5D=1'].filter(Boolean).join('&'),
      strict ? [400] : undefined,
    ]);
  } else {
    queryTricks.push([
      'query on a route without one',
      [baseQuery, 'limit=-1&cursor=x&__proto__=1&%00=%00'].filter(Boolean).join('&'),
      undefined,
    ]);
  }
  // Unknown query parameters are ignored, so on a mutating route the body carries the defect.
  if (!mutating || op.body) {
    for (const [label, query, statuses] of rand.sample(queryTricks, 16)) {
      add({
        category: 'query',
        label,
        path: url(basePath, query),
        body: mutating ? invalidBody : baseBody,
        reject: mutating || !!statuses,
        statuses: mutating ? undefined : statuses,
      });
    }
  }

  // -- body ------------------------------------------------------------------------------------
  if (op.body) {
    const asJson = !op.rawBody;
    // For the webhook (raw body, signature instead of a credential) every one of these is a bad signature.
    const pin = (statuses: number[]) => (op.rawBody ? [400] : statuses);
    for (const text of rand.sample(MALFORMED, 12))
      add({ category: 'body', label: `malformed ${clip(JSON.stringify(text), 30)}`, body: text, reject: true, statuses: [400] });
    add({ category: 'body', label: 'empty body', body: '', reject: true, statuses: [400] });
    add({ category: 'body', label: 'no body', body: undefined, reject: true, statuses: [400] });
    if (asJson)
      for (const text of NON_OBJECT)
        add({
          category: 'body',
          label: `non-object ${text}`,
          body: text,
          reject: !schemaValid(op.body, JSON.parse(text), doc),
          statuses: [400],
        });
    for (const type of rand.sample(NON_JSON_TYPES, 6)) {
      add({
        category: 'content-type',
        label: `content-type ${type ?? '(none)'}`,
        headers: type ? { 'content-type': type } : {},
        reject: true,
        statuses: pin([415]),
      });
    }
    for (const type of JSONISH_TYPES)
      add({
        category: 'content-type',
        label: `content-type ${type}, invalid body`,
        headers: { 'content-type': type },
        body: invalidBody,
        reject: true,
        statuses: [400],
      });

    // The largest body the API takes is 1 MiB: past it, 413 whatever the content.
    const fields = fieldsOf(op.body);
    const stringField = fields.find((f) => schemaTypes(f.schema, doc).includes('string'));
    const huge = 'x'.repeat(1_100_000);
    add({
      category: 'size',
      label: '1.1 MB body',
      body: asJson ? JSON.stringify(setAt(baseline, stringField?.path ?? ['pad'], huge)) : huge,
      reject: true,
      statuses: [413],
    });

    if (asJson && stringField) {
      // Bytes that are not UTF-8 inside a string: read as U+FFFD, so the body may well be valid.
      const [head, tail] = JSON.stringify(setAt(baseline, stringField.path, '__BYTES__')).split('__BYTES__') as [string, string];
      const decoded = JSON.parse(`${head}\ufffd\ufffd\ufffd${tail}`);
      const reject = !schemaValid(op.body, decoded, doc) || breaksPathRules(decoded);
      add({
        category: 'unicode',
        label: 'invalid UTF-8 bytes',
        body: Buffer.concat([Buffer.from(head), Buffer.from([0xff, 0xfe, 0xc0, 0xaf]), Buffer.from(tail)]),
        reject,
        statuses: reject ? [400] : undefined,
        maySucceed: !reject,
      });
    }

    if (asJson) {
      for (const f of fields) {
        const types = schemaTypes(f.schema, doc);
        const at = (v: unknown) => setAt(baseline, f.path, v);
        const classify = (body: unknown) => !schemaValid(op.body, body, doc) || breaksPathRules(body);
        const fieldName = f.path.filter((p) => typeof p === 'string').join('.');
        // Wrong JSON types.
        if (types.length) {
          const wrong = WRONG_TYPES.filter((v) => !types.some((t) => schemaValid({ type: t }, v, doc)));
          for (const v of rand.sample(wrong, 2))
            add({
              category: 'types',
              label: `${fieldName} = ${JSON.stringify(v)}`,
              body: JSON.stringify(at(v)),
              reject: true,
              statuses: [400],
            });
        }
        // Missing required fields.
        if (f.required && f.path.length === 1)
          add({
            category: 'required',
            label: `without ${fieldName}`,
            body: JSON.stringify(deleteAt(baseline, f.path)),
            reject: true,
            statuses: [400],
          });
        // Numbers: huge, negative, fractional, unsafe, and the schema's own edges.
        if (types.includes('integer') || types.includes('number')) {
          const s = deref(f.schema, doc)!;
          const edges = [s.minimum, s.maximum].filter((n): n is number => typeof n === 'number').flatMap((n) => [n - 1, n, n + 1]);
          for (const v of [...rand.sample(NUMBERS, 4), ...edges]) {
            const body = at(v);
            const reject = classify(body);
            add({
              category: 'numbers',
              label: `${fieldName} = ${v}`,
              body: JSON.stringify(body),
              reject,
              statuses: reject ? [400] : undefined,
              maySucceed: !reject,
            });
          }
          for (const literal of rand.sample(RAW_NUMBERS, 2)) {
            const text = JSON.stringify(at('__RAW_LITERAL__')).replace('"__RAW_LITERAL__"', literal);
            let parsed: unknown;
            try {
              parsed = JSON.parse(text);
            } catch {
              parsed = Symbol('invalid JSON');
            }
            const reject = typeof parsed === 'symbol' || classify(parsed);
            add({
              category: 'numbers',
              label: `${fieldName} = ${literal} (literal)`,
              body: text,
              reject,
              statuses: reject ? [400] : undefined,
              maySucceed: !reject,
            });
          }
        }
        // Strings: unicode of every kind, past the maximum, near the body limit.
        if (types.includes('string')) {
          const s = deref(f.schema, doc)!;
          for (const v of rand.sample(UNICODE, 3)) {
            const body = at(v);
            const reject = classify(body);
            // A region no node has is 503 no_capacity by design (docs/api.md, placement): not fuzzed with valid strings.
            if (!reject && fieldName === 'region') continue;
            add({
              category: 'unicode',
              label: `${fieldName} = ${JSON.stringify(v)}`,
              body: JSON.stringify(body),
              reject,
              statuses: reject ? [400] : undefined,
              maySucceed: !reject,
            });
          }
          if (typeof s.maxLength === 'number') {
            add({
              category: 'size',
              label: `${fieldName} past maxLength`,
              body: JSON.stringify(at('y'.repeat(s.maxLength + 1))),
              reject: true,
              statuses: [400],
            });
            if (f === stringField)
              add({
                category: 'size',
                label: `${fieldName} of 900 KB`,
                body: JSON.stringify(at('z'.repeat(900_000))),
                reject: true,
                statuses: [400],
              });
          }
        }
        if (types.includes('array')) {
          const s = deref(f.schema, doc)!;
          if (typeof s.minItems === 'number' && s.minItems > 0)
            add({ category: 'arrays', label: `${fieldName} empty`, body: JSON.stringify(at([])), reject: true, statuses: [400] });
          if (typeof s.maxItems === 'number')
            add({
              category: 'arrays',
              label: `${fieldName} past maxItems`,
              body: JSON.stringify(
                at(Array.from({ length: s.maxItems + 1 }, () => example(s.items, doc, overrides(), f.path.at(-1) as string, rand.uuid))),
              ),
              reject: true,
              statuses: [400],
            });
        }
        if (types.includes('object') && deref(f.schema, doc)?.additionalProperties === false) {
          add({
            category: 'extra',
            label: `${fieldName} with an unknown key`,
            body: JSON.stringify(at({ ...((example(f.schema, doc, overrides(), undefined, rand.uuid) as object) ?? {}), __fuzz_extra: 1 })),
            reject: true,
            statuses: [400],
          });
        }
      }
      if (deref(op.body, doc)?.additionalProperties === false)
        add({ category: 'extra', label: 'unknown top-level field', body: invalidBody, reject: true, statuses: [400] });
    }

    if (op.idempotent) {
      for (const [label, key] of [
        ['256 characters', 'k'.repeat(256)],
        ['empty', ''],
        ['with a space', 'a b'],
        ['latin-1', 'cl\u00e9'],
      ] as const) {
        add({
          category: 'idempotency',
          label: `Idempotency-Key ${label}`,
          headers: { ...jsonHeaders, 'idempotency-key': key },
          reject: true,
          statuses: [400],
        });
      }
    }
  }

  // -- credential-free routes share one per-IP budget: keep their share small ------------------
  const shared = !op.security && !op.rawBody;
  const kept = shared ? rand.sample(cases, MAX_CASES_PER_PUBLIC_OP) : cases;
  // The local-only routes act when a request is valid (a billing pass, a payment): only refusals there.
  return kept.filter((c) => !(op.group === 'dev' && c.maySucceed));
}

/** Methods a path does not have: 405 with Allow, before any credential is looked at. */
function methodCases(): Case[] {
  const out: Case[] = [];
  const byTemplate = new Map<string, Op[]>();
  for (const op of ops) byTemplate.set(op.template, [...(byTemplate.get(op.template) ?? []), op]);
  for (const [, list] of byTemplate) {
    const op = list[0]!;
    const have = new Set(list.map((o) => o.method));
    const others = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'PROPFIND'].filter(
      (m) => !have.has(m) && !(m === 'HEAD' && have.has('GET')),
    );
    const path = fillPath(op);
    // A method another route answers on this very path is that route's request, not a 405:
    // DELETE /v1/billing/payment-method/checkout is DELETE /v1/billing/payment-method/{id} with
    // the id `checkout` (a 400), in API Gateway as locally.
    const answeredElsewhere = (method: string) =>
      ops.some((o) => o.method === method && new RegExp(`^${o.template.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(path));
    for (const method of rand.sample(
      others.filter((m) => !answeredElsewhere(m)),
      3,
    )) {
      out.push({
        op,
        category: 'method',
        label: method,
        method,
        path,
        cred: ownerOf(op),
        headers: {},
        reject: true,
        statuses: [405],
      });
    }
  }
  return out;
}

// ---- running --------------------------------------------------------------------------------------

async function authHeader(cred: Cred): Promise<string | undefined> {
  if (typeof cred === 'object') return cred.header;
  switch (cred) {
    case 'none':
      return undefined;
    case 'owner':
      return `Bearer ${await fx.owner.get()}`;
    case 'admin':
      return `Bearer ${await fx.admin.get()}`;
    case 'other':
      return `Bearer ${await fx.other.get()}`;
    case 'scopeless':
      return `Bearer ${fx.readOnlyKey}`;
    case 'adminScopeless':
      return `Bearer ${fx.adminNoAdminKey}`;
  }
}

async function run(c: Case): Promise<Outcome> {
  let cred = c.cred;
  // The account:read routes need another scope missing: use the billing:read key there.
  if (cred === 'scopeless' && c.op.scope === 'account:read') cred = { header: `Bearer ${fx.billingReadKey}` };
  const auth = await authHeader(cred);
  const req: RawRequest = {
    method: c.method,
    path: c.path,
    headers: { ...c.headers, ...(auth ? { authorization: auth } : {}) },
    ...(c.body !== undefined ? { body: c.body } : {}),
  };
  const res = await send(api.baseUrl, req);
  const o = { c, req, res };
  return o;
}

function judge({ c, req, res }: Outcome): void {
  const found = responseProblems(res, c.method);
  if (res.status !== 429) {
    if (c.reject && res.status < 400)
      found.push(`accepted (${res.status}) although ${c.category === 'method' ? 'the method is not allowed' : 'the request is invalid'}`);
    if (c.statuses && !c.statuses.includes(res.status)) found.push(`status ${res.status}, expected ${c.statuses.join(' or ')}`);
    if (c.notStatuses?.includes(res.status)) found.push(`status ${res.status} on a route that needs no credential`);
  }
  if (found.length) problems.push(`${found.join('; ')}\n    ${describeExchange(req, res, `${c.op.id} ${c.category}: ${c.label}`)}`);
}

const stats = { requests: 0, batches: 0, statuses: new Map<number, number>(), categories: new Map<string, number>() };
const count = <K>(m: Map<K, number>, k: K) => m.set(k, (m.get(k) ?? 0) + 1);

// ---- setup ----------------------------------------------------------------------------------------

const call = (method: string, path: string, token: string | null, body?: unknown) => jsonRequest(api.baseUrl, method, path, token, body);
const must = async (method: string, path: string, token: string | null, body?: unknown) =>
  requireOk(await call(method, path, token, body), `${method} ${path}`);

beforeAll(async () => {
  // No webhook dispatcher in this process: it would take events out of the outbox (GSI2) while the
  // before/after table comparisons run, which reads as a state change by a refused request.
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0 }, webhooks: false });
  fx.owner = new SessionTokens('fuzz-owner@example.com');
  fx.admin = new SessionTokens('admin@localhost');
  fx.other = new SessionTokens('fuzz-other@example.com');
  fx.instanceId = api.panel!.instanceId;
  const owner = await fx.owner.get();
  const admin = api.adminApiKey;
  fx.accountId = (await must('GET', '/v1/account', owner)).id;
  await must('GET', '/v1/account', await fx.other.get());
  await must('GET', '/v1/account', await fx.admin.get());
  await must('POST', `/v1/admin/users/${fx.accountId}/credits`, admin, { amountCents: 100_000, note: 'fuzz fixture' });

  // A running server with a file, a key, an invoice, and a disabled spare panel to point admin routes at.
  const server = await must('POST', '/v1/servers', owner, { name: 'fuzz target', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 });
  fx.serverId = server.id;
  await until(async () => (await must('GET', `/v1/servers/${server.id}`, owner)).live.installStatus === 'installed');
  await must('POST', `/v1/servers/${server.id}/power`, owner, { signal: 'start' });
  await until(async () => (await must('GET', `/v1/servers/${server.id}/resources`, owner)).powerState === 'running');
  await must('POST', `/v1/servers/${server.id}/files/write`, owner, { file: 'fuzz.txt', content: 'fuzz fixture' });
  fx.keyId = (await must('POST', '/v1/keys', owner, { name: 'fuzz fixture key' })).id;
  fx.readOnlyKey = (await must('POST', '/v1/keys', owner, { name: 'read only', scopes: ['account:read'] })).secret;
  fx.billingReadKey = (await must('POST', '/v1/keys', owner, { name: 'billing read', scopes: ['billing:read'] })).secret;
  fx.adminNoAdminKey = (
    await must('POST', '/v1/keys', admin, {
      name: 'admin without admin scope',
      scopes: ['account:read', 'keys:write', 'servers:read', 'servers:write', 'billing:read', 'billing:write'],
    })
  ).secret;
  fx.invoiceId = (await must('POST', '/v1/billing/checkout', owner, { amountCents: 1000 })).invoiceId;
  fx.spareInstanceId = (
    await must('POST', '/v1/admin/instances', admin, {
      name: 'fuzz spare panel',
      baseUrl: 'http://127.0.0.1:9/spare',
      appApiKey: 'ptla_spare_not_a_real_key',
      enabled: false,
      priority: 9999,
    })
  ).id;
  // A cursor of another account's listing: never valid for the owner.
  const other = await fx.other.get();
  for (const name of ['other one', 'other two']) await must('POST', '/v1/keys', other, { name });
  fx.keysCursor = (await must('GET', '/v1/keys?limit=1', other)).nextCursor;
  fx.expiredSession = (await mintToken({ issuer: LOCAL_ISSUER, email: 'fuzz-owner@example.com', expiresInSeconds: -60 })).token;
  // Reads that may lazily create records (settings, caches) before the first digest.
  await must('GET', '/v1/admin/settings', admin);
  for (const path of ['/v1/regions', '/v1/eggs', '/v1/instances', '/v1/account/budget', '/v1/billing/config'])
    await must('GET', path, owner);

  doc = (await send(api.baseUrl, { method: 'GET', path: '/openapi.json' })).json;
  ops.push(...opsFromDocument(doc), ...hiddenOps());
  // The whole plan, drawn once from the seeded PRNG (the same requests on every run).
  for (const op of ops) {
    const cases = buildCases(op);
    plan.byOp.set(op.id, cases);
    const alone = cases.filter((c) => c.maySucceed && op.method !== 'GET');
    const unicode = alone.filter((c) => c.category === 'unicode');
    const picked = rand.sample(unicode, MAY_SUCCEED_PER_OP / 2);
    plan.maySucceed.push(
      ...picked,
      ...rand.sample(
        alone.filter((c) => !picked.includes(c)),
        MAY_SUCCEED_PER_OP - picked.length,
      ),
    );
    plan.batches.push(cases.filter((c) => !(c.maySucceed && op.method !== 'GET')));
  }
  plan.batches.push(methodCases());
}, 60_000);

afterAll(async () => {
  await api?.stop();
});

// ---- the tests ------------------------------------------------------------------------------------

/** What the fuzzer found, reduced to the smallest requests (they fail until the service is fixed). */
describe('findings of the fuzzer, one request each', () => {
  it('a docs asset named like an Object.prototype member is 404 not_found, not 500', async () => {
    const got: string[] = [];
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
      const res = await send(api.baseUrl, { method: 'GET', path: `/docs/assets/${name}` });
      got.push(`GET /docs/assets/${name} → ${res.status} ${res.json?.error?.code ?? clip(res.text, 40)}`);
    }
    expect(got).toEqual(
      ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'].map((n) => `GET /docs/assets/${n} → 404 not_found`),
    );
  });

  it('a file or directory that does not exist is 404 not_found, not a 502 panel error', async () => {
    const token = await fx.owner.get();
    const got: string[] = [];
    for (const path of [
      `/v1/servers/${fx.serverId}/files/contents?file=/no-such-file.txt`,
      `/v1/servers/${fx.serverId}/files?directory=/no-such-directory`,
    ]) {
      const res = await send(api.baseUrl, { method: 'GET', path, headers: { authorization: `Bearer ${token}` } });
      got.push(`GET ${path} → ${res.status} ${res.json?.error?.code}`);
    }
    expect(got).toEqual([
      `GET /v1/servers/${fx.serverId}/files/contents?file=/no-such-file.txt → 404 not_found`,
      `GET /v1/servers/${fx.serverId}/files?directory=/no-such-directory → 404 not_found`,
    ]);
  });

  it('reading a directory as a file, or listing a file as a directory, is a 4xx, not a 502', async () => {
    const token = await fx.owner.get();
    for (const path of [`/v1/servers/${fx.serverId}/files/contents?file=/`, `/v1/servers/${fx.serverId}/files?directory=/fuzz.txt`]) {
      const res = await send(api.baseUrl, { method: 'GET', path, headers: { authorization: `Bearer ${token}` } });
      expect(res.status, `GET ${path} → ${res.status} ${res.text}`).toBeGreaterThanOrEqual(400);
      expect(res.status, `GET ${path} → ${res.status} ${res.text}`).toBeLessThan(500);
    }
  });
});

describe('fuzzing every route', () => {
  it('covers every operation of the OpenAPI document and every hidden route', () => {
    const documented = Object.values(doc.paths as Record<string, Record<string, unknown>>).reduce(
      (n, item) => n + METHODS.filter((m) => item[m]).length,
      0,
    );
    expect(documented).toBeGreaterThan(30);
    expect(ops.filter((o) => !o.hidden)).toHaveLength(documented);
    expect(
      ops
        .filter((o) => o.hidden)
        .map((o) => o.id)
        .sort(),
    ).toEqual(
      routeEntries()
        .filter(([, d]) => d.hidden || d.group === 'dev')
        .map(([id]) => id)
        .sort(),
    );
    for (const op of ops) {
      const cases = plan.byOp.get(op.id)!;
      expect(cases.length, op.id).toBeGreaterThan(3);
      const categories = new Set(cases.map((c) => c.category));
      // (Credential-less routes keep a sample of their cases: they share one per-IP budget.)
      if (op.security) expect(categories.has('credentials'), op.id).toBe(true);
      if (op.body) for (const k of ['body', 'content-type', 'size']) expect(categories.has(k) || !op.security, `${op.id} ${k}`).toBe(true);
      if (op.pathParams.length && op.security) expect(categories.has('path'), op.id).toBe(true);
    }
  });

  it('refused and read-only requests: no 5xx, envelopes, request ids, no state change', async () => {
    const started = Date.now();
    let before = await businessItems();
    for (const batch of plan.batches) {
      const results = await pool(batch, CONCURRENCY, run);
      stats.batches++;
      for (const o of results) {
        stats.requests++;
        count(stats.statuses, o.res.status);
        count(stats.categories, o.c.category);
        judge(o);
      }
      const after = await businessItems();
      const diff = digestDiff(before, after);
      if (diff.length) {
        const accepted = results.filter((o) => o.res.status < 400 && o.c.method !== 'GET');
        problems.push(
          `state changed during the batch of ${batch[0]?.op.id ?? '?'} (${batch.length} requests, all expected refused or read-only):\n    ${diff.slice(0, 8).join('\n    ')}` +
            (accepted.length
              ? `\n    accepted mutations:\n    ${accepted.map((o) => describeExchange(o.req, o.res, `${o.c.category}: ${o.c.label}`)).join('\n    ')}`
              : ''),
        );
      }
      before = after;
    }
    const statuses = [...stats.statuses.entries()]
      .sort(([a], [b]) => a - b)
      .map(([s, n]) => `${s}×${n}`)
      .join(' ');
    console.log(
      `fuzz (seed ${SEED}): ${stats.requests} requests in ${stats.batches} batches over ${ops.length} operations, ${((Date.now() - started) / 1000).toFixed(1)} s\n` +
        `  statuses: ${statuses}\n  categories: ${[...stats.categories.entries()].map(([k, n]) => `${k} ${n}`).join(', ')}`,
    );
    const limited = stats.statuses.get(429) ?? 0;
    expect(limited, 'the rate limit turned the fuzz into 429s').toBeLessThan(stats.requests * 0.05);
    expect(problems, `${problems.length} problem(s) (${summarize(problems)}):\n${problems.slice(0, 40).join('\n')}`).toEqual([]);
  }, 300_000); // ≈7,000 requests over every operation: room for a loaded 2-core machine

  it('valid-by-the-document edge values: accepted or refused cleanly, and a refusal changes nothing', async () => {
    const list = [...plan.maySucceed];
    expect(list.length).toBeGreaterThan(10);
    // Platform settings last, and restored afterwards: they steer every other route.
    list.sort((a, b) => Number(a.op.id === 'adminUpdateSettings') - Number(b.op.id === 'adminUpdateSettings'));
    const settings = await must('GET', '/v1/admin/settings', api.adminApiKey);
    const local: string[] = [];
    let before = await businessItems();
    const accepted: string[] = [];
    for (const c of list) {
      const o = await run(c);
      const start = problems.length;
      judge(o);
      local.push(...problems.splice(start));
      const after = await businessItems();
      if (o.res.status >= 400) {
        const diff = digestDiff(before, after);
        if (diff.length)
          local.push(
            `refused (${o.res.status}) but changed state:\n    ${diff.slice(0, 6).join('\n    ')}\n    ${describeExchange(o.req, o.res, `${c.op.id} ${c.label}`)}`,
          );
      } else {
        accepted.push(`${c.op.id} ${c.label} → ${o.res.status}`);
        // What was accepted is stored as sent: a string comes back exactly (unicode included).
        const sent = typeof c.body === 'string' ? safeParse(c.body) : undefined;
        if (sent && typeof sent === 'object' && o.res.json && typeof o.res.json === 'object') {
          for (const [k, v] of Object.entries(sent as Record<string, unknown>)) {
            if (
              typeof v === 'string' &&
              k in o.res.json &&
              typeof o.res.json[k] === 'string' &&
              ['name', 'note', 'command'].includes(k) &&
              o.res.json[k] !== v.trim() &&
              o.res.json[k] !== v
            ) {
              local.push(`${c.op.id}: ${k} came back altered: sent ${JSON.stringify(v)}, got ${JSON.stringify(o.res.json[k])}`);
            }
          }
        }
      }
      before = after;
    }
    await must('PUT', '/v1/admin/settings', api.adminApiKey, {
      prices: settings.prices,
      trialCreditCents: settings.trialCreditCents,
      minimumBalanceCents: settings.minimumBalanceCents,
      serverCaps: settings.serverCaps,
      maxServersPerAccount: settings.maxServersPerAccount,
      topUpBonusPercent: settings.topUpBonusPercent,
      minimumTopUpCents: settings.minimumTopUpCents,
      maximumTopUpCents: settings.maximumTopUpCents,
      suspendedRetentionDays: settings.suspendedRetentionDays,
    });
    console.log(`fuzz edge values: ${list.length} requests one at a time, ${accepted.length} accepted:\n  ${accepted.join('\n  ')}`);
    expect(local, `${local.length} problem(s):\n${local.slice(0, 40).join('\n')}`).toEqual([]);
  }, 240_000);
});

/** `fileContents: server error 502 ×7, …`: what failed where, at a glance. */
function summarize(list: string[]): string {
  const groups = new Map<string, number>();
  for (const p of list) {
    const what = p
      .split('\n')[0]!
      .replace(/\(.*?\)/g, '')
      .trim();
    const where = /\[(\w+)/.exec(p)?.[1] ?? '?';
    const key = `${where}: ${clip(what, 60)}`;
    groups.set(key, (groups.get(key) ?? 0) + 1);
  }
  return [...groups.entries()].map(([k, n]) => `${k} ×${n}`).join('; ');
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
