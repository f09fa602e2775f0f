import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../../api.ts';
import { cents, currency, parseDollars } from '../../format.ts';
import { DollarsField, Field } from '../../form.tsx';
import { Confirm } from '../../dialog.tsx';
import { Button, ErrorNotice, Notice, useAction } from '../../ui.tsx';

/** The largest grant or deduction the API takes (AdminCredit.amountCents: ±10,000,000 cents). */
const MAX_CREDIT_CENTS = 10_000_000;

/**
 * Grant (positive) or deduct (negative) credit: POST /v1/admin/users/:id/credits. The amount is
 * typed in the platform's currency and read as integer cents from the decimal string; a note is required; a
 * confirmation shows the amount and the balance it leads to before anything is sent.
 */
export function CreditForm(props: {
  accountId: string;
  email: string | undefined;
  balanceCents: number;
  onDone: (result: Schema<'AdminCreditResult'>) => Promise<void>;
}) {
  const [amount, setAmount] = useState('');
  const [note, setNote] = useState('');
  const [invalid, setInvalid] = useState('');
  const [pending, setPending] = useState<number | null>(null);
  const [done, setDone] = useState<Schema<'AdminCreditResult'>>();
  const grant = useAction(async (amountCents: number) => {
    const result = await ok(
      api().POST('/v1/admin/users/{id}/credits', { params: { path: { id: props.accountId } }, body: { amountCents, note: note.trim() } }),
    );
    await props.onDone(result);
    setPending(null);
    setDone(result);
    setAmount('');
    setNote('');
  });
  const parsed = parseDollars(amount);
  const deducting = parsed !== null && parsed < 0;
  const submit = () => {
    setDone(undefined);
    grant.clearError();
    if (parsed === null) return setInvalid(`Enter an amount in ${currency()}, such as 10 or -2.50 (at most two decimals).`);
    if (parsed === 0) return setInvalid('Enter an amount other than zero.');
    if (Math.abs(parsed) > MAX_CREDIT_CENTS) return setInvalid(`At most ${cents(MAX_CREDIT_CENTS)} at a time.`);
    if (!note.trim()) return setInvalid('A note is required: it is kept on the ledger entry and in the audit log.');
    setInvalid('');
    setPending(parsed);
  };
  const who = props.email ?? 'this account';
  return (
    <form
      id="grant-form"
      class="card"
      aria-labelledby="grant-heading"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        submit();
      }}
    >
      <h2 id="grant-heading">Grant or deduct credit</h2>
      {done ? (
        <Notice kind="success">
          {done.entry.amountCents >= 0 ? 'Granted' : 'Deducted'} {cents(Math.abs(done.entry.amountCents))}: the balance is now{' '}
          {cents(done.balanceCents)} (ledger entry #{done.entry.seq}).
        </Notice>
      ) : null}
      {invalid ? <ErrorNotice error={new Error(invalid)} /> : null}
      <DollarsField
        id="grant-amount"
        label={`Amount in ${currency()}`}
        hint="A negative amount deducts (the balance may go below zero, which suspends servers at the next pass)."
        invalid={Boolean(invalid) && parsed === null}
        name="amount"
        required
        value={amount}
        onInput={setAmount}
      />
      <Field id="grant-note" label="Note" hint="Why: kept on the ledger entry and in the audit log.">
        {(control) => (
          <input {...control} name="note" required maxLength={500} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
        )}
      </Field>
      <Button type="submit" kind={deducting ? 'danger' : 'primary'}>
        {deducting ? 'Deduct credit' : 'Grant credit'}
      </Button>
      {pending !== null ? (
        <Confirm
          open
          danger={pending < 0}
          title={pending < 0 ? `Deduct ${cents(-pending)}?` : `Grant ${cents(pending)}?`}
          confirmLabel="Confirm"
          busy={grant.busy}
          error={grant.error}
          onConfirm={() => void grant.run(pending)}
          onCancel={() => {
            setPending(null);
            grant.clearError();
          }}
        >
          <dl class="props">
            <dt>Account</dt>
            <dd>{who}</dd>
            <dt>{pending < 0 ? 'Deduction' : 'Grant'}</dt>
            <dd data-testid="confirm-amount">{cents(pending)}</dd>
            <dt>Balance now</dt>
            <dd>{cents(props.balanceCents)}</dd>
            <dt>Balance after</dt>
            <dd data-testid="confirm-balance-after">{cents(props.balanceCents + pending)}</dd>
            <dt>Note</dt>
            <dd>{note.trim()}</dd>
          </dl>
        </Confirm>
      ) : null}
    </form>
  );
}
