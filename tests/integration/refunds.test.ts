import { signedStripeEvent, signedStripeFields } from '../helpers/stripe-events.ts';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, expectEnvelope, type TestApi } from '../helpers/stack.ts';
import { startFakeStripe, type FakeStripe } from '../helpers/fake-stripe.ts';
import { expectLedgerInvariant, ledgerOf } from '../helpers/money.ts';
import { getRaw } from '../helpers/db.ts';
import { keys } from '../../shared/db/keys.ts';
import { appendLedger } from '../../shared/ledger/index.ts';
import { resetConfig } from '../../shared/config/env.ts';

/**
 * Refunds and disputes of a paid top-up, end to end: the top-up is paid through the signed
 * checkout webhook, then Stripe's charge.refunded and charge.dispute.* events (signed with Stripe's
 * own library) are delivered as an adversary would: replayed, concurrently, out of order, tampered.
 * Each case checks the balance, the ledger (balance == sum) and the invoice's state exactly.
 * A top-up of 2,000 ¢ at 5 % bonus credits 2,100 ¢ on top of the 500 ¢ trial: 2,600 ¢.
 */
const WEBHOOK_SECRET = 'whsec_test_refunds_0123456789';
let stripeFake: FakeStripe;
let api: TestApi;

beforeAll(async () => {
  stripeFake = await startFakeStripe();
  process.env.STRIPE_SECRET_KEY = 'sk_test_fake_key_for_tests';
  process.env.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET;
  process.env.STRIPE_API_URL = stripeFake.url;
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0 } });
});
afterAll(async () => {
  await api?.stop();
  await stripeFake?.close();
});
afterEach(async () => {
  await expectLedgerInvariant();
});

let n = 0;
const signed = (type: string, object: Record<string, unknown>, secret = WEBHOOK_SECRET) =>
  signedStripeEvent(type, object, { secret, id: `evt_${++n}_${Math.random().toString(36).slice(2)}` });

const deliver = (event: { body: string; signature?: string }) =>
  api.call('POST', '/v1/webhooks/stripe', {
    token: null,
    rawBody: event.body,
    headers: { 'content-type': 'application/json', ...(event.signature ? { 'stripe-signature': event.signature } : {}) },
  });

/** A customer with a paid 2,000 ¢ top-up (balance 2,600 ¢) and the PaymentIntent it was paid with. */
async function paidTopUp(email: string, amountCents = 2000) {
  const token = await api.session(email);
  const { id } = (await api.call('GET', '/v1/account', { token })).body;
  const res = await api.call('POST', '/v1/billing/checkout', { token, body: { amountCents } });
  expect(res.status).toBe(201);
  const invoiceId = res.body.invoiceId as string;
  const session = [...stripeFake.sessions.values()].find((s) => s.client_reference_id === invoiceId)!;
  const paymentIntent = `pi_${invoiceId.replace(/-/g, '').slice(0, 20)}`;
  const paid = await deliver(
    signed('checkout.session.completed', { ...session, status: 'complete', payment_status: 'paid', payment_intent: paymentIntent }),
  );
  expect(paid.body.outcome).toBe('credited');
  return { token, id: id as string, invoiceId, paymentIntent, charge: `ch_${paymentIntent.slice(3)}` };
}

type Paid = Awaited<ReturnType<typeof paidTopUp>>;

/** charge.refunded as Stripe sends it: `amount_refunded` is the running total of the charge's refunds. */
const refunded = (p: Paid, amountRefunded: number, amount = 2000) =>
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

const dispute = (p: Paid, type: 'created' | 'updated' | 'closed', status: string, id = `dp_${p.charge}`, amount = 2000) =>
  signed(`charge.dispute.${type}`, {
    id,
    object: 'dispute',
    amount,
    currency: 'usd',
    status,
    reason: 'fraudulent',
    charge: p.charge,
    payment_intent: p.paymentIntent,
  });

const balance = async (id: string) => Number((await getRaw(keys.account(id)))!.balanceCents);
const invoice = async (p: Paid) => (await api.call('GET', `/v1/invoices/${p.invoiceId}`, { token: p.token })).body;
const reversals = async (id: string) =>
  (await ledgerOf(id)).filter((e) => e.type === 'refund' || e.type === 'dispute').map((e) => [e.type, e.amountCents]);
const outcomes = async (event: { body: string; signature: string }, times: number) =>
  (await Promise.all(Array.from({ length: times }, () => deliver(event)))).map((r) => r.body.outcome as string);

describe('refunds', () => {
  it('books a full refund once with the whole bonus, however often and concurrently the event is replayed', async () => {
    const p = await paidTopUp('full-refund@example.com');
    expect(await balance(p.id)).toBe(2600);
    const event = refunded(p, 2000);
    const results = await outcomes(event, 10);
    expect(results.filter((o) => o === 'refund_booked')).toHaveLength(1);
    expect(results.filter((o) => o === 'already_booked')).toHaveLength(9);
    expect(await balance(p.id)).toBe(500);
    expect(await reversals(p.id)).toEqual([['refund', -2100]]);
    expect(await invoice(p)).toMatchObject({ status: 'refunded', refundedCents: 2000, disputedCents: 0, bonusReversedCents: 100 });
    // The same refund again as a new event (another event id): the charge's total has not moved.
    expect((await deliver(refunded(p, 2000))).body.outcome).toBe('already_booked');
    expect(await balance(p.id)).toBe(500);
  });

  it('books several partial refunds by their running total, taking the bonus share cumulatively (never more than the bonus)', async () => {
    const p = await paidTopUp('partial-refunds@example.com');
    // 333, 666, 1000 of 2000 with a 100 ¢ bonus: floor(100 × total / 2000) = 16, 33, 50 — per-refund rounding would take 48.
    for (const total of [333, 666, 1000]) expect((await deliver(refunded(p, total))).body.outcome).toBe('refund_booked');
    expect(await reversals(p.id)).toEqual([
      ['refund', -(333 + 16)],
      ['refund', -(333 + 17)],
      ['refund', -(334 + 17)],
    ]);
    expect(await invoice(p)).toMatchObject({ status: 'partially_refunded', refundedCents: 1000, bonusReversedCents: 50 });
    expect(await balance(p.id)).toBe(2600 - 1050);
    expect((await deliver(refunded(p, 2000))).body.outcome).toBe('refund_booked');
    expect(await invoice(p)).toMatchObject({ status: 'refunded', refundedCents: 2000, bonusReversedCents: 100 });
    expect(await balance(p.id)).toBe(500);
  });

  it('is out-of-order safe: a later total first, then the earlier one (and all replays) book nothing more', async () => {
    const p = await paidTopUp('refund-reordered@example.com');
    const first = refunded(p, 700);
    const second = refunded(p, 1200);
    expect((await deliver(second)).body.outcome).toBe('refund_booked');
    const late = [...(await outcomes(first, 10)), ...(await outcomes(second, 10))];
    expect(new Set(late)).toEqual(new Set(['already_booked']));
    expect(await reversals(p.id)).toEqual([['refund', -(1200 + 60)]]);
    expect(await invoice(p)).toMatchObject({ status: 'partially_refunded', refundedCents: 1200, bonusReversedCents: 60 });
  });

  it('books concurrent deliveries of different totals exactly: the largest total wins, nothing twice', async () => {
    const p = await paidTopUp('refund-race@example.com');
    const events = [300, 900, 1500, 300, 900, 1500].map((total) => refunded(p, total));
    await Promise.all(events.map(deliver));
    const booked = (await reversals(p.id)).reduce((sum, [, cents]) => sum + Number(cents), 0);
    expect(booked).toBe(-(1500 + 75));
    expect(await balance(p.id)).toBe(2600 - 1575);
    expect(await invoice(p)).toMatchObject({ refundedCents: 1500, bonusReversedCents: 75 });
  });

  it('books nothing for a tampered, unsigned, wrongly signed or malformed event', async () => {
    const p = await paidTopUp('refund-forged@example.com');
    const good = refunded(p, 2000);
    const tampered = { body: good.body.replace('"amount_refunded":2000', '"amount_refunded":1999'), signature: good.signature };
    expectEnvelope(await deliver(tampered), 400, 'invalid_signature');
    expectEnvelope(await deliver({ body: good.body }), 400, 'invalid_signature');
    expectEnvelope(await deliver({ body: good.body, signature: refunded(p, 2000, 2000).signature }), 400, 'invalid_signature');
    const forged = signed('charge.refunded', { id: p.charge, amount: 2000, amount_refunded: 2000, currency: 'usd' }, 'whsec_attacker');
    expectEnvelope(await deliver(forged), 400, 'invalid_signature');
    const malformed = signed('charge.refunded', { id: p.charge, amount: 2000, currency: 'usd', payment_intent: p.paymentIntent });
    expectEnvelope(await deliver(malformed), 400, 'validation_failed');
    const wrongAmount = signed('charge.refunded', {
      id: p.charge,
      amount: 5000,
      amount_refunded: 5000,
      currency: 'usd',
      payment_intent: p.paymentIntent,
    });
    expect((await deliver(wrongAmount)).body.outcome).toBe('amount_mismatch');
    expect(
      (
        await deliver(
          signed('charge.refunded', { id: 'ch_x', amount: 2000, amount_refunded: 2000, currency: 'usd', payment_intent: 'pi_nobody' }),
        )
      ).body.outcome,
    ).toBe('unknown_invoice');
    expect(await balance(p.id)).toBe(2600);
    expect(await reversals(p.id)).toEqual([]);
    expect(await invoice(p)).toMatchObject({ status: 'paid', refundedCents: 0 });
  });

  it('answers 409 for a refund of an invoice not paid yet, so Stripe delivers it again after the payment', async () => {
    const token = await api.session('refund-early@example.com');
    const { id } = (await api.call('GET', '/v1/account', { token })).body;
    const { invoiceId } = (await api.call('POST', '/v1/billing/checkout', { token, body: { amountCents: 2000 } })).body;
    const early = signed('charge.refunded', {
      id: 'ch_early',
      amount: 2000,
      amount_refunded: 2000,
      currency: 'usd',
      payment_intent: 'pi_early',
      metadata: { invoice_id: invoiceId },
    });
    expectEnvelope(await deliver(early), 409, 'conflict');
    expect(await balance(id)).toBe(500);
  });

  it('suspends the servers of an account a refund takes to zero', async () => {
    const p = await paidTopUp('refund-suspends@example.com');
    const server = (
      await api.call('POST', '/v1/servers', {
        token: p.token,
        body: { name: 'refunded', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
      })
    ).body;
    expect(server.id).toBeDefined();
    // The trial credit spent (as hours would spend it): what is left is the top-up and its bonus.
    await appendLedger(p.id, [{ type: 'deduction', amountCents: -500, idempotencyKey: `test-spend:${p.id}` }]);
    expect((await deliver(refunded(p, 2000))).body.outcome).toBe('refund_booked');
    expect(await balance(p.id)).toBe(0);
    expect((await api.call('GET', `/v1/servers/${server.id}`, { token: p.token })).body.status).toBe('suspended');
    expect(api.panel!.sim.server(server.identifier)!.status).toBe('suspended');
  });
});

describe('disputes', () => {
  it('a lost dispute takes the amount and its bonus share once; closing it keeps it taken', async () => {
    const p = await paidTopUp('dispute-lost@example.com');
    expect(await outcomes(dispute(p, 'created', 'needs_response'), 10)).toContain('dispute_booked');
    expect(await balance(p.id)).toBe(500);
    expect(await invoice(p)).toMatchObject({ status: 'disputed', disputedCents: 2000, bonusReversedCents: 100 });
    const closed = await outcomes(dispute(p, 'closed', 'lost'), 10);
    expect(closed.filter((o) => o === 'dispute_booked')).toHaveLength(1);
    expect(await balance(p.id)).toBe(500);
    expect(await reversals(p.id)).toEqual([['dispute', -2100]]);
    expect(await invoice(p)).toMatchObject({ status: 'disputed', disputedCents: 2000 });
  });

  it('a won dispute returns what it took; a replayed created after the close takes nothing again', async () => {
    const p = await paidTopUp('dispute-won@example.com');
    const created = dispute(p, 'created', 'needs_response');
    expect((await deliver(created)).body.outcome).toBe('dispute_booked');
    expect(await balance(p.id)).toBe(500);
    expect(await outcomes(dispute(p, 'closed', 'won'), 10)).toContain('dispute_booked');
    expect(await outcomes(created, 10)).toEqual(Array(10).fill('already_booked'));
    expect(await balance(p.id)).toBe(2600);
    expect(await reversals(p.id)).toEqual([
      ['dispute', -2100],
      ['dispute', 2100],
    ]);
    expect(await invoice(p)).toMatchObject({ status: 'paid', disputedCents: 0, bonusReversedCents: 0 });
  });

  it('is out-of-order safe: closed (lost or won) before created is booked as its final state, once', async () => {
    const lost = await paidTopUp('dispute-lost-first@example.com');
    expect((await deliver(dispute(lost, 'closed', 'lost'))).body.outcome).toBe('dispute_booked');
    expect(await outcomes(dispute(lost, 'created', 'needs_response'), 10)).toEqual(Array(10).fill('already_booked'));
    expect(await reversals(lost.id)).toEqual([['dispute', -2100]]);
    expect(await balance(lost.id)).toBe(500);

    const won = await paidTopUp('dispute-won-first@example.com');
    expect((await deliver(dispute(won, 'closed', 'won'))).body.outcome).toBe('dispute_booked');
    expect(await outcomes(dispute(won, 'created', 'needs_response'), 10)).toEqual(Array(10).fill('already_booked'));
    expect(await reversals(won.id)).toEqual([]);
    expect(await balance(won.id)).toBe(2600);
    expect(await invoice(won)).toMatchObject({ status: 'paid', disputedCents: 0 });
  });

  it('a partial refund then a dispute of the rest take exactly the top-up and the bonus in total', async () => {
    const p = await paidTopUp('refund-then-dispute@example.com');
    expect((await deliver(refunded(p, 500))).body.outcome).toBe('refund_booked');
    expect((await deliver(dispute(p, 'created', 'needs_response', 'dp_rest', 1500))).body.outcome).toBe('dispute_booked');
    expect(await reversals(p.id)).toEqual([
      ['refund', -525],
      ['dispute', -1575],
    ]);
    expect(await balance(p.id)).toBe(500);
    expect(await invoice(p)).toMatchObject({ status: 'disputed', refundedCents: 500, disputedCents: 1500, bonusReversedCents: 100 });
  });

  it('an inquiry (warning_needs_response) moves no money', async () => {
    const p = await paidTopUp('inquiry@example.com');
    expect((await deliver(dispute(p, 'created', 'warning_needs_response'))).body.outcome).toBe('ignored');
    expect(await balance(p.id)).toBe(2600);
  });

  it('delivers invoice.refunded and invoice.disputed to the account (billing:read)', async () => {
    const p = await paidTopUp('refund-events@example.com');
    await deliver(refunded(p, 400));
    await deliver(dispute(p, 'created', 'needs_response', 'dp_events', 1600));
    const refundedEvents = (await api.call('GET', '/v1/events?type=invoice.refunded', { token: p.token })).body.data;
    const disputedEvents = (await api.call('GET', '/v1/events?type=invoice.disputed', { token: p.token })).body.data;
    expect(refundedEvents).toHaveLength(1);
    expect(refundedEvents[0].data).toMatchObject({ id: p.invoiceId, status: 'partially_refunded', refundedCents: 400 });
    expect(disputedEvents).toHaveLength(1);
    expect(disputedEvents[0].data).toMatchObject({ id: p.invoiceId, status: 'disputed', disputedCents: 1600, bonusReversedCents: 100 });
  });
});

/**
 * What Stripe's money did, booked as it moved. Each case is a state Stripe really reaches (a refund
 * that fails after it was made, a dispute lost then won on appeal, a dispute prevented by a refund,
 * a second dispute id on one charge), delivered in order, replayed, concurrently and out of order.
 * Events carry explicit `created` times (seconds, as Stripe dates them): a refund fails days after
 * it was made, and the charge's running total is placed against the failure by its date.
 */
describe('failed refunds and dispute outcomes', () => {
  const T0 = Math.floor(Date.now() / 1000) - 86_400;
  const at = (type: string, object: Record<string, unknown>, created: number) =>
    signedStripeFields(
      { type, created, data: { object } },
      { secret: WEBHOOK_SECRET, id: `evt_${++n}_${Math.random().toString(36).slice(2)}` },
    );
  const totalAt = (p: Paid, amountRefunded: number, created: number) =>
    at(
      'charge.refunded',
      { id: p.charge, object: 'charge', amount: 2000, amount_refunded: amountRefunded, currency: 'usd', payment_intent: p.paymentIntent },
      created,
    );
  /** A Refund object event (refund.failed, charge.refund.updated): the refund made at `made`, reported at `created`. */
  const refundObject = (p: Paid, type: string, id: string, amount: number, status: string, made: number, created: number) =>
    at(
      type,
      {
        id,
        object: 'refund',
        amount,
        currency: 'usd',
        status,
        created: made,
        charge: p.charge,
        payment_intent: p.paymentIntent,
        metadata: {},
      },
      created,
    );
  const sum = async (id: string) => (await reversals(id)).reduce((total, [, cents]) => total + Number(cents), 0);
  const booked = (results: string[]) => results.filter((o) => o === 'refund_booked' || o === 'dispute_booked').length;

  it('a refund that fails after it was booked gives its 840 ¢ back once, by either event, however often delivered', async () => {
    const p = await paidTopUp('refund-fails@example.com');
    expect((await deliver(totalAt(p, 800, T0))).body.outcome).toBe('refund_booked');
    expect(await balance(p.id)).toBe(2600 - 840);
    // Stripe reports the failure twice (charge.refund.updated and refund.failed); each is redelivered, concurrently.
    const updated = refundObject(p, 'charge.refund.updated', 're_fails_1', 800, 'failed', T0, T0 + 3600);
    const failed = refundObject(p, 'refund.failed', 're_fails_1', 800, 'failed', T0, T0 + 3601);
    const results = await Promise.all(
      [...Array(5).fill(updated), ...Array(5).fill(failed)].map(async (e) => (await deliver(e)).body.outcome),
    );
    expect(booked(results)).toBe(1);
    expect(await balance(p.id)).toBe(2600);
    expect(await reversals(p.id)).toEqual([
      ['refund', -840],
      ['refund', 840],
    ]);
    const credit = (await ledgerOf(p.id)).at(-1)!;
    expect(credit.reference).toMatchObject({ invoiceId: p.invoiceId, note: expect.stringContaining('re_fails_1') });
    expect(await invoice(p)).toMatchObject({ status: 'paid', refundedCents: 0, bonusReversedCents: 0 });
    // The total stated before the failure, delivered late again, takes nothing.
    expect((await deliver(totalAt(p, 800, T0))).body.outcome).toBe('already_booked');
    expect(await balance(p.id)).toBe(2600);
    // The admin refunds the same 800 ¢ again, and this one goes through: taken once more, then never again.
    expect((await deliver(totalAt(p, 800, T0 + 7200))).body.outcome).toBe('refund_booked');
    expect(await outcomes(failed, 3)).toEqual(Array(3).fill('already_booked'));
    expect(await balance(p.id)).toBe(2600 - 840);
    expect(await invoice(p)).toMatchObject({ status: 'partially_refunded', refundedCents: 800, bonusReversedCents: 40 });
    // The operator's event says so: the last invoice.refunded shows 800 ¢, the one before it 0.
    const events = (await api.call('GET', '/v1/events?type=invoice.refunded', { token: p.token })).body.data as {
      data: { refundedCents: number };
    }[];
    expect(events.map((e) => e.data.refundedCents).sort()).toEqual([0, 800, 800]);
  });

  it('a refund that did not fail (succeeded, pending) books nothing by its refund object events', async () => {
    const p = await paidTopUp('refund-object-ok@example.com');
    expect((await deliver(refundObject(p, 'charge.refund.updated', 're_ok', 500, 'succeeded', T0, T0 + 60))).body.outcome).toBe('ignored');
    expect((await deliver(refundObject(p, 'refund.updated', 're_ok', 500, 'pending', T0, T0 + 60))).body.outcome).toBe('ignored');
    expect(await balance(p.id)).toBe(2600);
    const malformed = at('refund.failed', { id: 're_bad', amount: 500, currency: 'usd', status: 'failed' }, T0);
    expectEnvelope(await deliver(malformed), 400, 'validation_failed');
  });

  it('two refunds, the second failing: every delivery order books the same 525 ¢', async () => {
    // 500 ¢ at T0+10 (total 500), 300 ¢ at T0+20 (total 800), the 300 ¢ fails at T0+30: 500 ¢ + 25 ¢ bonus stay taken.
    const orders = [
      [0, 1, 2],
      [2, 1, 0],
      [1, 2, 0],
      [2, 0, 1],
    ];
    for (const [k, order] of orders.entries()) {
      const p = await paidTopUp(`refund-fail-order-${k}@example.com`);
      const events = [
        totalAt(p, 500, T0 + 10),
        totalAt(p, 800, T0 + 20),
        refundObject(p, 'refund.failed', `re_b_${k}`, 300, 'failed', T0 + 20, T0 + 30),
      ];
      for (const i of order) await deliver(events[i]!);
      await Promise.all(events.map(deliver)); // and every one again, at once
      expect(await sum(p.id), `order ${order}`).toBe(-525);
      expect(await balance(p.id)).toBe(2600 - 525);
      expect(await invoice(p)).toMatchObject({ status: 'partially_refunded', refundedCents: 500, bonusReversedCents: 25 });
    }
  });

  it('a dispute lost, then won on appeal, gives the money back once; replays and a late created change nothing', async () => {
    const p = await paidTopUp('dispute-appeal@example.com');
    const created = dispute(p, 'created', 'needs_response');
    const withdrawn = signed('charge.dispute.funds_withdrawn', JSON.parse(created.body).data.object);
    const lost = dispute(p, 'closed', 'lost');
    const wonOnAppeal = dispute(p, 'updated', 'won');
    const reinstated = signed('charge.dispute.funds_reinstated', JSON.parse(wonOnAppeal.body).data.object);
    expect((await deliver(created)).body.outcome).toBe('dispute_booked');
    expect(await outcomes(withdrawn, 3)).toEqual(Array(3).fill('already_booked'));
    expect((await deliver(lost)).body.outcome).toBe('dispute_booked');
    expect(await balance(p.id)).toBe(500);
    expect(await invoice(p)).toMatchObject({ status: 'disputed', disputedCents: 2000 });
    expect((await deliver(wonOnAppeal)).body.outcome).toBe('dispute_booked');
    expect(await balance(p.id)).toBe(2600);
    const replays = await Promise.all([created, withdrawn, lost, wonOnAppeal, reinstated].flatMap((e) => [deliver(e), deliver(e)]));
    expect(replays.map((r) => r.body.outcome)).toEqual(Array(10).fill('already_booked'));
    expect(await reversals(p.id)).toEqual([
      ['dispute', -2100],
      ['dispute', 2100],
    ]);
    expect(await invoice(p)).toMatchObject({ status: 'paid', disputedCents: 0, bonusReversedCents: 0 });
    const last = (await api.call('GET', '/v1/events?type=invoice.disputed', { token: p.token })).body.data[0];
    expect(last.data).toMatchObject({ id: p.invoiceId, status: 'paid', disputedCents: 0 });
  });

  it('a dispute won on appeal, delivered in any order or all at once, ends with nothing taken', async () => {
    for (const mode of ['reversed', 'concurrent'] as const) {
      const p = await paidTopUp(`dispute-appeal-${mode}@example.com`);
      const events = [
        dispute(p, 'created', 'needs_response'),
        dispute(p, 'closed', 'lost'),
        signed('charge.dispute.funds_reinstated', { ...JSON.parse(dispute(p, 'updated', 'won').body).data.object }),
      ];
      if (mode === 'reversed') for (const e of events.reverse()) await deliver(e);
      else await Promise.all([...events, ...events].map(deliver));
      expect(await sum(p.id), mode).toBe(0);
      expect(await balance(p.id)).toBe(2600);
      expect(await invoice(p)).toMatchObject({ status: 'paid', disputedCents: 0 });
    }
  });

  it('a dispute prevented by a refund takes the 2,100 ¢ once, in either order', async () => {
    const a = await paidTopUp('dispute-prevented-a@example.com');
    // The dispute opens first (money held), then the charge is refunded instead and the dispute ends prevented.
    expect((await deliver(dispute(a, 'created', 'needs_response'))).body.outcome).toBe('dispute_booked');
    await deliver(refunded(a, 2000));
    expect(await balance(a.id)).toBe(500); // the refund takes what the open dispute did not already hold
    expect((await deliver(dispute(a, 'closed', 'prevented'))).body.outcome).toBe('dispute_booked');
    expect(await sum(a.id)).toBe(-2100);
    expect(await balance(a.id)).toBe(500);
    expect(await invoice(a)).toMatchObject({ status: 'refunded', refundedCents: 2000, disputedCents: 0, bonusReversedCents: 100 });

    const b = await paidTopUp('dispute-prevented-b@example.com');
    // Refunded first, the dispute arrives prevented; then everything again.
    expect((await deliver(refunded(b, 2000))).body.outcome).toBe('refund_booked');
    await deliver(dispute(b, 'created', 'prevented'));
    await Promise.all([refunded(b, 2000), dispute(b, 'created', 'needs_response'), dispute(b, 'closed', 'prevented')].map(deliver));
    expect(await reversals(b.id)).toEqual([['refund', -2100]]);
    expect(await balance(b.id)).toBe(500);
    expect(await invoice(b)).toMatchObject({ status: 'refunded', refundedCents: 2000, disputedCents: 0 });
  });

  it('a dispute never takes more than the refunds left of the top-up', async () => {
    const p = await paidTopUp('dispute-after-refund@example.com');
    expect((await deliver(refunded(p, 1500))).body.outcome).toBe('refund_booked');
    expect((await deliver(dispute(p, 'created', 'needs_response'))).body.outcome).toBe('dispute_booked');
    expect(await reversals(p.id)).toEqual([
      ['refund', -1575],
      ['dispute', -525],
    ]);
    expect(await balance(p.id)).toBe(500);
    expect(await invoice(p)).toMatchObject({ status: 'disputed', refundedCents: 1500, disputedCents: 500, bonusReversedCents: 100 });
  });

  it('two dispute ids on one charge: one is taken (2,100 ¢), however they arrive', async () => {
    const p = await paidTopUp('two-disputes@example.com');
    expect((await deliver(dispute(p, 'created', 'needs_response', 'dp_first'))).body.outcome).toBe('dispute_booked');
    expect((await deliver(dispute(p, 'created', 'needs_response', 'dp_second'))).body.outcome).toBe('already_booked');
    expect((await deliver(dispute(p, 'closed', 'won', 'dp_second'))).body.outcome).toBe('already_booked');
    expect(await balance(p.id)).toBe(500);
    expect(await reversals(p.id)).toEqual([['dispute', -2100]]);
    expect((await deliver(dispute(p, 'closed', 'won', 'dp_first'))).body.outcome).toBe('dispute_booked');
    expect(await balance(p.id)).toBe(2600);

    const q = await paidTopUp('two-disputes-at-once@example.com');
    await Promise.all(['dp_a', 'dp_b', 'dp_a', 'dp_b'].map((id) => deliver(dispute(q, 'created', 'needs_response', id))));
    expect(await reversals(q.id)).toEqual([['dispute', -2100]]);
    expect(await balance(q.id)).toBe(500);
    expect(await invoice(q)).toMatchObject({ status: 'disputed', disputedCents: 2000 });
  });

  it('an inquiry closed as warning_closed takes nothing', async () => {
    const p = await paidTopUp('inquiry-closed@example.com');
    expect((await deliver(dispute(p, 'created', 'warning_needs_response'))).body.outcome).toBe('ignored');
    expect((await deliver(dispute(p, 'updated', 'warning_under_review'))).body.outcome).toBe('ignored');
    expect((await deliver(dispute(p, 'closed', 'warning_closed'))).body.outcome).toBe('ignored');
    expect(await balance(p.id)).toBe(2600);
    expect(await reversals(p.id)).toEqual([]);
    expect(await invoice(p)).toMatchObject({ status: 'paid', disputedCents: 0 });
  });
});

describe('POST /v1/admin/invoices/:id/refund', () => {
  const refund = (invoiceId: string, body: Record<string, unknown>, opts: { token?: string | null; key?: string } = {}) =>
    api.call('POST', `/v1/admin/invoices/${invoiceId}/refund`, {
      ...(opts.token !== undefined ? { token: opts.token } : {}),
      body,
      headers: opts.key ? { 'idempotency-key': opts.key } : {},
    });

  it('asks Stripe once per idempotency key and books nothing itself: the signed webhook books the refund', async () => {
    const p = await paidTopUp('admin-refund@example.com');
    const first = await refund(p.invoiceId, { amountCents: 500, reason: 'customer asked' }, { key: 'refund-1' });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      amountCents: 500,
      status: 'succeeded',
      invoice: { id: p.invoiceId, status: 'paid', refundedCents: 0 },
    });
    const again = await refund(p.invoiceId, { amountCents: 500, reason: 'customer asked' }, { key: 'refund-1' });
    expect(again.body.refundId).toBe(first.body.refundId);
    const made = stripeFake.refunds.filter((r) => r.payment_intent === p.paymentIntent);
    expect(made).toHaveLength(1);
    expect(made[0]).toMatchObject({ amount: 500, metadata: { invoice_id: p.invoiceId, reason: 'customer asked' } });
    const request = stripeFake.requests.find((r) => r.path === '/v1/refunds' && r.params.payment_intent === p.paymentIntent)!;
    expect(request.idempotencyKey).toBe(`refund:${p.invoiceId}:refund-1`);
    expect(await balance(p.id)).toBe(2600); // not booked until Stripe says so
    expect((await deliver(refunded(p, 500))).body.outcome).toBe('refund_booked');
    expect(await balance(p.id)).toBe(2600 - 525);
    const logs = (await api.call('GET', '/v1/admin/logs?limit=50')).body.data as { action: string; target: string }[];
    expect(logs.some((l) => l.action === 'invoices.refund' && l.target === `invoice:${p.invoiceId}`)).toBe(true);
  });

  it('an admin refund that Stripe later fails: the refund it made gives its 840 ¢ back once', async () => {
    const p = await paidTopUp('admin-refund-fails@example.com');
    const made = (await refund(p.invoiceId, { amountCents: 800, reason: 'goodwill' }, { key: 'refund-fails-1' })).body;
    const stored = stripeFake.refunds.find((r) => r.id === made.refundId)!;
    const madeAt = Math.floor(Date.now() / 1000) - 3600;
    const total = signedStripeFields(
      {
        type: 'charge.refunded',
        created: madeAt,
        data: {
          object: { id: p.charge, amount: 2000, amount_refunded: 800, currency: 'usd', payment_intent: p.paymentIntent, metadata: {} },
        },
      },
      { secret: WEBHOOK_SECRET, id: `evt_admin_total_${++n}` },
    );
    expect((await deliver(total)).body.outcome).toBe('refund_booked');
    expect(await balance(p.id)).toBe(2600 - 840);
    // The bank returns it: Stripe's Refund (metadata as we sent it), once without its PaymentIntent (found by invoice_id).
    const failedRefund = { ...stored, object: 'refund', currency: 'usd', status: 'failed', created: madeAt };
    const failures = [
      { type: 'refund.failed', object: { ...failedRefund, payment_intent: null } },
      { type: 'charge.refund.updated', object: failedRefund },
    ].map(({ type, object }) =>
      signedStripeFields({ type, created: madeAt + 60, data: { object } }, { secret: WEBHOOK_SECRET, id: `evt_admin_fail_${++n}` }),
    );
    const results = await Promise.all([...failures, ...failures].map(async (e) => (await deliver(e)).body.outcome));
    expect(results.filter((o) => o === 'refund_booked')).toHaveLength(1);
    expect(await balance(p.id)).toBe(2600);
    expect(await reversals(p.id)).toEqual([
      ['refund', -840],
      ['refund', 840],
    ]);
    // Nothing refunded any more: the whole top-up can be refunded again.
    expect((await invoice(p)).refundedCents).toBe(0);
    expect((await refund(p.invoiceId, { amountCents: 2000, reason: 'again' }, { key: 'refund-fails-2' })).status).toBe(200);
  });

  it('refuses more than is left, an unpaid invoice, a customer and a Stripe failure, changing nothing', async () => {
    const p = await paidTopUp('admin-refund-refused@example.com');
    await deliver(refunded(p, 1500));
    const before = stripeFake.refunds.length;
    expectEnvelope(await refund(p.invoiceId, { amountCents: 501, reason: 'too much' }), 400, 'validation_failed');
    expectEnvelope(await refund(p.invoiceId, { amountCents: 0, reason: 'zero' }), 400, 'validation_failed');
    expectEnvelope(await refund(p.invoiceId, { amountCents: 100, reason: 'mine' }, { token: p.token }), 403, 'forbidden');
    expectEnvelope(await refund('00000000-0000-4000-8000-000000000000', { amountCents: 100, reason: 'x' }), 404, 'not_found');
    const { invoiceId: open } = (await api.call('POST', '/v1/billing/checkout', { token: p.token, body: { amountCents: 1000 } })).body;
    expectEnvelope(await refund(open, { amountCents: 100, reason: 'unpaid' }), 409, 'conflict');
    stripeFake.failNext(400);
    expectEnvelope(await refund(p.invoiceId, { amountCents: 100, reason: 'stripe says no' }), 502, 'payment_provider_error');
    expect(stripeFake.refunds.length).toBe(before);
    expect(await balance(p.id)).toBe(2600 - 1575);
  });

  it('in the local sandbox, simulates the refund through the same signed webhook code', async () => {
    delete process.env.STRIPE_SECRET_KEY;
    delete process.env.STRIPE_WEBHOOK_SECRET;
    resetConfig();
    try {
      const token = await api.session('sandbox-refund@example.com');
      const { id } = (await api.call('GET', '/v1/account', { token })).body;
      const { invoiceId } = (await api.call('POST', '/v1/billing/checkout', { token, body: { amountCents: 1000 } })).body;
      await api.call('POST', `/dev/checkout/${invoiceId}/complete`, { token: null, body: { outcome: 'paid' } });
      expect(await balance(id)).toBe(500 + 1050);
      const requestsBefore = stripeFake.requests.length;
      const res = await refund(invoiceId, { amountCents: 400, reason: 'sandbox' });
      expect(res.body.invoice).toMatchObject({ status: 'partially_refunded', refundedCents: 400, bonusReversedCents: 20 });
      expect((await refund(invoiceId, { amountCents: 600, reason: 'sandbox rest' })).body.invoice).toMatchObject({ status: 'refunded' });
      expect(stripeFake.requests.length).toBe(requestsBefore); // Stripe never called
      expect(await balance(id)).toBe(500);
    } finally {
      process.env.STRIPE_SECRET_KEY = 'sk_test_fake_key_for_tests';
      process.env.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET;
      resetConfig();
    }
  });
});
