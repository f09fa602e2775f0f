/**
 * Retries on 429 and 503, honouring `Retry-After`, for requests that are safe to send again.
 * The pure parts (`parseRetryAfter`, `isSafeToRepeat`, `retryDelayMs`) are exported for tests.
 */

export interface RetryOptions {
  /** Attempts in all, the first included (default 3: at most two retries). 1 turns retrying off. */
  maxAttempts?: number;
  /** The longest single wait; a `Retry-After` asking for more is not waited for: the 429/503 is returned (default 30 s). */
  maxDelayMs?: number;
  /** The most waited in all over one request's retries (default 60 s). */
  maxTotalWaitMs?: number;
  /** The first wait of a 429 without `Retry-After`, doubled per retry (default 1 s). */
  baseDelayMs?: number;
}

const DEFAULTS: Required<RetryOptions> = { maxAttempts: 3, maxDelayMs: 30_000, maxTotalWaitMs: 60_000, baseDelayMs: 1_000 };

/** Methods the HTTP semantics make idempotent: sending them twice does what sending them once does. */
const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/**
 * A request may be repeated when its method is idempotent, or when it is a POST/PATCH carrying an
 * `Idempotency-Key` (the service answers a repeat with the first answer instead of acting twice).
 */
export function isSafeToRepeat(method: string, headers: Headers): boolean {
  const m = method.toUpperCase();
  if (IDEMPOTENT_METHODS.has(m)) return true;
  return (m === 'POST' || m === 'PATCH') && (headers.get('idempotency-key') ?? '') !== '';
}

/**
 * `Retry-After` in milliseconds: delta-seconds (`"1"`, `"120"`) or an HTTP date (RFC 9110 §10.2.3),
 * never negative; undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * How long to wait before attempt `attempt + 1` (attempt counts from 1) after `response`, or null
 * for "do not retry". A 429 is retried after its `Retry-After`, or a doubling backoff without one;
 * a 503 only with `Retry-After`: the service sets it where waiting helps (`panel_unavailable`) and
 * not where it does not (`no_capacity`, `payments_unavailable`). Never beyond the bounds.
 */
export function retryDelayMs(
  status: number,
  retryAfter: string | null,
  attempt: number,
  waitedMs: number,
  options: RetryOptions = {},
  now: number = Date.now(),
): number | null {
  const o = { ...DEFAULTS, ...options };
  if (status !== 429 && status !== 503) return null;
  if (attempt >= o.maxAttempts) return null;
  const asked = parseRetryAfter(retryAfter, now);
  if (asked === undefined && status === 503) return null;
  const delay = asked ?? o.baseDelayMs * 2 ** (attempt - 1);
  if (delay > o.maxDelayMs || waitedMs + delay > o.maxTotalWaitMs) return null;
  return delay;
}

type Fetch = (input: Request) => Promise<Response>;

const sleep = (ms: number, signal: AbortSignal | null): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** `fetch` that retries as above; the original request is kept unread and each attempt sends a copy. */
export function withRetries(fetch: Fetch, options: RetryOptions = {}): Fetch {
  return async (request) => {
    if (!isSafeToRepeat(request.method, request.headers)) return fetch(request);
    let waited = 0;
    for (let attempt = 1; ; attempt++) {
      const response = await fetch(request.clone());
      const delay = retryDelayMs(response.status, response.headers.get('retry-after'), attempt, waited, options);
      if (delay === null) return response;
      await response.body?.cancel();
      await sleep(delay, request.signal);
      waited += delay;
    }
  };
}
