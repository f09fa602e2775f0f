import { randomUUID } from 'node:crypto';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../infra/bundle.ts';
import { startDynamoLocal, type LocalDynamo } from '../dev/dynamodb.ts';
import { buildDashboard } from '../web/build.ts';

/** Starts one DynamoDB Local (in memory) for the whole test run, unless DYNAMODB_ENDPOINT names one. */
let dynamo: LocalDynamo | undefined;

export async function setup(): Promise<void> {
  // The dashboard once, before the workers start: the browser tests would otherwise each build a
  // stale web/dist at the same time, emptying it under one another.
  await buildDashboard();
  // The infra files build the Lambda bundles once per run (tests/helpers/build-lock.ts, bundlesOfThisRun).
  process.env.TEST_RUN_ID = randomUUID();
  try {
    for (const f of readdirSync(join(ROOT, 'dist'))) if (f.startsWith('.bundles-')) rmSync(join(ROOT, 'dist', f), { force: true });
  } catch {
    // No dist/ yet.
  }
  if (!process.env.DYNAMODB_ENDPOINT) {
    dynamo = await startDynamoLocal();
    process.env.DYNAMODB_ENDPOINT = dynamo.endpoint;
  }
}

export async function teardown(): Promise<void> {
  await dynamo?.stop();
}
