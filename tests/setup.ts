import { randomUUID } from 'node:crypto';

/** Runs before each test file: its own table name, quiet logs, the test stage. */
process.env.STAGE = 'test';
process.env.TABLE_NAME = `test-${randomUUID().slice(0, 8)}`;
process.env.LOG_LEVEL = process.env.LOG_LEVEL ?? 'silent';
process.env.ADMIN_EMAILS = process.env.ADMIN_EMAILS ?? 'admin@localhost';
