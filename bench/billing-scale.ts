import { performance } from 'node:perf_hooks';
import { ACCOUNT_CONCURRENCY } from '../shared/billing/pass.ts';
import { callsByType, measurePass } from './billing-pass.ts';
import { table } from './harness.ts';
import { BILLING_SHARDS } from '../shared/db/table.ts';
import { WORKER_MEMORY_MB } from '../infra/stacks/billing-stack.ts';

import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';

/**
 * The billing pass at two sizes, each on a fresh table seeded with BatchWriteItem (4 servers per
 * account): time per server at each size and their ratio — linear growth keeps it near 1.
 * Standalone: `npx node bench/billing-scale.ts [--write] [servers…]` (starts its own DynamoDB
 * Local; sections 5 and 5b; with --write they replace those of bench/results.md, marked as re-run alone).
 */
export const SCALE_SIZES = [2_000, 20_000];

/** What one measured pass of this section contributes to its goals line (per account-hour or server-hour). */
interface ScaleRun {
  note: string;
  hoursOwed: number;
  legacy: boolean;
  gsi1: number;
  transactions: number;
  writes: number;
  cpu: number;
  errors: number;
}

export async function benchBillingScale(sizes = SCALE_SIZES, serversPerAccount = 4): Promise<string> {
  const rows: string[][] = [];
  const perServer: number[] = [];
  let callRows = '';
  const runs: { servers: number; hoursOwed: number; legacyListing: boolean; note: string }[] = [
    ...sizes.map((servers) => ({ servers, hoursOwed: 1, legacyListing: false, note: '' })),
    // Catch-up: three hours owed (two passes missed), charged in one transaction per account.
    { servers: sizes[0]!, hoursOwed: 3, legacyListing: false, note: ' (3 hours owed)' },
    // Accounts from before the listing entry: the profile on GSI1, each charge writes an index copy.
    { servers: sizes[0]!, hoursOwed: 1, legacyListing: true, note: ' (profiles on GSI1)' },
  ];
  // An untimed pass first, so the smallest size does not pay for warming the code paths (JIT).
  await measurePass(100, serversPerAccount, false);
  let capacityNote = '';
  const measured: ScaleRun[] = [];
  for (const run of runs) {
    const m = await measurePass(Math.ceil(run.servers / serversPerAccount), serversPerAccount, false, run);
    const n = m.summary.serverHoursCharged;
    const accountHours = m.seeded.accountIds.length * run.hoursOwed;
    const { reads, writes, rows: byType } = callsByType(m.records, n);
    const ms = m.passMs / n;
    if (!run.note) perServer.push(ms);
    const c = m.writeCapacity;
    rows.push([
      `${m.seeded.servers}${run.note}`,
      String(m.seeded.accountIds.length),
      `${(m.seedMs / 1000).toFixed(1)} s`,
      `${(m.passMs / 1000).toFixed(2)} s`,
      `${n} / ${m.summary.errors}`,
      (n / (m.passMs / 1000)).toFixed(0),
      `${ms.toFixed(3)} ms`,
      run.note ? '—' : (ms / perServer[0]!).toFixed(2),
      (reads / n).toFixed(3),
      (writes / n).toFixed(3),
      (c.transactions / accountHours).toFixed(2),
      (c.table / accountHours).toFixed(1),
      (c.GSI1 / accountHours).toFixed(2),
      `${m.cpuMs > 0 ? (m.cpuMs / n).toFixed(3) : '—'} ms`,
    ]);
    measured.push({
      note: run.note,
      hoursOwed: run.hoursOwed,
      legacy: run.legacyListing,
      gsi1: c.GSI1 / accountHours,
      transactions: c.transactions / accountHours,
      writes: writes / n,
      cpu: m.cpuMs / n,
      errors: m.summary.errors,
    });
    if (run.legacyListing) {
      capacityNote = `A profile is ${m.profileBytes} bytes (DynamoDB's item size); on GSI1 (the row marked "profiles on GSI1") each charge writes that copy into the index, ${(c.GSI1 / accountHours).toFixed(2)} WCU per account-hour (transactional writes count twice), into one of 8 \`ACCOUNTS#<n>\` partitions; with the listing entry apart the charges write none.`;
    }
    if (run.servers === sizes.at(-1) && !run.note) callRows = byType.map((r) => `${r[0]} ${r[2]} (${r[4]} items)`).join(', ');
  }
  return [
    '## 5b. The billing pass at two sizes',
    '',
    `After an untimed warm-up pass of 400 servers, each size on a fresh table (seeded with BatchWriteItem, not timed in the pass), ${serversPerAccount} servers per account, one hour each unless marked, 16 shards, 4 shard workers in one process, ${ACCOUNT_CONCURRENCY} accounts at once per shard. Write capacity is what DynamoDB Local reported for the charges' transactions (ReturnConsumedCapacity INDEXES), per account-hour billed; goal for GSI1: 0 (a balance change writes no index copy), goal for transactions: one per account and pass, whatever the hours owed.`,
    '',
    table(
      [
        'servers',
        'accounts',
        'seeding',
        'pass',
        'server-hours / errors',
        'server-hours/s',
        'time per server-hour',
        '× smallest',
        'reads / server-hour',
        'writes / server-hour',
        'transactions / account-hour',
        'table WCU / account-hour',
        'GSI1 WCU / account-hour',
        'CPU / server-hour',
      ],
      rows,
    ),
    '',
    `${capacityNote} Calls at the largest size: ${callRows}. CPU / server-hour is this process's own CPU time (our code and the AWS SDK; DynamoDB Local runs in another process), what a worker Lambda would spend. Per-server time is what grows linearly: a constant ratio means the pass's time is proportional to the servers billed (no per-pass scan, no item every charge touches). In AWS each shard is one worker Lambda and DynamoDB serves all shards at once; here one DynamoDB Local process on a shared machine serves them all (docs/costs.md, "Billing 1,000,000 servers").`,
    '',
    scaleGoals(measured),
  ].join('\n');
}

/**
 * The goals of this section next to what it measured, and the million-server pass of
 * docs/costs.md ("Billing 1,000,000 servers") worked out from this run's CPU per server-hour: the
 * worst case, one server per account, counts 4 × that CPU per transaction (an upper bound), one
 * wave of one worker per shard at one vCPU (context `billingWorkers=16`; the default is fewer,
 * infra/stacks/billing-stack.ts), plus 2.5 s to read a shard.
 */
function scaleGoals(runs: ScaleRun[]): string {
  const normal = runs.filter((r) => !r.note);
  const largest = normal.at(-1)!;
  const catchUp = runs.find((r) => r.hoursOwed > 1)!;
  const legacy = runs.find((r) => r.legacy)!;
  const gsi1 = Math.max(...normal.map((r) => r.gsi1), catchUp.gsi1);
  const shardServers = 1_000_000 / BILLING_SHARDS;
  const perSecond = 1000 / (4 * largest.cpu);
  const minutes = (shardServers / perSecond + 2.5) / 60;
  // The same pass bound by the table's default on-demand quota: 10 WRU per k = 1 transaction.
  const quotaMinutes = (1_000_000 * 10) / 40_000 / 60;
  const met = (ok: boolean) => (ok ? 'met' : '**not** met');
  return `**Goals** (issue 28, item 3), measured in this run: the index write per account-hour **0** — GSI1 ${gsi1.toFixed(2)} WCU (${met(gsi1 === 0)}; before, profiles on GSI1: ${legacy.gsi1.toFixed(2)} WCU, the row so marked); ${catchUp.hoursOwed} hours owed in **one transaction per account** — ${catchUp.transactions.toFixed(2)} transactions per account-hour (${met(catchUp.transactions <= 1 / catchUp.hoursOwed + 1e-9)}), ${catchUp.writes.toFixed(3)} writes per server-hour against ${largest.writes.toFixed(3)}; errors ${runs.reduce((a, r) => a + r.errors, 0)}; a million servers in **≤ 5 minutes** of the hour — **${minutes.toFixed(1)} minutes** (${met(minutes <= 5)}) in the worst case (one server per account, 4 × ${largest.cpu.toFixed(3)} ms of CPU per transaction), ${BILLING_SHARDS} workers (\`-c billingWorkers=${BILLING_SHARDS}\`) at ${WORKER_MEMORY_MB.toLocaleString('en-US')} MB, ${BILLING_SHARDS} shards of ${shardServers.toLocaleString('en-US')}; ${quotaMinutes.toFixed(1)} minutes if the table's default 40,000 WRU/s quota bounds it (docs/costs.md, "Billing 1,000,000 servers").`;
}

if (import.meta.main) {
  const { startDynamoLocal } = await import('../dev/dynamodb.ts');
  const started = performance.now();
  const loadAtStart = loadavg()[0]!;
  const write = process.argv.includes('--write');
  const sizes = process.argv.slice(2).map(Number).filter(Boolean);
  if (write && process.argv.includes('--no-pass')) throw new Error('--write replaces sections 5 and 5b: run without --no-pass');
  const dynamo = await startDynamoLocal({});
  Object.assign(process.env, {
    STAGE: 'aws',
    LOG_LEVEL: 'silent',
    TABLE_NAME: 'bench-scale',
    DYNAMODB_ENDPOINT: dynamo.endpoint,
    AWS_ACCESS_KEY_ID: 'bench',
    AWS_SECRET_ACCESS_KEY: 'bench',
    AWS_EC2_METADATA_DISABLED: 'true',
    CURSOR_SECRET: 'bench-cursor-secret',
  });
  try {
    const { benchBillingPass } = await import('./billing-pass.ts');
    // --no-pass: section 5b alone (printed; --write then needs the whole run).
    const pass = process.argv.includes('--no-pass') ? '' : await benchBillingPass();
    const scale = process.argv.includes('--no-scale') ? '' : `\n\n${await benchBillingScale(sizes.length ? sizes : SCALE_SIZES)}`;
    const sections = `${pass}${scale}\n`;
    process.stdout.write(sections);
    if (write) {
      const file = new URL('./results.md', import.meta.url);
      const previous = readFileSync(file, 'utf8');
      const start = previous.indexOf('## 5. ');
      const end = previous.indexOf('\n## 6. ');
      if (start < 0 || end < 0) throw new Error('bench/results.md has no section 5 to replace: run the whole benchmark');
      const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, DynamoDB Local (in memory)`;
      const note = `_Sections 5 and 5b were re-run alone at ${new Date().toISOString()} on ${machine} (\`npx node bench/billing-scale.ts --write\`, ${((performance.now() - started) / 1000).toFixed(0)} s; one-minute load average ${loadAtStart.toFixed(1)} at its start and ${loadavg()[0]!.toFixed(1)} at its end); the other sections are from the full run above._`;
      const [heading, ...rest] = sections.split('\n');
      writeFileSync(file, `${previous.slice(0, start)}${[heading, '', note, ...rest].join('\n')}${previous.slice(end)}`);
    }
  } finally {
    await dynamo.stop();
  }
}
