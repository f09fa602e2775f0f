/**
 * The local sandbox provider (no Stripe secret key), as a hook: the local stack installs it
 * (dev/sandbox-events.ts), so that Stripe's test cards and the signing of the events Stripe would
 * send live in dev/, never in a deployed bundle. In AWS payments are off without a Stripe secret.
 */
import type Stripe from 'stripe';
import type { TaxCalculation } from './stripe-tax.ts';

export interface SandboxProvider {
  /** The card a sandbox setup session saved, named by its SetupIntent (`seti_sandbox_<card>`); null for an unknown card. */
  savedCard(setupIntentId: string): { paymentMethodId: string; brand: string; last4: string } | null;
  /** Charges the saved card off-session: the PaymentIntent event Stripe would send, signed, booked through the webhook code. */
  charge(payment: {
    customerId?: string | undefined;
    paymentMethodId?: string | undefined;
    amountCents: number;
    metadata: Record<string, string>;
  }): Promise<void>;
  /** Stripe Tax's calculation of an auto top-up (./stripe-tax.ts); an address it cannot place throws as Stripe answers (400). */
  calculateTax(params: Stripe.Tax.CalculationCreateParams): Promise<TaxCalculation>;
  /** Refunds a charge: the `charge.refunded` event Stripe would send, signed, booked through the webhook code. */
  refund(charge: { paymentIntentId: string; amountCents: number; refundedCents: number; metadata: Record<string, string> }): Promise<void>;
}

let installed: SandboxProvider | undefined;

export function installSandbox(provider: SandboxProvider): void {
  installed = provider;
}

export function sandbox(): SandboxProvider {
  if (!installed) throw new Error('No sandbox payment provider: the local stack installs it (dev/sandbox-events.ts)');
  return installed;
}
