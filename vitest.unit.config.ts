import { defineConfig } from 'vitest/config';

// The fast unit tests for `npm run check`: no DynamoDB Local, no simulator, no network.
export default defineConfig({
  test: {
    include: ['tests/unit/**/*.test.ts'],
    setupFiles: ['tests/setup.ts'],
    pool: 'threads',
  },
});
