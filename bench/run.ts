import { cpus, totalmem } from 'node:os';
import { writeFileSync } from 'node:fs';
import { startLocalStack } from '../dev/stack.ts';
import { benchAccountEndpoint } from './account-endpoint.ts';
import { benchBillingPass } from './billing-pass.ts';

/**
 * `npm run bench`: every figure in one run, side by side, printed and written to bench/results.md.
 * Not a test: nothing here passes or fails, it measures.
 */
process.env.LOG_LEVEL = 'silent';
// Measure the code as it runs in AWS: no response-schema check (that runs only outside AWS).
process.env.STAGE = 'aws';
process.env.CURSOR_SECRET = 'bench-cursor-secret';
const stack = await startLocalStack({ tableName: 'bench' });
try {
  const sections = [await benchAccountEndpoint(stack.adminApiKey), await benchBillingPass()];
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, DynamoDB Local (in memory)`;
  const report = ['# Benchmark results', '', `Run ${new Date().toISOString()} on ${machine}.`, '', ...sections, ''].join('\n');
  process.stdout.write(`${report}\n`);
  writeFileSync(new URL('./results.md', import.meta.url), report);
} finally {
  await stack.stop();
}
