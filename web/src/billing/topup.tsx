import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ok, type Schema } from '../api.ts';
import { cents, currency } from '../format.ts';
import { href, navigate } from '../router.ts';
import { useSession } from '../session.ts';
import { DollarsField } from '../form.tsx';
import { Button, ErrorNotice, Notice, Spinner, useAction, Section } from '../ui.tsx';
import { toCents, toDollars } from './common.tsx';

const PRESETS = [1000, 2500, 5000, 10000];

/** Where a hosted payment page sends the customer back: this page, with what happened in the query. */
export const returnUrl = (query: string): string => `${location.origin}${href('/billing')}?${query}`;

/**
 * A top-up: an amount (a preset or typed, within the API's bounds), then Stripe Checkout (or the
 * local sandbox page) in the same tab. Only the payment webhook credits the balance; the page the
 * customer returns to waits for it (CheckoutReturn).
 */
export function TopUp(props: { config: Schema<'BillingConfig'> }) {
  const { minimumTopUpCents: min, maximumTopUpCents: max, bonusPercent, paymentsEnabled } = props.config;
  const presets = PRESETS.filter((p) => p >= min && p <= max);
  // In debt: the smallest preset that clears it (the top-up pays the debt first), else the debt itself within the bounds.
  const debt = useSession().account.debtCents;
  const start = debt > 0 ? (presets.find((p) => p > debt) ?? Math.min(max, Math.max(min, debt))) : (presets[1] ?? presets[0] ?? min);
  const [text, setText] = useState(toDollars(start));
  const [redirecting, setRedirecting] = useState(false);
  const amount = toCents(text);
  const invalid = amount === null || amount < min || amount > max;
  const checkout = useAction(async (amountCents: number) => {
    const session = await ok(
      api().POST('/v1/billing/checkout', {
        body: {
          amountCents,
          successUrl: returnUrl('checkout=success&session={CHECKOUT_SESSION_ID}'),
          cancelUrl: returnUrl('checkout=cancelled'),
        },
      }),
    );
    setRedirecting(true);
    location.assign(session.url);
  });
  const submit = (event: Event) => {
    event.preventDefault();
    if (amount !== null && !invalid) void checkout.run(amount);
  };
  return (
    <Section id="topup" class="billing-section" title="Top up">
      {paymentsEnabled ? null : (
        <Notice kind="warning">Card payments are not set up on this platform yet; ask the operator for credit.</Notice>
      )}
      {props.config.provider === 'sandbox' ? (
        <Notice>
          Local sandbox: no card is charged. Invoices made here name the fictional seller the local stack ships (Example Hosting Ltd) until
          an admin sets the real one (Settings, Invoice issuer).
        </Notice>
      ) : null}
      <form id="topup-form" onSubmit={submit} noValidate>
        <fieldset class="presets">
          <legend>Choose an amount</legend>
          {presets.map((p) => (
            <Button key={p} aria-pressed={amount === p ? 'true' : 'false'} onClick={() => setText(toDollars(p))}>
              {cents(p)}
            </Button>
          ))}
        </fieldset>
        <DollarsField
          id="topup-amount"
          label={`Amount in ${currency()}`}
          hint={
            <>
              Between {cents(min)} and {cents(max)}.
              {bonusPercent > 0 ? ` Every paid top-up earns a ${bonusPercent} % bonus credit (rounded down to the cent).` : ''}
            </>
          }
          error={invalid ? `Enter an amount between ${cents(min)} and ${cents(max)}, like 25 or 25.50.` : undefined}
          name="amount"
          value={text}
          onInput={setText}
        />
        <div class="actions">
          <Button type="submit" kind="primary" busy={checkout.busy || redirecting} disabled={invalid || !paymentsEnabled}>
            Pay with card
          </Button>
          {amount !== null && !invalid ? (
            <span class="muted" data-testid="topup-split">
              You pay {cents(amount)}.
              {debt > 0
                ? amount > debt
                  ? ` ${cents(debt)} pays off what you owe; ${cents(amount - debt)} becomes credit.`
                  : ` All of it pays off what you owe (${cents(debt - amount)} left to pay).`
                : ''}
            </span>
          ) : null}
        </div>
      </form>
      {redirecting ? <Spinner label="Opening the payment page…" /> : null}
      <ErrorNotice error={checkout.error} onDismiss={checkout.clearError} />
    </Section>
  );
}

/** How many times, and how far apart, the page looks for the payment after returning. */
const POLLS = 10;
const POLL_MS = 1500;

/**
 * Back from the payment page. Cancelled: a neutral notice. Paid: the webhook credits the balance
 * (usually before the customer is back, sometimes a little after), so the page reads the invoice of
 * this checkout session and the account until the payment shows, then drops the query from the URL.
 */
export function CheckoutReturn(props: { outcome: string; session: string | null; onSettled: () => void }) {
  const { account, refresh } = useSession();
  const start = useRef(account.balanceCents);
  const latest = useRef(account);
  latest.current = account;
  const [poll, setPoll] = useState(0);
  const [invoice, setInvoice] = useState<Schema<'Invoice'>>();
  const [done, setDone] = useState<'credited' | 'unpaid' | 'waiting' | null>(null);
  const [error, setError] = useState<unknown>();
  const success = props.outcome === 'success';
  useEffect(() => {
    if (!success) {
      navigate('/billing', { replace: true });
      return;
    }
    let stopped = false;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    void (async () => {
      for (let i = 1; i <= POLLS && !stopped; i++) {
        setPoll(i);
        try {
          await refresh();
          const page = await ok(api().GET('/v1/invoices', { params: { query: { limit: 10 } } }));
          const found = props.session ? page.data.find((inv) => inv.payment.sessionId === props.session) : undefined;
          setError(undefined);
          if (found && found.status !== 'open') {
            setInvoice(found);
            setDone(found.status === 'void' ? 'unpaid' : 'credited');
            break;
          }
          if (!found && latest.current.balanceCents !== start.current) {
            setDone('credited');
            break;
          }
        } catch (e) {
          setError(e);
        }
        if (i === POLLS) setDone('waiting');
        else await sleep(POLL_MS);
      }
      if (stopped) return;
      props.onSettled();
      navigate('/billing', { replace: true });
    })();
    return () => {
      stopped = true;
    };
  }, []);
  if (!success) {
    return (
      <div data-testid="checkout-notice" data-outcome="cancelled">
        <Notice>Payment cancelled: nothing was charged. You can start a new top-up below.</Notice>
      </div>
    );
  }
  return (
    <div data-testid="checkout-notice" data-outcome={done ?? 'pending'}>
      <Notice kind="success">
        <p>
          <strong>{done === 'credited' ? 'Payment confirmed.' : 'Back from the payment page.'}</strong>
        </p>
        {done === 'credited' ? (
          <p data-testid="checkout-credited">
            {invoice ? `Invoice ${invoice.number}: ${cents(invoice.creditedCents)} credited. ` : ''}Your balance is now{' '}
            {cents(account.balanceCents)}.
          </p>
        ) : done === 'unpaid' ? (
          <p>The payment provider reports that invoice {invoice?.number} was not paid: nothing was charged.</p>
        ) : done === 'waiting' ? (
          <p>The payment is not confirmed yet. It usually takes a few seconds; the invoice below shows when it is paid.</p>
        ) : null}
      </Notice>
      {/* The first look usually finds it: a count only once it has not. */}
      {done === null ? (
        <Spinner
          label={poll <= 1 ? 'Looking for the payment…' : `Still waiting for the payment to be confirmed (check ${poll} of ${POLLS})…`}
        />
      ) : null}
      <ErrorNotice error={error} />
    </div>
  );
}
