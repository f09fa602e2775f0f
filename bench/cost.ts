import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { handler as accountHandler } from '../functions/account/handler.ts';
import { resetConfig } from '../shared/config/env.ts';
import type { ACCESS_LOG_FIELDS } from '../infra/access-log.ts';
import { createRateLimiter } from '../shared/http/rate-limit.ts';
import { LAST_USED_INTERVAL_MS } from '../shared/api-keys/last-used.ts';
import { clearCeilingCache, requestCeilingOf, setAccountLimits } from '../shared/settings/limits.ts';
import { countDynamoCalls, fmt, table, timeInterleaved } from './harness.ts';

/**
 * What a million authenticated GETs cost at list prices, from what this run measures: DynamoDB
 * calls per GET /v1/account through its Lambda handler, the rate-limit counter writes per request
 * for three kinds of caller (the limiter with a chosen clock), the bytes the function logs per
 * request, the size of the access log line, and the handler's CPU time per warm request, which
 * the Lambda model below turns into billed milliseconds at a memory size. The prices are
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
const LOG_EVENT_OVERHEAD = 26;

/**
 * The Lambda model. Lambda gives a function CPU in proportion to its memory: 1,769 MB is one
 * vCPU, less a proportional share, so CPU-bound time at M MB is the one-vCPU time × 1,769 / M
 * (taken as this machine's CPU time per request: one of its cores counted as one Lambda vCPU, an
 * assumption, as Graviton's speed cannot be measured on this x86 machine). Waiting on DynamoDB is
 * wall time that memory does not shorten: DYNAMO_WAIT_MS per sequential round trip, the upper end
 * of the 5–10 ms a call takes inside a region (the billing plan's figure in docs/costs.md). Billed
 * duration is that sum rounded up to the next millisecond.
 */
const ONE_VCPU_MB = 1769;
const DYNAMO_WAIT_MS = 10;
/** The functions' memory (infra/constructs/app-function.ts, `DEFAULT_MEMORY_MB`). */
const MEMORY_MB = 256;
const MEMORY_CHOICES = [128, 256, 384, 512, 1024, 1769];
/** Sequential DynamoDB waits of every GET /v1/account: the key lookup, then the account. */
const BASE_WAITS = 2;

/** Billed ms of a request at `memoryMb`: CPU scaled to the memory's share, plus the waits, rounded up (1 ms granularity). */
export function billedMs(cpuMs: number, memoryMb: number, extraWaits: number): number {
  const cpu = cpuMs * Math.max(1, ONE_VCPU_MB / memoryMb);
  // A request with an extra round trip (a counter claim, the ceiling's read) bills DYNAMO_WAIT_MS more, a whole number of ms.
  return Math.ceil(cpu + BASE_WAITS * DYNAMO_WAIT_MS) + extraWaits * DYNAMO_WAIT_MS;
}
const computeDollars = (ms: number, memoryMb: number) => 1e6 * (ms / 1000) * (memoryMb / 1024) * PRICE.lambdaGbSecond;

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

  // The handler's own time per warm GET, as bench section 3 measures it (in this process, under the
  // raised limit: a busy caller, its counter claims included at their share). CPU is this process's
  // (user + system): our code and the SDK's; DynamoDB Local runs in another process.
  const [warm] = await timeInterleaved(400, [
    async () => {
      const res = (await accountHandler(event(adminKey), context)) as { statusCode: number };
      if (res.statusCode !== 200) throw new Error(`GET /v1/account answered ${res.statusCode}`);
    },
  ]);
  const cpuMs = warm!.cpuMs!;

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
      // As the handler passes it: the ceiling is looked up only when a claim is due.
      await limiter(client, start + t, { accountId: account, limit: () => requestCeilingOf(account, start + t) });
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
  // Extra sequential round trips per request beyond the two every GET makes: the counter claim
  // (after the credential is known), and the ceiling's read (profile and settings side by side)
  // before it when due.
  const extraWaits = (counterWrites: number, ceilingReads: number) => counterWrites + ceilingReads / 2;
  const dollars = (counterWrites: number, requestsPerMinute: number, ceilingReads: number): [string, number][] => [
    ['API Gateway', PRICE.apiGatewayPerMillion],
    ['Lambda requests', PRICE.lambdaRequestsPerMillion],
    [
      `Lambda compute (${MEMORY_MB} MB, arm64 price; measured CPU, modelled waits)`,
      computeDollars(billedMs(cpuMs, MEMORY_MB, extraWaits(counterWrites, ceilingReads)), MEMORY_MB),
    ],
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
    ['once a minute', loneWrites, 1, loneReads],
  ];
  const GOAL = 2.0;
  const total = (w: number, r: number, c: number) => dollars(w, r, c).reduce((a, [, v]) => a + v, 0);
  const rows = dollars(0, 1, 0).map(([item], i) => [item, ...profiles.map(([, w, r, c]) => `$${dollars(w, r, c)[i]![1].toFixed(3)}`)]);
  rows.push(['**total**', ...profiles.map(([, w, r, c]) => `**$${total(w, r, c).toFixed(3)}**`)]);
  rows.push([
    'goal ≤ $2.00',
    ...profiles.map(([, w, r, c]) => `${total(w, r, c) <= GOAL ? 'met' : 'MISSED'} (${((total(w, r, c) / GOAL) * 100).toFixed(0)} %)`),
  ]);

  // Memory by the same model: cost × duration of the worst caller's average request at each size,
  // and that caller's total at each size (the other rows do not depend on memory).
  const [, lw, lr, lc] = profiles[3]!;
  const loneOthers = total(lw, lr, lc) - dollars(lw, lr, lc)[2]![1];
  const choices = MEMORY_CHOICES.map((mb) => {
    const ms = billedMs(cpuMs, mb, extraWaits(lw, lc));
    const usd = computeDollars(ms, mb);
    return { mb, ms, usd, product: usd * ms, lone: loneOthers + usd };
  });
  const chosen = choices.find((c) => c.mb === MEMORY_MB)!;
  // 128 MB is left out: no headroom for the Node runtime, the SDK and the bundle is measured here.
  const candidates = choices.filter((c) => c.mb > 128);
  const least = candidates.reduce((a, b) => (b.product < a.product ? b : a));
  const memoryRows = choices.map((c) => [
    `${c.mb} MB${c.mb === MEMORY_MB ? ' (deployed)' : ''}`,
    `${Math.min(1, c.mb / ONE_VCPU_MB).toFixed(2)}`,
    `${(cpuMs * Math.max(1, ONE_VCPU_MB / c.mb)).toFixed(1)} ms`,
    `${c.ms.toFixed(1)} ms`,
    `$${c.usd.toFixed(3)}`,
    `${(c.product / chosen.product).toFixed(2)}`,
    `$${c.lone.toFixed(3)}${c.lone <= GOAL ? '' : ' (over $2.00)'}`,
  ]);

  return [
    '## 7. Cost of a million authenticated GETs',
    '',
    `GET /v1/account through its Lambda handler, ${n} requests of one API key in one minute: ${readsPerGet.toFixed(2)} DynamoDB reads (GetItem, ≤ 4 KB, strongly consistent: 1 RRU each) and ${busyWrites.toFixed(3)} rate-limit counter writes per request (${calls.filter(isRate).length} for ${n}); other writes: ${otherWriteCalls.length} (${otherWriteCalls.map((c) => c.name).join(', ') || 'none'}: the API key's lastUsedAt, two plain writes at most once an hour per key, counted below as 2 WRU an hour per caller). The function logged ${(logged / n).toFixed(0)} bytes per request; the access log line is ${accessLine} bytes (infra/access-log.ts with typical values) + ${LOG_EVENT_OVERHEAD} bytes of CloudWatch metadata; Lambda's own START/END/REPORT lines are off (system log level WARN). Counter writes per request over ten minutes (the limiter with a chosen clock, a process of its own each; one write moves the credential's and the account's count): polling every 5 s ${pollerWrites.toFixed(3)}, twice a minute ${twiceWrites.toFixed(3)}, once a minute ${loneWrites.toFixed(3)}; reads for the account's ceiling per request (its profile when the process's copy is a minute old, and the settings with it at worst): ${pollerReads.toFixed(3)}, ${twiceReads.toFixed(3)}, ${loneReads.toFixed(3)}. Prices as in docs/costs.md.`,
    '',
    `Lambda compute, measured and modelled: the account handler's own CPU time per warm GET in this process is **${fmt(cpuMs)}** (user + system, ${warm!.n} requests after a warm-up, under a raised limit so its counter claims count at a busy caller's share; wall p50 ${fmt(warm!.p50Ms)} against DynamoDB Local on this machine, which tells nothing of AWS's round trips). Lambda gives CPU in proportion to memory (${ONE_VCPU_MB.toLocaleString('en-US')} MB = one vCPU), so at M MB that CPU takes ${fmt(cpuMs)} × ${ONE_VCPU_MB} / M, taking one core of this x86 machine as one Lambda vCPU (an assumption: the functions run on arm64, Graviton, whose speed cannot be measured here; arm64 is used for its price, 20 % below x86's per GB-second, not for a measured speed). DynamoDB round trips are wall time, not CPU: ${DYNAMO_WAIT_MS} ms each in AWS (assumed, the upper end of 5–10 ms), ${BASE_WAITS} sequential per GET, plus one per counter claim and one per ceiling read (profile and settings side by side). Billed = CPU share + waits, rounded up to the next ms (Lambda's 1 ms granularity). Cold starts are not in it: at ${MEMORY_MB} MB a load that takes 60 ms of one vCPU (section 1) takes about ${Math.round((60 * ONE_VCPU_MB) / MEMORY_MB)} ms, billed as INIT.`,
    '',
    table(['per million GETs', ...profiles.map(([name]) => name)], rows),
    '',
    `Memory by the model, for the once-a-minute caller (${extraWaits(lw, lc).toFixed(2)} extra round trips a request): below ${ONE_VCPU_MB.toLocaleString('en-US')} MB a smaller function pays the same GB-seconds for its CPU but fewer for its waits, so cost falls with memory while duration rises; cost × duration is least where CPU time and waiting are about equal. Of 256 MB and up (128 MB is left out: no headroom for the Node runtime, the SDK and the bundle is measured here), the least cost × duration is at ${least.mb} MB${least.mb === MEMORY_MB ? ', as deployed.' : `; ${MEMORY_MB} MB is deployed, within ${((chosen.product / least.product - 1) * 100).toFixed(0)} % of that least and ${(((least.usd - chosen.usd) / least.usd) * 100).toFixed(0)} % cheaper than it: the curve is flat there, so the cheaper end is taken.`}`,
    '',
    table(
      ['memory', 'vCPU share', 'CPU time', 'billed per request', 'per million', 'cost × duration (× deployed)', 'once a minute, total'],
      memoryRows,
    ),
  ].join('\n');
}
