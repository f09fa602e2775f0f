import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ParsedMail, simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../shared/db/keys.ts';
import { appendLedger } from '../../shared/ledger/index.ts';
import { mailIdOf } from '../../shared/webhooks/mail-queue.ts';
import { bounces } from '../../functions/mail/handler.ts';
import { drainOutbox } from '../../shared/webhooks/dispatch.ts';
import { sendDueMail } from '../../shared/mail/sender.ts';
import { REFUSED_DOMAIN, storedMessages } from '../../dev/mail-server.ts';
import { MAIL_RETRY_DELAYS_MS } from '../../shared/mail/sender.ts';
import { getRaw, setAttributes } from '../helpers/db.ts';
import { startFakeStripe, type FakeStripe } from '../helpers/fake-stripe.ts';
import { pdfText } from '../helpers/pdf-text.ts';
import { signedStripeEvent } from '../helpers/stripe-events.ts';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { waitFor } from '../helpers/until.ts';

/**
 * Customer mail as a person receives it (docs/mail.md): the test stack's real SMTP server keeps
 * every message as an .eml file; each is read back with mailparser (headers, both parts, the
 * attachment) and its PDF with pdf.js. Payments through Stripe's signed events (the strict fake
 * for the API calls); the webhook fan-out queues the mail, the sender in the stack sends it.
 */
const WEBHOOK_SECRET = 'whsec_test_mail_0123456789';
let stripeFake: FakeStripe;
let api: TestApi;

beforeAll(async () => {
  stripeFake = await startFakeStripe();
  process.env.STRIPE_SECRET_KEY = 'sk_test_fake_key_for_tests';
  process.env.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET;
  process.env.STRIPE_API_URL = stripeFake.url;
  api = await startTestApi({ panel: false });
});
afterAll(async () => {
  await api?.stop();
  await stripeFake?.close();
});

let n = 0;
const signed = (type: string, object: Record<string, unknown>) =>
  signedStripeEvent(type, object, { secret: WEBHOOK_SECRET, id: `evt_mail_${++n}_${Math.random().toString(36).slice(2)}` });
const deliver = (event: { body: string; signature?: string }) =>
  api.call('POST', '/v1/webhooks/stripe', {
    token: null,
    rawBody: event.body,
    headers: { 'content-type': 'application/json', ...(event.signature ? { 'stripe-signature': event.signature } : {}) },
  });

/** Every message in the SMTP server's folder addressed to `email`, parsed. */
async function messagesTo(email: string): Promise<ParsedMail[]> {
  const dir = api.mail!.dir;
  const all = await Promise.all(storedMessages(dir).map((f) => simpleParser(readFileSync(join(dir, f)))));
  return all.filter((m) => [m.to ?? []].flat().some((to) => to.value.some((v) => v.address === email)));
}
/** Waits until `count` messages of `email` are in the folder (the sender runs in the stack). */
const arrived = (email: string, count = 1) =>
  waitFor(
    () => messagesTo(email),
    (list) => list.length >= count,
  );

/** The mail item of an event's message, once the sender has closed it. */
const closedMail = (eventId: string, type: string) =>
  waitFor(
    () => getRaw(keys.mail(mailIdOf(eventId, type))),
    (item) => item !== undefined && item.status !== 'pending',
  );

async function eventOf(token: string, type: string): Promise<{ id: string; data: Record<string, unknown> }> {
  const page = await waitFor(
    () => api.call('GET', `/v1/events?type=${type}&limit=10`, { token }),
    (res) => res.body?.data?.length > 0,
  );
  return page.body.data[0];
}

async function paidTopUp(email: string, amountCents = 2000) {
  const token = await api.session(email);
  const { id } = (await api.call('GET', '/v1/account', { token })).body;
  const res = await api.call('POST', '/v1/billing/checkout', { token, body: { amountCents } });
  expect(res.status, res.text).toBe(201);
  const invoiceId = res.body.invoiceId as string;
  const session = [...stripeFake.sessions.values()].find((s) => s.client_reference_id === invoiceId)!;
  const paymentIntent = `pi_${invoiceId.replace(/-/g, '').slice(0, 20)}`;
  const completed = signed('checkout.session.completed', {
    ...session,
    status: 'complete',
    payment_status: 'paid',
    payment_intent: paymentIntent,
  });
  expect((await deliver(completed)).body.outcome).toBe('credited');
  return { token, id: id as string, invoiceId, invoiceNumber: res.body.invoiceNumber as string, paymentIntent, completed };
}

describe('a paid top-up', () => {
  let paid: Awaited<ReturnType<typeof paidTopUp>>;

  it('sends one receipt to the account with both parts, the link to billing and the invoice PDF', async () => {
    paid = await paidTopUp('mail-receipt@example.com');
    const [receipt] = await arrived('mail-receipt@example.com');
    expect(receipt!.subject).toBe(`Receipt for your top-up: invoice ${paid.invoiceNumber}`);
    expect(receipt!.from?.value[0]?.address).toBe(process.env.MAIL_FROM);
    expect(receipt!.headers.get('x-message-type')).toBe('receipt');
    // Transactional: no unsubscribe (docs/mail.md; optional mail's headers: mail-preferences.test.ts).
    expect(receipt!.headerLines.map((h) => h.key)).not.toContain('list-unsubscribe');
    expect(receipt!.headerLines.map((h) => h.key)).not.toContain('list-unsubscribe-post');
    expect(receipt!.text).toContain(`Invoice ${paid.invoiceNumber} is attached`);
    expect(receipt!.text).toContain(`${api.baseUrl}/app/billing`);
    expect(receipt!.html).toContain(`href="${api.baseUrl}/app/billing"`);
    expect(receipt!.html).toContain(`invoice ${paid.invoiceNumber}`);
    expect(receipt!.attachments.map((a) => [a.filename, a.contentType])).toEqual([[`${paid.invoiceNumber}.pdf`, 'application/pdf']]);
    const pdf = await pdfText(new Uint8Array(receipt!.attachments[0]!.content));
    expect(pdf.text).toContain(paid.invoiceNumber);
  });

  it('the replayed Stripe event sends no second receipt', async () => {
    expect((await deliver(paid.completed)).body.outcome).not.toBe('credited');
    const event = await eventOf(paid.token, 'invoice.paid');
    await drainOutbox();
    await sendDueMail();
    expect((await closedMail(event.id, 'receipt'))!.status).toBe('sent');
    expect(await messagesTo('mail-receipt@example.com')).toHaveLength(1);
  });

  it('the event put back in the outbox (a fan-out run again) sends no second receipt', async () => {
    const event = await eventOf(paid.token, 'invoice.paid');
    await setAttributes(keys.event(paid.id, event.id), keys.outboxEntry(event.id));
    // Fanned out again (the stack's dispatcher or this call, whichever comes first), then every due message sent.
    await drainOutbox();
    await waitFor(
      () => getRaw(keys.event(paid.id, event.id)),
      (item) => item?.GSI2PK === undefined,
    );
    await sendDueMail();
    expect((await getRaw(keys.mail(mailIdOf(event.id, 'receipt'))))!.status).toBe('sent');
    expect(await messagesTo('mail-receipt@example.com')).toHaveLength(1);
  });

  it('a refund sends one credit note with its PDF', async () => {
    const charge = `ch_${paid.paymentIntent.slice(3)}`;
    const refund = signed('charge.refunded', {
      id: charge,
      object: 'charge',
      amount: 2000,
      amount_refunded: 2000,
      currency: 'usd',
      refunded: true,
      payment_intent: paid.paymentIntent,
      metadata: {},
    });
    expect((await deliver(refund)).body.outcome).toBe('refund_booked');
    const note = (await eventOf(paid.token, 'credit_note.issued')).data as { number: string };
    const mails = await arrived('mail-receipt@example.com', 2);
    const credit = mails.find((m) => m.headers.get('x-message-type') === 'credit-note')!;
    expect(credit.subject).toBe(`Credit note ${note.number} for invoice ${paid.invoiceNumber}`);
    expect(credit.text).toContain(`${api.baseUrl}/app/billing`);
    expect(credit.html).toContain(note.number);
    expect(credit.attachments.map((a) => a.filename)).toEqual([`${note.number}.pdf`]);
    expect(credit.headerLines.map((h) => h.key)).not.toContain('list-unsubscribe');
    expect((await pdfText(new Uint8Array(credit.attachments[0]!.content))).text).toContain(note.number);
    // Replayed: booked once, so one note and one message.
    expect((await deliver(refund)).body.outcome).not.toBe('refund_booked');
    await drainOutbox();
    await sendDueMail();
    expect((await messagesTo('mail-receipt@example.com')).filter((m) => m.headers.get('x-message-type') === 'credit-note')).toHaveLength(1);
  });
});

describe('low balance', () => {
  it('sends one warning when the balance falls below the threshold', async () => {
    const token = await api.session('mail-low@example.com');
    const { id, balanceCents } = (await api.call('GET', '/v1/account', { token })).body;
    const threshold = balanceCents + 500;
    expect((await api.call('PUT', '/v1/account/alerts', { token, body: { lowBalanceThresholdCents: threshold } })).status).toBe(200);
    await appendLedger(id, [{ type: 'charge', amountCents: -1, idempotencyKey: `mail-test:${id}:1` }]);
    await appendLedger(id, [{ type: 'charge', amountCents: -1, idempotencyKey: `mail-test:${id}:2` }]);
    const [low] = await arrived('mail-low@example.com');
    expect(low!.subject).toMatch(/^Your balance is low: /);
    expect(low!.text).toContain(`${api.baseUrl}/app/billing`);
    expect(low!.html).toContain('Top up');
    expect(low!.attachments).toEqual([]);
    await drainOutbox();
    await sendDueMail();
    expect(await messagesTo('mail-low@example.com')).toHaveLength(1);
  });
});

describe('a mailbox the server refuses', () => {
  it('is retried with backoff while another account’s message goes out', async () => {
    const refusedEmail = `mail-refused@${REFUSED_DOMAIN}`;
    const low = async (email: string) => {
      const token = await api.session(email);
      const { id, balanceCents } = (await api.call('GET', '/v1/account', { token })).body;
      expect((await api.call('PUT', '/v1/account/alerts', { token, body: { lowBalanceThresholdCents: balanceCents + 500 } })).status).toBe(
        200,
      );
      await appendLedger(id, [{ type: 'charge', amountCents: -1, idempotencyKey: `mail-test:${id}:refused` }]);
      return (await eventOf(token, 'balance.low')).id;
    };
    const refused = await low(refusedEmail);
    const fine = await low('mail-fine@example.com');
    await arrived('mail-fine@example.com');
    const first = await waitFor(
      () => getRaw(keys.mail(mailIdOf(refused, 'low-balance'))),
      (item) => (item?.attempts as unknown[] | undefined)?.length === 1,
    );
    expect(first).toMatchObject({ status: 'pending', attempts: [{ error: expect.stringContaining('550') }] });
    const firstAt = Date.parse((first!.attempts as { at: string }[])[0]!.at);
    expect(Date.parse(first!.nextAttemptAt as string) - firstAt).toBe(MAIL_RETRY_DELAYS_MS[0]);
    // Not due before its time; due after it, refused again, and the next wait is longer.
    expect(await sendDueMail(new Date(firstAt + MAIL_RETRY_DELAYS_MS[0] - 1_000))).toMatchObject({ retrying: 0 });
    expect(await sendDueMail(new Date(firstAt + MAIL_RETRY_DELAYS_MS[0] + 1_000))).toMatchObject({ retrying: 1, sent: 0 });
    const second = await getRaw(keys.mail(mailIdOf(refused, 'low-balance')));
    expect(second!.attempts).toHaveLength(2);
    expect(Date.parse(second!.nextAttemptAt as string) - Date.parse((second!.attempts as { at: string }[])[1]!.at)).toBe(
      MAIL_RETRY_DELAYS_MS[1],
    );
    expect((await getRaw(keys.mail(mailIdOf(fine, 'low-balance'))))!.status).toBe('sent');
    expect(await messagesTo(refusedEmail)).toEqual([]);
  });
});

describe('bounces and complaints', () => {
  it('an address SES reported as a permanent bounce gets no mail; the message is closed as suppressed', async () => {
    const email = 'mail-bounced@example.com';
    const notification = {
      eventType: 'Bounce',
      bounce: { bounceType: 'Permanent', bouncedRecipients: [{ emailAddress: email.toUpperCase() }] },
    };
    expect(await bounces({ Records: [{ Sns: { Message: JSON.stringify(notification) } }] })).toEqual({ suppressed: 1 });
    const paidBounced = await paidTopUp(email);
    const event = await eventOf(paidBounced.token, 'invoice.paid');
    const item = await closedMail(event.id, 'receipt');
    expect(item).toMatchObject({ status: 'suppressed', recipient: email });
    expect(await messagesTo(email)).toEqual([]);
  });

  it('a transient bounce suppresses nothing; a complaint does', async () => {
    const transient = {
      eventType: 'Bounce',
      bounce: { bounceType: 'Transient', bouncedRecipients: [{ emailAddress: 'full@example.com' }] },
    };
    const complaint = { eventType: 'Complaint', complaint: { complainedRecipients: [{ emailAddress: 'angry@example.com' }] } };
    expect(await bounces({ Records: [{ Sns: { Message: JSON.stringify(transient) } }] })).toEqual({ suppressed: 0 });
    expect(await bounces({ Records: [{ Sns: { Message: JSON.stringify(complaint) } }, { Sns: { Message: 'not json' } }] })).toEqual({
      suppressed: 1,
    });
    expect(await getRaw(keys.mailSuppression('full@example.com'))).toBeUndefined();
    expect(await getRaw(keys.mailSuppression('angry@example.com'))).toMatchObject({ reason: 'complaint' });
  });
});

describe('the local mail page', () => {
  it('lists the messages newest first and shows one with its HTML sandboxed', async () => {
    const list = await fetch(`${api.baseUrl}/dev/mail`);
    expect(list.status).toBe(200);
    expect(list.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await list.text();
    expect(html).toContain('mail-receipt@example.com');
    const first = /href="\/dev\/mail\/([^"]+)"/.exec(html)![1]!;
    expect(decodeURIComponent(first)).toBe(storedMessages(api.mail!.dir)[0]);
    const one = await (await fetch(`${api.baseUrl}/dev/mail/${first}`)).text();
    expect(one).toContain('<iframe sandbox=""');
    expect(one).not.toMatch(/<a href="http[^"]*\/app\/billing"/); // the message's own markup only inside srcdoc, escaped
    expect((await fetch(`${api.baseUrl}/dev/mail/..%2Fpanel-keys.json`)).status).toBe(404);
  });
});
