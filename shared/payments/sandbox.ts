import { paymentsConfig, stripe } from './index.ts';

/**
 * The local sandbox provider (no Stripe secret key): events are signed here with the webhook
 * secret, as Stripe signs them, and go through the same webhook code. The pages and `/dev` routes
 * that drive it live in dev/ (dev/sandbox-events.ts); in AWS payments are off without a Stripe
 * secret, so this runs only locally.
 */

/** An event as Stripe sends it: the envelope around what happened (`fields`: its `type` and `data`). */
export function stripeEventBody(
  fields: Record<string, unknown>,
  id = `evt_sandbox_${Date.now()}_${Math.random().toString(36).slice(2, 8)}`,
): string {
  return JSON.stringify({
    id,
    object: 'event',
    api_version: '2025-01-27',
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    ...fields,
  });
}

/** An event body as Stripe would send it, signed with the webhook secret (the sandbox only). */
export async function signedSandboxEvent(type: string, object: Record<string, unknown>): Promise<{ body: string; signature: string }> {
  const body = stripeEventBody({ type, data: { object } });
  const config = await paymentsConfig();
  const signature = (await stripe(config)).webhooks.generateTestHeaderString({ payload: body, secret: config.webhookSecret! });
  return { body, signature };
}
