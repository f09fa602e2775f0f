import type Stripe from 'stripe';
import { getConfig, type PaymentsConfig } from '../config/env.ts';
import { ApiError } from '../errors.ts';
import { logger } from '../observability/logger.ts';
import { loadSecretsManager, loadStripe, type SecretsManagerClient } from '../packages.ts';
import { SECRET_CACHE_MS } from '../secrets/index.ts';

/**
 * The Stripe client: the library, the keys, the webhook signature check and the return URLs every
 * payment page uses. Below every payment flow (checkout.ts, autotopup.ts, refunds.ts) and the event
 * router above them (event-router.ts); it imports none of them. Without STRIPE_SECRET_KEY the local
 * stack runs a sandbox (./sandbox.ts) whose events are signed and checked here as Stripe's are.
 */
let stripeClient: { key: string; client: Stripe } | undefined;

/** Stripe's library is loaded on the first checkout or webhook (shared/packages.ts). */
export async function stripe(config: PaymentsConfig): Promise<Stripe> {
  // The sandbox only signs and verifies webhooks; it never calls Stripe, so any key will do.
  const key = config.stripeSecretKey ?? 'sk_test_sandbox';
  const id = `${key}|${config.stripeApiUrl ?? ''}`;
  if (stripeClient?.key !== id) {
    const { default: Stripe } = await loadStripe();
    const api = config.stripeApiUrl ? new URL(config.stripeApiUrl) : undefined;
    stripeClient = {
      key: id,
      client: new Stripe(key, {
        maxNetworkRetries: 2,
        timeout: 10_000,
        telemetry: false,
        ...(api
          ? {
              host: api.hostname,
              port: Number(api.port || (api.protocol === 'https:' ? 443 : 80)),
              protocol: api.protocol.replace(':', '') as 'http' | 'https',
            }
          : {}),
      }),
    };
  }
  return stripeClient.client;
}

/**
 * The payment configuration. In AWS the Stripe keys live in Secrets Manager (STRIPE_SECRET_ARN,
 * JSON `{"secretKey", "webhookSecret"}`), read on first use and kept for SECRET_CACHE_MS, so a
 * rotated key is picked up without a deploy; elsewhere they come from the environment.
 */
let stripeSecret: { arn: string; at: number; value: { secretKey: string; webhookSecret: string } } | undefined;
let secretsClient: SecretsManagerClient | undefined;

export async function paymentsConfig(): Promise<PaymentsConfig> {
  const config = getConfig().payments;
  if (!config.stripeSecretArn) return config;
  if (!stripeSecret || stripeSecret.arn !== config.stripeSecretArn || Date.now() - stripeSecret.at > SECRET_CACHE_MS) {
    const sm = await loadSecretsManager();
    secretsClient ??= new sm.SecretsManagerClient({});
    const out = await secretsClient.send(new sm.GetSecretValueCommand({ SecretId: config.stripeSecretArn }));
    const value = JSON.parse(out.SecretString ?? '{}') as { secretKey?: string; webhookSecret?: string };
    if (!value.secretKey || !value.webhookSecret) throw new Error('The Stripe secret must hold {"secretKey", "webhookSecret"}');
    stripeSecret = {
      arn: config.stripeSecretArn,
      at: Date.now(),
      value: { secretKey: value.secretKey, webhookSecret: value.webhookSecret },
    };
  }
  return { ...config, stripeSecretKey: stripeSecret.value.secretKey, webhookSecret: stripeSecret.value.webhookSecret };
}

/** Stripe's default tolerance: its library refuses a signature older than this, and we one dated further ahead. */
const SIGNATURE_TOLERANCE_S = 300;

/** Verifies the signature over the raw body with Stripe's own library, and its timestamp both ways. */
export async function verifyStripeEvent(rawBody: string, signature: string | undefined, receivedAtMs = Date.now()): Promise<Stripe.Event> {
  const config = await paymentsConfig();
  if (!config.webhookSecret) throw new ApiError('payments_unavailable', 'Webhooks are not configured (STRIPE_WEBHOOK_SECRET)');
  if (!signature) return refuseSignature('no signature');
  const client = await stripe(config);
  let event: Stripe.Event;
  try {
    event = client.webhooks.constructEvent(rawBody, signature, config.webhookSecret, SIGNATURE_TOLERANCE_S, undefined, receivedAtMs);
  } catch {
    return refuseSignature('signature mismatch or too old');
  }
  if (isDatedAhead(signature, receivedAtMs)) return refuseSignature('timestamp in the future');
  return event;
}

/**
 * Stripe's library refuses only old timestamps. One from the future is as suspect: a clock far
 * off, or a delivery signed ahead to be replayed later, after an old one would have run out.
 */
function isDatedAhead(signature: string, receivedAtMs: number): boolean {
  const signedAt = signedAtSeconds(signature);
  return !Number.isFinite(signedAt) || signedAt > Math.floor(receivedAtMs / 1000) + SIGNATURE_TOLERANCE_S;
}

/** The signed `t=` of a Stripe-Signature, read as Stripe's library reads it (the last `t=` wins). */
function signedAtSeconds(signature: string): number {
  const timestamps = signature
    .split(',')
    .map((part) => part.split('='))
    .filter(([name]) => name === 't');
  return Number.parseInt(timestamps.at(-1)?.[1] ?? '', 10);
}

function refuseSignature(reason: 'no signature' | 'signature mismatch or too old' | 'timestamp in the future'): never {
  // A metric filter counts these (an alarm watches for forged or misconfigured deliveries).
  logger.warn('stripe webhook rejected', { reason });
  throw new ApiError(
    'invalid_signature',
    reason === 'no signature'
      ? 'Missing Stripe-Signature header'
      : 'The Stripe-Signature does not match this body, or its timestamp is more than 5 minutes from the time it arrived',
  );
}

/** Where a checkout returns to: the caller's URLs, else the platform's, else the API reference. */
export function returnUrls(
  config: Pick<PaymentsConfig, 'successUrl' | 'cancelUrl'>,
  baseUrl: string,
  input: { successUrl?: string; cancelUrl?: string } = {},
): { successUrl: string; cancelUrl: string } {
  const fallback = config.successUrl ?? `${baseUrl}/docs`;
  return { successUrl: input.successUrl ?? fallback, cancelUrl: input.cancelUrl ?? config.cancelUrl ?? fallback };
}
