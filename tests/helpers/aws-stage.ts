import { resetConfig } from '../../shared/config/env.ts';

/**
 * Runs `fn` with the configuration of the AWS stage (`STAGE=aws`, read afresh), then puts the
 * previous stage back: for the rules that only hold in AWS (webhook targets). The table and the
 * DynamoDB endpoint stay the test's own.
 */
export async function inAwsStage<T>(fn: () => T | Promise<T>): Promise<T> {
  const stage = process.env.STAGE;
  process.env.STAGE = 'aws';
  resetConfig();
  try {
    return await fn();
  } finally {
    process.env.STAGE = stage;
    resetConfig();
  }
}
