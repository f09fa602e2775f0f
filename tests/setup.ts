import { appendFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { afterAll } from 'vitest';
import { takeContractBreaches } from '../shared/api/contract.ts';
import { muteMetrics } from './helpers/metrics.ts';

/** Runs before each test file: its own table name, quiet logs, the test stage. */
process.env.STAGE = 'test';
process.env.TABLE_NAME = `test-${randomUUID().slice(0, 8)}`;
process.env.LOG_LEVEL = process.env.LOG_LEVEL ?? 'silent';
process.env.ADMIN_EMAILS = process.env.ADMIN_EMAILS ?? 'admin@localhost';
// Metric lines go nowhere unless a test reads them (tests/helpers/metrics.ts captureMetrics).
muteMetrics();

// Every response the service gave during this file must be one its OpenAPI document lists
// (shared/api/contract.ts); an undocumented status or error code fails the file.
afterAll(() => {
  const breaches = takeContractBreaches();
  if (process.env.CONTRACT_LOG) {
    appendFileSync(process.env.CONTRACT_LOG, breaches.map((b) => `${JSON.stringify(b)}\n`).join(''));
    return;
  }
  if (breaches.length) {
    throw new Error(
      `Responses not listed in the OpenAPI document (add the code to the route's errors in shared/api/routes.ts, or fix the code):\n${breaches
        .map((b) => `  ${b.route}: ${b.status} ${b.code ?? '(success)'}${b.missingHeader ? ` without its ${b.missingHeader} header` : ''}`)
        .join('\n')}`,
    );
  }
});
