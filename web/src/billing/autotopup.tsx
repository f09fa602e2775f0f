import { useEffect, useState } from 'preact/hooks';
import { api, ok, type Schema } from '../api.ts';
import { cents, currency, dateTime } from '../format.ts';
import { DollarsField, Field } from '../form.tsx';
import { Badge, Button, ErrorNotice, Loading, Notice, Spinner, useAction, useLoad, Section } from '../ui.tsx';
import { toCents, toDollars } from './common.tsx';
import { SavedCard } from './saved-card.tsx';

type Rule = Schema<'AutoTopUp'>;

const FAILURE: Record<string, string> = {
  card_declined: 'the card was declined',
  authentication_required: 'the bank asked for authentication, which an automatic charge cannot give',
};

/**
 * Auto top-up: the saved card (added on the payment provider's page in setup mode, nothing
 * charged), and the rule — below a balance, charge the card an amount, at most so many times a day —
 * with its state today and the last failure.
 */
export function AutoTopUp(props: { config: Schema<'BillingConfig'>; cardReturn: string | null }) {
  const card = useLoad(() => ok(api().GET('/v1/billing/payment-method')));
  const rule = useLoad(() => ok(api().GET('/v1/billing/auto-topup')));
  const [waiting, setWaiting] = useState(props.cardReturn === 'saved');
  // Back from the card page: the webhook saves the card, maybe a moment after the customer is back.
  useEffect(() => {
    if (!waiting) return;
    if (card.data?.card) {
      setWaiting(false);
      void rule.reload();
      return;
    }
    let tries = 0;
    const timer = setInterval(() => {
      tries++;
      void card.reload();
      if (tries >= 8) {
        clearInterval(timer);
        setWaiting(false);
      }
    }, 1500);
    return () => clearInterval(timer);
  }, [waiting, card.data?.card?.id]);
  const reloadBoth = async () => {
    await Promise.all([card.reload(), rule.reload()]);
  };
  return (
    <Section id="auto-topup" class="billing-section" title="Auto top-up">
      {props.cardReturn === 'cancelled' ? <Notice>Adding a card was cancelled: nothing changed.</Notice> : null}
      {props.cardReturn === 'saved' && !waiting && card.data?.card ? <Notice kind="success">Card saved.</Notice> : null}
      {waiting ? <Spinner label="Waiting for the payment provider to confirm the card…" /> : null}
      <Loading state={card} label="Loading the saved card…">
        {(pm) => <SavedCard card={pm.card} onChanged={reloadBoth} />}
      </Loading>
      <Loading state={rule} label="Loading the auto top-up rule…">
        {(r) => <RuleForm rule={r} config={props.config} onSaved={reloadBoth} />}
      </Loading>
    </Section>
  );
}

function RuleForm(props: { rule: Rule; config: Schema<'BillingConfig'>; onSaved: () => Promise<void> }) {
  const { rule, config } = props;
  const [enabled, setEnabled] = useState(rule.enabled);
  const [below, setBelow] = useState(toDollars(rule.belowCents));
  const [amount, setAmount] = useState(toDollars(rule.amountCents));
  const [perDay, setPerDay] = useState(String(rule.maxPerDay));
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    setEnabled(rule.enabled);
    setBelow(toDollars(rule.belowCents));
    setAmount(toDollars(rule.amountCents));
    setPerDay(String(rule.maxPerDay));
  }, [rule]);
  const belowCents = toCents(below);
  const amountCents = toCents(amount);
  const maxPerDay = /^\d+$/.test(perDay) ? Number(perDay) : null;
  const amountOk = amountCents !== null && amountCents >= config.minimumTopUpCents && amountCents <= config.maximumTopUpCents;
  const valid = belowCents !== null && amountOk && maxPerDay !== null && maxPerDay >= 1 && maxPerDay <= 10;
  const save = useAction(async () => {
    if (!valid) return;
    await ok(
      api().PUT('/v1/billing/auto-topup', { body: { enabled, belowCents: belowCents!, amountCents: amountCents!, maxPerDay: maxPerDay! } }),
    );
    setSaved(true);
    await props.onSaved();
  });
  return (
    <>
      <dl class="props" data-testid="auto-topup-state">
        <dt>Status</dt>
        <dd>
          {rule.enabled ? <Badge tone="ok">on</Badge> : <Badge>off</Badge>}
          {rule.disabledReason === 'failures' ? ' — turned off after failed charges in a row; enable it again to retry.' : null}
          {rule.disabledReason === 'card_removed' ? ' — turned off because the card was removed.' : null}
          {rule.disabledReason === 'authentication_required' ? ' — paused: your bank asked to confirm a charge.' : null}
          {rule.inFlight ? ' — a charge is waiting for the payment provider.' : null}
        </dd>
        <dt>Today</dt>
        <dd>
          {rule.attemptsToday} of {rule.maxPerDay} {rule.maxPerDay === 1 ? 'attempt' : 'attempts'}
        </dd>
        {rule.consecutiveFailures > 0 ? (
          <>
            <dt>Failures in a row</dt>
            <dd>{rule.consecutiveFailures}</dd>
          </>
        ) : null}
        {rule.lastFailure ? (
          <>
            <dt>Last failure</dt>
            <dd data-testid="auto-topup-failure">
              {dateTime(rule.lastFailure.at)}: {FAILURE[rule.lastFailure.code] ?? rule.lastFailure.code} (
              <code>{rule.lastFailure.code}</code>); nothing was charged.
            </dd>
          </>
        ) : null}
      </dl>
      {rule.pendingPayment ? (
        <Notice kind="warning">
          <span data-testid="auto-topup-pending-payment">
            Your bank asked you to confirm the last auto top-up: automatic charges are paused.{' '}
            <a href={rule.pendingPayment.url}>Complete the payment</a> (until {dateTime(rule.pendingPayment.expiresAt)}) and auto top-up
            turns back on.
          </span>
        </Notice>
      ) : null}
      <form
        id="auto-topup-form"
        class="billing-form"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          setSaved(false);
          void save.run();
        }}
      >
        <div class="field checkbox">
          <label>
            <input id="auto-topup-enabled" type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} /> Top up
            automatically
          </label>
          {!rule.cardSaved ? <small class="hint">Needs a saved card.</small> : null}
        </div>
        <DollarsField
          id="auto-topup-below"
          label={`When the balance falls below (${currency()})`}
          invalid={belowCents === null}
          value={below}
          onInput={setBelow}
        />
        <DollarsField
          id="auto-topup-amount"
          label={`Charge the card (${currency()})`}
          hint={`Between ${cents(config.minimumTopUpCents)} and ${cents(config.maximumTopUpCents)}${config.bonusPercent > 0 ? `, with the ${config.bonusPercent} % bonus` : ''}.`}
          invalid={!amountOk}
          value={amount}
          onInput={setAmount}
        />
        <Field id="auto-topup-per-day" label="At most this many times a day" hint="1 to 10.">
          {(control) => (
            <input {...control} type="number" min={1} max={10} step={1} value={perDay} onInput={(e) => setPerDay(e.currentTarget.value)} />
          )}
        </Field>
        <Button type="submit" kind="primary" busy={save.busy} disabled={!valid}>
          Save auto top-up
        </Button>
      </form>
      {saved ? <Notice kind="success">Auto top-up saved.</Notice> : null}
      <ErrorNotice error={save.error} onDismiss={save.clearError} />
    </>
  );
}
