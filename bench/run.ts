import { cpus, loadavg, totalmem } from 'node:os';
import { readFileSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { startLocalStack, type LocalStackOptions } from '../dev/stack.ts';
import { resetConfig } from '../shared/config/env.ts';
import { secretStore, type InstanceKeys } from '../shared/secrets/index.ts';
import { benchBundles } from './bundles.ts';
import { benchRoundTrips } from './round-trips.ts';
import { benchAccountEndpoint } from './account-endpoint.ts';
import { benchHotEndpoints } from './hot-endpoints.ts';
import { benchThroughput } from './throughput.ts';
import { benchBillingPass } from './billing-pass.ts';
import { benchBillingScale } from './billing-scale.ts';
import { benchPanel } from './panel.ts';
import { benchCost } from './cost.ts';
import { benchWebhookFairness } from './webhook-fairness.ts';
import { benchCallBudget } from './call-budget.ts';
import { benchDay2 } from './day2.ts';
import { benchDashboard } from './dashboard.ts';

/**
 * `npm run bench`: every figure in one run, side by side, printed and written to bench/results.md.
 * Not a test: nothing here passes or fails, it measures.
 */
const started = performance.now();
const loadAtStart = loadavg()[0]!;
process.env.LOG_LEVEL = 'silent';
process.env.CURSOR_SECRET = 'bench-cursor-secret';
// The bench stack must never refuse a request: the rate limit's UpdateItem still runs on each one.
process.env.RATE_LIMIT_PER_MINUTE = String(1e9);
// Nothing here may reach AWS: any Secrets Manager call would fail at once on a closed local port.
Object.assign(process.env, {
  AWS_ACCESS_KEY_ID: 'bench',
  AWS_SECRET_ACCESS_KEY: 'bench',
  AWS_EC2_METADATA_DISABLED: 'true',
  AWS_ENDPOINT_URL_SECRETS_MANAGER: 'http://127.0.0.1:9',
});

// `npm run bench -- cost`: section 7 alone (under a minute), replacing it in bench/results.md.
const costOnly = process.argv[2] === 'cost';
// `npm run bench -- webhook-fairness`: section 8 alone (about two minutes); it replaces that section
// of bench/results.md (or adds it) and says so there, leaving the other sections as they are.
if (process.argv[2] === 'webhook-fairness') {
  process.env.STAGE = 'local';
  const section = await benchWebhookFairness();
  process.stdout.write(`${section}\n`);
  const file = new URL('./results.md', import.meta.url);
  const previous = readFileSync(file, 'utf8');
  const note = `_This section was run alone at ${new Date().toISOString()} on ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version} (\`npm run bench -- webhook-fairness\`, ${((performance.now() - started) / 1000).toFixed(0)} s; one-minute load average ${loadAtStart.toFixed(1)} at its start and ${loadavg()[0]!.toFixed(1)} at its end)._`;
  const [heading, ...rest] = section.split('\n');
  const start = previous.indexOf('## 8. ');
  const end = start < 0 ? -1 : previous.indexOf('\n## ', start + 1);
  const kept = start < 0 ? `${previous.trimEnd()}\n\n` : previous.slice(0, start);
  writeFileSync(file, `${kept}${[heading, '', note, ...rest].join('\n')}\n${end < 0 ? '' : previous.slice(end)}`);
  process.exit(0);
}
// `npm run bench -- call-budget`: section 9 alone (about a minute), replacing it in bench/results.md.
if (process.argv[2] === 'call-budget') {
  const section = await benchCallBudget();
  process.stdout.write(`${section}\n`);
  const file = new URL('./results.md', import.meta.url);
  const previous = readFileSync(file, 'utf8');
  const note = `_This section was run alone at ${new Date().toISOString()} (\`npm run bench -- call-budget\`, ${((performance.now() - started) / 1000).toFixed(0)} s; one-minute load average ${loadAtStart.toFixed(1)} at its start); the other sections are from the full run above._`;
  const [heading, ...rest] = section.split('\n');
  const replaced = [heading, '', note, ...rest].join('\n');
  const at = previous.indexOf('\n## 9. ');
  const end = at < 0 ? -1 : previous.indexOf('\n## ', at + 1);
  writeFileSync(
    file,
    at < 0 ? `${previous.trimEnd()}\n\n${replaced}\n` : `${previous.slice(0, at)}\n${replaced}\n${end < 0 ? '' : previous.slice(end)}`,
  );
  process.exit(0);
}

// `npm run bench -- day2`: section 10 alone (under a minute), replacing it in bench/results.md.
if (process.argv[2] === 'day2') {
  process.env.STAGE = 'local';
  const section = await benchDay2();
  process.stdout.write(`${section}\n`);
  const file = new URL('./results.md', import.meta.url);
  const previous = readFileSync(file, 'utf8');
  const note = `_This section was run alone at ${new Date().toISOString()} (\`npm run bench -- day2\`, ${((performance.now() - started) / 1000).toFixed(0)} s); the other sections are from the full run above._`;
  const [heading, ...rest] = section.split('\n');
  const replaced = [heading, '', note, ...rest].join('\n');
  const at = previous.indexOf('\n## 10. ');
  writeFileSync(file, at < 0 ? `${previous.trimEnd()}\n\n${replaced}\n` : `${previous.slice(0, at)}\n${replaced}\n`);
  process.exit(0);
}

// `npm run bench -- dashboard`: section 11 alone (under a minute), replacing it in bench/results.md.
if (process.argv[2] === 'dashboard') {
  process.env.STAGE = 'local';
  const section = await benchDashboard();
  process.stdout.write(`${section}\n`);
  const file = new URL('./results.md', import.meta.url);
  const previous = readFileSync(file, 'utf8');
  const note = `_This section was run alone at ${new Date().toISOString()} (\`npm run bench -- dashboard\`, ${((performance.now() - started) / 1000).toFixed(0)} s); the other sections are from the full run above._`;
  const [heading, ...rest] = section.split('\n');
  const replaced = [heading, '', note, ...rest].join('\n');
  const at = previous.indexOf('\n## 11. ');
  writeFileSync(file, at < 0 ? `${previous.trimEnd()}\n\n${replaced}\n` : `${previous.slice(0, at)}\n${replaced}\n`);
  process.exit(0);
}

// 1. Bundles first, before DynamoDB Local starts and takes its share of the CPU.
const bundles = costOnly ? '' : await benchBundles();

// `npm run bench -- bundles`: this section alone (about a minute); it replaces section 1 of
// bench/results.md and says so there, leaving the other sections of the last full run as they are.
if (process.argv[2] === 'bundles') {
  process.stdout.write(`${bundles}\n`);
  const file = new URL('./results.md', import.meta.url);
  const previous = readFileSync(file, 'utf8');
  const start = previous.indexOf('## 1. ');
  const end = previous.indexOf('\n## 2. ');
  if (start < 0 || end < 0) throw new Error('bench/results.md has no section 1 to replace: run the whole benchmark');
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`;
  const note = `_This section was re-run alone at ${new Date().toISOString()} on ${machine} (\`npm run bench -- bundles\`, ${((performance.now() - started) / 1000).toFixed(0)} s; one-minute load average ${loadAtStart.toFixed(1)} at its start and ${loadavg()[0]!.toFixed(1)} at its end); the other sections are from the full run above._`;
  const [heading, ...rest] = bundles.split('\n');
  writeFileSync(file, `${previous.slice(0, start)}${[heading, '', note, ...rest].join('\n')}\n${previous.slice(end)}`);
  process.exit(0);
}

// The stack starts as `local`, so the panel simulator's keys go to the in-memory secret store.
process.env.STAGE = 'local';
// 6. One panel with its real limits, on a stack of its own (its own table and simulator).
const panelLoad = await benchPanel();
resetConfig();
// 8. Webhook delivery with a hanging tenant, on a stack of its own (receivers on loopback: STAGE local).
const webhookFairness = await benchWebhookFairness();
resetConfig();
// 10. Panel calls per day-two operation, on a stack of its own.
const day2 = await benchDay2();
resetConfig();
// 11. The dashboard: its initial weight and first render, on a stack of its own.
const dashboard = await benchDashboard();
resetConfig();
const panel = {
  installMs: 50,
  transitionMs: 20,
  // Passed through to the simulator: the handler benchmarks call the panel a few thousand times a
  // minute, beyond the panel's default per-key limits (240 and 720 a minute).
  rateLimits: { application: 1e6, client: 1e6 },
} as LocalStackOptions['panel'];
const stack = await startLocalStack({ tableName: 'bench', panel });
try {
  // From here on the code runs as in AWS (no response-schema check, live key prefix, Secrets
  // Manager for panel keys), with the panel keys already in the Secrets Manager cache, as in a warm Lambda.
  process.env.STAGE = 'aws';
  resetConfig();
  await primeSecretCache(stack.panel!.instanceId, { appApiKey: stack.panel!.sim.appKey, clientApiKey: stack.panel!.sim.clientKey });

  if (costOnly) {
    const cost = await benchCost(stack.adminApiKey);
    process.stdout.write(`${cost}\n`);
    const file = new URL('./results.md', import.meta.url);
    const previous = readFileSync(file, 'utf8');
    const start = previous.indexOf('## 7. ');
    if (start < 0) throw new Error('bench/results.md has no section 7 to replace: run the whole benchmark');
    const end = previous.indexOf('\n## ', start + 1);
    const note = `_This section was re-run alone at ${new Date().toISOString()} (\`npm run bench -- cost\`; one-minute load average ${loadAtStart.toFixed(1)} at its start and ${loadavg()[0]!.toFixed(1)} at its end); the other sections are from the full run above._`;
    const [heading, ...rest] = cost.split('\n');
    writeFileSync(file, `${previous.slice(0, start)}${[heading, '', note, ...rest].join('\n')}\n${end < 0 ? '' : previous.slice(end)}`);
    process.exit(0);
  }

  const roundTrips = await benchRoundTrips(stack);
  const account = await benchAccountEndpoint(stack.adminApiKey);
  const hot = await benchHotEndpoints(stack, roundTrips.server);
  const throughput = await benchThroughput(stack);
  const billing = await benchBillingPass();
  const billingScale = await benchBillingScale();
  const cost = await benchCost(stack.adminApiKey);
  const callBudget = await benchCallBudget();

  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, DynamoDB Local (in memory)`;
  const seconds = ((performance.now() - started) / 1000).toFixed(0);
  const report = [
    '# Benchmark results',
    '',
    `Run ${new Date().toISOString()} on ${machine}; all sections measured in this one run of \`npm run bench\` (${seconds} s). One-minute load average ${loadAtStart.toFixed(1)} at the start and ${loadavg()[0]!.toFixed(1)} at the end (the machine may be shared: other work adds noise). These are figures of this machine, not of Lambda; read each against its section's floor, measured alongside.`,
    '',
    bundles,
    '',
    roundTrips.report,
    '',
    '## 3. Handler time of hot endpoints next to their bare DynamoDB calls',
    '',
    "Each group's Lambda handler is invoked directly in this process with an API Gateway v2 event (the admin's API key; STAGE=aws, so no response-schema check), one request after another; the floor is the same DynamoDB work (and, for GET /v1/servers/:id, the same panel calls) with no code of ours. Wall time is mostly DynamoDB Local's; \"CPU / request\" is this process's own CPU time per request (user + system, DynamoDB Local not included), where the cost of our code shows most directly — the floor's CPU is the AWS SDK's work for the same calls.",
    '',
    account,
    '',
    hot,
    '',
    throughput,
    '',
    billing,
    '',
    billingScale,
    '',
    panelLoad,
    '',
    cost,
    '',
    webhookFairness,
    '',
    callBudget,
    '',
    day2,
    '',
    dashboard,
    '',
  ].join('\n');
  process.stdout.write(`${report}\n`);
  writeFileSync(new URL('./results.md', import.meta.url), report);
} finally {
  await stack.stop();
}

/**
 * A warm Lambda holds the panel keys in its Secrets Manager cache (shared/secrets, 5 minutes);
 * here they are put there directly, so no request of the benchmark ever calls AWS.
 */
async function primeSecretCache(instanceId: string, keys: InstanceKeys): Promise<void> {
  type Cached = { cache?: Map<string, { keys: InstanceKeys; at: number }> };
  // The store is loaded on first use behind a wrapper (shared/secrets/index.ts `LazyStore`).
  const outer = secretStore() as unknown as Cached & { store?: () => Promise<Cached> };
  const store = typeof outer.store === 'function' ? await outer.store() : outer;
  if (!(store.cache instanceof Map)) throw new Error('shared/secrets changed: cannot prime the Secrets Manager cache for the benchmark');
  // Stamped a day ahead, so the entry outlives the run however long it takes.
  store.cache.set(instanceId, { keys, at: Date.now() + 86_400_000 });
}
