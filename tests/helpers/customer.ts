import { expect } from 'vitest';
import { appendLedger } from '../../shared/ledger/index.ts';
import type { TestApi } from './stack.ts';

/** A signed-in customer of the test API. */
export interface Customer {
  token: string;
  id: string;
}

export interface CustomerOptions {
  /** Credit to add before the test uses the account (a new account starts with the trial credit only). */
  grantCents?: number;
  /**
   * 'ledger' (default): a grant appended straight to the ledger, no request and no audit entry.
   * 'admin': POST /v1/admin/users/:id/credits, as an operator would; it also ends the trial.
   */
  grantBy?: 'ledger' | 'admin';
}

/** Signs `email` in (a new account on first use) and answers its session token and account id. */
export async function customer(api: TestApi, email: string, options: CustomerOptions = {}): Promise<Customer> {
  const token = await api.session(email);
  const { id } = (await api.call('GET', '/v1/account', { token })).body as { id: string };
  const cents = options.grantCents ?? 0;
  if (cents && options.grantBy === 'admin') {
    const res = await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: cents, note: 'test funds' } });
    expect(res.status, res.text).toBe(200);
  } else if (cents) {
    await appendLedger(id, [{ type: 'grant', amountCents: cents, idempotencyKey: `test-grant:${id}:${cents}` }]);
  }
  return { token, id };
}
