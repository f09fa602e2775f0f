import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../api.ts';
import { dateTime } from '../format.ts';
import { Confirm } from '../dialog.tsx';
import { Button, ErrorNotice, Spinner, useAction } from '../ui.tsx';
import { returnUrl } from './topup.tsx';

type Card = NonNullable<Schema<'PaymentMethod'>['card']>;

/** The saved card for automatic charges: add one on the payment provider's page, or remove it. */
export function SavedCard(props: { card: Card | null; onChanged: () => Promise<void> }) {
  const [confirming, setConfirming] = useState(false);
  const [redirecting, setRedirecting] = useState(false);
  const add = useAction(async () => {
    const setup = await ok(
      api().POST('/v1/billing/payment-method/checkout', {
        body: { successUrl: returnUrl('card=saved'), cancelUrl: returnUrl('card=cancelled') },
      }),
    );
    setRedirecting(true);
    location.assign(setup.url);
  });
  const remove = useAction(async (id: string) => {
    await ok(api().DELETE('/v1/billing/payment-method/{id}', { params: { path: { id } } }));
    setConfirming(false);
    await props.onChanged();
  });
  const { card } = props;
  return (
    <div class="saved-card">
      <p data-testid="saved-card">
        {card ? (
          <>
            Saved card: <strong class="card-name">{card.brand}</strong> ending in <strong>{card.last4}</strong>{' '}
            <span class="muted">(saved {dateTime(card.savedAt)})</span>
          </>
        ) : (
          'No card saved: add one to turn auto top-up on. Nothing is charged when you add it.'
        )}
      </p>
      <div class="actions">
        <Button kind={card ? 'plain' : 'primary'} busy={add.busy || redirecting} onClick={() => void add.run()}>
          {card ? 'Replace card' : 'Add a card'}
        </Button>
        {card ? (
          <Button kind="danger" onClick={() => setConfirming(true)}>
            Remove card
          </Button>
        ) : null}
      </div>
      {redirecting ? <Spinner label="Opening the card page…" /> : null}
      <ErrorNotice error={add.error} onDismiss={add.clearError} />
      {card ? (
        <Confirm
          open={confirming}
          title="Remove the saved card?"
          confirmLabel="Remove card"
          danger
          busy={remove.busy}
          error={remove.error}
          onConfirm={() => void remove.run(card.id)}
          onCancel={() => {
            setConfirming(false);
            remove.clearError();
          }}
        >
          <p>
            The {card.brand} card ending in {card.last4} is forgotten and auto top-up turns off.
          </p>
        </Confirm>
      ) : null}
    </div>
  );
}
