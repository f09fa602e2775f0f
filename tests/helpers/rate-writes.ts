import { db } from '../../shared/db/client.ts';

/**
 * Counts the rate-limit counter writes (UpdateItem on a `RATE#` key) this process sends from now
 * on; `count.n` is read and reset by the test.
 */
export function countRateWrites(): { n: number } {
  const count = { n: 0 };
  db().middlewareStack.add(
    (next, context) => async (args) => {
      const key = (args.input as { Key?: { PK?: string } }).Key;
      if (String(context.commandName).startsWith('Update') && key?.PK?.startsWith('RATE#')) count.n++;
      return next(args);
    },
    { step: 'initialize', name: `rateWriteCounter${Math.random()}` },
  );
  return count;
}
