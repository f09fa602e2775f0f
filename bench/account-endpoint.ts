import { randomUUID } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { db, tableName } from '../shared/db/client.ts';
import { keys } from '../shared/db/keys.ts';
import { hashApiKey } from '../shared/auth/api-key-format.ts';
import { handler as accountHandler } from '../functions/account/handler.ts';
import { countDynamoCalls, fmt, table, timeInterleaved } from './harness.ts';

/**
 * GET /v1/account: DynamoDB round trips per request, and the handler's in-process time next to
 * the bare DynamoDB calls it makes (the floor: what the request would cost with no code of ours).
 */
export async function benchAccountEndpoint(adminKey: string, n = 400): Promise<string> {
  const event = (): APIGatewayProxyEventV2 =>
    ({
      version: '2.0',
      routeKey: '$default',
      rawPath: '/v1/account',
      rawQueryString: '',
      headers: { authorization: `Bearer ${adminKey}`, host: '127.0.0.1' },
      requestContext: { http: { method: 'GET', path: '/v1/account', sourceIp: '127.0.0.1' }, requestId: randomUUID() },
      isBase64Encoded: false,
    }) as unknown as APIGatewayProxyEventV2;
  const context = { awsRequestId: 'bench' } as Context;

  const counter = countDynamoCalls();
  counter.reset();
  const res = await accountHandler(event(), context);
  if ((res as { statusCode: number }).statusCode !== 200) throw new Error(`GET /v1/account failed: ${JSON.stringify(res)}`);
  counter.reset();
  await accountHandler(event(), context);
  const calls = counter.calls();

  const hashKey = keys.apiKeyHash(hashApiKey(adminKey));
  const lookup = await db().send(new GetCommand({ TableName: tableName(), Key: hashKey, ConsistentRead: true }));
  const accountId = lookup.Item!.accountId as string;

  // The calls every request makes, bare: the key lookup, then the account read. The rate-limit
  // counter is claimed in batches (shared/http/rate-limit.ts: one write per 8 requests at this
  // pace), so the floor leaves it out and the handler's figure carries its share.
  const bare = async () => {
    await db().send(new GetCommand({ TableName: tableName(), Key: hashKey, ConsistentRead: true }));
    await db().send(new GetCommand({ TableName: tableName(), Key: keys.account(accountId), ConsistentRead: true }));
  };

  process.env.RATE_LIMIT_PER_MINUTE = String(1e9); // the benchmark must not trip the limit
  const { resetConfig } = await import('../shared/config/env.ts');
  resetConfig();
  // Side by side, alternating, so that other load on the machine falls on both alike.
  const [handlerTiming, bareTiming] = await timeInterleaved(n, [() => accountHandler(event(), context), bare]);
  return [
    '### GET /v1/account',
    '',
    `DynamoDB round trips per request: **${calls.length}** (${calls.join(', ')}; the first two run side by side, so two sequential waits).`,
    '',
    table(
      ['measure', 'mean', 'p50', 'p99', 'ratio (p50)', 'CPU / request', 'ratio (CPU)'],
      [
        [
          'bare DynamoDB calls (floor)',
          fmt(bareTiming.meanMs),
          fmt(bareTiming.p50Ms),
          fmt(bareTiming.p99Ms),
          '1.00',
          fmt(bareTiming.cpuMs!),
          '1.00',
        ],
        [
          'account handler in-process',
          fmt(handlerTiming.meanMs),
          fmt(handlerTiming.p50Ms),
          fmt(handlerTiming.p99Ms),
          (handlerTiming.p50Ms / bareTiming.p50Ms).toFixed(2),
          fmt(handlerTiming.cpuMs!),
          (handlerTiming.cpuMs! / bareTiming.cpuMs!).toFixed(2),
        ],
      ],
    ),
    '',
    `${n} sequential requests each after a warm-up, handler and floor alternating, against DynamoDB Local on this machine.`,
  ].join('\n');
}
