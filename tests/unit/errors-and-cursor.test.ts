import { describe, expect, it } from 'vitest';
import { errorResponse } from '../../shared/http/handler.ts';
import { ApiError } from '../../shared/errors.ts';
import { decodeCursor, encodeCursor } from '../../shared/db/cursor.ts';

describe('error responses', () => {
  it('an unexpected error becomes internal 500 with the request id and nothing of the error', () => {
    const res = errorResponse(new Error('connect ECONNREFUSED secret=sk_live_123'), 'req-1', undefined);
    expect(res.statusCode).toBe(500);
    expect(JSON.parse(res.body as string)).toEqual({ error: { code: 'internal', message: 'Internal error; quote request id req-1' } });
    expect(res.headers['x-request-id']).toBe('req-1');
  });

  it('an ApiError keeps its code, status, details and headers', () => {
    const res = errorResponse(new ApiError('rate_limited', 'slow down', { retryAfterSeconds: 3 }, { 'Retry-After': '3' }), 'r', undefined);
    expect(res.statusCode).toBe(429);
    expect(res.headers['Retry-After']).toBe('3');
    expect(JSON.parse(res.body as string).error).toEqual({ code: 'rate_limited', message: 'slow down', details: { retryAfterSeconds: 3 } });
  });
});

describe('cursors', () => {
  it('round-trip for the listing they are bound to, and nothing else', async () => {
    const cursor = await encodeCursor({ PK: 'ACCOUNT#a', SK: 'KEY#1' }, 'keys:a');
    expect(await decodeCursor(cursor, 'keys:a')).toEqual({ PK: 'ACCOUNT#a', SK: 'KEY#1' });
    await expect(decodeCursor(cursor, 'keys:b')).rejects.toThrow(ApiError);
    const [payload, sig] = cursor.split('.');
    const forged = Buffer.from(JSON.stringify({ p: { PK: 'ACCOUNT#b', SK: 'KEY#1' }, b: 'keys:a' })).toString('base64url');
    await expect(decodeCursor(`${forged}.${sig}`, 'keys:a')).rejects.toThrow(ApiError);
    await expect(decodeCursor(`${payload}`, 'keys:a')).rejects.toThrow(ApiError);
    expect(await decodeCursor(undefined, 'keys:a')).toBeUndefined();
  });
});
