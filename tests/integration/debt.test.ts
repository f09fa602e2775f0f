import { signedStripeEvent } from '../helpers/stripe-events.ts';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { startFakeStripe, type FakeStripe } from '../helpers/fake-stripe.ts';
import { expectLedgerInvariant, ledgerOf } from '../helpers/money.ts';
import { appendLedger } from '../../shared/ledger/index.ts';

/**
 * Debt said plainly (docs/api.md "Debt"): a refund or dispute after the credit was spent, or an
 * admin deduction, leaves the balance below zero. The account view shows it as `debtCents`, an
 * `account.debt` event tells the operator's systems, and the next top-up pays it off first: its
 * ledger entry says how much (`reference.settlesDebtCents`) and `account.debt_settled` follows once
 * the balance is back at zero or above. Top-ups are paid and refunded through the signed webhook
 * (Stripe's own library signs); spending is appended as the billing pass appends charges.
 * A top-up of 2,000 ¢ at 5 % bonus credits 2,100 ¢ on top of the 500 ¢ trial: 2,600 ¢.
 */
const WEBHOOK_SECRET = 'whsec_test_debt_0123456789';
let stripeFake: FakeStripe;
let api: TestApi;

beforeAll(async () => {
  stripeFake = await startFakeStripe();
  process.env.STRIPE_SECRET_KEY = 'sk_test_fake_key_for_tests';
  process.env.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET;
  process.env.STRIPE_API_URL = stripeFake.url;
  api = await startTestApi();
});
afterAll(async () => {
  await api?.stop();
  await stripeFake?.close();
});
afterEach(async () => {
  await expectLedgerInvariant();
});

let n = 0;
const signed = (type: string, object: Record<string, unknown>) =>
  signedStripeEvent(type, object, { secret: WEBHOOK_SECRET, id: `evt_debt_${++n}_${Math.random().toString(36).slice(2)}` });

const deliver = (event: { body: string; signature?: string }) =>
  api.call('POST', '/v1/webhooks/stripe', {
    token: null,
    rawBody: event.body,
    headers: { 'content-type': 'application/json', ...(event.signature ? { 'stripe-signature': event.signature } : {}) },
  });

/** Opens a checkout of `amountCents` and returns the signed `checkout.session.completed` that pays it. */
async function checkout(token: string, amountCents: number) {
  const res = await api.call('POST', '/v1/billing/checkout', { token, body: { amountCents } });
  expect(res.status, res.text).toBe(201);
  const invoiceId = res.body.invoiceId as string;
  const session = [...stripeFake.sessions.values()].find((s) => s.client_reference_id === invoiceId)!;
  const paymentIntent = `pi_${invoiceId.replace(/-/g, '').slice(0, 20)}`;
  const paid = signed('checkout.session.completed', {
    ...session,
    status: 'complete',
    payment_status: 'paid',
    payment_intent: paymentIntent,
  });
  return { invoiceId, invoiceNumber: res.body.invoiceNumber as string, paymentIntent, charge: `ch_${paymentIntent.slice(3)}`, paid };
}

const refunded = (p: { charge: string; paymentIntent: string }, amountRefunded: number, amount: number) =>
  signed('charge.refunded', {
    id: p.charge,
    object: 'charge',
    amount,
    amount_refunded: amountRefunded,
    currency: 'usd',
    refunded: amountRefunded === amount,
    payment_intent: p.paymentIntent,
    metadata: {},
  });

const account = async (token: string) => (await api.call('GET', '/v1/account', { token })).body;

async function events(token: string, type: 'account.debt' | 'account.debt_settled') {
  const page = await api.call('GET', `/v1/events?type=${type}&limit=100`, { token });
  expect(page.status, page.text).toBe(200);
  return page.body.data.map((e: { data: Record<string, unknown> }) => e.data).reverse();
}

/** Spends credit as the billing pass does: an hourly charge through the ledger. */
const spend = (id: string, cents: number) =>
  appendLedger(id, [{ type: 'charge', amountCents: -cents, idempotencyKey: `debt-test:${id}:${++n}` }]);

const concurrently = async (event: { body: string; signature: string }, times: number) =>
  (await Promise.all(Array.from({ length: times }, () => deliver(event)))).map((r) => r.body.outcome as string);

describe('a refund after the credit was spent', () => {
  const state = {} as { token: string; id: string; refundedInvoice: string; refundedNumber: string };

  it('leaves a debt the account view states, and one account.debt event however often the refund is replayed', async () => {
    state.token = await api.session('debt-refund@example.com');
    state.id = (await account(state.token)).id;
    const first = await checkout(state.token, 2000);
    expect((await deliver(first.paid)).body.outcome).toBe('credited');
    await spend(state.id, 2400); // 200 ¢ left
    expect(await account(state.token)).toMatchObject({ balanceCents: 200, debtCents: 0 });

    // The whole top-up refunded with its bonus: 2,100 ¢ taken from 200 ¢.
    const outcomes = await concurrently(refunded(first, 2000, 2000), 8);
    expect(outcomes.filter((o) => o === 'refund_booked')).toHaveLength(1);
    expect(await account(state.token)).toMatchObject({ balanceCents: -1900, debtCents: 1900 });
    const refund = (await ledgerOf(state.id)).at(-1)!;
    expect(refund).toMatchObject({ type: 'refund', amountCents: -2100, balanceAfterCents: -1900 });
    expect(await events(state.token, 'account.debt')).toEqual([
      {
        debtCents: 1900,
        previousDebtCents: 0,
        balanceCents: -1900,
        cause: 'refund',
        entrySeq: refund.seq,
        invoiceId: first.invoiceId,
        invoiceNumber: first.invoiceNumber,
      },
    ]);
    // The same total as a new Stripe event books nothing, so no second event either.
    expect((await deliver(refunded(first, 2000, 2000))).body.outcome).toBe('already_booked');
    expect(await events(state.token, 'account.debt')).toHaveLength(1);
    state.refundedInvoice = first.invoiceId;
    state.refundedNumber = first.invoiceNumber;
  });

  it('the admin account view shows the same debt', async () => {
    const admin = await api.call('GET', `/v1/admin/users/${state.id}`);
    expect(admin.status, admin.text).toBe(200);
    expect(admin.body.account).toMatchObject({ balanceCents: -1900, debtCents: 1900 });
  });

  it('a top-up smaller than the debt is allowed and reduces it; the ledger says all of it went to the debt', async () => {
    const small = await checkout(state.token, 1000);
    expect((await deliver(small.paid)).body.outcome).toBe('credited');
    expect(await account(state.token)).toMatchObject({ balanceCents: -850, debtCents: 850 });
    const [topup, bonus] = (await api.call('GET', '/v1/account/transactions?limit=2', { token: state.token })).body.data.reverse();
    expect(topup).toMatchObject({ type: 'topup', amountCents: 1000, balanceAfterCents: -900, reference: { settlesDebtCents: 1000 } });
    expect(bonus).toMatchObject({ type: 'bonus', amountCents: 50, balanceAfterCents: -850, reference: { settlesDebtCents: 50 } });
    expect(await events(state.token, 'account.debt_settled')).toEqual([]);
    // A credit that only shrinks the debt is not a new debt.
    expect(await events(state.token, 'account.debt')).toHaveLength(1);
  });

  it('the next top-up settles the rest first: its entry says how much, account.debt_settled is emitted once', async () => {
    const next = await checkout(state.token, 2000);
    const outcomes = await concurrently(next.paid, 8);
    expect(outcomes.filter((o) => o === 'credited')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'already_fulfilled')).toHaveLength(7);
    expect(await account(state.token)).toMatchObject({ balanceCents: 1250, debtCents: 0 });
    const [topup, bonus] = (await api.call('GET', '/v1/account/transactions?limit=2', { token: state.token })).body.data.reverse();
    expect(topup).toMatchObject({ type: 'topup', amountCents: 2000, balanceAfterCents: 1150, reference: { settlesDebtCents: 850 } });
    expect(bonus).toMatchObject({ type: 'bonus', amountCents: 100, balanceAfterCents: 1250, reference: { settlesDebtCents: null } });
    // The ledger.entry event carries the same entry, settlesDebtCents included.
    const entries = (await api.call('GET', '/v1/events?type=ledger.entry&limit=5', { token: state.token })).body.data;
    expect(entries.find((e: { data: { seq: number } }) => e.data.seq === topup.seq).data.reference.settlesDebtCents).toBe(850);
    expect(await events(state.token, 'account.debt_settled')).toEqual([
      {
        settledCents: 850,
        balanceCents: 1250,
        cause: 'topup',
        entrySeq: topup.seq,
        invoiceId: next.invoiceId,
        invoiceNumber: next.invoiceNumber,
      },
    ]);
    // Replayed later, one by one: still credited once, still one event.
    for (let i = 0; i < 3; i++) expect((await deliver(next.paid)).body.outcome).toBe('already_fulfilled');
    expect(await events(state.token, 'account.debt_settled')).toHaveLength(1);
    expect(await account(state.token)).toMatchObject({ balanceCents: 1250, debtCents: 0 });
    // What the debt entries add up to: every cent owed was paid off once.
    const booked = (await ledgerOf(state.id)) as { reference?: { settlesDebtCents?: number } }[];
    const settled = booked.reduce((sum, e) => sum + (e.reference?.settlesDebtCents ?? 0), 0);
    expect(settled).toBe(1900);
  });
});

describe('other ways into debt and out of it', () => {
  it('an admin deduction below zero is a debt (cause deduction); an admin grant that covers it settles it (cause grant)', async () => {
    const token = await api.session('debt-admin@example.com');
    const { id } = await account(token);
    const deducted = await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: -800, note: 'Chargeback fee' } });
    expect(deducted.status, deducted.text).toBe(200);
    expect(await account(token)).toMatchObject({ balanceCents: -300, debtCents: 300 });
    expect(await events(token, 'account.debt')).toEqual([
      expect.objectContaining({ debtCents: 300, previousDebtCents: 0, cause: 'deduction', invoiceId: null, invoiceNumber: null }),
    ]);
    // Deeper: a second deduction is a debt that grew.
    await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: -200, note: 'Another fee' } });
    expect(
      (await events(token, 'account.debt')).map((e: { debtCents: number; previousDebtCents: number }) => [
        e.previousDebtCents,
        e.debtCents,
      ]),
    ).toEqual([
      [0, 300],
      [300, 500],
    ]);
    const granted = await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: 500, note: 'Goodwill' } });
    expect(granted.status, granted.text).toBe(200);
    expect(granted.body.entry.reference.settlesDebtCents).toBe(500);
    expect(await account(token)).toMatchObject({ balanceCents: 0, debtCents: 0 });
    expect(await events(token, 'account.debt_settled')).toEqual([
      expect.objectContaining({ settledCents: 500, balanceCents: 0, cause: 'grant', entrySeq: granted.body.entry.seq }),
    ]);
  });

  it('an hourly charge is a debt event only when it crosses zero, not every hour deeper', async () => {
    const token = await api.session('debt-charges@example.com');
    const { id } = await account(token);
    await spend(id, 480); // 20 ¢
    await spend(id, 30); // −10 ¢: crossed
    await spend(id, 30); // −40 ¢: deeper, no new event
    expect(await events(token, 'account.debt')).toEqual([
      expect.objectContaining({ debtCents: 10, previousDebtCents: 0, cause: 'charge' }),
    ]);
    expect(await account(token)).toMatchObject({ balanceCents: -40, debtCents: 40 });
  });
});
