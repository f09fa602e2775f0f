import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import { readFileSync, readdirSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { LocalStack } from '../dev/stack.ts';
import { listen } from '../dev/local-api.ts';
import { summarise, table, type Timing } from './harness.ts';

/**
 * Local API throughput: a fixed concurrent load from a second process (bench/load.ts) against the
 * local API, next to the same load against a bare node:http server in this process that answers a
 * constant JSON body (the floor: raw HTTP on this machine, no pipeline, no DynamoDB).
 */
const run = promisify(execFile);
const LOAD = fileURLToPath(new URL('./load.ts', import.meta.url));
/** Each target's time is split into this many rounds, alternating with the other targets. */
const ROUNDS = 2;

interface LoadResult {
  connections: number;
  seconds: number;
  requests: number;
  completedWithWarmup: number;
  cpuMs: number;
  errors: number;
  statuses: Record<string, number>;
  rps: number;
  p50Ms: number;
  p99Ms: number;
}

/** DynamoDB Local: the Java process among this process's descendants (Linux /proc), if found. */
function findJavaDescendant(): number | undefined {
  const children = (pid: number): number[] => {
    try {
      return readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
        readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number),
      );
    } catch {
      return [];
    }
  };
  const queue = children(process.pid);
  for (let pid = queue.shift(); pid !== undefined; pid = queue.shift()) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('DynamoDBLocal')) return pid;
    } catch {
      /* gone */
    }
    queue.push(...children(pid));
  }
  return undefined;
}

/** CPU milliseconds a process has used so far (utime + stime, in clock ticks of 10 ms). */
function processCpuMs(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

async function load(
  url: string,
  connections: number,
  seconds: number,
  headers: Record<string, string> = {},
): Promise<LoadResult & { samples: number[] }> {
  const { stdout } = await run(process.execPath, [LOAD, url, String(connections), String(seconds), '1'], {
    env: { PATH: process.env.PATH ?? '', LOAD_HEADERS: JSON.stringify(headers), LOAD_SAMPLES: '1' },
    timeout: (seconds + 30) * 1000,
    maxBuffer: 256 * 2 ** 20,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as LoadResult & { samples: number[] };
}

/** The pooled figures of one target over its rounds, with CPU time per request of each process. */
interface Pooled {
  rps: number;
  timing: Timing;
  requests: number;
  failed: number;
  cpuMs: { server: number; dynamo: number; load: number };
}

export async function benchThroughput(
  stack: LocalStack,
  levels: { connections: number; seconds: number }[] = [
    { connections: 1, seconds: 3 },
    { connections: 16, seconds: 10 },
  ],
): Promise<string> {
  const auth = { authorization: `Bearer ${stack.adminApiKey}` };
  // The floor answers with the very body GET /v1/account returns, so only the work differs.
  const sample = await fetch(`${stack.baseUrl}/v1/account`, { headers: auth });
  if (sample.status !== 200) throw new Error(`GET /v1/account failed: ${sample.status} ${await sample.text()}`);
  const body = Buffer.from(await sample.text());
  const floorServer = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length, 'cache-control': 'no-store' });
    res.end(body);
  });
  const floorUrl = await listen(floorServer, 0, '127.0.0.1');
  try {
    const targets = [
      { name: 'floor: bare node:http, constant JSON', url: `${floorUrl}/`, headers: {} },
      { name: 'GET /v1/health (no credential)', url: `${stack.baseUrl}/v1/health`, headers: {} },
      { name: 'GET /v1/account (API key)', url: `${stack.baseUrl}/v1/account`, headers: auth },
    ];
    const rows: string[][] = [];
    const dynamoPid = findJavaDescendant();
    for (const level of levels) {
      // Rounds alternate the targets (floor, health, account, floor, …) so that other work on the
      // machine falls on all of them alike; each target's rounds are pooled.
      const pooled = targets.map(() => ({ seconds: 0, samples: [] as number[], answered: 0, failed: 0, server: 0, dynamo: 0, load: 0 }));
      for (let round = 0; round < ROUNDS; round++) {
        for (const [i, target] of targets.entries()) {
          const cpu0 = process.cpuUsage();
          const dynamo0 = processCpuMs(dynamoPid);
          const r = await load(target.url, level.connections, level.seconds / ROUNDS, target.headers);
          const cpu = process.cpuUsage(cpu0);
          const p = pooled[i]!;
          p.seconds += r.seconds;
          p.samples = p.samples.concat(r.samples);
          p.answered += r.completedWithWarmup;
          p.failed +=
            r.errors +
            Object.entries(r.statuses)
              .filter(([code]) => !code.startsWith('2'))
              .reduce((a, [, n]) => a + n, 0);
          p.server += (cpu.user + cpu.system) / 1000;
          p.dynamo += processCpuMs(dynamoPid) - dynamo0;
          p.load += r.cpuMs;
        }
      }
      const results: Pooled[] = pooled.map((p) => ({
        rps: p.samples.length / p.seconds,
        timing: summarise(p.samples),
        requests: p.samples.length,
        failed: p.failed,
        cpuMs: { server: p.server / p.answered, dynamo: p.dynamo / p.answered, load: p.load / p.answered },
      }));
      const floor = results[0]!;
      const perRequest = (ms: number) => (Number.isFinite(ms) ? `${ms.toFixed(3)} ms` : '—');
      for (const [i, r] of results.entries()) {
        rows.push([
          targets[i]!.name,
          String(level.connections),
          r.rps.toFixed(0),
          `${(r.rps / floor.rps).toFixed(3)}×`,
          `${r.timing.p50Ms.toFixed(2)} ms`,
          `${(r.timing.p50Ms / floor.timing.p50Ms).toFixed(1)}×`,
          `${r.timing.p99Ms.toFixed(2)} ms`,
          perRequest(r.cpuMs.server),
          perRequest(r.cpuMs.dynamo),
          perRequest(r.cpuMs.load),
          `${r.requests}${r.failed ? ` (${r.failed} failed)` : ''}`,
        ]);
      }
    }
    return [
      '## 4. Local API throughput',
      '',
      `Fixed concurrent load from a second process (\`bench/load.ts\`, Node's \`http\` client with a keep-alive Agent): N connections, each sending its next request as soon as the previous answer is read, for a fixed time per target (${levels.map((l) => `${l.seconds} s at N = ${l.connections}`).join(', ')}) in ${ROUNDS} rounds that alternate the targets, each round after 1 s of unrecorded warm-up, the rounds pooled, against the local API (\`dev/local-api.ts\`: API Gateway emulation → the group's Lambda handler → DynamoDB Local) and, as the floor, a bare \`node:http\` server in the same process answering the same ${body.length}-byte JSON body as GET /v1/account. The bench stack raises the per-credential rate limit (\`RATE_LIMIT_PER_MINUTE\` = 10⁹) so nothing is refused; the counter is still claimed, in batches of up to 8 (shared/http/rate-limit.ts). Load generator, API process and DynamoDB Local (Java) share the machine's ${cpus().length} cores — the figures are of this machine, not of Lambda.`,
      '',
      table(
        [
          'target',
          'N',
          'requests/s',
          '× floor',
          'p50',
          'p50 × floor',
          'p99',
          'CPU / request: server',
          'DynamoDB Local',
          'load generator',
          'requests measured',
        ],
        rows,
      ),
      '',
      'CPU per request is user + system CPU time divided by the requests answered (warm-up included), for the serving process (this one: the API, or the floor server), DynamoDB Local (its Java process, from /proc, 10 ms ticks) and the load generator. Their sum against the cores the machine has (and what else runs on it) tells what bounds requests/s.',
    ].join('\n');
  } finally {
    floorServer.closeAllConnections();
    await new Promise<void>((resolve) => floorServer.close(() => resolve()));
  }
}
