import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import type { RouteDef } from '../../shared/api/route-def.ts';
import type { ApiError } from '../../shared/errors.ts';
import { MAX_BODY_BYTES, parseInput, rawResponse } from '../../shared/http/handler.ts';

/** The request pipeline's stages that need no table, called in process (shared/http/handler.ts). */
const event = (body?: string, extra: Partial<APIGatewayProxyEventV2> = {}) =>
  ({ headers: { 'content-type': 'application/json' }, body, isBase64Encoded: false, ...extra }) as unknown as APIGatewayProxyEventV2;

describe('parseInput (body and validation)', () => {
  const def: RouteDef = {
    method: 'POST',
    path: '/v1/things/:id',
    group: 'account',
    tag: 'Test',
    summary: 'test',
    auth: 'bearer',
    params: z.object({ id: z.uuid() }),
    query: z.object({ limit: z.coerce.number().int().min(1).max(100).optional() }),
    body: z.object({ name: z.string().min(1) }).strict(),
    response: z.object({}),
  };
  const id = '0193a7e2-5b1c-7d4e-9f3a-2c8b6e1d4f70';

  it('parses path, query and body', () => {
    expect(parseInput(def, { id }, event('{"name":"a"}', { queryStringParameters: { limit: '5' } }))).toEqual({
      params: { id },
      query: { limit: 5 },
      body: { name: 'a' },
    });
  });

  it('lists every bad field in one validation_failed', () => {
    const err = (() => {
      try {
        parseInput(def, { id: 'nope' }, event('{"name":"","x":1}', { queryStringParameters: { limit: '0' } }));
      } catch (e) {
        return e as ApiError;
      }
    })();
    expect(err?.code).toBe('validation_failed');
    const fields = (err!.details as { issues: { field: string }[] }).issues.map((i) => i.field);
    expect(fields).toEqual(expect.arrayContaining(['path.id', 'query.limit', 'body.name', 'body']));
  });

  it('refuses an empty body, bad JSON, another media type and a body over the limit', () => {
    const code = (e: APIGatewayProxyEventV2) => {
      try {
        parseInput(def, { id }, e);
      } catch (err) {
        return (err as ApiError).code;
      }
    };
    expect(code(event(''))).toBe('validation_failed');
    expect(code(event('{"name":'))).toBe('invalid_json');
    expect(code(event('{"name":"a"}', { headers: { 'content-type': 'text/plain' } }))).toBe('unsupported_media_type');
    expect(code(event(`{"name":"${'a'.repeat(MAX_BODY_BYTES)}"}`))).toBe('payload_too_large');
  });
});

describe('rawResponse (files and pages)', () => {
  it('sends bytes base64-encoded for API Gateway, with the file name', () => {
    const response = rawResponse(
      { contentType: 'application/pdf', body: new Uint8Array([37, 80, 68, 70]), filename: 'INV-1.pdf' },
      'req-1',
      undefined,
    );
    expect(response).toMatchObject({ statusCode: 200, isBase64Encoded: true, body: Buffer.from('%PDF').toString('base64') });
    expect(response.headers).toMatchObject({
      'content-type': 'application/pdf',
      'content-disposition': 'attachment; filename="INV-1.pdf"',
      'cache-control': 'no-store',
      'x-request-id': 'req-1',
    });
  });

  it('sends text as it is, cached when the route says so', () => {
    const response = rawResponse({ contentType: 'text/html', body: '<p>hi</p>', cacheSeconds: 300 }, 'req-2', undefined);
    expect(response.body).toBe('<p>hi</p>');
    expect(response.isBase64Encoded).toBeUndefined();
    expect(response.headers['cache-control']).toBe('public, max-age=300');
  });
});

describe('stage numbers', () => {
  // One numbering: each stage's doc comment in the code names the step of ARCHITECTURE.md §5 it is.
  const read = (file: string) => readFileSync(join(import.meta.dirname, '../..', file), 'utf8');
  const STAGES = ['admitCaller', 'parseInput', 'claimIdempotency', 'answer', 'settle', 'errorResponse'];

  it('the code and the guide give each stage the same step', () => {
    const inCode = new Map(
      [
        ...read('shared/http/handler.ts').matchAll(
          /\/\*\*\s*(?:\*\s*)?Steps? (\d+(?:–\d+)?),[^*]*(?:\*(?!\/)[^*]*)*\*\/\s*(?:export\s+)?(?:async\s+)?function\s+(\w+)/g,
        ),
      ].map(([, step, name]) => [name!, step!]),
    );
    const pipeline = read('ARCHITECTURE.md').split('## 5. The request pipeline')[1]?.split('\n## ')[0] ?? '';
    const inGuide = new Map([...pipeline.matchAll(/`(\w+)` \((?:steps? )?(\d+(?:–\d+)?)/g)].map(([, name, step]) => [name!, step!]));
    for (const stage of STAGES) expect([stage, inCode.get(stage)]).toEqual([stage, inGuide.get(stage)]);
    expect([...inCode.keys()].sort()).toEqual([...STAGES].sort());
  });
});
