import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { signedStripeEvent, signedStripeFields } from '../helpers/stripe-events.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { startFakeStripe, type FakeStripe } from '../helpers/fake-stripe.ts';
import { expectLedgerInvariant, ledgerOf } from '../helpers/money.ts';
import { pdfText } from '../helpers/pdf-text.ts';

/**
 * Credit notes, end to end: a top-up paid through the signed checkout webhook, then Stripe's
 * charge.refunded and charge.dispute.* events (signed with Stripe's own library) delivered as
 * Stripe and an adversary would: once, replayed, concurrently, out of order. Each booking that
 * takes money back definitively issues one note in the same transaction as its ledger entry; the
 * notes' numbers form one gapless CN- series over every account of this file's table.
 * A top-up of 2,000 ¢ at 5 % bonus credits 2,100 ¢; no tax on these invoices (the split with tax
 * is covered by tests/unit/credit-notes.test.ts).
 */
const WEBHOOK_SECRET = 'whsec_test_credit_notes_0123456789';
let stripeFake: FakeStripe;
let api: TestApi;

beforeAll(async () => {
  stripeFake = await startFakeStripe();
  process.env.STRIPE_SECRET_KEY = 'sk_test_fake_key_for_tests';
  process.env.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET;
  process.env.STRIPE_API_URL = stripeFake.url;
  api = await startTestApi({ panel: false, webhooks: false });
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
  signedStripeEvent(type, object, { secret: WEBHOOK_SECRET, id: `evt_cn_${++n}_${Math.random().toString(36).slice(2)}` });

const deliver = (event: { body: string; signature?: string }) =>
  api.call('POST', '/v1/webhooks/stripe', {
    token: null,
    rawBody: event.body,
    headers: { 'content-type': 'application/json', ...(event.signature ? { 'stripe-signature': event.signature } : {}) },
  });

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
  return {
    token,
    id: id as string,
    invoiceId,
    invoiceNumber: res.body.invoiceNumber as string,
    paymentIntent,
    charge: `ch_${paymentIntent.slice(3)}`,
  };
}
type Paid = Awaited<ReturnType<typeof paidTopUp>>;

const refunded = (p: Paid, amountRefunded: number) =>
  signed('charge.refunded', {
    id: p.charge,
    object: 'charge',
    amount: 2000,
    amount_refunded: amountRefunded,
    currency: 'usd',
    refunded: amountRefunded === 2000,
    payment_intent: p.paymentIntent,
    metadata: {},
  });

const dispute = (p: Paid, type: 'created' | 'updated' | 'closed', status: string) =>
  signed(`charge.dispute.${type}`, {
    id: `dp_${p.charge}`,
    object: 'dispute',
    amount: 2000,
    currency: 'usd',
    status,
    reason: 'fraudulent',
    charge: p.charge,
    payment_intent: p.paymentIntent,
  });

/** The PDF as bytes (the stack's `call` reads text, which would mangle them). */
async function getPdf(id: string, token: string) {
  const res = await fetch(`${api.baseUrl}/v1/credit-notes/${id}/pdf`, { headers: { authorization: `Bearer ${token}` } });
  return { res, bytes: new Uint8Array(await res.arrayBuffer()) };
}

const outcomes = async (event: { body: string; signature: string }, times: number) =>
  (await Promise.all(Array.from({ length: times }, () => deliver(event)))).map((r) => r.body.outcome as string);

interface Note {
  id: string;
  number: string;
  type: string;
  reason: string;
  invoice: { id: string; number: string };
  reverses: { id: string; number: string } | null;
  lineItems: { type: string; amountCents: number; returnedCents: number; debitedCents: number }[];
  netCents: number;
  taxCents: number;
  totalCents: number;
  debitedCents: number;
}

const notesOf = async (p: Paid): Promise<Note[]> => {
  const res = await api.call('GET', '/v1/credit-notes?limit=100', { token: p.token });
  expect(res.status).toBe(200);
  return (res.body.data as Note[]).reverse(); // oldest first
};
const invoice = async (p: Paid) => (await api.call('GET', `/v1/invoices/${p.invoiceId}`, { token: p.token })).body;
/** What the ledger took back for the invoice (refund and dispute entries), as a positive sum. */
const takenBack = async (p: Paid) =>
  0 - (await ledgerOf(p.id)).filter((e) => e.type === 'refund' || e.type === 'dispute').reduce((sum, e) => sum + Number(e.amountCents), 0);

/** Every note of every account this file made, for the series check at the end. */
const everyAccount: Paid[] = [];
async function customer(email: string) {
  const p = await paidTopUp(email);
  everyAccount.push(p);
  return p;
}

describe('credit notes', () => {
  it('a full refund issues one note (net, bonus taken back as a credit-only line), however often and concurrently replayed', async () => {
    const p = await customer('cn-full@example.com');
    const results = await outcomes(refunded(p, 2000), 10);
    expect(results.filter((o) => o === 'refund_booked')).toHaveLength(1);
    const notes = await notesOf(p);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatchObject({
      type: 'credit_note',
      reason: 'refund',
      invoice: { id: p.invoiceId, number: p.invoiceNumber },
      reverses: null,
      netCents: 2000,
      taxCents: 0,
      totalCents: 2000,
      debitedCents: 2100,
      lineItems: [
        { type: 'topup', amountCents: 2000, returnedCents: 2000, debitedCents: 2000 },
        { type: 'bonus', amountCents: 100, returnedCents: 0, debitedCents: 100 },
      ],
    });
    expect(notes[0]!.number).toMatch(/^CN-\d{4}-\d{6}$/);
    // What the note states is what the ledger took back.
    expect(notes[0]!.debitedCents).toBe(await takenBack(p));
    // The invoice keeps its shape and status, and links its note.
    expect(await invoice(p)).toMatchObject({ status: 'refunded', creditNotes: [{ id: notes[0]!.id, number: notes[0]!.number }] });
    // Another event id for the same total: nothing more.
    expect((await deliver(refunded(p, 2000))).body.outcome).toBe('already_booked');
    expect(await notesOf(p)).toHaveLength(1);
    const one = await api.call('GET', `/v1/credit-notes/${notes[0]!.id}`, { token: p.token });
    expect(one.body).toEqual(notes[0]);
  });

  it('partial refunds issue one note each, split on the running totals; a late or replayed total issues none', async () => {
    const p = await customer('cn-partial@example.com');
    // 333, 666, 1000 of 2000 with a 100 ¢ bonus: bonus shares 16, 17, 17 (floor of the running total, as the ledger takes them).
    for (const total of [333, 666, 1000]) expect((await deliver(refunded(p, total))).body.outcome).toBe('refund_booked');
    await Promise.all([333, 666, 1000].flatMap((total) => [deliver(refunded(p, total)), deliver(refunded(p, total))]));
    const notes = await notesOf(p);
    expect(notes.map((x) => [x.netCents, x.lineItems.find((l) => l.type === 'bonus')?.amountCents ?? 0])).toEqual([
      [333, 16],
      [333, 17],
      [334, 17],
    ]);
    expect(notes.every((x) => x.type === 'credit_note' && x.reason === 'refund')).toBe(true);
    expect(notes.reduce((sum, x) => sum + x.totalCents, 0)).toBe(1000);
    expect(notes.reduce((sum, x) => sum + x.debitedCents, 0)).toBe(await takenBack(p));
    expect((await invoice(p)).creditNotes.map((x: { number: string }) => x.number)).toEqual(notes.map((x) => x.number));
  });

  it('concurrent deliveries of different totals issue notes that add up to the largest total, none twice', async () => {
    const p = await customer('cn-race@example.com');
    await Promise.all([300, 900, 1500, 300, 900, 1500].map((total) => deliver(refunded(p, total))));
    const notes = await notesOf(p);
    expect(notes.length).toBeGreaterThanOrEqual(1);
    expect(notes.reduce((sum, x) => sum + x.totalCents, 0)).toBe(1500);
    expect(notes.reduce((sum, x) => sum + x.debitedCents, 0)).toBe(1575);
    expect(await takenBack(p)).toBe(1575);
  });

  it('an open dispute only holds the money (no note); the loss issues one note, however often the close is delivered', async () => {
    const p = await customer('cn-dispute-lost@example.com');
    expect(await outcomes(dispute(p, 'created', 'needs_response'), 5)).toContain('dispute_booked');
    expect(await takenBack(p)).toBe(2100);
    expect(await notesOf(p)).toEqual([]);
    const closed = await outcomes(dispute(p, 'closed', 'lost'), 10);
    expect(closed.filter((o) => o === 'dispute_booked')).toHaveLength(1);
    const notes = await notesOf(p);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatchObject({ type: 'credit_note', reason: 'dispute_lost', netCents: 2000, totalCents: 2000, debitedCents: 2100 });
    expect(await takenBack(p)).toBe(2100);
    expect(await invoice(p)).toMatchObject({ status: 'disputed', disputedCents: 2000, creditNotes: [{ id: notes[0]!.id }] });
  });

  it('a dispute lost before it was ever open issues its note once; won on appeal, a reversal that references it', async () => {
    const p = await customer('cn-dispute-appeal@example.com');
    expect((await deliver(dispute(p, 'closed', 'lost'))).body.outcome).toBe('dispute_booked');
    expect(await outcomes(dispute(p, 'created', 'needs_response'), 5)).toEqual(Array(5).fill('already_booked'));
    expect(await notesOf(p)).toHaveLength(1);
    const won = await outcomes(dispute(p, 'updated', 'won'), 6);
    expect(won.filter((o) => o === 'dispute_booked')).toHaveLength(1);
    const [note, reversal] = await notesOf(p);
    expect(reversal).toMatchObject({
      type: 'reversal',
      reason: 'dispute_won',
      reverses: { id: note!.id, number: note!.number },
      netCents: 2000,
      totalCents: 2000,
      debitedCents: 2100,
    });
    expect(await takenBack(p)).toBe(0);
    expect(await notesOf(p)).toHaveLength(2);
  });

  it('a dispute won while still open issues nothing: no money was taken definitively', async () => {
    const p = await customer('cn-dispute-won@example.com');
    await deliver(dispute(p, 'created', 'needs_response'));
    await deliver(dispute(p, 'closed', 'won'));
    expect(await takenBack(p)).toBe(0);
    expect(await notesOf(p)).toEqual([]);
  });

  it('a refund that fails after its note issues one reversal of it, by either failure event, however often delivered', async () => {
    const p = await customer('cn-refund-fails@example.com');
    const T0 = Math.floor(Date.now() / 1000) - 86_400;
    const at = (type: string, object: Record<string, unknown>, created: number) =>
      signedStripeFields({ type, created, data: { object } }, { secret: WEBHOOK_SECRET, id: `evt_cn_${++n}` });
    const total = at(
      'charge.refunded',
      { id: p.charge, object: 'charge', amount: 2000, amount_refunded: 800, currency: 'usd', payment_intent: p.paymentIntent },
      T0,
    );
    const failure = (type: string, created: number) =>
      at(
        type,
        {
          id: 're_cn_1',
          object: 'refund',
          amount: 800,
          currency: 'usd',
          status: 'failed',
          created: T0,
          charge: p.charge,
          payment_intent: p.paymentIntent,
        },
        created,
      );
    expect((await deliver(total)).body.outcome).toBe('refund_booked');
    const events = [failure('charge.refund.updated', T0 + 3600), failure('refund.failed', T0 + 3601)];
    await Promise.all([...events, ...events, ...events].map(deliver));
    const [note, reversal] = await notesOf(p);
    expect(note).toMatchObject({ type: 'credit_note', reason: 'refund', totalCents: 800, debitedCents: 840 });
    expect(reversal).toMatchObject({
      type: 'reversal',
      reason: 'refund_failed',
      reverses: { id: note!.id, number: note!.number },
      totalCents: 800,
      debitedCents: 840,
    });
    expect(await notesOf(p)).toHaveLength(2);
    expect(await takenBack(p)).toBe(0);
  });

  it('an admin deduction of paid credit names its invoice and issues one note, however often the request is retried (its key)', async () => {
    const p = await customer('cn-deduction@example.com');
    const deduct = (body: Record<string, unknown>, key: string) =>
      api.call('POST', `/v1/admin/users/${p.id}/credits`, { token: api.adminApiKey, body, headers: { 'idempotency-key': key } });
    const body = { amountCents: -500, note: 'credit paid back by bank transfer', invoiceId: p.invoiceId };
    // Retried with its Idempotency-Key (one after another: the API answers a retry still in flight 409).
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await deduct(body, 'deduct-1'));
    expect(results.map((r) => r.status)).toEqual(Array(4).fill(200));
    expect(new Set(results.map((r) => r.body.entry.seq)).size).toBe(1);
    const notes = await notesOf(p);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatchObject({
      type: 'credit_note',
      reason: 'admin_deduction',
      invoice: { id: p.invoiceId },
      netCents: 500,
      taxCents: 0,
      totalCents: 500,
      debitedCents: 500,
      lineItems: [{ type: 'topup', amountCents: 500 }],
    });
    const entries = (await ledgerOf(p.id)).filter((e) => e.type === 'deduction');
    expect(entries.map((e) => e.amountCents)).toEqual([-500]);
    // More than the invoice's paid credit left (2,000 − 500): refused, nothing changed.
    expectEnvelope(await deduct({ ...body, amountCents: -1501 }, 'deduct-2'), 400, 'validation_failed');
    // Free credit (no invoice): a deduction without a note. A grant cannot name an invoice.
    expect((await deduct({ amountCents: -100, note: 'bonus taken back' }, 'deduct-3')).status).toBe(200);
    expectEnvelope(await deduct({ ...body, amountCents: 100 }, 'deduct-4'), 400, 'validation_failed');
    // Another account's or an unknown invoice: 404.
    const other = await paidTopUp('cn-deduction-other@example.com');
    expectEnvelope(await deduct({ ...body, invoiceId: other.invoiceId }, 'deduct-5'), 404, 'not_found');
    expect(await notesOf(p)).toHaveLength(1);
    expect((await ledgerOf(p.id)).filter((e) => e.type === 'deduction').map((e) => e.amountCents)).toEqual([-500, -100]);
    // What is left can be deducted, and no more.
    expect((await deduct({ ...body, amountCents: -1500 }, 'deduct-6')).status).toBe(200);
    expect((await notesOf(p)).map((x) => x.netCents)).toEqual([500, 1500]);
    expectEnvelope(await deduct({ ...body, amountCents: -1 }, 'deduct-7'), 400, 'validation_failed');
  });

  it('an admin deduction against an invoice not paid is 409: it credited nothing', async () => {
    const token = await api.session('cn-deduction-open@example.com');
    const { id } = (await api.call('GET', '/v1/account', { token })).body;
    const { invoiceId } = (await api.call('POST', '/v1/billing/checkout', { token, body: { amountCents: 2000 } })).body;
    const res = await api.call('POST', `/v1/admin/users/${id}/credits`, {
      token: api.adminApiKey,
      body: { amountCents: -100, note: 'nothing to take', invoiceId },
    });
    expectEnvelope(res, 409, 'conflict');
  });

  it('the PDF states the note, the invoice it corrects and the amounts, and stays as issued after a profile change', async () => {
    const p = await customer('cn-pdf@example.com');
    await api.call('PUT', '/v1/account/billing-profile', {
      token: p.token,
      body: { name: 'Ada Buyer', company: 'Buyer GmbH', address: { country: 'DE', city: 'Berlin' }, vatId: null },
    });
    expect((await deliver(refunded(p, 2000))).body.outcome).toBe('refund_booked');
    const [note] = await notesOf(p);
    const { res, bytes } = await getPdf(note!.id, p.token);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/pdf');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${note!.number}.pdf"`);
    const { text, lines } = await pdfText(bytes);
    expect(text).not.toMatch(/undefined|null|NaN|\[object/);
    expect(lines.slice(0, 3)).toContain('Credit note');
    expect(text).toContain(note!.number);
    expect(text).toContain(`For invoice ${p.invoiceNumber}`);
    expect(text).toContain('Buyer GmbH');
    expect(text).toContain('Refund to the card');
    expect(lines).toContain('Total returned USD 20.00');
    expect(lines).toContain('Credit taken off the balance USD 21.00');
    expect(text).toMatch(/Top-up bonus taken back \(credit only\) USD 0\.00 USD 1\.00/);
    await api.call('PUT', '/v1/account/billing-profile', {
      token: p.token,
      body: { name: 'Someone Else', company: 'Renamed Ltd', address: { country: 'FR' }, vatId: null },
    });
    expect((await pdfText((await getPdf(note!.id, p.token)).bytes)).text).toBe(text);
  });

  it("another account's credit note (JSON and PDF) is 404 like an unknown id, and its listing shows none of them", async () => {
    const owner = await customer('cn-owner@example.com');
    await deliver(refunded(owner, 500));
    const [note] = await notesOf(owner);
    const other = await api.session('cn-other@example.com');
    expectEnvelope(await api.call('GET', `/v1/credit-notes/${note!.id}`, { token: other }), 404, 'not_found');
    const pdf = await getPdf(note!.id, other);
    expect(pdf.res.status).toBe(404);
    expect(JSON.parse(Buffer.from(pdf.bytes).toString('utf8')).error.code).toBe('not_found');
    expectEnvelope(await api.call('GET', '/v1/credit-notes/00000000-0000-4000-8000-000000000000', { token: other }), 404, 'not_found');
    expect((await api.call('GET', '/v1/credit-notes', { token: other })).body.data).toEqual([]);
  });

  it('records credit_note.issued with the note as GET shows it', async () => {
    const p = await customer('cn-event@example.com');
    await deliver(refunded(p, 1000));
    const [note] = await notesOf(p);
    const events = (await api.call('GET', '/v1/events?type=credit_note.issued', { token: p.token })).body.data;
    expect(events).toHaveLength(1);
    expect(events[0].data).toEqual(note);
  });

  it('accounts refunded all at once still get one gapless series: every number from the first to the last, once', async () => {
    const many = await Promise.all(Array.from({ length: 6 }, (_, i) => customer(`cn-burst-${i}@example.com`)));
    await Promise.all(many.flatMap((p) => [deliver(refunded(p, 2000)), deliver(refunded(p, 2000))]));
    for (const p of many) expect(await notesOf(p)).toHaveLength(1);
    const numbers = (await Promise.all(everyAccount.map(notesOf))).flat().map((x) => x.number);
    const year = numbers[0]!.slice(3, 7);
    const sequence = numbers.map((x) => Number(x.slice(8))).sort((a, b) => a - b);
    expect(new Set(numbers).size).toBe(numbers.length);
    expect(numbers.every((x) => x.startsWith(`CN-${year}-`))).toBe(true);
    expect(sequence).toEqual(Array.from({ length: sequence.length }, (_, i) => i + 1));
  });
});
