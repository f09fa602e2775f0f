import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import { db, tableName } from '../../shared/db/client.ts';
import { ERROR_STATUS } from '../../shared/errors.ts';
import { LOCAL_ISSUER } from '../../dev/stack.ts';
import { mintToken } from '../../dev/local-idp.ts';
import { mulberry32 } from '../helpers/random.ts';

/**
 * Shared plumbing of the security suites: a raw HTTP client (exact paths, bytes and headers, no
 * URL normalisation), the response checks every suite applies, a digest of the table's business
 * items, a seeded PRNG, rotating session tokens (to stay under the per-credential rate limit), and
 * a small JSON Schema reader (examples and validity) for the OpenAPI document's request schemas.
 */

// ---- seeded PRNG ---------------------------------------------------------------------------------

export interface Rng {
  next(): number;
  int(maxExclusive: number): number;
  pick<T>(items: readonly T[]): T;
  sample<T>(items: readonly T[], n: number): T[];
  uuid(): string;
}

/** mulberry32: small, fast, and the same sequence for the same seed on every machine. */
export function rng(seed: number): Rng {
  const next = mulberry32(seed);
  const int = (max: number) => Math.floor(next() * max);
  return {
    next,
    int,
    pick: (items) => items[int(items.length)]!,
    sample: (items, n) => {
      const copy = [...items];
      for (let i = copy.length - 1; i > 0; i--) {
        const j = int(i + 1);
        [copy[i], copy[j]] = [copy[j]!, copy[i]!];
      }
      return copy.slice(0, n);
    },
    uuid: () => {
      const hex = Array.from({ length: 32 }, () => int(16).toString(16)).join('');
      return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${'89ab'[int(4)]}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
    },
  };
}

// ---- raw HTTP ------------------------------------------------------------------------------------

export interface RawRequest {
  method: string;
  /** Sent exactly as given (no normalisation of `..`, `//` or percent escapes). */
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });

export function send(baseUrl: string, req: RawRequest): Promise<RawResponse> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...req.headers };
    if (req.body !== undefined) headers['content-length'] = Buffer.byteLength(req.body);
    const r = http.request({ host: url.hostname, port: url.port, method: req.method, path: req.path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
      res.on('error', reject);
    });
    r.setTimeout(30_000, () => r.destroy(new Error(`timeout: ${req.method} ${req.path}`)));
    r.on('error', reject);
    if (req.body !== undefined) r.write(req.body);
    r.end();
  });
}

/** Runs tasks with at most `limit` in flight, keeping results in order. */
export async function pool<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

// ---- response checks -----------------------------------------------------------------------------

export const KNOWN_CODES = ERROR_STATUS as Record<string, number>;

/** Things no response may carry: stack traces, database internals, files of the host. */
const INTERNALS = [
  /\n\s+at .+\((?:file:|\/).+:\d+:\d+\)/, // a stack frame
  /node_modules\//,
  /\b(?:ValidationException|ConditionalCheckFailedException|TransactionCanceledException|ResourceNotFoundException)\b/,
  /root:x:0:0:/,
  /"devDependencies"/,
];

/**
 * Problems with one response, whatever the request: a 5xx, an error that is not exactly the
 * envelope with a known code matching its status, a missing request id, internals in the body.
 */
export function responseProblems(res: RawResponse, method: string): string[] {
  const problems: string[] = [];
  if (res.status >= 500) problems.push(`server error ${res.status}`);
  const requestId = res.headers['x-request-id'];
  if (typeof requestId !== 'string' || !/^[0-9A-Za-z-]{8,}$/.test(requestId))
    problems.push(`no x-request-id header (${String(requestId)})`);
  for (const pattern of INTERNALS) if (pattern.test(res.text)) problems.push(`internals in the body (${pattern})`);
  if (res.status >= 400 && method !== 'HEAD') {
    const body = res.json;
    const error = body?.error;
    if (!body || typeof body !== 'object' || Array.isArray(body) || !error || typeof error !== 'object') {
      problems.push('error is not the envelope');
    } else {
      const extra = Object.keys(body).filter((k) => k !== 'error');
      const extraInError = Object.keys(error).filter((k) => !['code', 'message', 'details'].includes(k));
      if (extra.length || extraInError.length) problems.push(`envelope has extra keys ${[...extra, ...extraInError].join(',')}`);
      if (typeof error.code !== 'string' || !(error.code in KNOWN_CODES)) problems.push(`unknown error code ${JSON.stringify(error.code)}`);
      else if (KNOWN_CODES[error.code] !== res.status) problems.push(`code ${error.code} with status ${res.status}`);
      if (typeof error.message !== 'string' || !error.message) problems.push('envelope without a message');
    }
    if (!String(res.headers['content-type'] ?? '').startsWith('application/json'))
      problems.push(`error content-type ${res.headers['content-type']}`);
  }
  if (res.status === 429 && !res.headers['retry-after']) problems.push('429 without Retry-After');
  if (res.status === 405 && !res.headers.allow) problems.push('405 without Allow');
  return problems;
}

/** A request and its answer, short enough to read in a failure message. */
export function describeExchange(req: RawRequest, res: RawResponse | undefined, label = ''): string {
  const headers = Object.entries(req.headers ?? {})
    .map(([k, v]) => `${k}: ${k === 'authorization' ? `${v.slice(0, 24)}${v.length > 24 ? `…(${v.length})` : ''}` : v.slice(0, 80)}`)
    .join('; ');
  const body = req.body === undefined ? '' : ` body=${clip(Buffer.isBuffer(req.body) ? `<${req.body.length} bytes>` : req.body, 240)}`;
  const answer = res ? ` → ${res.status} ${clip(res.text, 300)}` : '';
  return `${label ? `[${label}] ` : ''}${req.method} ${clip(req.path, 200)} {${headers}}${body}${answer}`;
}

export const clip = (s: string, n: number): string => (s.length > n ? `${s.slice(0, n)}…(${s.length} chars)` : s);

// ---- table digest --------------------------------------------------------------------------------

/**
 * The table's business items, canonicalised: everything but the access log (`activity`),
 * idempotency records and rate-limit counters, which rejected requests may legitimately write,
 * the panel's shared copies and counters (live state, topology, eggs, call budget, server leases:
 * a read refreshes them, and they hold no business state), and without `lastUsedAt` (an
 * authenticated key's use is recorded, throttled, whatever the outcome).
 */
export async function businessItems(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db().send(
      new ScanCommand({
        TableName: tableName(),
        ConsistentRead: true,
        ExclusiveStartKey: start,
        FilterExpression:
          'NOT (#k IN (:activity, :idem, :live, :topology, :eggs, :lease)) AND NOT begins_with(PK, :rate) AND NOT begins_with(PK, :budget)',
        ExpressionAttributeNames: { '#k': 'kind' },
        ExpressionAttributeValues: {
          ':activity': 'activity',
          ':idem': 'idempotency',
          ':live': 'live-state',
          ':topology': 'panel-topology',
          ':eggs': 'panel-eggs',
          ':lease': 'server-lease',
          ':rate': 'RATE#',
          ':budget': 'PANELBUDGET#',
        },
      }),
    );
    for (const item of page.Items ?? []) {
      const { lastUsedAt: _lastUsedAt, ...rest } = item;
      out.set(`${item.PK} | ${item.SK}`, canonical(rest));
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return out;
}

/** Every item of the table, raw (for secret scans). */
export async function allItems(): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db().send(new ScanCommand({ TableName: tableName(), ConsistentRead: true, ExclusiveStartKey: start }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

export function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v) => {
    if (v instanceof Set) return [...v].sort();
    if (v && typeof v === 'object' && !Array.isArray(v)) return Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)));
    return v;
  });
}

/** Added, removed and changed items between two digests, for a failure message. */
export function digestDiff(before: Map<string, string>, after: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [k, v] of after) {
    if (!before.has(k)) out.push(`added ${k}: ${clip(v, 300)}`);
    else if (before.get(k) !== v) out.push(`changed ${k}: ${clip(before.get(k)!, 300)} → ${clip(v, 300)}`);
  }
  for (const k of before.keys()) if (!after.has(k)) out.push(`removed ${k}`);
  return out;
}

// ---- credentials ---------------------------------------------------------------------------------

/**
 * Session tokens of one e-mail, a fresh one every `perToken` uses: the rate limit counts per
 * credential, so rotating tokens keeps a long run from turning into 429s. Minted in-process with
 * the local identity provider's key (no HTTP request, so no per-IP budget spent).
 */
export class SessionTokens {
  private current: { token: string; used: number } | undefined;
  readonly email: string;
  private readonly perToken: number;
  constructor(email: string, perToken = 150) {
    this.email = email;
    this.perToken = perToken;
  }
  async get(): Promise<string> {
    if (!this.current || this.current.used >= this.perToken) {
      const { token } = await mintToken({ issuer: LOCAL_ISSUER, email: this.email, claims: { jti: randomUUID() } });
      this.current = { token, used: 0 };
    }
    this.current.used++;
    return this.current.token;
  }
}

// ---- JSON Schema (the subset the OpenAPI document uses) ------------------------------------------

export type Schema = Record<string, any>;

export function deref(schema: Schema | undefined, doc: Schema): Schema | undefined {
  let s = schema;
  for (let i = 0; s && typeof s.$ref === 'string' && i < 20; i++) {
    s = s.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce<any>((node, part) => node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
  }
  return s;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

function typeMatches(type: string, v: unknown): boolean {
  switch (type) {
    case 'null':
      return v === null;
    case 'boolean':
      return typeof v === 'boolean';
    case 'string':
      return typeof v === 'string';
    // JSON numbers the service can hold: finite, and whole ones within the safe range.
    case 'integer':
      return typeof v === 'number' && Number.isSafeInteger(v);
    case 'number':
      return typeof v === 'number' && Number.isFinite(v);
    case 'array':
      return Array.isArray(v);
    case 'object':
      return isPlainObject(v);
    default:
      return true;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Whether a value is valid under a schema. Conservative where readings differ: a string is too
 * short only if it has fewer UTF-16 units than minLength and too long only if it has more code
 * points than maxLength, so "invalid" here is invalid under any reading.
 */
export function schemaValid(schema: Schema | undefined, v: unknown, doc: Schema): boolean {
  const s = deref(schema, doc);
  if (!s || typeof s !== 'object') return true;
  if (s.allOf && !s.allOf.every((x: Schema) => schemaValid(x, v, doc))) return false;
  if (s.anyOf && !s.anyOf.some((x: Schema) => schemaValid(x, v, doc))) return false;
  if (s.oneOf && s.oneOf.filter((x: Schema) => schemaValid(x, v, doc)).length !== 1) return false;
  if ('const' in s && canonical(s.const) !== canonical(v)) return false;
  if (Array.isArray(s.enum) && !s.enum.some((e: unknown) => canonical(e) === canonical(v))) return false;
  if (s.type !== undefined && ![s.type].flat().some((t: string) => typeMatches(t, v))) return false;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) return false;
    if (typeof s.minimum === 'number' && v < s.minimum) return false;
    if (typeof s.maximum === 'number' && v > s.maximum) return false;
    if (typeof s.exclusiveMinimum === 'number' && v <= s.exclusiveMinimum) return false;
    if (typeof s.exclusiveMaximum === 'number' && v >= s.exclusiveMaximum) return false;
  }
  if (typeof v === 'string') {
    if (typeof s.minLength === 'number' && v.length < s.minLength) return false;
    if (typeof s.maxLength === 'number' && [...v].length > s.maxLength) return false;
    if (s.format === 'uuid' && !UUID.test(v)) return false;
    if (typeof s.pattern === 'string') {
      let re: RegExp | undefined;
      try {
        re = new RegExp(s.pattern, 'u');
      } catch {
        re = undefined;
      }
      if (re && !re.test(v)) return false;
    }
  }
  if (Array.isArray(v)) {
    if (typeof s.minItems === 'number' && v.length < s.minItems) return false;
    if (typeof s.maxItems === 'number' && v.length > s.maxItems) return false;
    if (s.items && !v.every((x) => schemaValid(s.items, x, doc))) return false;
  }
  if (isPlainObject(v)) {
    const props: Record<string, Schema> = s.properties ?? {};
    for (const r of s.required ?? []) if (!(r in v)) return false;
    for (const [k, val] of Object.entries(v)) {
      if (k in props) {
        if (!schemaValid(props[k], val, doc)) return false;
      } else if (s.additionalProperties === false) return false;
      else if (isPlainObject(s.additionalProperties) && !schemaValid(s.additionalProperties, val, doc)) return false;
    }
  }
  return true;
}

/** The JSON types a schema admits (after $ref), for picking wrong ones. */
export function schemaTypes(schema: Schema | undefined, doc: Schema): string[] {
  const s = deref(schema, doc);
  if (!s) return [];
  if (s.type !== undefined) return [s.type].flat();
  if (s.enum) return [...new Set(s.enum.map((e: unknown) => (e === null ? 'null' : typeof e)))] as string[];
  if (s.anyOf || s.oneOf) return [...new Set([...(s.anyOf ?? []), ...(s.oneOf ?? [])].flatMap((x: Schema) => schemaTypes(x, doc)))];
  if (s.properties) return ['object'];
  return [];
}

/**
 * A valid value for a schema: `overrides` by property name first (when valid), then defaults,
 * enums, minimums. Objects get their required properties and those named in `overrides` (else
 * their first property, so that "at least one field" bodies work).
 */
export function example(
  schema: Schema | undefined,
  doc: Schema,
  overrides: Record<string, unknown>,
  name?: string,
  uuid: () => string = randomUUID,
): unknown {
  const s = deref(schema, doc);
  if (!s) return {};
  if (name !== undefined && name in overrides && schemaValid(s, overrides[name], doc)) return structuredClone(overrides[name]);
  if ('const' in s) return s.const;
  if (Array.isArray(s.enum)) return s.enum[0];
  if ('default' in s && schemaValid(s, s.default, doc)) return s.default;
  const types = schemaTypes(s, doc).filter((t) => t !== 'null');
  const type = types[0] ?? (s.anyOf || s.oneOf ? undefined : 'string');
  if (!type && (s.anyOf || s.oneOf)) return example((s.anyOf ?? s.oneOf)[0], doc, overrides, name, uuid);
  switch (type) {
    case 'string': {
      if (s.format === 'uuid') return uuid();
      if (s.format === 'date-time') return new Date().toISOString();
      const min = s.minLength ?? 1;
      const max = s.maxLength ?? 64;
      return 'fuzz-value'.padEnd(Math.max(min, 1), 'x').slice(0, Math.max(max, min));
    }
    case 'integer':
    case 'number': {
      let v = typeof s.minimum === 'number' ? s.minimum : 1;
      if (typeof s.maximum === 'number' && v > s.maximum) v = s.maximum;
      return v;
    }
    case 'boolean':
      return false;
    case 'array':
      return Array.from({ length: Math.max(s.minItems ?? 1, 1) }, () => example(s.items, doc, overrides, name, uuid));
    case 'object': {
      const props: Record<string, Schema> = s.properties ?? {};
      const required: string[] = s.required ?? [];
      const known = Object.keys(props).filter((k) => k in overrides);
      const chosen = [...new Set([...required, ...known])];
      if (!chosen.length && Object.keys(props)[0]) chosen.push(Object.keys(props)[0]!);
      return Object.fromEntries(chosen.map((k) => [k, example(props[k], doc, overrides, k, uuid)]));
    }
    default:
      return {};
  }
}

/** A zod schema as JSON Schema (the request side), its `$defs` inlined so it stands alone. */
export function zodJsonSchema(schema: unknown): Schema {
  const s = (z.toJSONSchema as (s: unknown, o: object) => Schema)(schema, { io: 'input', unrepresentable: 'any' });
  const defs: Record<string, Schema> = s.$defs ?? {};
  const inline = (node: unknown, depth: number): unknown => {
    if (Array.isArray(node)) return node.map((n) => inline(n, depth));
    if (!node || typeof node !== 'object') return node;
    const obj = node as Schema;
    if (typeof obj.$ref === 'string' && obj.$ref.startsWith('#/$defs/') && depth < 20) return inline(defs[obj.$ref.slice(8)], depth + 1);
    return Object.fromEntries(
      Object.entries(obj)
        .filter(([k]) => k !== '$defs')
        .map(([k, v]) => [k, inline(v, depth)]),
    );
  };
  return inline(s, 0) as Schema;
}

/** A JSON request with an optional bearer token, sent exactly as written (see `send`). */
export function jsonRequest(
  baseUrl: string,
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  return send(baseUrl, {
    method,
    path,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
}

/** Set-up steps must succeed: a failed one stops the test with the exchange. */
export function requireOk(res: RawResponse, what: string): RawResponse['json'] {
  if (res.status >= 300) throw new Error(`setup ${what} failed: ${res.status} ${res.text}`);
  return res.json;
}

export { until } from '../helpers/until.ts';
