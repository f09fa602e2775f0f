import { describe, expect, it } from 'vitest';
import { isSafeToRepeat, parseRetryAfter, retryDelayMs, withRetries } from '../../clients/typescript/retry.ts';

/** The published client's retry rules (clients/typescript/retry.ts): which requests, which answers, how long. */
const headers = (init: Record<string, string> = {}) => new Headers(init);

describe('which requests the client may send again', () => {
  it('idempotent methods always; POST and PATCH only with an Idempotency-Key', () => {
    for (const method of ['GET', 'HEAD', 'PUT', 'DELETE', 'get']) expect(isSafeToRepeat(method, headers())).toBe(true);
    expect(isSafeToRepeat('POST', headers())).toBe(false);
    expect(isSafeToRepeat('PATCH', headers())).toBe(false);
    expect(isSafeToRepeat('POST', headers({ 'Idempotency-Key': 'k1' }))).toBe(true);
    expect(isSafeToRepeat('PATCH', headers({ 'idempotency-key': 'k1' }))).toBe(true);
    expect(isSafeToRepeat('POST', headers({ 'Idempotency-Key': '' }))).toBe(false);
  });
});

describe('Retry-After', () => {
  const now = Date.parse('2026-11-26T06:00:00Z');
  it('reads delta-seconds and HTTP dates, never negative', () => {
    expect(parseRetryAfter('1', now)).toBe(1000);
    expect(parseRetryAfter(' 120 ', now)).toBe(120_000);
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter('Thu, 26 Nov 2026 06:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Thu, 26 Nov 2026 05:59:00 GMT', now)).toBe(0);
  });
  it('is undefined when absent or unreadable', () => {
    for (const value of [null, undefined, '', '-1', '1.5', 'soon', '1e3', '12abc']) expect(parseRetryAfter(value, now)).toBeUndefined();
  });
});

describe('the retry decision', () => {
  it('429 and 503 with Retry-After wait what it says', () => {
    expect(retryDelayMs(429, '1', 1, 0)).toBe(1000);
    expect(retryDelayMs(503, '2', 1, 0)).toBe(2000);
  });
  it('a 429 without Retry-After backs off, doubling; a 503 without it is not retried', () => {
    expect(retryDelayMs(429, null, 1, 0, { baseDelayMs: 100, maxAttempts: 5 })).toBe(100);
    expect(retryDelayMs(429, null, 2, 100, { baseDelayMs: 100, maxAttempts: 5 })).toBe(200);
    expect(retryDelayMs(503, null, 1, 0)).toBeNull();
  });
  it('other statuses are answered as they are', () => {
    for (const status of [200, 201, 400, 409, 500, 502, 504]) expect(retryDelayMs(status, '1', 1, 0)).toBeNull();
  });
  it('is bounded: attempts, one wait, the total', () => {
    expect(retryDelayMs(429, '1', 3, 2000)).toBeNull(); // the default 3 attempts are spent
    expect(retryDelayMs(429, '1', 1, 0, { maxAttempts: 1 })).toBeNull();
    expect(retryDelayMs(429, '31', 1, 0)).toBeNull(); // more than the 30 s a single wait may be
    expect(retryDelayMs(429, '20', 2, 50_000)).toBeNull(); // past the 60 s in all
    expect(retryDelayMs(429, '20', 2, 40_000)).toBe(20_000);
  });
});

describe('withRetries', () => {
  /** A fetch answering `statuses` in turn, recording what it was sent. */
  function scripted(...answers: [number, Record<string, string>?][]) {
    const seen: { method: string; body: string; key: string | null }[] = [];
    const fetch = async (request: Request) => {
      seen.push({ method: request.method, body: await request.text(), key: request.headers.get('idempotency-key') });
      const [status, extra] = answers[Math.min(seen.length - 1, answers.length - 1)]!;
      return new Response(JSON.stringify({ status }), { status, headers: extra });
    };
    return { fetch, seen };
  }

  it('sends a keyed POST again, body and key intact, after Retry-After', async () => {
    const { fetch, seen } = scripted([429, { 'retry-after': '0' }], [201]);
    const started = Date.now();
    const response = await withRetries(fetch)(
      new Request('http://x/v1/servers', { method: 'POST', body: '{"name":"a"}', headers: { 'Idempotency-Key': 'k1' } }),
    );
    expect(response.status).toBe(201);
    expect(seen).toEqual([
      { method: 'POST', body: '{"name":"a"}', key: 'k1' },
      { method: 'POST', body: '{"name":"a"}', key: 'k1' },
    ]);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('never sends a POST without a key twice, and stops at the attempt bound', async () => {
    const once = scripted([429, { 'retry-after': '0' }], [201]);
    expect((await withRetries(once.fetch)(new Request('http://x/v1/servers', { method: 'POST', body: '{}' }))).status).toBe(429);
    expect(once.seen).toHaveLength(1);
    const always = scripted([503, { 'retry-after': '0' }]);
    expect((await withRetries(always.fetch, { maxAttempts: 4 })(new Request('http://x/v1/servers'))).status).toBe(503);
    expect(always.seen).toHaveLength(4);
  });

  it('stops waiting when the request is aborted', async () => {
    const { fetch, seen } = scripted([429, { 'retry-after': '5' }], [200]);
    const controller = new AbortController();
    const pending = withRetries(fetch)(new Request('http://x/v1/account', { signal: controller.signal }));
    setTimeout(() => controller.abort(new Error('gave up')), 20);
    await expect(pending).rejects.toThrow('gave up');
    expect(seen).toHaveLength(1);
  });
});
