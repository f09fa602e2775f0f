import { createServer } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { startFakeStripe, type FakeStripe } from '../helpers/fake-stripe.ts';
import { resetConfig } from '../../shared/config/env.ts';
import { forgetWebhookHealth } from '../../shared/payments/webhook-endpoint.ts';
import { STRIPE_EVENT_TYPES } from '../../shared/payments/stripe-events.ts';

/**
 * GET /v1/admin/health: this API's Stripe webhook endpoint as Stripe has it (read with Stripe's own
 * library from the local Stripe fake, as Stripe cannot run offline), and the events it misses.
 */
const WEBHOOK_SECRET = 'whsec_test_health_0123456789';
let stripeFake: FakeStripe;
let api: TestApi;
let webhookUrl: string;

beforeAll(async () => {
  stripeFake = await startFakeStripe();
  process.env.STRIPE_SECRET_KEY = 'sk_test_fake_key_for_tests';
  process.env.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET;
  process.env.STRIPE_API_URL = stripeFake.url;
  api = await startTestApi();
  webhookUrl = `${api.baseUrl}/v1/webhooks/stripe`;
});
afterAll(async () => {
  await api?.stop();
  await stripeFake?.close();
});
// Each case asks Stripe afresh; the one-minute memory has its own case.
beforeEach(() => forgetWebhookHealth());

const health = async () => {
  const res = await api.call('GET', '/v1/admin/health');
  expect(res.status).toBe(200);
  return res.body.stripeWebhook;
};
const endpointsListed = () => stripeFake.requests.filter((r) => r.path.startsWith('/v1/webhook_endpoints')).length;

/** An endpoint as an operator made it by hand, with Stripe's fields. */
function addEndpoint(url: string, events: string[], status: 'enabled' | 'disabled' = 'enabled') {
  const endpoint = {
    id: `we_test_${stripeFake.webhookEndpoints.length}`,
    object: 'webhook_endpoint' as const,
    url,
    enabled_events: events,
    status,
    description: null,
    api_version: null,
    secret: 'whsec_never_shown_0123456789',
  };
  stripeFake.webhookEndpoints.push(endpoint);
  return endpoint;
}

describe('GET /v1/admin/health: the Stripe webhook endpoint', () => {
  it('no endpoint at this API (another service has one elsewhere): no_endpoint', async () => {
    addEndpoint('https://other.example.com/stripe', ['*']);
    expect(await health()).toMatchObject({ status: 'no_endpoint', endpoint: null, expectedEvents: STRIPE_EVENT_TYPES, missingEvents: [] });
  });

  it('subscribed to the four checkout events only (the old deploy guide): missing_events names every other one', async () => {
    const endpoint = addEndpoint(
      webhookUrl,
      STRIPE_EVENT_TYPES.filter((type) => type.startsWith('checkout.session.')),
    );
    const report = await health();
    expect(report).toMatchObject({ status: 'missing_events', endpoint: { id: endpoint.id, url: webhookUrl, status: 'enabled' } });
    expect(report.missingEvents).toEqual([
      'payment_intent.succeeded',
      'payment_intent.payment_failed',
      'charge.refunded',
      'refund.failed',
      'refund.updated',
      'charge.refund.updated',
      'charge.dispute.created',
      'charge.dispute.updated',
      'charge.dispute.closed',
      'charge.dispute.funds_withdrawn',
      'charge.dispute.funds_reinstated',
    ]);
    expect(JSON.stringify(report)).not.toContain(endpoint.secret);
  });

  it('every event of the list: ok; disabled by Stripe: endpoint_disabled', async () => {
    const [, endpoint] = stripeFake.webhookEndpoints;
    endpoint!.enabled_events = [...STRIPE_EVENT_TYPES, 'customer.created'];
    expect(await health()).toMatchObject({ status: 'ok', missingEvents: [] });
    forgetWebhookHealth();
    endpoint!.status = 'disabled';
    expect((await health()).status).toBe('endpoint_disabled');
    endpoint!.status = 'enabled';
    endpoint!.enabled_events = ['*'];
    forgetWebhookHealth();
    expect(await health()).toMatchObject({ status: 'ok', missingEvents: [] });
  });

  it('asks Stripe at most once a minute', async () => {
    const before = endpointsListed();
    const first = await health();
    for (let i = 0; i < 3; i++) expect(await health()).toEqual(first);
    expect(endpointsListed()).toBe(before + 1);
  });

  it('a Stripe that answers with an error, or does not answer at all: unreachable, not an error', async () => {
    stripeFake.failNext(500);
    expect(await health()).toMatchObject({ status: 'unreachable', endpoint: null, missingEvents: [] });
    // Nothing listens at this address: the connection is refused.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', () => resolve()));
    const { port } = closed.address() as { port: number };
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    process.env.STRIPE_API_URL = `http://127.0.0.1:${port}`;
    resetConfig();
    try {
      forgetWebhookHealth();
      expect(await health()).toMatchObject({ status: 'unreachable', endpoint: null });
    } finally {
      process.env.STRIPE_API_URL = stripeFake.url;
      resetConfig();
    }
  });

  it('without Stripe keys, in the sandbox: says so; admins only', async () => {
    delete process.env.STRIPE_SECRET_KEY;
    resetConfig();
    try {
      expect((await health()).status).toBe('sandbox');
    } finally {
      process.env.STRIPE_SECRET_KEY = 'sk_test_fake_key_for_tests';
      resetConfig();
    }
    const token = await api.session('not-an-admin@example.com');
    expectEnvelope(await api.call('GET', '/v1/admin/health', { token }), 403, 'forbidden');
  });
});
