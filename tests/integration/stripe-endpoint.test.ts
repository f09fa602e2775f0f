import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeSecretsManager, type FakeSecretsManager } from '../helpers/fake-secrets-manager.ts';
import { startFakeStripe, type FakeStripe } from '../helpers/fake-stripe.ts';
import { stripeEndpointCommand } from '../../dev/stripe-endpoint.ts';
import { STRIPE_EVENT_TYPES } from '../../shared/payments/stripe-events.ts';

/**
 * The deploy command that creates or updates the Stripe webhook endpoint (dev/stripe-endpoint.ts),
 * with Stripe's own library against the local Stripe fake (STRIPE_API_URL) and the AWS SDK against a
 * local Secrets Manager (neither runs offline).
 */
const ROOT = resolve(import.meta.dirname, '../..');
const SECRET_ID = 'control-plane/stripe';
const URL_OF_API = 'https://api.example.com/v1/webhooks/stripe';
let stripe: FakeStripe;
let sm: FakeSecretsManager;
const awsEnv = () => ({
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'test',
  AWS_SECRET_ACCESS_KEY: 'test',
  AWS_ENDPOINT_URL_SECRETS_MANAGER: sm.url,
});

beforeAll(async () => {
  [stripe, sm] = await Promise.all([startFakeStripe(), startFakeSecretsManager()]);
  Object.assign(process.env, awsEnv());
  sm.secrets.set(SECRET_ID, JSON.stringify({ secretKey: 'sk_test_deployer' }));
});
afterAll(async () => {
  await Promise.all([stripe?.close(), sm?.close()]);
});

const stored = () => JSON.parse(sm.secrets.get(SECRET_ID)!) as Record<string, string>;

/** Runs the command in process, collecting what it prints. */
async function run() {
  const lines: string[] = [];
  const result = await stripeEndpointCommand({ url: URL_OF_API, secretId: SECRET_ID, stripeApiUrl: stripe.url }, (line) =>
    lines.push(line),
  );
  return { result, printed: lines.join('\n') };
}

describe('npm run stripe:endpoint', () => {
  it('creates the endpoint with exactly the event list and stores its signing secret beside the key, printing neither', async () => {
    const { result, printed } = await run();
    expect(result).toMatchObject({ action: 'created', events: STRIPE_EVENT_TYPES.length, secretWritten: true });
    expect(stripe.webhookEndpoints).toHaveLength(1);
    const [endpoint] = stripe.webhookEndpoints;
    expect(endpoint).toMatchObject({ url: URL_OF_API, enabled_events: STRIPE_EVENT_TYPES, status: 'enabled' });
    expect(stored()).toEqual({ secretKey: 'sk_test_deployer', webhookSecret: endpoint!.secret });
    expect(printed).toContain(endpoint!.id);
    expect(printed).not.toContain(endpoint!.secret);
    expect(printed).not.toContain('sk_test_deployer');
  });

  it('run again: the same one endpoint, nothing changed, the secret left alone', async () => {
    const writes = sm.calls.filter((c) => c.action === 'PutSecretValue').length;
    const before = stored();
    const { result } = await run();
    expect(result).toMatchObject({ action: 'unchanged', secretWritten: false });
    expect(stripe.webhookEndpoints).toHaveLength(1);
    expect(stored()).toEqual(before);
    expect(sm.calls.filter((c) => c.action === 'PutSecretValue')).toHaveLength(writes);
    expect(
      stripe.requests.filter((r) => r.path.startsWith('/v1/webhook_endpoints') && r.path !== '/v1/webhook_endpoints?limit=100'),
    ).toHaveLength(
      1, // the create of the first run
    );
  });

  it('an endpoint from an older, shorter list (the four checkout events) is brought to the whole list, in place', async () => {
    const [endpoint] = stripe.webhookEndpoints;
    endpoint!.enabled_events = STRIPE_EVENT_TYPES.filter((type) => type.startsWith('checkout.session.'));
    endpoint!.status = 'disabled';
    const before = stored();
    const { result } = await run();
    expect(result).toMatchObject({ action: 'updated', endpointId: endpoint!.id, events: STRIPE_EVENT_TYPES.length });
    expect(stripe.webhookEndpoints).toHaveLength(1);
    expect(endpoint).toMatchObject({ enabled_events: STRIPE_EVENT_TYPES, status: 'enabled' });
    expect(stored()).toEqual(before); // Stripe keeps the endpoint's signing secret on update
  });

  it('an endpoint made elsewhere, with no signing secret stored, is a clear error that prints no secret', async () => {
    sm.secrets.set('control-plane/other', JSON.stringify({ secretKey: 'sk_test_deployer' }));
    const attempt = stripeEndpointCommand({ url: URL_OF_API, secretId: 'control-plane/other', stripeApiUrl: stripe.url }, () => {});
    await expect(attempt).rejects.toThrow(/holds no "webhookSecret"/);
    await expect(attempt).rejects.not.toThrow(stripe.webhookEndpoints[0]!.secret);
  });

  it('as the operator runs it: exit 0, one endpoint still, and no secret in its output', async () => {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [join(ROOT, 'dev/stripe-endpoint.ts'), '--url', URL_OF_API], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, ...awsEnv(), STRIPE_API_URL: stripe.url },
    });
    expect(stdout).toContain(`${stripe.webhookEndpoints[0]!.id} unchanged`);
    expect(stripe.webhookEndpoints).toHaveLength(1);
    for (const secret of [stripe.webhookEndpoints[0]!.secret, 'sk_test_deployer']) expect(stdout + stderr).not.toContain(secret);
  });
});
