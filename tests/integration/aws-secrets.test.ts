import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeSecretsManager, type FakeSecretsManager } from '../helpers/fake-secrets-manager.ts';
import { resetConfig } from '../../shared/config/env.ts';
import { secretStore } from '../../shared/secrets/index.ts';
import { billingConfig } from '../../shared/payments/checkout.ts';
import { verifyStripeEvent } from '../../shared/payments/stripe-client.ts';
import Stripe from 'stripe';
import { ensureTable } from '../../dev/dynamodb.ts';

/**
 * The code paths that run only in AWS, against a local Secrets Manager over HTTP with the real AWS
 * SDK: panel keys (one secret per instance, cached), and the Stripe keys read from STRIPE_SECRET_ARN.
 */
let fake: FakeSecretsManager;
beforeAll(async () => {
  fake = await startFakeSecretsManager();
  Object.assign(process.env, {
    STAGE: 'aws',
    CURSOR_SECRET: 'test-cursor-secret',
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_ENDPOINT_URL_SECRETS_MANAGER: fake.url,
    SECRETS_PREFIX: 'control-plane',
  });
  resetConfig();
  await ensureTable(process.env.DYNAMODB_ENDPOINT!, process.env.TABLE_NAME!); // settings are read from it
});
afterAll(async () => {
  await fake?.close();
});

describe('panel keys in Secrets Manager', () => {
  it('creates one secret per instance, reads it back, updates and deletes it', async () => {
    const store = secretStore();
    await store.put('inst-1', { appApiKey: 'ptla_one', clientApiKey: 'ptlc_one' });
    expect(JSON.parse(fake.secrets.get('control-plane/instances/inst-1')!)).toEqual({ appApiKey: 'ptla_one', clientApiKey: 'ptlc_one' });
    expect(fake.calls.map((c) => c.action)).toEqual(['PutSecretValue', 'CreateSecret']); // put first, create when missing
    await store.put('inst-1', { appApiKey: 'ptla_two' });
    expect(JSON.parse(fake.secrets.get('control-plane/instances/inst-1')!)).toEqual({ appApiKey: 'ptla_two' });
    expect(await store.get('inst-1')).toEqual({ appApiKey: 'ptla_two' });
    await store.delete('inst-1');
    expect(fake.secrets.has('control-plane/instances/inst-1')).toBe(false);
    expect(await store.get('inst-1')).toBeUndefined();
    expect(await store.get('never-registered')).toBeUndefined();
  });

  it('a secret in its 7-day deletion window is "no keys", not an error; keys set again restore it', async () => {
    const store = secretStore();
    await store.put('inst-3', { appApiKey: 'ptla_three' });
    await store.delete('inst-3');
    // Secrets Manager keeps it for the recovery window and answers InvalidRequestException meanwhile.
    expect(fake.scheduledForDeletion.has('control-plane/instances/inst-3')).toBe(true);
    const reads = () => fake.calls.filter((c) => c.secretId === 'control-plane/instances/inst-3' && c.action === 'GetSecretValue').length;
    const before = reads();
    expect(await store.get('inst-3')).toBeUndefined();
    expect(reads()).toBe(before + 1); // it did ask, and got the deletion-window answer
    await store.delete('inst-3'); // deleting again is not an error either
    await store.put('inst-3', { appApiKey: 'ptla_back' });
    expect(fake.scheduledForDeletion.has('control-plane/instances/inst-3')).toBe(false);
    expect(JSON.parse(fake.secrets.get('control-plane/instances/inst-3')!)).toEqual({ appApiKey: 'ptla_back' });
    expect(fake.calls.filter((c) => c.secretId === 'control-plane/instances/inst-3').map((c) => c.action)).toEqual([
      'PutSecretValue',
      'CreateSecret',
      'DeleteSecret',
      'GetSecretValue',
      'DeleteSecret',
      'PutSecretValue',
      'RestoreSecret',
      'PutSecretValue',
    ]);
  });

  it('caches a read for the explicit TTL: a warm Lambda does not call Secrets Manager per request', async () => {
    fake.secrets.set('control-plane/instances/inst-2', JSON.stringify({ appApiKey: 'ptla_cached' }));
    const before = fake.calls.filter((c) => c.secretId === 'control-plane/instances/inst-2').length;
    for (let i = 0; i < 5; i++) expect((await secretStore().get('inst-2'))?.appApiKey).toBe('ptla_cached');
    expect(fake.calls.filter((c) => c.secretId === 'control-plane/instances/inst-2').length).toBe(before + 1);
  });
});

describe('Stripe keys from STRIPE_SECRET_ARN', () => {
  it('reads {secretKey, webhookSecret} and verifies webhooks with it', async () => {
    fake.secrets.set('control-plane/stripe', JSON.stringify({ secretKey: 'sk_test_from_sm', webhookSecret: 'whsec_from_sm' }));
    process.env.STRIPE_SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:control-plane/stripe';
    resetConfig();
    expect((await billingConfig()).paymentsEnabled).toBe(true);
    const body = JSON.stringify({ id: 'evt_1', object: 'event', type: 'customer.created', data: { object: { id: 'cus_1' } } });
    const good = new Stripe('sk_x').webhooks.generateTestHeaderString({ payload: body, secret: 'whsec_from_sm' });
    expect((await verifyStripeEvent(body, good)).id).toBe('evt_1');
    const bad = new Stripe('sk_x').webhooks.generateTestHeaderString({ payload: body, secret: 'whsec_other' });
    await expect(verifyStripeEvent(body, bad)).rejects.toMatchObject({ code: 'invalid_signature' });
  });

  it('without it, payments are off in AWS', async () => {
    delete process.env.STRIPE_SECRET_ARN;
    resetConfig();
    expect((await billingConfig()).paymentsEnabled).toBe(false);
  });
});
