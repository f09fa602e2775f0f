import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    // One DynamoDB Local for the whole run; each test file gets its own table (tests/setup.ts).
    globalSetup: ['tests/global-setup.ts'],
    setupFiles: ['tests/setup.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll waits for what a page or a pass does next; 1 s (its default) is too short on a
    // loaded machine, and a poll that is going to fail only fails later.
    expect: { poll: { timeout: 10_000 } },
    reporters: ['default', './tests/helpers/summary-reporter.ts'],
  },
});
