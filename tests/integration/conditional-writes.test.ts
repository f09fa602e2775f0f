import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as accessPatterns from '../../shared/db/access-patterns.ts';
import { keys } from '../../shared/db/keys.ts';
import {
  ConditionFailedError,
  isConditionFailed,
  retrying,
  transact,
  WriteConflictError,
  writeIfFirst,
  writeItem,
} from '../../shared/db/write.ts';
import { startTestApi, type TestApi } from '../helpers/stack.ts';

/** shared/db/write.ts against DynamoDB Local: names instead of positions, one error type, one retry policy. */
let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.stop());

const counter = (name: string) => keys.invoiceCounter(Number.parseInt(name, 36) % 100_000);

describe('conditional writes', () => {
  it('a cancelled transaction names the items whose conditions failed, and writes nothing', async () => {
    const a = counter('wa1');
    const b = counter('wb1');
    await writeItem({ Put: { Item: { ...a, last: 1 } } });
    const err = await transact([
      { name: 'fresh', Put: { Item: { ...b, last: 7 }, ConditionExpression: 'attribute_not_exists(PK)' } },
      { name: 'taken', Put: { Item: { ...a, last: 2 }, ConditionExpression: 'attribute_not_exists(PK)' } },
    ]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConditionFailedError);
    expect([...(err as ConditionFailedError).failed]).toEqual(['taken']);
    expect(isConditionFailed(err, 'taken')).toBe(true);
    expect(isConditionFailed(err, 'fresh')).toBe(false);
    expect(await accessPatterns.invoiceCounter(Number.parseInt('wb1', 36) % 100_000)).toBeUndefined();
  });

  it('a single write whose condition fails is the same error; writeIfFirst says who was first', async () => {
    const k = counter('wc1');
    expect(await writeIfFirst({ Put: { Item: { ...k, last: 1 }, ConditionExpression: 'attribute_not_exists(PK)' } })).toBe(true);
    expect(await writeIfFirst({ Put: { Item: { ...k, last: 2 }, ConditionExpression: 'attribute_not_exists(PK)' } })).toBe(false);
    const err = await writeItem({ Put: { Item: { ...k, last: 3 }, ConditionExpression: 'attribute_not_exists(PK)' } }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConditionFailedError);
    expect((err as ConditionFailedError).has('item')).toBe(true);
  });

  it('names must be unique within a transaction', async () => {
    const k = counter('wd1');
    await expect(
      transact([
        { name: 'x', Put: { Item: { ...k, last: 1 } } },
        { name: 'x', Put: { Item: { ...counter('wd2'), last: 1 } } },
      ]),
    ).rejects.toThrow(/unique/);
  });

  it('an optimistic lock under real contention: 12 concurrent increments all land exactly once', async () => {
    const year = Number.parseInt('we1', 36) % 100_000;
    await Promise.all(
      Array.from({ length: 12 }, () =>
        retrying(
          async () => {
            const last = (await accessPatterns.invoiceCounter(year))?.last ?? 0;
            await writeItem({
              Update: {
                Key: keys.invoiceCounter(year),
                UpdateExpression: 'SET #last = :next',
                ConditionExpression: last ? '#last = :last' : 'attribute_not_exists(#last)',
                ExpressionAttributeNames: { '#last': 'last' },
                ExpressionAttributeValues: { ':next': last + 1, ...(last ? { ':last': last } : {}) },
              },
            });
          },
          { attempts: 60, retryIf: () => true, exhausted: () => new Error('gave up') },
        ),
      ),
    );
    expect((await accessPatterns.invoiceCounter(year))?.last).toBe(12);
  });
});

// The retry policy itself: a transaction conflict cannot be produced on demand by DynamoDB Local,
// so these bodies throw the helper's own errors directly.
describe('the retry policy', () => {
  it('retries conflicts, retries failed conditions only when asked, and says when it gives up', async () => {
    let calls = 0;
    expect(
      await retrying(
        async () => {
          if (++calls < 3) throw new WriteConflictError();
          return 'done';
        },
        { exhausted: () => new Error('gave up') },
      ),
    ).toBe('done');
    expect(calls).toBe(3);

    calls = 0;
    const refused = await retrying(
      async () => {
        calls++;
        throw new ConditionFailedError(['server']);
      },
      { retryIf: (err) => err.has('profile'), exhausted: () => new Error('gave up') },
    ).catch((e: unknown) => e);
    expect(calls).toBe(1);
    expect(isConditionFailed(refused, 'server')).toBe(true);

    calls = 0;
    await expect(
      retrying(
        async () => {
          calls++;
          throw new ConditionFailedError(['profile']);
        },
        { attempts: 4, retryIf: (err) => err.has('profile'), exhausted: () => new Error('gave up') },
      ),
    ).rejects.toThrow('gave up');
    expect(calls).toBe(4);

    await expect(retrying(async () => Promise.reject(new TypeError('boom')), { exhausted: () => new Error('x') })).rejects.toThrow('boom');
  });
});
