import createClient, { type Client } from 'openapi-fetch';
import { ControlPlaneError, type Schema } from './errors.ts';
import { IDEMPOTENT_OPERATIONS } from './generated.ts';
import { type RetryOptions, withRetries } from './retry.ts';
import type { components, operations, paths } from './schema.ts';

/**
 * The control plane's typed client: openapi-fetch over the types openapi-typescript generates
 * from the OpenAPI document (schema.ts, `npm run client`). Every path, parameter, body and
 * response is checked by the compiler against the document; nothing here is written per endpoint.
 * On top of it: retries on 429/503 honouring `Retry-After`, an automatic `Idempotency-Key` on
 * creates, `paginate` over any list and `waitFor` an install.
 *
 *   const api = createControlPlaneClient({ baseUrl: 'http://127.0.0.1:3000', token: process.env.KEY! });
 *   const { data, error } = await api.GET('/v1/servers/{id}', { params: { path: { id } } });
 */
export type { components, operations, paths };
export {
  type CapacityRejection,
  ControlPlaneError,
  type ErrorCode,
  type ErrorDetails,
  type ErrorDetailsByCode,
  type ErrorEnvelope,
  type FieldIssue,
  type OperationError,
  type Schema,
  type TypedErrorEnvelope,
  typedError,
} from './errors.ts';
export { API_VERSION, IDEMPOTENT_OPERATIONS } from './generated.ts';
export { isSafeToRepeat, parseRetryAfter, type RetryOptions, retryDelayMs, withRetries } from './retry.ts';
export { type EventOf, type VerifyWebhookOptions, verifyWebhook, type WebhookEvent, WebhookVerificationError } from './webhooks.ts';

/** Paths whose GET answers a page: `{ data: [...], nextCursor }`. */
export type ListPath = {
  [P in keyof paths]: paths[P] extends {
    get: { responses: { 200: { content: { 'application/json': { data: unknown[]; nextCursor: string | null } } } } };
  }
    ? P
    : never;
}[keyof paths];
type ListOperation<P extends ListPath> = paths[P]['get'];
/** One element of the list at `P`: `ListItem<'/v1/servers'>` is `Schema<'Server'>`. */
export type ListItem<P extends ListPath> = ListOperation<P>['responses'][200]['content']['application/json']['data'][number];
/** The parameters of a list at `P`, but the cursor, which `paginate` moves itself. */
export type ListParams<P extends ListPath> = {
  query?: Omit<NonNullable<ListOperation<P>['parameters']['query']>, 'cursor'>;
} & (ListOperation<P>['parameters']['path'] extends Record<string, unknown>
  ? { path: ListOperation<P>['parameters']['path'] }
  : { path?: never });

export interface WaitForOptions {
  /** Give up after this long (default 10 minutes): a ControlPlaneError is not thrown, a plain Error is. */
  timeoutMs?: number;
  /** The first pause between reads (default 1 s), growing by half each time up to `maxIntervalMs`. */
  intervalMs?: number;
  /** The longest pause between reads (default 15 s). */
  maxIntervalMs?: number;
  /** Stops waiting (the promise rejects with the signal's reason). */
  signal?: AbortSignal;
}

/** The states `waitFor` can wait for. */
export type WaitState = 'installed';

export type ControlPlaneClient = Client<paths, 'application/json'> & {
  /**
   * Every element of a list, page after page (the cursor loop done once): `for await (const s of
   * api.paginate('/v1/servers', { query: { limit: 100 } }))`. An error page throws ControlPlaneError.
   */
  paginate<P extends ListPath>(
    path: P,
    ...params: Partial<ListParams<P>> extends ListParams<P> ? [ListParams<P>?] : [ListParams<P>]
  ): AsyncGenerator<ListItem<P>>;
  /**
   * Reads `GET /v1/servers/{id}` with a growing pause until `live.installStatus` is `installed` and
   * answers the server. Throws when the install failed, the server is deleted, an error answers, or
   * the time is up.
   */
  waitFor(serverId: string, state: WaitState, options?: WaitForOptions): Promise<Schema<'ServerWithLive'>>;
};

export interface ControlPlaneClientOptions {
  /** The service's root, e.g. `http://127.0.0.1:3000` or the API Gateway stage URL (no `/v1`). */
  baseUrl: string;
  /** An API key (`cp_live_…`) or a session token; sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Another fetch (tests, tracing); globalThis.fetch by default. Retries wrap it. */
  fetch?: (input: Request) => Promise<Response>;
  /** Retries on 429 and 503 (see RetryOptions); `false` sends every request once. */
  retry?: RetryOptions | false;
  /**
   * An `Idempotency-Key` (a random UUID) on every operation that takes one and was sent without
   * (default true), so that a create is safe to retry. Pass your own in `headers` to repeat a
   * create across processes or restarts.
   */
  idempotencyKeys?: boolean;
}

const IDEMPOTENT = new Set(IDEMPOTENT_OPERATIONS);

export function createControlPlaneClient(options: ControlPlaneClientOptions): ControlPlaneClient {
  const { baseUrl, token, retry = {}, idempotencyKeys = true } = options;
  const base = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const client = createClient<paths>({
    baseUrl,
    fetch: retry === false ? base : withRetries(base, retry),
    ...(token ? { headers: { Authorization: `Bearer ${token}` } } : {}),
  });
  if (idempotencyKeys) {
    client.use({
      onRequest({ request, schemaPath }) {
        if (IDEMPOTENT.has(`${request.method} ${schemaPath}`) && !request.headers.has('idempotency-key')) {
          request.headers.set('Idempotency-Key', crypto.randomUUID());
        }
        return request;
      },
    });
  }
  return Object.assign(client, {
    paginate: (path: ListPath, params?: { query?: object; path?: object }) => paginate(client, path, params),
    waitFor: (serverId: string, state: WaitState, waitOptions?: WaitForOptions) => waitFor(client, serverId, state, waitOptions),
  }) as ControlPlaneClient;
}

// The helpers call the client untyped inside (their signatures above carry the types): a generic
// path through openapi-fetch's overloads is more than the compiler can follow.
type LooseGet = (
  path: string,
  init: { params: { query?: object; path?: object } },
) => Promise<{ data?: unknown; error?: unknown; response: Response }>;

async function* paginate(client: Client<paths>, path: ListPath, params: { query?: object; path?: object } = {}): AsyncGenerator<never> {
  const get = client.GET as unknown as LooseGet;
  let cursor: string | null = null;
  do {
    const query: object = cursor === null ? { ...params.query } : { ...params.query, cursor };
    const { data, error, response } = await get(path, { params: { ...params, query } });
    if (error !== undefined || !data) throw new ControlPlaneError(response, error);
    const page = data as { data: never[]; nextCursor: string | null };
    yield* page.data;
    cursor = page.nextCursor;
  } while (cursor !== null);
}

const pause = (ms: number, signal: AbortSignal | undefined): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const done = () => {
      signal?.removeEventListener('abort', abort);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', abort, { once: true });
  });

async function waitFor(
  client: Client<paths>,
  serverId: string,
  state: WaitState,
  options: WaitForOptions = {},
): Promise<Schema<'ServerWithLive'>> {
  if (state !== 'installed') throw new TypeError(`waitFor: unknown state ${String(state)}`);
  const { timeoutMs = 600_000, maxIntervalMs = 15_000, signal } = options;
  const deadline = Date.now() + timeoutMs;
  let interval = options.intervalMs ?? 1_000;
  for (;;) {
    const { data, error, response } = await client.GET('/v1/servers/{id}', { params: { path: { id: serverId } } });
    if (error !== undefined || !data) throw new ControlPlaneError(response, error);
    if (data.live.installStatus === 'installed') return data;
    if (data.live.installStatus === 'install_failed') throw new Error(`Server ${serverId}: the install failed`);
    if (data.status === 'deleted') throw new Error(`Server ${serverId} is deleted`);
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`Server ${serverId} is not installed after ${timeoutMs} ms (installStatus ${data.live.installStatus})`);
    await pause(Math.min(interval, left), signal);
    interval = Math.min(maxIntervalMs, interval * 1.5);
  }
}
