import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { loadGroupHandlers, splitTarget, type LambdaHandler } from '../../dev/local-api.ts';
import { routeEntries, toTemplatePath, type Group } from '../../shared/api/routes.ts';

/**
 * Same routing locally and on AWS. API Gateway's HTTP API matches route paths exactly (case-sensitive,
 * no trailing-slash or double-slash folding); a request no route matches goes to `$default`, the
 * public function. Each request below goes through the local HTTP adapter and, separately, straight
 * into the Lambda handlers with the payload-2.0 event API Gateway would send, routed here by an
 * independent model of API Gateway's matcher built from the infra's route keys. Both must agree.
 */
let api: TestApi;
let handlers: Partial<Record<Group, LambdaHandler>>;
beforeAll(async () => {
  api = await startTestApi();
  handlers = await loadGroupHandlers();
});
afterAll(async () => api?.stop());

/** The routes infra/stacks/api-stack.ts creates: every non-dev entry, `:id` → `{id}`. */
const AWS_ROUTES = routeEntries()
  .filter(([, def]) => def.group !== 'dev')
  .map(([, def]) => {
    const template = toTemplatePath(def.path);
    const segments = template.split('/').slice(1);
    const pattern = new RegExp(
      `^/${segments.map((s) => (/^\{\w+\}$/.test(s) ? '[^/]+' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/')}$`,
    );
    return {
      routeKey: `${def.method} ${template}`,
      method: def.method,
      group: def.group,
      pattern,
      literal: segments.filter((s) => !s.startsWith('{')).length,
    };
  });

/** API Gateway's choice: the most specific exact match for the method, else `$default` (public). */
function awsRoute(method: string, rawPath: string): { routeKey: string; group: Group } {
  const hits = AWS_ROUTES.filter((r) => r.method === method && r.pattern.test(rawPath)).sort((a, b) => b.literal - a.literal);
  return hits[0] ? { routeKey: hits[0].routeKey, group: hits[0].group } : { routeKey: '$default', group: 'public' };
}

function apiGatewayEvent(method: string, target: string, token: string, routeKey: string): APIGatewayProxyEventV2 {
  const { rawPath, rawQueryString } = splitTarget(target);
  const query = Object.fromEntries(new URLSearchParams(rawQueryString));
  const requestId = randomUUID();
  return {
    version: '2.0',
    routeKey,
    rawPath,
    rawQueryString,
    headers: { authorization: `Bearer ${token}`, host: 'abc123.execute-api.eu-central-1.amazonaws.com' },
    queryStringParameters: Object.keys(query).length ? query : undefined,
    requestContext: {
      accountId: '123456789012',
      apiId: 'abc123',
      domainName: 'abc123.execute-api.eu-central-1.amazonaws.com',
      domainPrefix: 'abc123',
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '198.51.100.7', userAgent: 'parity-test' },
      requestId,
      routeKey,
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
    },
    isBase64Encoded: false,
  };
}

const context = (requestId: string) =>
  ({
    awsRequestId: requestId,
    functionName: 'parity',
    getRemainingTimeInMillis: () => 10_000,
    callbackWaitsForEmptyEventLoop: false,
  }) as unknown as Context;

/** What must agree: the status, the error code (envelope) or, on success, the body's top-level keys. */
function outcome(status: number, text: string) {
  const body = JSON.parse(text);
  return { status, shape: body.error ? { error: body.error.code, keys: Object.keys(body) } : Object.keys(body).sort() };
}

const KEY = randomUUID();
const CASES: [string, string, number][] = [
  ['GET', '/v1/account', 200],
  ['GET', '/v1/account?x=1', 200],
  ['GET', '/v1/account/', 404],
  ['GET', '/v1/account//', 404],
  ['GET', '//v1/account', 404],
  ['GET', '/v1//account', 404],
  ['GET', '/V1/ACCOUNT', 404],
  ['GET', '/v1/Account', 404],
  ['POST', '/v1/account', 405],
  ['POST', '/v1/account/', 404],
  ['GET', '/v1/servers', 200],
  ['GET', '/v1/servers/', 404],
  ['GET', '/v1/keys', 200],
  ['GET', '/v1/Keys', 404],
  ['DELETE', `/v1/keys/${KEY}`, 404],
  ['DELETE', `/v1/keys/${KEY}/`, 404],
  ['DELETE', `/v1/keys//${KEY}`, 404],
  ['GET', '/openapi.json', 200],
  ['GET', '/openapi.json/', 404],
  ['GET', '/OPENAPI.JSON', 404],
  ['GET', '/', 404],
  ['GET', '/v1/nope', 404],
];

describe('routing: local adapter and API Gateway agree', () => {
  it.each(CASES)('%s %s answers %i both ways', async (method, target, expected) => {
    const local = await api.call(method, target);
    const { routeKey, group } = awsRoute(method, splitTarget(target).rawPath);
    const event = apiGatewayEvent(method, target, api.adminApiKey, routeKey);
    const lambda = await handlers[group]!(event, context(event.requestContext.requestId));

    expect(local.status).toBe(expected);
    expect(outcome(lambda.statusCode ?? 200, lambda.body ?? '')).toEqual(outcome(local.status, local.text));
    if (expected >= 400) expect(local.body.error.code).toBe(expected === 404 ? 'not_found' : 'method_not_allowed');
    // Off-route paths reach AWS through `$default` only.
    if (expected === 404 && !/^\/v1\/keys\/[0-9a-f-]{36}$/.test(splitTarget(target).rawPath)) expect(routeKey).toBe('$default');
  });
});
