import type Stripe from 'stripe';
import { STRIPE_EVENT_TYPES } from './stripe-events.ts';

/**
 * The Stripe webhook endpoint of this deployment, created or brought to exactly the event list
 * (stripe-events.ts) by the deploy command (dev/stripe-endpoint.ts), and read back by the admin
 * health view. The endpoint is found by its URL: Stripe allows several endpoints per account (other
 * services, other stages), and only ours must match the list.
 */
export interface EndpointSync {
  endpointId: string;
  action: 'created' | 'updated' | 'unchanged';
  enabledEvents: string[];
  /** The signing secret: Stripe shows it once, in the create answer. Never logged or printed. */
  secret?: string;
}

/** Stripe lists endpoints 100 at a time; an account has at most 16 (Stripe's limit). */
export async function findWebhookEndpoint(client: Stripe, url: string): Promise<Stripe.WebhookEndpoint | undefined> {
  for await (const endpoint of client.webhookEndpoints.list({ limit: 100 })) if (endpoint.url === url) return endpoint;
  return undefined;
}

/** The listed types an endpoint is not subscribed to (`*` subscribes to every type). */
export function missingEvents(enabledEvents: readonly string[]): string[] {
  if (enabledEvents.includes('*')) return [];
  return STRIPE_EVENT_TYPES.filter((type) => !enabledEvents.includes(type));
}

/**
 * Creates the endpoint at `url` with exactly the list, or sets an existing one's events to exactly
 * the list (and enables it). Running it again changes nothing; a grown list updates the endpoint.
 */
export async function syncWebhookEndpoint(client: Stripe, url: string, description: string): Promise<EndpointSync> {
  const wanted = [...STRIPE_EVENT_TYPES];
  const existing = await findWebhookEndpoint(client, url);
  if (!existing) {
    const created = await client.webhookEndpoints.create({
      url,
      enabled_events: wanted,
      description,
      // Payloads in the version this code's Stripe library reads, whatever the account's default.
      api_version: (await import('stripe')).default.API_VERSION,
    });
    return { endpointId: created.id, action: 'created', enabledEvents: created.enabled_events, secret: created.secret };
  }
  const same = existing.enabled_events.length === wanted.length && wanted.every((type) => existing.enabled_events.includes(type));
  if (same && existing.status === 'enabled')
    return { endpointId: existing.id, action: 'unchanged', enabledEvents: existing.enabled_events };
  const updated = await client.webhookEndpoints.update(existing.id, { enabled_events: wanted, disabled: false });
  return { endpointId: updated.id, action: 'updated', enabledEvents: updated.enabled_events };
}
