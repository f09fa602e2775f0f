import { cents } from '../format.ts';
import { href } from '../router.ts';
import { Notice } from '../ui.tsx';

/**
 * A balance below zero said as what it is: a debt (`debtCents` on GET /v1/account), where it comes
 * from, and how it is settled — the next top-up pays it off first (the ledger shows how much).
 * Nothing when nothing is owed.
 */
export function DebtNotice(props: { debtCents: number; onBilling?: boolean }) {
  if (props.debtCents <= 0) return null;
  const owed = cents(props.debtCents);
  return (
    <div data-testid="debt-notice">
      <Notice kind="warning">
        <p>
          <strong>You owe {owed}.</strong> Credit that had already been spent was taken back (a card refund, a card dispute or a deduction
          by the operator), or charges ran past zero, so your balance is below zero; servers stay suspended until it is above zero.
        </p>
        <p>
          Your next top-up pays the debt off first and the rest becomes credit; a smaller top-up reduces the debt.{' '}
          {props.onBilling ? (
            <>Top up more than {owed} below to run your servers again.</>
          ) : (
            <>
              <a href={href('/billing')}>Top up</a> more than {owed} to run your servers again.
            </>
          )}
        </p>
      </Notice>
    </div>
  );
}
