import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { verifyWebhook, WebhookVerificationError } from '../../clients/typescript/webhooks.ts';

/**
 * The published client's verifyWebhook against signatures made by the `standardwebhooks`
 * reference library (the one the integration tests verify the service's deliveries with).
 */
const secret = `whsec_${Buffer.from('k'.repeat(32)).toString('base64')}`;
const other = `whsec_${Buffer.from('o'.repeat(32)).toString('base64')}`;
const event = {
  id: '0193a7e2-5b1c-7d4e-9f3a-000000000001',
  type: 'server.created',
  timestamp: '2026-11-26T06:00:00.000Z',
  data: { id: 's1' },
};
const body = JSON.stringify(event);
const at = new Date('2026-11-26T06:00:00Z');
const now = at.getTime();

function signed(by: string, payload = body, when = at): Record<string, string> {
  return {
    'webhook-id': event.id,
    'webhook-timestamp': String(Math.floor(when.getTime() / 1000)),
    'webhook-signature': new Webhook(by).sign(event.id, when, payload),
  };
}

describe('verifyWebhook', () => {
  it('answers the event of a delivery standardwebhooks signed, from a record or Headers, string or bytes', async () => {
    expect(await verifyWebhook(secret, signed(secret), body, { now })).toEqual(event);
    expect(await verifyWebhook(secret, new Headers(signed(secret)), new TextEncoder().encode(body), { now })).toEqual(event);
    const upper = Object.fromEntries(Object.entries(signed(secret)).map(([k, v]) => [k.toUpperCase(), v]));
    expect(await verifyWebhook(secret, upper, body, { now })).toEqual(event);
  });

  it('takes either signature of a rotation', async () => {
    const both = { ...signed(secret), 'webhook-signature': `${signed(other)['webhook-signature']} ${signed(secret)['webhook-signature']}` };
    expect(await verifyWebhook(secret, both, body, { now })).toEqual(event);
    expect(await verifyWebhook(other, both, body, { now })).toEqual(event);
  });

  it('refuses another secret, an edited body, a moved timestamp, missing headers', async () => {
    const refused = (headers: Record<string, string>, payload = body, key = secret) =>
      expect(verifyWebhook(key, headers, payload, { now })).rejects.toBeInstanceOf(WebhookVerificationError);
    await refused(signed(other));
    await refused(signed(secret), body.replace('s1', 's2'));
    await refused({ ...signed(secret), 'webhook-timestamp': String(Math.floor(now / 1000) + 1) });
    await refused({ ...signed(secret), 'webhook-id': 'another' });
    await refused({ ...signed(secret), 'webhook-signature': 'v2,abc' });
    await refused({ 'webhook-id': event.id, 'webhook-timestamp': String(now / 1000) });
    await refused(signed(secret), body, 'whsec_***');
  });

  it('refuses a delivery outside the tolerance, either way, and accepts one inside it', async () => {
    const old = new Date(now - 301_000);
    const ahead = new Date(now + 301_000);
    await expect(verifyWebhook(secret, signed(secret, body, old), body, { now })).rejects.toThrow('tolerance');
    await expect(verifyWebhook(secret, signed(secret, body, ahead), body, { now })).rejects.toThrow('tolerance');
    expect(await verifyWebhook(secret, signed(secret, body, new Date(now - 299_000)), body, { now })).toEqual(event);
    expect(await verifyWebhook(secret, signed(secret, body, old), body, { now, toleranceSeconds: 600 })).toEqual(event);
  });
});
