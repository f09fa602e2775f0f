import { useEffect, useState } from 'preact/hooks';
import { api, ok } from '../api.ts';
import { AutoTopUp } from '../billing/autotopup.tsx';
import { Alerts, Budget } from '../billing/budget.tsx';
import { DebtNotice } from '../billing/debt.tsx';
import { CreditNotes } from '../billing/credit-notes.tsx';
import { Invoices } from '../billing/invoices.tsx';
import { Ledger } from '../billing/ledger.tsx';
import { BillingProfile } from '../billing/profile.tsx';
import { CheckoutReturn, TopUp } from '../billing/topup.tsx';
import { cents, dateTime } from '../format.ts';
import { navigate } from '../router.ts';
import { useSession } from '../session.ts';
import { Loading, Page, useLoad } from '../ui.tsx';

/**
 * Billing: the balance and a top-up (Stripe Checkout and back), invoices and credit notes with their PDF, the
 * ledger, auto top-up with the saved card, the monthly budget, the low-balance warning and the
 * billing profile printed on invoices. Each section loads on its own, so one failing leaves the rest.
 */
export default function Billing() {
  const { account } = useSession();
  const config = useLoad(() => ok(api().GET('/v1/billing/config')));
  // What the payment pages sent back in the query, read once: the query is dropped afterwards.
  const [back] = useState(() => {
    const query = new URLSearchParams(location.search);
    return { checkout: query.get('checkout'), session: query.get('session'), card: query.get('card') };
  });
  useEffect(() => {
    // CheckoutReturn drops the query once the payment shows; a card's return has nothing to wait for here.
    if (back.card && !back.checkout) navigate('/billing', { replace: true });
  }, []);
  // Bumped when a payment lands, so the invoices and the ledger read again.
  const [version, setVersion] = useState(0);
  return (
    <Page title="Billing">
      {back.checkout ? <CheckoutReturn outcome={back.checkout} session={back.session} onSettled={() => setVersion((v) => v + 1)} /> : null}
      <DebtNotice debtCents={account.debtCents} onBilling />
      <dl class="cards">
        <div class="stat">
          <dt>Balance</dt>
          <dd data-testid="billing-balance">{cents(account.balanceCents)}</dd>
        </div>
        {account.debtCents > 0 ? (
          <div class="stat">
            <dt>Owed</dt>
            <dd data-testid="billing-debt">{cents(account.debtCents)}</dd>
          </div>
        ) : null}
        <div class="stat">
          <dt>Funded until</dt>
          <dd>{account.fundedUntil ? dateTime(account.fundedUntil) : 'No running costs'}</dd>
        </div>
        <div class="stat">
          <dt>Servers suspended at</dt>
          <dd data-testid="billing-suspend-at">{account.suspendAt ? dateTime(account.suspendAt) : '—'}</dd>
        </div>
      </dl>
      <Loading state={config} label="Loading the top-up rules…">
        {(c) => <TopUp config={c} />}
      </Loading>
      <Invoices version={version} />
      <CreditNotes version={version} />
      <Ledger version={version} />
      {config.data ? <AutoTopUp config={config.data} cardReturn={back.card} /> : null}
      <div class="billing-pair">
        <Budget />
        <Alerts />
      </div>
      <BillingProfile />
    </Page>
  );
}
