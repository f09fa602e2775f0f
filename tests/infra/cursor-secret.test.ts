import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { resetConfig } from '../../shared/config/env.ts';
import { startFakeSecretsManager, type FakeSecretsManager } from '../helpers/fake-secrets-manager.ts';

/**
 * The cursor key in AWS (infra: CURSOR_SECRET_ARN, no CURSOR_SECRET): shared/db/cursor.ts reads it
 * from Secrets Manager when it loads, with the real AWS SDK against the local stand-in for Secrets
 * Manager (tests/helpers/fake-secrets-manager.ts; Secrets Manager cannot run offline).
 * The module is imported only after the environment is set, so it loads as it would in Lambda.
 */
const ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:control-plane/cursor-AbCdEf';
let fake: FakeSecretsManager;
const saved = { ...process.env };

beforeAll(async () => {
  fake = await startFakeSecretsManager();
  fake.secrets.set('control-plane/cursor', 'key-from-secrets-manager');
  delete process.env.CURSOR_SECRET;
  Object.assign(process.env, {
    STAGE: 'aws',
    CURSOR_SECRET_ARN: ARN,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_ENDPOINT_URL_SECRETS_MANAGER: fake.url,
  });
  resetConfig();
});
afterAll(async () => {
  process.env = saved;
  resetConfig();
  await fake?.close();
});

describe('cursor key from Secrets Manager (CURSOR_SECRET_ARN)', () => {
  it('is read once when the module loads, and signs with the stored key', async () => {
    vi.resetModules();
    const { encodeCursor, decodeCursor } = await import('../../shared/db/cursor.ts');
    expect(fake.calls).toEqual([{ action: 'GetSecretValue', secretId: 'control-plane/cursor' }]);
    const cursor = encodeCursor({ PK: 'ACCOUNT#a', SK: 'KEY#1' }, 'caller');
    const [payload, signature] = cursor.split('.');
    expect(signature).toBe(createHmac('sha256', 'key-from-secrets-manager').update(payload!).digest('base64url'));
    expect(decodeCursor(cursor, 'caller')).toEqual({ PK: 'ACCOUNT#a', SK: 'KEY#1' });
    encodeCursor({ x: 1 }, 'caller');
    expect(fake.calls).toHaveLength(1); // cached
  });

  it('loads even when the first read fails; listings fail until a later read succeeds', async () => {
    fake.secrets.delete('control-plane/cursor');
    resetConfig();
    vi.resetModules();
    const { encodeCursor } = await import('../../shared/db/cursor.ts');
    expect(() => encodeCursor({ x: 1 }, 'caller')).toThrow(/could not be read from Secrets Manager yet \(ResourceNotFoundException\)/);
    fake.secrets.set('control-plane/cursor', 'key-from-secrets-manager');
    // The failed signature started another read in the background.
    await vi.waitFor(() => expect(() => encodeCursor({ x: 1 }, 'caller')).not.toThrow());
  });

  it('refuses to sign in AWS with neither the ARN nor CURSOR_SECRET (functions that never sign cursors)', async () => {
    delete process.env.CURSOR_SECRET_ARN;
    resetConfig();
    vi.resetModules();
    const calls = fake.calls.length;
    const { encodeCursor } = await import('../../shared/db/cursor.ts');
    expect(fake.calls).toHaveLength(calls);
    expect(() => encodeCursor({ x: 1 }, 'caller')).toThrow(/No cursor key/);
  });
});
