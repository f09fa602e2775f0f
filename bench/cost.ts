import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { handler as accountHandler } from '../functions/account/handler.ts';
import { resetConfig } from '../shared/config/env.ts';
import type { ACCESS_LOG_FIELDS } from '../infra/access-log.ts';
import { createRateLimiter } from '../shared/http/rate-limit.ts';
import { LAST_USED_INTERVAL_MS } from '../shared/api-keys/index.ts';
import { clearCeilingCache, requestCeilingOf, setAccountLimits } from '../shared/settings/limits.ts';
import { countDynamoCalls, table } from './harness.ts';

/**
 * What a million authenticated GETs cost at list prices, from what this run measures: DynamoDB
 * calls per GET /v1/account through its Lambda handler, the rate-limit counter writes per request
 * for three kinds of caller (the limiter with a chosen clock), the bytes the function logs per
 * request and the size of the access log line. The prices and the 50 ms billed duration are the
 * docs/costs.md's; CloudWatch adds 26 bytes of metadata per log event.
 */
const PRICE = {
  apiGatewayPerMillion: 1.0,
  lambdaRequestsPerMillion: 0.2,
  lambdaGbSecond: 0.0000133334,
  rruPerMillion: 0.125,
  wruPerMillion: 0.625,
  logsPerGb: 0.5,
};
const BILLED_SECONDS = 0.05;
const MEMORY_GB = 0.5;
const LOG_EVENT_OVERHEAD = 26;

export async function benchCost(adminKey: string, n = 240): Promise<string> {
  const event = (key: string, method = 'GET', path = '/v1/account', body?: unknown): APIGatewayProxyEventV2 =>
    ({
      version: '2.0',
      routeKey: '$default',
      rawPath: path,
      rawQueryString: '',
      headers: { authorization: `Bearer ${key}`, host: '127.0.0.1', ...(body ? { 'content-type': 'application/json' } : {}) },
      requestContext: { http: { method, path, sourceIp: '127.0.0.1' }, requestId: randomUUID() },
      body: body ? JSON.stringify(body) : undefined,
      isBase64Encoded: false,
    }) as unknown as APIGatewayProxyEventV2;
  const context = { awsRequestId: 'bench-cost' } as Context;
  // A key of its own (the others have spent this minute), under the real limit of 240 a minute:
  // the counter's batches shrink near the limit, which the raised limit of the other sections hides.
  const created = (await accountHandler(event(adminKey, 'POST', '/v1/keys', { name: 'bench cost' }), context)) as { body: string };
  const key = (JSON.parse(created.body) as { secret: string }).secret;
  // The other sections spent this minute of the admin's account (under a raised limit): its
  // ceiling is raised too, so only the key's own 240 can bind here, as for a customer's busy key.
  const me = (await accountHandler(event(adminKey), context)) as { body: string };
  const accountId = (JSON.parse(me.body) as { id: string }).id;
  await setAccountLimits(accountId, { requestsPerMinute: 1_000_000 });
  const raisedLimit = process.env.RATE_LIMIT_PER_MINUTE;
  process.env.RATE_LIMIT_PER_MINUTE = '240';
  resetConfig();

  // Reads per GET and what the function writes to its log, over n requests of one key (a fresh
  // minute, so the counter starts from nothing: the busy caller's writes are measured too).
  const secondsIntoMinute = new Date().getUTCSeconds();
  if (secondsIntoMinute > 40) await new Promise((r) => setTimeout(r, (61 - secondsIntoMinute) * 1000));
  const counter = countDynamoCalls();
  counter.reset();
  let logged = 0;
  const write = process.stdout.write.bind(process.stdout);
  const writeErr = process.stderr.write.bind(process.stderr);
  const count = ((chunk: string | Uint8Array) => {
    logged += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
    return true;
  }) as typeof process.stdout.write;
  process.stdout.write = count;
  process.stderr.write = count;
  const previousLevel = process.env.LOG_LEVEL;
  process.env.LOG_LEVEL = 'info'; // as deployed
  try {
    for (let i = 0; i < n; i++) {
      const res = (await accountHandler(event(key), context)) as { statusCode: number };
      if (res.statusCode !== 200) throw new Error(`GET /v1/account answered ${res.statusCode}`);
    }
  } finally {
    process.stdout.write = write;
    process.stderr.write = writeErr;
    if (previousLevel === undefined) delete process.env.LOG_LEVEL;
    else process.env.LOG_LEVEL = previousLevel;
  }
  const calls = counter.records();
  const isRate = (c: (typeof calls)[number]) => String((c.input as { Key?: { PK?: string } }).Key?.PK ?? '').startsWith('RATE#');
  const isSettings = (c: (typeof calls)[number]) => String((c.input as { Key?: { PK?: string } }).Key?.PK ?? '') === 'SETTINGS';
  const readsPerGet = calls.filter((c) => c.name.startsWith('Get')).length / n;
  const busyWrites = calls.filter(isRate).length / n;
  const otherWriteCalls = calls.filter((c) => !c.name.startsWith('Get') && !c.name.startsWith('Query') && !isRate(c));

  // Counter writes per request for a caller polling every 5 s and one calling once a minute,
  // over ten minutes, with a process of their own each, as the handler claims: the credential's
  // count and its account's, after the account's ceiling (a profile read when the process's copy
  // is a minute old; the settings are read with it, at worst, when nothing else in the process
  // read them in the last 5 s).
  const perRequest = async (everyMs: number): Promise<[writes: number, reads: number]> => {
    const limiter = createRateLimiter();
    const start = Date.UTC(2030, 0, 1, 0, 0, 0);
    const account = randomUUID();
    clearCeilingCache();
    counter.reset();
    let requests = 0;
    const client = `bench:${everyMs}:${randomUUID()}`;
    for (let t = 0; t < 600_000; t += everyMs, requests++) {
      await limiter(client, start + t, { accountId: account, limit: await requestCeilingOf(account, start + t) });
    }
    const records = counter.records();
    const profileReads = records.filter((c) => c.name.startsWith('Get') && !isRate(c) && !isSettings(c)).length;
    return [records.filter(isRate).length / requests, (2 * profileReads) / requests];
  };
  const [pollerWrites, pollerReads] = await perRequest(5_000);
  const [twiceWrites, twiceReads] = await perRequest(30_000);
  const [loneWrites, loneReads] = await perRequest(60_000);
  if (raisedLimit === undefined) delete process.env.RATE_LIMIT_PER_MINUTE;
  else process.env.RATE_LIMIT_PER_MINUTE = raisedLimit;
  resetConfig();

  const sample: Record<keyof typeof ACCESS_LOG_FIELDS, string> = {
    requestId: 'Ab1CdEfGhIjKlM=',
    ip: '203.0.113.7',
    method: 'GET',
    path: '/v1/account',
    status: '200',
    latencyMs: '41',
    error: '-',
  };
  const accessLine = JSON.stringify(sample).length;
  const logBytes = accessLine + LOG_EVENT_OVERHEAD + logged / n;

  // lastUsedAt: two plain writes (the lookup item, then the listed key) once per key per interval.
  const lastUsedPerGet = (requestsPerMinute: number) => 2 / ((LAST_USED_INTERVAL_MS / 60_000) * requestsPerMinute);
  const dollars = (counterWrites: number, requestsPerMinute: number, ceilingReads: number): [string, number][] => [
    ['API Gateway', PRICE.apiGatewayPerMillion],
    ['Lambda requests', PRICE.lambdaRequestsPerMillion],
    ['Lambda compute (50 ms at 512 MB, assumed)', 1e6 * BILLED_SECONDS * MEMORY_GB * PRICE.lambdaGbSecond],
    ['DynamoDB reads (incl. the account ceiling)', (readsPerGet + ceilingReads) * PRICE.rruPerMillion],
    ['DynamoDB writes (rate limit + lastUsedAt)', (counterWrites + lastUsedPerGet(requestsPerMinute)) * PRICE.wruPerMillion],
    ['CloudWatch Logs', (logBytes * 1e6 * PRICE.logsPerGb) / 1e9],
  ];
  // The busy caller's reads were measured through the handler (ceiling reads included); the
  // others add theirs to the two reads every GET makes.
  const profiles: [string, number, number, number][] = [
    [`busy (${n} a minute)`, busyWrites, n, 0],
    ['polling every 5 s', pollerWrites, 12, pollerReads],
    ['twice a minute', twiceWrites, 2, twiceReads],
    ['once a minute (worst case)', loneWrites, 1, loneReads],
  ];
  const total = (w: number, r: number, c: number) => dollars(w, r, c).reduce((a, [, v]) => a + v, 0);
  const rows = dollars(0, 1, 0).map(([item], i) => [item, ...profiles.map(([, w, r, c]) => `$${dollars(w, r, c)[i]![1].toFixed(3)}`)]);
  rows.push(['**total**', ...profiles.map(([, w, r, c]) => `**$${total(w, r, c).toFixed(3)}**`)]);

  return [
    '## 7. Cost of a million authenticated GETs',
    '',
    `GET /v1/account through its Lambda handler, ${n} requests of one API key in one minute: ${readsPerGet.toFixed(2)} DynamoDB reads (GetItem, ≤ 4 KB, strongly consistent: 1 RRU each) and ${busyWrites.toFixed(3)} rate-limit counter writes per request (${calls.filter(isRate).length} for ${n}); other writes: ${otherWriteCalls.length} (${otherWriteCalls.map((c) => c.name).join(', ') || 'none'}: the API key's lastUsedAt, two plain writes at most once an hour per key, counted below as 2 WRU an hour per caller). The function logged ${(logged / n).toFixed(0)} bytes per request; the access log line is ${accessLine} bytes (infra/access-log.ts with typical values) + ${LOG_EVENT_OVERHEAD} bytes of CloudWatch metadata; Lambda's own START/END/REPORT lines are off (system log level WARN). Counter writes per request over ten minutes (the limiter with a chosen clock, a process of its own each; one write moves the credential's and the account's count): polling every 5 s ${pollerWrites.toFixed(3)}, twice a minute ${twiceWrites.toFixed(3)}, once a minute ${loneWrites.toFixed(3)}; reads for the account's ceiling per request (its profile when the process's copy is a minute old, and the settings with it at worst): ${pollerReads.toFixed(3)}, ${twiceReads.toFixed(3)}, ${loneReads.toFixed(3)}. Prices and the 50 ms billed duration as in docs/costs.md.`,
    '',
    table(['per million GETs', ...profiles.map(([name]) => name)], rows),
  ].join('\n');
}
