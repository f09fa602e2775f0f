import type Stripe from 'stripe';
import type { z } from 'zod';
import type { StripeWebhookHealth } from '../api/schemas/admin.ts';
import { logger } from '../observability/logger.ts';
import { loadStripe } from '../packages.ts';
import { paymentsConfig, stripe } from './stripe-client.ts';
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
export async function findWebhookEndpoint(
  client: Stripe,
  url: string,
  options: Stripe.RequestOptions = {},
): Promise<Stripe.WebhookEndpoint | undefined> {
  for await (const endpoint of client.webhookEndpoints.list({ limit: 100 }, options)) if (endpoint.url === url) return endpoint;
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
      api_version: (await loadStripe()).default.API_VERSION,
    });
    return { endpointId: created.id, action: 'created', enabledEvents: created.enabled_events, secret: created.secret };
  }
  const same = existing.enabled_events.length === wanted.length && wanted.every((type) => existing.enabled_events.includes(type));
  if (same && existing.status === 'enabled')
    return { endpointId: existing.id, action: 'unchanged', enabledEvents: existing.enabled_events };
  const updated = await client.webhookEndpoints.update(existing.id, { enabled_events: wanted, disabled: false });
  return { endpointId: updated.id, action: 'updated', enabledEvents: updated.enabled_events };
}

// ---- the admin health view ----------------------------------------------------------------------

type Health = z.infer<typeof StripeWebhookHealth>;

/** A health page is reloaded and polled: Stripe is asked at most once a minute per warm function. */
export const HEALTH_CACHE_MS = 60_000;
/** Fails fast instead of the 10 s × 3 of a money call: the page reports a slow Stripe, it does not wait it out. */
const HEALTH_REQUEST: Stripe.RequestOptions = { timeout: 5_000, maxNetworkRetries: 0 };

let cached: { url: string; at: number; health: Health } | undefined;

/** Forgets the kept answer (tests; an operator's fix shows within HEALTH_CACHE_MS anyway). */
export const forgetWebhookHealth = (): void => {
  cached = undefined;
};

/** The endpoint at `url` (this API's webhook) as Stripe has it, and the listed events it misses. */
export async function stripeWebhookHealth(url: string, now = Date.now()): Promise<Health> {
  if (cached?.url === url && now - cached.at < HEALTH_CACHE_MS) return cached.health;
  const health = await readWebhookHealth(url, new Date(now).toISOString());
  cached = { url, at: now, health };
  return health;
}

async function readWebhookHealth(url: string, checkedAt: string): Promise<Health> {
  const report = (status: Health['status'], endpoint: Stripe.WebhookEndpoint | null = null, missing: string[] = []): Health => ({
    status,
    endpoint: endpoint && { id: endpoint.id, url: endpoint.url, status: endpoint.status },
    expectedEvents: [...STRIPE_EVENT_TYPES],
    missingEvents: missing,
    checkedAt,
  });
  let endpoint: Stripe.WebhookEndpoint | undefined;
  try {
    const config = await paymentsConfig();
    if (config.provider === null) return report('not_configured');
    if (config.provider === 'sandbox') return report('sandbox');
    endpoint = await findWebhookEndpoint(await stripe(config), url, HEALTH_REQUEST);
  } catch (err) {
    // The error's kind only: a Stripe message may quote part of the key.
    logger.warn('admin health: Stripe did not answer', { error: (err as Error).name, type: (err as { type?: string }).type });
    return report('unreachable');
  }
  if (!endpoint) return report('no_endpoint');
  const missing = missingEvents(endpoint.enabled_events);
  // A disabled endpoint receives nothing: that is the worse news, whatever it misses besides.
  return report(endpoint.status !== 'enabled' ? 'endpoint_disabled' : missing.length ? 'missing_events' : 'ok', endpoint, missing);
}
