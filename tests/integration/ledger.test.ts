import { beforeAll, afterAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { appendLedger } from '../../shared/ledger/index.ts';
import { getRaw, queryPartition } from '../helpers/db.ts';
import { keys } from '../../shared/db/keys.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.stop());

async function ledgerOf(accountId: string) {
  const profile = await getRaw(keys.account(accountId));
  const entries = await queryPartition(keys.ledgerPrefix(accountId));
  return { balance: Number(profile!.balanceCents), entries };
}

describe('ledger', () => {
  it('concurrent changes all apply, in contiguous sequence, and the balance is the sum of the ledger', async () => {
    const { id } = (await api.call('GET', '/v1/account', { token: await api.session('ledger@example.com') })).body;
    const amounts = [100, -30, 250, -5, 40, -60, 7, 13];
    const results = await Promise.all(
      amounts.map((a, i) => appendLedger(id, [{ type: a > 0 ? 'grant' : 'deduction', amountCents: a, idempotencyKey: `test:${id}:${i}` }])),
    );
    expect(results.every((r) => r.applied)).toBe(true);
    const { balance, entries } = await ledgerOf(id);
    expect(entries.map((e) => e.seq)).toEqual(Array.from({ length: amounts.length + 1 }, (_, i) => i + 1));
    expect(balance).toBe(entries.reduce((sum, e) => sum + Number(e.amountCents), 0));
    expect(balance).toBe(500 + amounts.reduce((a, b) => a + b, 0));
    // Each entry's balanceAfter is the running sum.
    let running = 0;
    for (const e of entries) {
      running += Number(e.amountCents);
      expect(e.balanceAfterCents).toBe(running);
    }
  });

  it('the same idempotency key never applies twice, even concurrently', async () => {
    const { id } = (await api.call('GET', '/v1/account', { token: await api.session('idem@example.com') })).body;
    const results = await Promise.all(
      [1, 2, 3, 4, 5].map(() => appendLedger(id, [{ type: 'grant', amountCents: 1000, idempotencyKey: `grant:${id}:once` }])),
    );
    expect(results.filter((r) => r.applied)).toHaveLength(1);
    const { balance, entries } = await ledgerOf(id);
    expect(balance).toBe(1500);
    expect(entries).toHaveLength(2);
  });

  it('refuses non-integer amounts', async () => {
    const { id } = (await api.call('GET', '/v1/account', { token: await api.session('float@example.com') })).body;
    await expect(appendLedger(id, [{ type: 'grant', amountCents: 1.5, idempotencyKey: `f:${id}` }])).rejects.toThrow(/integer/);
    expect((await ledgerOf(id)).balance).toBe(500);
  });
});
