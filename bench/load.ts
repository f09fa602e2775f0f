import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';

/**
 * A small, bounded load generator for bench/throughput.ts, run as its own process so it does not
 * share an event loop with the server it measures. N keep-alive connections, each sending its next
 * request as soon as the previous answer has been read, for a fixed time; only 127.0.0.1.
 *
 *   node bench/load.ts <url> <connections> <seconds> [warm-up seconds]
 *   env LOAD_HEADERS='{"authorization":"Bearer …"}' adds request headers; LOAD_SAMPLES=1 adds every latency.
 *
 * Prints one JSON line: requests (measured and with the warm-up), errors, status counts, seconds,
 * requests per second, p50, p99, CPU time of this process.
 */
const [url, connectionsArg, secondsArg, warmupArg] = process.argv.slice(2);
const target = new URL(url ?? '');
if (target.protocol !== 'http:' || target.hostname !== '127.0.0.1') throw new Error(`load.ts only targets http://127.0.0.1, not ${url}`);
const connections = Math.min(256, Math.max(1, Number(connectionsArg ?? 8)));
const seconds = Math.min(60, Math.max(1, Number(secondsArg ?? 10)));
const warmupSeconds = Math.min(10, Math.max(0, Number(warmupArg ?? 1)));
/** A hard bound on top of the time limit. */
const MAX_REQUESTS = 2_000_000;
const headers = JSON.parse(process.env.LOAD_HEADERS ?? '{}') as Record<string, string>;

const agent = new Agent({ keepAlive: true, maxSockets: connections });

function once(): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      { agent, host: target.hostname, port: target.port, path: `${target.pathname}${target.search}`, method: 'GET', headers },
      (res) => {
        res.on('data', () => undefined);
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

const start = performance.now();
const measureFrom = start + warmupSeconds * 1000;
const end = measureFrom + seconds * 1000;
const latencies: number[] = [];
const statuses = new Map<number, number>();
let errors = 0;
let sent = 0;
let completed = 0;

await Promise.all(
  Array.from({ length: connections }, async () => {
    while (sent < MAX_REQUESTS) {
      const t0 = performance.now();
      if (t0 >= end) break;
      sent++;
      try {
        const status = await once();
        completed++;
        if (t0 >= measureFrom) {
          latencies.push(performance.now() - t0);
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
        }
      } catch {
        if (t0 >= measureFrom) errors++;
      }
    }
  }),
);
const elapsed = (performance.now() - measureFrom) / 1000;
agent.destroy();

latencies.sort((a, b) => a - b);
const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
process.stdout.write(
  `${JSON.stringify({
    connections,
    seconds: elapsed,
    requests: latencies.length,
    completedWithWarmup: completed,
    errors,
    statuses: Object.fromEntries(statuses),
    rps: latencies.length / elapsed,
    /** CPU time of this process (the load generator), warm-up included. */
    cpuMs: (process.cpuUsage().user + process.cpuUsage().system) / 1000,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    // Every latency, when asked, so runs can be pooled (rounded to 1 µs).
    ...(process.env.LOAD_SAMPLES === '1' ? { samples: latencies.map((l) => Math.round(l * 1000) / 1000) } : {}),
  })}\n`,
);
