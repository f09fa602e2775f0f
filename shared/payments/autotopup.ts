import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { getConfig } from '../config/env.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { AccountItem, AutoTopUpItem, InvoiceItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { AUTO_TOPUP_SHARDS } from '../db/table.ts';
import { isConditionFailed, type NamedWrite, transact, writeIfFirst } from '../db/write.ts';
import { ApiError, notFound } from '../errors.ts';
import type { AutoTopUp, AutoTopUpRule, PaymentMethod, PaymentMethodSetupRequest, WebhookOutcome } from '../api/schemas.ts';
import { attachSession, findInvoiceItem, type InvoiceView, openInvoice, toInvoiceView, voidInvoice, wasPaid } from '../invoices/index.ts';
import { missingSellerFields } from '../invoices/parties.ts';
import { errorFields, logger } from '../observability/logger.ts';
import { getSettings } from '../settings/index.ts';
import { profileOf } from '../settings/limits.ts';
import { eventWrite } from '../webhooks/events.ts';
import { type AutoTopUpIntent, parseAutoTopUpIntent } from './autotopup-event.ts';
import type { CheckoutSession } from './checkout-event.ts';
import { creditInvoice } from './credit.ts';
import { calculateAutoTopUpTax, recordTaxTransaction } from './stripe-tax.ts';
import { checkoutLines, topUpTax } from './topup-tax.ts';
import { sandbox } from './sandbox.ts';
import { paymentsConfig, returnUrls, stripe } from './stripe-client.ts';

/**
 * Auto top-up with a saved card (README "Auto top-up", ARCHITECTURE.md "Money").
 *
 * - The card is saved through Stripe Checkout in setup mode, to a Stripe Customer of the account;
 *   the signed `checkout.session.completed` (mode setup) stores its PaymentMethod id, brand, last4.
 * - The rule lives on the account's AUTOTOPUP item; while enabled its threshold is copied to the
 *   profile (`autoTopUpBelowCents`), so the ledger marks a debit that leaves the balance below it
 *   (shared/ledger autoTopUpMark: `autoTopUpDue` and GSI2 TOPUPDUE#<n>) in the debit's transaction.
 * - The every-minute system loop (runAutoTopUps) takes the marked profiles, claims an attempt
 *   with one conditional transaction (the mark still there, no attempt in flight, the day's count as
 *   read and below maxPerDay), opens the invoice and creates the off-session PaymentIntent with the
 *   idempotency key `autotopup:<account>:<UTC day>:<n>`. No customer request and no billing pass
 *   ever waits for Stripe.
 * - Under Stripe Tax a Tax Calculation comes before the PaymentIntent (./stripe-tax.ts): the card pays
 *   its gross; without one (no address Stripe Tax can place) the attempt fails, nothing charged.
 * - Only the webhook books: `payment_intent.succeeded` credits the invoice through creditInvoice
 *   (the Checkout path: once, with the bonus); `payment_intent.payment_failed` records the failure
 *   and its event once (conditional on the attempt still in flight), voids the invoice, and turns
 *   the rule off after the platform's `autoTopUpMaxFailures` failures in a row.
 * The sandbox (the local stack's hook, ./sandbox.ts) saves Stripe's test card names and answers
 * each as Stripe would, through the same signed webhook code.
 */
export type AutoTopUpView = z.infer<typeof AutoTopUp>;
export type PaymentMethodView = z.infer<typeof PaymentMethod>;

/** An attempt in flight this long without Stripe's answer (a crash between claim and charge) may be claimed again. */
export const STALE_ATTEMPT_MS = 30 * 60_000;
export const AUTO_TOPUPS_PER_RUN = 50;

const utcDay = (at: Date): string => at.toISOString().slice(0, 10);

/** The rule an account without one shows: off, with the smallest top-up. */
async function defaults(): Promise<Pick<AutoTopUpItem, 'enabled' | 'belowCents' | 'amountCents' | 'maxPerDay'>> {
  const settings = await getSettings();
  return { enabled: false, belowCents: settings.minimumTopUpCents, amountCents: settings.minimumTopUpCents, maxPerDay: 1 };
}

async function viewOf(item: AutoTopUpItem | undefined, now = new Date()): Promise<AutoTopUpView> {
  const rule = item ?? (await defaults());
  const today = item?.day === utcDay(now) ? (item.dayCount ?? 0) : 0;
  const reason = item?.disabledReason;
  const pending = item?.pendingPayment;
  return {
    enabled: rule.enabled,
    belowCents: rule.belowCents,
    amountCents: rule.amountCents,
    maxPerDay: rule.maxPerDay,
    cardSaved: Boolean(item?.paymentMethodId),
    attemptsToday: Math.min(today, 10),
    inFlight: Boolean(item?.inFlightInvoiceId),
    consecutiveFailures: item?.consecutiveFailures ?? 0,
    disabledReason: reason === 'failures' || reason === 'card_removed' || reason === 'authentication_required' ? reason : null,
    lastFailure: item?.lastFailure ?? null,
    pendingPayment: pending && Date.parse(pending.expiresAt) > now.getTime() ? pending : null,
  };
}

const cardOf = (item: AutoTopUpItem | undefined): PaymentMethodView => ({
  card:
    item?.paymentMethodId && item.cardSavedAt && item.cardId
      ? { id: item.cardId, brand: item.cardBrand ?? 'card', last4: item.cardLast4 ?? '0000', savedAt: item.cardSavedAt }
      : null,
});

export async function getAutoTopUp(accountId: string): Promise<AutoTopUpView> {
  return viewOf(await accessPatterns.autoTopUpOf(accountId));
}

export async function getPaymentMethod(accountId: string): Promise<PaymentMethodView> {
  return cardOf(await accessPatterns.autoTopUpOf(accountId));
}

/** SET clauses that create the item with its defaults when it does not exist yet. */
function createdWith(base: Awaited<ReturnType<typeof defaults>>, accountId: string, now: string) {
  return {
    expression:
      'kind = :kind, accountId = :account, updatedAt = :now, consecutiveFailures = if_not_exists(consecutiveFailures, :zero), ' +
      'enabled = if_not_exists(enabled, :off), belowCents = if_not_exists(belowCents, :below0), ' +
      'amountCents = if_not_exists(amountCents, :amount0), maxPerDay = if_not_exists(maxPerDay, :max0)',
    values: {
      ':kind': 'auto-topup',
      ':account': accountId,
      ':now': now,
      ':zero': 0,
      ':off': false,
      ':below0': base.belowCents,
      ':amount0': base.amountCents,
      ':max0': base.maxPerDay,
    },
  };
}

/** The profile without the armed threshold and any due mark: the ledger stops marking. */
const disarmProfile = (accountId: string): NamedWrite => ({
  name: 'profile',
  Update: {
    Key: keys.account(accountId),
    UpdateExpression: 'REMOVE autoTopUpBelowCents, autoTopUpDue, GSI2PK, GSI2SK',
    ConditionExpression: 'attribute_exists(PK)',
  },
});

/**
 * Sets the rule. Enabling needs a saved card (a condition on the item, so a concurrent DELETE
 * cannot leave a rule enabled without one) and re-arms after the service turned it off. Enabled
 * while the balance is already below the threshold, it is due at once (the next loop charges).
 */
export async function setAutoTopUp(
  accountId: string,
  rule: z.infer<typeof AutoTopUpRule>,
  now = new Date(),
): Promise<{ before: AutoTopUpView; view: AutoTopUpView }> {
  const settings = await getSettings();
  if (rule.amountCents < settings.minimumTopUpCents || rule.amountCents > settings.maximumTopUpCents) {
    const message = `must be between ${settings.minimumTopUpCents} and ${settings.maximumTopUpCents}`;
    throw new ApiError('validation_failed', `amountCents ${message}`, { issues: [{ field: 'body.amountCents', message }] });
  }
  const [item, profile] = await Promise.all([accessPatterns.autoTopUpOf(accountId), profileOf(accountId)]);
  const noCard = () =>
    new ApiError('conflict', 'Save a card first (POST /v1/billing/payment-method/checkout): auto top-up charges the saved card');
  if (rule.enabled && !item?.paymentMethodId) throw noCard();
  const at = now.toISOString();
  const dueNow = rule.enabled && Number(profile.balanceCents ?? 0) < rule.belowCents && !profile.autoTopUpDue;
  const due = keys.autoTopUpDue(accountId, at);
  try {
    await transact([
      {
        name: 'rule',
        Update: {
          Key: keys.autoTopUp(accountId),
          UpdateExpression:
            'SET kind = :kind, accountId = :account, enabled = :enabled, belowCents = :below, amountCents = :amount, maxPerDay = :max, ' +
            // Turned on by the account: the pending payment's page stays payable, but no longer turns the rule on.
            `updatedAt = :now, disabledReason = :null, consecutiveFailures = :failures${rule.enabled ? ' REMOVE pendingPayment' : ''}`,
          ...(rule.enabled ? { ConditionExpression: 'attribute_exists(paymentMethodId)' } : {}),
          ExpressionAttributeValues: {
            ':kind': 'auto-topup',
            ':account': accountId,
            ':enabled': rule.enabled,
            ':below': rule.belowCents,
            ':amount': rule.amountCents,
            ':max': rule.maxPerDay,
            ':now': at,
            ':null': null,
            // Turning it on starts the failure count afresh; turning it off keeps it to read.
            ':failures': rule.enabled ? 0 : (item?.consecutiveFailures ?? 0),
          },
        },
      },
      rule.enabled
        ? {
            name: 'profile',
            Update: {
              Key: keys.account(accountId),
              UpdateExpression: `SET autoTopUpBelowCents = :below${dueNow ? ', autoTopUpDue = :at, GSI2PK = :pk, GSI2SK = :sk' : ''}`,
              ConditionExpression: 'attribute_exists(PK)',
              ExpressionAttributeValues: {
                ':below': rule.belowCents,
                ...(dueNow ? { ':at': at, ':pk': due.GSI2PK, ':sk': due.GSI2SK } : {}),
              },
            },
          }
        : disarmProfile(accountId),
    ]);
  } catch (err) {
    if (isConditionFailed(err, 'rule')) throw noCard();
    throw err;
  }
  return { before: await viewOf(item, now), view: await getAutoTopUp(accountId) };
}

// ---- saving a card ------------------------------------------------------------------------------

/**
 * Opens a Checkout Session in setup mode for the account's Stripe Customer (created once, with an
 * idempotency key of the account, and kept). Only the session opened last may save a card.
 */
export async function startCardSetup(
  principal: { accountId: string; email: string },
  input: z.infer<typeof PaymentMethodSetupRequest>,
  baseUrl: string,
): Promise<{ url: string; sessionId: string }> {
  const config = await paymentsConfig();
  if (!config.provider) throw new ApiError('payments_unavailable', 'Payments are not configured on this platform');
  const { accountId } = principal;
  const item = await accessPatterns.autoTopUpOf(accountId);
  const { successUrl, cancelUrl } = returnUrls(config, baseUrl, input);
  let customerId = item?.customerId;
  let session: { id: string; url: string };
  if (config.provider === 'sandbox') {
    customerId ??= `cus_sandbox_${accountId.replace(/-/g, '').slice(0, 24)}`;
    // The sandbox's card page finds the account in its session id (there is no Stripe to ask).
    const id = `cs_sandbox_setup_${accountId}_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
    session = { id, url: `${baseUrl}/dev/payment-method/${id}` };
  } else {
    try {
      const client = await stripe(config);
      customerId ??= (
        await client.customers.create(
          { email: principal.email, metadata: { account_id: accountId } },
          // One customer per account, even when two first setups race.
          { idempotencyKey: `customer:${accountId}` },
        )
      ).id;
      const created = await client.checkout.sessions.create({
        mode: 'setup',
        currency: (await getSettings()).currency,
        customer: customerId,
        client_reference_id: accountId,
        metadata: { account_id: accountId, purpose: 'auto_topup_card' },
        setup_intent_data: { metadata: { account_id: accountId } },
        success_url: successUrl,
        cancel_url: cancelUrl,
      });
      if (!created.url) throw new Error('Stripe returned a session without a URL');
      session = { id: created.id, url: created.url };
    } catch (err) {
      logger.error('card setup: Stripe session failed', { accountId, ...errorFields(err) });
      throw new ApiError('payment_provider_error', 'The payment provider could not open the card page; try again');
    }
  }
  const now = new Date().toISOString();
  const created = createdWith(await defaults(), accountId, now);
  await transact([
    {
      name: 'rule',
      Update: {
        Key: keys.autoTopUp(accountId),
        UpdateExpression: `SET ${created.expression}, customerId = :customer, pendingSetupSessionId = :session, returnTo = :returnTo`,
        ExpressionAttributeValues: {
          ...created.values,
          ':customer': customerId,
          ':session': session.id,
          ':returnTo': { successUrl, cancelUrl, apiBaseUrl: baseUrl },
        },
      },
    },
  ]);
  return { url: session.url, sessionId: session.id };
}

/** The saved card of a completed setup session: the sandbox's names, else Stripe's SetupIntent. */
async function cardOfSetup(session: CheckoutSession): Promise<{ paymentMethodId: string; brand: string; last4: string } | null> {
  const setupIntent = typeof session.setup_intent === 'string' ? session.setup_intent : session.setup_intent?.id;
  if (!setupIntent) return null;
  const config = await paymentsConfig();
  if (config.provider === 'sandbox') return sandbox().savedCard(setupIntent);
  const intent = await (await stripe(config)).setupIntents.retrieve(setupIntent, { expand: ['payment_method'] });
  const pm = intent.payment_method;
  if (!pm) return null;
  if (typeof pm === 'string') return { paymentMethodId: pm, brand: 'card', last4: '0000' };
  return { paymentMethodId: pm.id, brand: pm.card?.brand ?? 'card', last4: pm.card?.last4 ?? '0000' };
}

/**
 * `checkout.session.completed` in setup mode: saves the card, once, and only for the session the
 * account opened last (a replay, or an older session completing late, saves nothing).
 */
export async function saveCard(session: CheckoutSession): Promise<WebhookOutcome> {
  const accountId = session.metadata?.account_id ?? session.client_reference_id;
  if (!accountId) return 'ignored';
  const item = await accessPatterns.autoTopUpOf(accountId);
  const customer = typeof session.customer === 'string' ? session.customer : session.customer?.id;
  if (!item || item.pendingSetupSessionId !== session.id || (customer && customer !== item.customerId)) {
    logger.warn('card setup for a session that is not the pending one; nothing saved', { accountId, sessionId: session.id });
    return item?.paymentMethodId ? 'already_fulfilled' : 'ignored';
  }
  const card = await cardOfSetup(session);
  if (!card) {
    logger.warn('card setup without a payment method; nothing saved', { accountId, sessionId: session.id });
    return 'ignored';
  }
  const saved = await writeIfFirst({
    Update: {
      Key: keys.autoTopUp(accountId),
      UpdateExpression:
        'SET paymentMethodId = :pm, cardId = :cardId, cardBrand = :brand, cardLast4 = :last4, cardSavedAt = :now, updatedAt = :now REMOVE pendingSetupSessionId',
      ConditionExpression: 'pendingSetupSessionId = :session',
      ExpressionAttributeValues: {
        ':pm': card.paymentMethodId,
        ':cardId': randomUUID(),
        ':brand': card.brand,
        ':last4': card.last4,
        ':now': new Date().toISOString(),
        ':session': session.id,
      },
    },
  });
  return saved ? 'card_saved' : 'already_fulfilled';
}

/**
 * Forgets the card `cardId` (and detaches it at Stripe); the rule turns off. Another id (a card
 * saved since, another account's) is 404 and changes nothing.
 */
export async function forgetCard(accountId: string, cardId: string): Promise<{ before: PaymentMethodView; view: PaymentMethodView }> {
  const item = await accessPatterns.autoTopUpOf(accountId);
  const before = cardOf(item);
  if (!item?.paymentMethodId || item.cardId !== cardId) throw notFound('Payment method');
  try {
    await transact([
      {
        name: 'rule',
        Update: {
          Key: keys.autoTopUp(accountId),
          UpdateExpression:
            'SET enabled = :off, updatedAt = :now, disabledReason = :reason REMOVE paymentMethodId, cardId, cardBrand, cardLast4, cardSavedAt',
          ConditionExpression: 'cardId = :cardId',
          ExpressionAttributeValues: {
            ':off': false,
            ':now': new Date().toISOString(),
            ':reason': item.enabled ? 'card_removed' : (item.disabledReason ?? null),
            ':cardId': cardId,
          },
        },
      },
      disarmProfile(accountId),
    ]);
  } catch (err) {
    // Forgotten or replaced meanwhile.
    if (isConditionFailed(err, 'rule')) throw notFound('Payment method');
    throw err;
  }
  const config = await paymentsConfig();
  if (config.provider === 'stripe' && item.paymentMethodId.startsWith('pm_')) {
    // Best effort: our copy is gone, so nothing charges it again whatever Stripe answers.
    await (await stripe(config)).paymentMethods
      .detach(item.paymentMethodId)
      .catch((err: unknown) => logger.warn('card detach at Stripe failed', { accountId, ...errorFields(err) }));
  }
  return { before, view: cardOf(undefined) };
}

// ---- the every-minute loop ----------------------------------------------------------------------

export interface AutoTopUpSummary {
  due: number;
  attempted: number;
  skipped: number;
  failed: number;
}

/** Takes the profiles the ledger marked due and attempts one auto top-up each (runs may overlap). */
export async function runAutoTopUps(at = new Date(), limit = AUTO_TOPUPS_PER_RUN): Promise<AutoTopUpSummary> {
  const summary: AutoTopUpSummary = { due: 0, attempted: 0, skipped: 0, failed: 0 };
  if (!getConfig().payments.provider) return summary;
  const due: AccountItem[] = [];
  const nowIso = at.toISOString();
  for (let shard = 0; shard < AUTO_TOPUP_SHARDS && due.length < limit; shard++) {
    due.push(...(await accessPatterns.dueAutoTopUpsOfShard(shard, nowIso, limit - due.length)));
  }
  summary.due = due.length;
  for (const profile of due) {
    try {
      const outcome = await attemptAutoTopUp(profile.accountId, at);
      if (outcome === 'attempted') summary.attempted++;
      else summary.skipped++;
    } catch (err) {
      summary.failed++;
      logger.error('auto top-up attempt failed', { accountId: profile.accountId, ...errorFields(err) });
    }
  }
  if (summary.due) logger.info('auto top-ups', { ...summary });
  return summary;
}

/** Takes the due mark off the profile, only if it is still the mark read (a newer one stays). */
const clearMark = (accountId: string, dueAt: string): NamedWrite => ({
  name: 'mark',
  Update: {
    Key: keys.account(accountId),
    UpdateExpression: 'REMOVE autoTopUpDue, GSI2PK, GSI2SK',
    ConditionExpression: 'autoTopUpDue = :due',
    ExpressionAttributeValues: { ':due': dueAt },
  },
});

export type AttemptOutcome = 'attempted' | 'resolved' | 'not_due' | 'daily_limit' | 'in_flight' | 'taken' | 'no_seller';

/** Stripe keeps an Idempotency-Key's answer at least this long: sending the same request again is safe within it. */
const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60_000;

/**
 * One account's attempt. The claim is one transaction: the due mark comes off (conditional on the
 * mark read) and the rule records the attempt (conditional on no attempt in flight and the day's
 * count as read), so two loops, or a loop and a retry, make one attempt, and never more than
 * maxPerDay a day. Then the invoice, then the PaymentIntent under the attempt's idempotency key.
 * While the seller details are not set nothing is claimed (`no_seller`) and the mark stays.
 * An attempt in flight past STALE_ATTEMPT_MS is resolved by reading Stripe (resolveStaleAttempt).
 */
export async function attemptAutoTopUp(accountId: string, at = new Date()): Promise<AttemptOutcome> {
  const [profile, rule] = await Promise.all([accessPatterns.accountById(accountId), accessPatterns.autoTopUpOf(accountId)]);
  const dueAt = profile?.autoTopUpDue;
  if (!profile || !dueAt) return 'taken';
  const day = utcDay(at);
  const drop = async (outcome: AttemptOutcome): Promise<AttemptOutcome> => {
    await transact([clearMark(accountId, dueAt)]).catch((err: unknown) => {
      if (!isConditionFailed(err)) throw err;
    });
    return outcome;
  };
  const provider = getConfig().payments.provider!;
  const stale = rule?.inFlightAt !== undefined && at.getTime() - Date.parse(rule.inFlightAt) > STALE_ATTEMPT_MS;
  // Stripe may have charged for it: what it says settles the attempt. (The sandbox answers at once, so it never has one pending.)
  if (rule?.inFlightInvoiceId && stale && provider === 'stripe') {
    return drop((await claimResolution(rule, at)) ? await resolveStaleAttempt(rule, at) : 'taken');
  }
  if (!rule?.enabled || !rule.paymentMethodId || !rule.customerId || Number(profile.balanceCents ?? 0) >= rule.belowCents) {
    return drop('not_due');
  }
  if (rule.inFlightInvoiceId && !stale) return drop('in_flight');
  // No invoice without a seller: nothing is charged and no number taken; the mark stays, so the
  // top-up happens once an admin sets the seller (shared/invoices/parties.ts).
  if (missingSellerFields((await getSettings()).invoiceIssuer).length) {
    logger.warn('auto top-up waits: the seller details (setting invoiceIssuer) are not set', { accountId });
    return 'no_seller';
  }
  const countToday = rule.day === day ? (rule.dayCount ?? 0) : 0;
  if (countToday >= rule.maxPerDay) return drop('daily_limit');
  const n = countToday + 1;
  const invoiceId = randomUUID();
  const idempotencyKey = `autotopup:${accountId}:${day}:${n}`;
  try {
    await transact([
      clearMark(accountId, dueAt),
      {
        name: 'rule',
        Update: {
          Key: keys.autoTopUp(accountId),
          UpdateExpression:
            'SET #day = :day, dayCount = :n, inFlightInvoiceId = :invoice, inFlightAt = :at, inFlightKey = :key REMOVE inFlightPaymentIntentId',
          ConditionExpression:
            'enabled = :on AND paymentMethodId = :pm AND ' +
            (rule.inFlightInvoiceId ? 'inFlightInvoiceId = :previous' : 'attribute_not_exists(inFlightInvoiceId)') +
            (rule.day === day ? ' AND #day = :day AND dayCount = :count' : ' AND (attribute_not_exists(#day) OR #day <> :day)'),
          ExpressionAttributeNames: { '#day': 'day' },
          ExpressionAttributeValues: {
            ':day': day,
            ':n': n,
            ':invoice': invoiceId,
            ':at': at.toISOString(),
            ':key': idempotencyKey,
            ':on': true,
            ':pm': rule.paymentMethodId,
            ...(rule.inFlightInvoiceId ? { ':previous': rule.inFlightInvoiceId } : {}),
            ...(rule.day === day ? { ':count': countToday } : {}),
          },
        },
      },
    ]);
  } catch (err) {
    if (isConditionFailed(err)) return 'taken';
    throw err;
  }
  const settings = await getSettings();
  // Stripe Tax: calculated before the charge (no Checkout Session computes it here); without a calculation nothing is charged.
  const stripeTax =
    settings.tax.treatment === 'stripe' ? await calculateAutoTopUpTax(accountId, rule.amountCents, settings.currency, provider) : null;
  const invoice = await openInvoice({
    accountId,
    amountCents: rule.amountCents,
    bonusPercent: settings.topUpBonusPercent,
    provider,
    invoiceId,
    now: at,
    ...(stripeTax?.calculated ? stripeTax : await topUpTax(accountId, rule.amountCents, settings.tax)),
  });
  if (stripeTax && !stripeTax.calculated) {
    // Recorded as a decline is (the rule's lastFailure, `auto_topup.failed`), the invoice void: nothing was asked of the card.
    const item = await findInvoiceItem(invoice.id);
    if (item) await recordFailure(item, stripeTax.code, { endAttempt: true });
    return 'attempted';
  }
  const taxCalculationId = stripeTax?.calculated ? stripeTax.taxCalculationId : undefined;
  if (provider === 'sandbox') {
    // The sandbox answers as Stripe would for its test card: the signed PaymentIntent event, through the webhook code.
    await sandbox().charge({
      customerId: rule.customerId,
      paymentMethodId: rule.paymentMethodId,
      // The card pays the gross: the top-up and its tax.
      amountCents: invoice.totalCents,
      metadata: metadataOf(accountId, invoice, taxCalculationId),
    });
    return 'attempted';
  }
  await chargeOffSession(rule, invoice, idempotencyKey, taxCalculationId);
  return 'attempted';
}

const metadataOf = (accountId: string, invoice: Pick<InvoiceView, 'id' | 'number'>, taxCalculationId: string | undefined) => ({
  auto_topup: 'true',
  invoice_id: invoice.id,
  invoice_number: invoice.number,
  account_id: accountId,
  // Stripe Tax: the calculation the amount came from (its Tax Transaction is recorded from it once paid).
  ...(taxCalculationId ? { tax_calculation: taxCalculationId } : {}),
});

/**
 * The off-session charge, and what its answer books. It charges the saved card (`payment_method`),
 * with redirects turned off, the escape Stripe's own `return_url` refusal names; the library's API
 * version no longer takes `payment_method_types` on PaymentIntents (2026-09-30.endive). The
 * parameters depend only on the invoice and the card, so sending them again under the same key
 * is the same request (Stripe answers it from its store).
 */
async function chargeOffSession(
  rule: AutoTopUpItem,
  invoice: InvoiceView,
  idempotencyKey: string,
  taxCalculationId: string | undefined,
): Promise<void> {
  const { accountId } = rule;
  const sent = await createIntent(rule, invoice, idempotencyKey, taxCalculationId);
  if ('answer' in sent) {
    await settle(accountId, invoice.id, sent.answer);
    return;
  }
  const stripeError = sent.error as { type?: string; code?: string; statusCode?: number };
  // No answer (network, Stripe's 5xx, a concurrent request under the key): it may have charged, so the attempt stays
  // in flight for its webhook or resolveStaleAttempt. A refusal (4xx): nothing was charged, the attempt ends.
  // Both count as a failure.
  const unknownOutcome =
    stripeError.type === 'StripeConnectionError' || (stripeError.statusCode ?? 500) >= 500 || stripeError.statusCode === 409;
  const code = unknownOutcome ? 'provider_unreachable' : (stripeError.code ?? 'request_refused');
  logger.error('auto top-up: Stripe failed', { accountId, invoiceId: invoice.id, code, ...errorFields(sent.error) });
  const item = await findInvoiceItem(invoice.id);
  if (item) await recordFailure(item, code, { endAttempt: !unknownOutcome });
}

/** The create request; a 402 (declined, authentication required) carries the PaymentIntent, which is its answer. */
async function createIntent(
  rule: AutoTopUpItem,
  invoice: InvoiceView,
  idempotencyKey: string,
  taxCalculationId: string | undefined,
): Promise<{ answer: unknown } | { error: unknown }> {
  const client = await stripe(await paymentsConfig());
  try {
    const answer = await client.paymentIntents.create(
      {
        // The card pays the gross: the top-up and its tax.
        amount: invoice.totalCents,
        currency: invoice.currency,
        customer: rule.customerId,
        payment_method: rule.paymentMethodId,
        // Never a redirect: Stripe refuses a confirmed PaymentIntent that may redirect without a return_url.
        automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
        off_session: true,
        confirm: true,
        description: `Auto top-up ${invoice.number}`,
        metadata: metadataOf(rule.accountId, invoice, taxCalculationId),
      },
      { idempotencyKey },
    );
    return { answer };
  } catch (err) {
    const stripeError = err as { type?: string; payment_intent?: unknown };
    if (stripeError.type === 'StripeCardError' && stripeError.payment_intent) return { answer: stripeError.payment_intent };
    return { error: err };
  }
}

/** Books a PaymentIntent read from Stripe (a create answer, a retrieve, a search) as its webhook would. */
async function settle(accountId: string, invoiceId: string, answer: unknown): Promise<WebhookOutcome | 'pending'> {
  const intent = await parseAutoTopUpIntent(answer);
  // Kept first: should booking stop half-way, the stale attempt is read back by this id.
  await writeIfFirst({
    Update: {
      Key: keys.autoTopUp(accountId),
      UpdateExpression: 'SET inFlightPaymentIntentId = :pi',
      ConditionExpression: 'inFlightInvoiceId = :invoice',
      ExpressionAttributeValues: { ':pi': intent.id, ':invoice': invoiceId },
    },
  });
  if (intent.status === 'succeeded') return autoTopUpPaid(intent);
  if (intent.status === 'requires_payment_method' || intent.status === 'canceled') return autoTopUpFailed(intent);
  // processing (and the like): Stripe's payment_intent.* event, or the next stale check, ends it.
  return 'pending';
}

/** One resolver per stale attempt at a time (runs overlap): it holds `resolvingAt` for STALE_ATTEMPT_MS. */
async function claimResolution(rule: AutoTopUpItem, at: Date): Promise<boolean> {
  return writeIfFirst({
    Update: {
      Key: keys.autoTopUp(rule.accountId),
      UpdateExpression: 'SET resolvingAt = :at',
      ConditionExpression: 'inFlightInvoiceId = :invoice AND (attribute_not_exists(resolvingAt) OR resolvingAt < :staleBefore)',
      ExpressionAttributeValues: {
        ':at': at.toISOString(),
        ':invoice': rule.inFlightInvoiceId,
        ':staleBefore': new Date(at.getTime() - STALE_ATTEMPT_MS).toISOString(),
      },
    },
  });
}

/**
 * An attempt in flight past STALE_ATTEMPT_MS (its answer and its webhook both lost, or late). Stripe
 * is asked what became of it — never charged anew: the PaymentIntent by the id its answer gave;
 * without one, the same create request under the same Idempotency-Key (Stripe answers with the
 * PaymentIntent it made, or makes the one this invoice was opened for) while Stripe keeps keys;
 * after that, a search by the invoice in its metadata. Only when Stripe has none is the invoice void.
 */
async function resolveStaleAttempt(rule: AutoTopUpItem, at: Date): Promise<AttemptOutcome> {
  const { accountId } = rule;
  const invoiceId = rule.inFlightInvoiceId!;
  const item = await findInvoiceItem(invoiceId);
  if (!item || item.accountId !== accountId) {
    await releaseAttempt(accountId, invoiceId, false);
    return 'resolved';
  }
  const client = await stripe(await paymentsConfig());
  try {
    if (rule.inFlightPaymentIntentId) {
      await settle(accountId, invoiceId, await client.paymentIntents.retrieve(rule.inFlightPaymentIntentId));
      return 'resolved';
    }
    const within = rule.inFlightKey && at.getTime() - Date.parse(rule.inFlightAt!) < IDEMPOTENCY_WINDOW_MS;
    if (within && item.status === 'open') {
      const sent = await createIntent(rule, toInvoiceView(item), rule.inFlightKey!, item.taxCalculationId);
      if ('answer' in sent) {
        await settle(accountId, invoiceId, sent.answer);
        return 'resolved';
      }
      // Another request now (the card replaced since: Stripe refuses the key with other parameters): the search below.
      if ((sent.error as { type?: string }).type !== 'StripeIdempotencyError') throw sent.error;
    }
    const found = await client.paymentIntents.search({ query: `metadata['invoice_id']:'${invoiceId}'` });
    if (found.data[0]) {
      await settle(accountId, invoiceId, found.data[0]);
      return 'resolved';
    }
  } catch (err) {
    logger.warn('auto top-up: stale attempt not resolved yet', { accountId, invoiceId, ...errorFields(err) });
    return 'in_flight';
  }
  logger.warn('auto top-up: Stripe has no payment for a stale attempt; void', { accountId, invoiceId });
  await voidInvoice(toInvoiceView(item), accountId, 'auto top-up never reached the payment provider');
  await releaseAttempt(accountId, invoiceId, false);
  return 'resolved';
}

/** Ends the attempt of `invoiceId` (only that one): a success also clears the failure count. */
async function releaseAttempt(accountId: string, invoiceId: string, succeeded: boolean): Promise<void> {
  await writeIfFirst({
    Update: {
      Key: keys.autoTopUp(accountId),
      UpdateExpression: `${succeeded ? 'SET consecutiveFailures = :zero, lastFailure = :null ' : ''}REMOVE inFlightInvoiceId, inFlightAt, inFlightKey, inFlightPaymentIntentId`,
      ConditionExpression: 'inFlightInvoiceId = :invoice',
      ExpressionAttributeValues: { ':invoice': invoiceId, ...(succeeded ? { ':zero': 0, ':null': null } : {}) },
    },
  });
}

// ---- the webhook (and the create answer, booked the same way) -------------------------------------

async function invoiceOfIntent(intent: AutoTopUpIntent) {
  const item = await findInvoiceItem(intent.metadata.invoice_id);
  // The invoice must be the account's the metadata names: a signed event cannot move credit elsewhere.
  if (!item || item.accountId !== intent.metadata.account_id) {
    logger.warn('auto top-up event for an unknown invoice', { invoiceId: intent.metadata.invoice_id, paymentIntentId: intent.id });
    return undefined;
  }
  return item;
}

/** `payment_intent.succeeded`, or the create answer saying so: the invoice is credited exactly as a Checkout payment is. */
export async function autoTopUpPaid(intent: AutoTopUpIntent): Promise<WebhookOutcome> {
  const item = await invoiceOfIntent(intent);
  if (!item) return 'unknown_invoice';
  const outcome = await creditInvoice(item, {
    amountCents: intent.amount_received ?? intent.amount,
    currency: intent.currency,
    sessionId: null,
    paymentIntentId: intent.id,
    note: 'Auto top-up',
  });
  if (outcome === 'credited' || outcome === 'already_fulfilled') {
    await releaseAttempt(item.accountId, item.invoiceId, true);
    // Stripe Tax: the sale recorded once (a replay finds it recorded; Stripe unreachable, the next delivery records it).
    await recordTaxTransaction(item);
  }
  return outcome;
}

/** `payment_intent.payment_failed`, or the create answer's 402 (declined, authentication required). */
export async function autoTopUpFailed(intent: AutoTopUpIntent): Promise<WebhookOutcome> {
  const item = await invoiceOfIntent(intent);
  if (!item) return 'unknown_invoice';
  if (wasPaid(item.status)) return 'kept_paid';
  const code = intent.last_payment_error?.code ?? intent.last_payment_error?.decline_code ?? 'payment_failed';
  return recordFailure(item, code, { endAttempt: true });
}

/**
 * A failed attempt of any kind (declined, authentication required, refused by Stripe, no answer).
 * It is counted, with its `auto_topup.failed` event, once per invoice — whichever of the answer and
 * the webhook comes first; the write is conditional on the attempt being in flight and not yet
 * counted. At the platform's `autoTopUpMaxFailures` in a row the rule turns off. `endAttempt`
 * false (no answer: Stripe may still have charged) counts it but keeps the attempt and its invoice
 * open. `authentication_required` turns the rule off at once and keeps the invoice open for the
 * customer to pay on Stripe's hosted Checkout page (the link is in the event and the rule's view);
 * paying it turns the rule back on (resumeAfterPayment). Otherwise the invoice is voided.
 */
async function recordFailure(item: InvoiceItem, code: string, { endAttempt }: { endAttempt: boolean }): Promise<WebhookOutcome> {
  const { accountId, invoiceId } = item;
  const rule = await accessPatterns.autoTopUpOf(accountId);
  const inFlight = rule?.inFlightInvoiceId === invoiceId;
  const needsCustomer = code === 'authentication_required' && endAttempt && item.status === 'open';
  const pending = inFlight && needsCustomer && rule ? await pendingPaymentOf(rule, item) : null;
  // Counted already (no answer first): not counted again, but authentication required still stops the rule.
  const counted = rule?.failureCountedFor === invoiceId;
  if (inFlight && rule && (!counted || needsCustomer)) {
    const failures = (rule.consecutiveFailures ?? 0) + (counted ? 0 : 1);
    // Retrying off-session cannot pass an authentication: stopped at once, with or without a page to pay on.
    const reason = needsCustomer ? 'authentication_required' : 'failures';
    const disable = rule.enabled && (needsCustomer || failures >= (await getSettings()).autoTopUpMaxFailures);
    const now = new Date();
    const lastFailure = { at: now.toISOString(), code, invoiceId };
    const set = [
      'consecutiveFailures = :failures',
      'lastFailure = :last',
      'failureCountedFor = :invoice',
      'updatedAt = :now',
      ...(disable ? ['enabled = :off', 'disabledReason = :reason'] : []),
      ...(pending ? ['pendingPayment = :pending'] : []),
    ];
    try {
      await transact([
        {
          name: 'rule',
          Update: {
            Key: keys.autoTopUp(accountId),
            UpdateExpression: `SET ${set.join(', ')}${endAttempt ? ' REMOVE inFlightInvoiceId, inFlightAt, inFlightKey, inFlightPaymentIntentId' : ''}`,
            ConditionExpression:
              'inFlightInvoiceId = :invoice AND consecutiveFailures = :before AND ' +
              (counted ? 'failureCountedFor = :invoice' : '(attribute_not_exists(failureCountedFor) OR failureCountedFor <> :invoice)'),
            ExpressionAttributeValues: {
              ':failures': failures,
              ':last': lastFailure,
              ':now': now.toISOString(),
              ':invoice': invoiceId,
              ':before': rule.consecutiveFailures ?? 0,
              ...(disable ? { ':off': false, ':reason': reason } : {}),
              ...(pending ? { ':pending': pending } : {}),
            },
          },
        },
        eventWrite(
          accountId,
          'auto_topup.failed',
          {
            invoiceId,
            invoiceNumber: item.number,
            amountCents: item.amountCents,
            code,
            consecutiveFailures: failures,
            ruleDisabled: disable,
            paymentUrl: pending?.url ?? null,
          },
          now,
        ),
        ...(disable
          ? [
              disarmProfile(accountId),
              eventWrite(accountId, 'auto_topup.disabled', { reason, consecutiveFailures: failures, lastFailure }, now),
            ]
          : []),
      ]);
    } catch (err) {
      // Another delivery of this failure (the answer and the webhook) recorded it first.
      if (!isConditionFailed(err, 'rule')) throw err;
    }
  } else if (inFlight && endAttempt) {
    // Counted already (no answer, then the webhook or the read-back): the attempt ends here.
    await releaseAttempt(accountId, invoiceId, false);
  }
  if (!endAttempt) return `kept_${item.status}` as WebhookOutcome;
  const current = (await accessPatterns.autoTopUpOf(accountId))?.pendingPayment;
  // The invoice the customer is asked to pay stays open.
  if (current?.invoiceId === invoiceId) return 'kept_open' as WebhookOutcome;
  const voided = await voidInvoice(toInvoiceView(item), accountId, `auto top-up failed: ${code}`);
  return voided ? 'voided' : (`kept_${item.status}` as WebhookOutcome);
}

/** Stripe keeps a Checkout Session open at most 24 hours. */
const PENDING_PAYMENT_MS = 23 * 60 * 60_000;

/**
 * The page where the customer pays the invoice of an attempt that needs authentication: a Checkout
 * Session in payment mode for that invoice (Stripe's hosted page runs 3-D Secure), fulfilled by the
 * usual `checkout.session.completed`; one per invoice (idempotency key). The sandbox: its checkout page.
 * Null when no page can be made (Stripe refused, or no return address is known): the rule still stops.
 */
async function pendingPaymentOf(rule: AutoTopUpItem, item: InvoiceItem): Promise<AutoTopUpItem['pendingPayment']> {
  const config = await paymentsConfig();
  const back = rule.returnTo ?? (config.successUrl ? { ...returnUrls(config, ''), apiBaseUrl: undefined } : undefined);
  if (!back) return null;
  const invoice = toInvoiceView(item);
  const expiresAt = new Date(Date.now() + PENDING_PAYMENT_MS);
  try {
    if (config.provider === 'sandbox') {
      if (!back.apiBaseUrl) return null;
      const sessionId = `cs_sandbox_${invoice.id.replace(/-/g, '')}`;
      await attachSession(invoice, item.accountId, sessionId, { successUrl: back.successUrl, cancelUrl: back.cancelUrl });
      return { invoiceId: invoice.id, url: `${back.apiBaseUrl}/dev/checkout/${invoice.id}`, expiresAt: expiresAt.toISOString() };
    }
    const metadata = {
      invoice_id: invoice.id,
      invoice_number: invoice.number,
      account_id: item.accountId,
      purpose: 'auto_topup_authentication',
    };
    const session = await (await stripe(config)).checkout.sessions.create(
      {
        mode: 'payment',
        customer: rule.customerId,
        line_items: checkoutLines(invoice, `Auto top-up ${invoice.number}`),
        client_reference_id: invoice.id,
        metadata,
        payment_intent_data: { metadata },
        success_url: back.successUrl,
        cancel_url: back.cancelUrl,
        expires_at: Math.floor(expiresAt.getTime() / 1000),
      },
      { idempotencyKey: `autotopup-authentication:${invoice.id}` },
    );
    if (!session.url) return null;
    await attachSession(invoice, item.accountId, session.id);
    return { invoiceId: invoice.id, url: session.url, expiresAt: expiresAt.toISOString() };
  } catch (err) {
    logger.error('auto top-up: no payment page for the customer', {
      accountId: item.accountId,
      invoiceId: invoice.id,
      ...errorFields(err),
    });
    return null;
  }
}

/**
 * The invoice of a pending payment paid (checkout.session.completed): the rule turns back on, its
 * failure count afresh, unless the account changed it meanwhile (the condition).
 */
export async function resumeAfterPayment(accountId: string, invoiceId: string): Promise<void> {
  const rule = await accessPatterns.autoTopUpOf(accountId);
  if (rule?.pendingPayment?.invoiceId !== invoiceId) return;
  try {
    await transact([
      {
        name: 'rule',
        Update: {
          Key: keys.autoTopUp(accountId),
          UpdateExpression:
            'SET enabled = :on, disabledReason = :null, consecutiveFailures = :zero, lastFailure = :null, updatedAt = :now REMOVE pendingPayment',
          ConditionExpression: 'pendingPayment.invoiceId = :invoice AND attribute_exists(paymentMethodId)',
          ExpressionAttributeValues: { ':on': true, ':null': null, ':zero': 0, ':now': new Date().toISOString(), ':invoice': invoiceId },
        },
      },
      {
        name: 'profile',
        Update: {
          Key: keys.account(accountId),
          UpdateExpression: 'SET autoTopUpBelowCents = :below',
          ConditionExpression: 'attribute_exists(PK)',
          ExpressionAttributeValues: { ':below': rule.belowCents },
        },
      },
    ]);
  } catch (err) {
    if (!isConditionFailed(err)) throw err;
  }
}
