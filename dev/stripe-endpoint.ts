import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { PaymentsConfig } from '../shared/config/env.ts';
import { stripe } from '../shared/payments/stripe-client.ts';
import { syncWebhookEndpoint } from '../shared/payments/webhook-endpoint.ts';

/**
 * `npm run stripe:endpoint -- --url https://<api>/v1/webhooks/stripe [--secret-id control-plane/stripe]`
 * (docs/deploy.md, "Stripe"): creates the Stripe webhook endpoint at `url` subscribed to exactly the
 * events the service handles (shared/payments/stripe-events.ts), or sets an existing one's events to
 * that list, and writes the signing secret Stripe shows once into the Secrets Manager secret the
 * functions read (`webhookSecret` beside `secretKey`). Run it at every deploy: a second run changes
 * nothing, one after the list grew updates the endpoint. It prints what it did, never a secret.
 * STRIPE_API_URL points it at another Stripe (the tests' fake), as it does the service.
 */
export interface EndpointCommandResult {
  endpointId: string;
  action: 'created' | 'updated' | 'unchanged';
  events: number;
  secretWritten: boolean;
}

type SecretsManager = typeof import('@aws-sdk/client-secrets-manager');

export async function stripeEndpointCommand(
  options: { url: string; secretId: string; stripeApiUrl?: string },
  say: (line: string) => void = console.log,
): Promise<EndpointCommandResult> {
  const url = new URL(options.url);
  if (url.protocol !== 'https:' && !['127.0.0.1', 'localhost'].includes(url.hostname)) {
    throw new Error(`--url must be https (Stripe delivers only there): ${url.origin}`);
  }
  const sm: SecretsManager = await import('@aws-sdk/client-secrets-manager');
  const secrets = new sm.SecretsManagerClient({});
  const stored = await readSecret(sm, secrets, options.secretId);
  if (typeof stored.secretKey !== 'string' || !stored.secretKey) {
    throw new Error(`${options.secretId} holds no "secretKey": create it first with the Stripe secret key (docs/deploy.md)`);
  }
  const client = await stripe({ stripeSecretKey: stored.secretKey, stripeApiUrl: options.stripeApiUrl } as PaymentsConfig);
  const sync = await syncWebhookEndpoint(client, url.href, 'Control plane: top-ups, auto top-ups, refunds and disputes');
  say(`Stripe webhook endpoint ${sync.endpointId} ${sync.action}: ${sync.enabledEvents.length} events (${sync.enabledEvents.join(', ')})`);
  let secretWritten = false;
  if (sync.secret) {
    await secrets.send(
      new sm.PutSecretValueCommand({ SecretId: options.secretId, SecretString: JSON.stringify({ ...stored, webhookSecret: sync.secret }) }),
    );
    secretWritten = true;
    say(`Its signing secret is stored in ${options.secretId} ("webhookSecret"); the functions read it within five minutes.`);
  } else if (typeof stored.webhookSecret !== 'string' || !stored.webhookSecret) {
    // Stripe shows an endpoint's secret only when it creates it: this one was made elsewhere.
    throw new Error(
      `Endpoint ${sync.endpointId} already exists but ${options.secretId} holds no "webhookSecret": copy its signing secret from Stripe's Dashboard into the secret, or delete the endpoint and run this again`,
    );
  }
  return { endpointId: sync.endpointId, action: sync.action, events: sync.enabledEvents.length, secretWritten };
}

async function readSecret(sm: SecretsManager, secrets: InstanceType<SecretsManager['SecretsManagerClient']>, secretId: string) {
  const out = await secrets.send(new sm.GetSecretValueCommand({ SecretId: secretId }));
  try {
    return JSON.parse(out.SecretString ?? '{}') as Record<string, unknown>;
  } catch {
    throw new Error(`${secretId} is not JSON: it must hold {"secretKey": "sk_…"}`);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { url: { type: 'string' }, 'secret-id': { type: 'string', default: 'control-plane/stripe' } } });
  if (!values.url) {
    console.error('usage: npm run stripe:endpoint -- --url https://<api>/v1/webhooks/stripe [--secret-id control-plane/stripe]');
    process.exit(2);
  }
  try {
    await stripeEndpointCommand({ url: values.url, secretId: values['secret-id'], stripeApiUrl: process.env.STRIPE_API_URL });
  } catch (err) {
    // The message only: an SDK error object may carry the request it made.
    console.error(`stripe:endpoint failed: ${(err as Error).message}`);
    process.exit(1);
  }
}
