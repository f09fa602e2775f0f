import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { resetConfig } from '../../shared/config/env.ts';
import { startFakeSecretsManager, type FakeSecretsManager } from '../helpers/fake-secrets-manager.ts';

/**
 * The cursor key in AWS (infra: CURSOR_SECRET_ARN, no CURSOR_SECRET): shared/db/cursor.ts reads it
 * from Secrets Manager on the first signature, with the real AWS SDK against the local stand-in for Secrets
 * Manager (tests/helpers/fake-secrets-manager.ts; Secrets Manager cannot run offline).
 * The module is imported only after the environment is set, as it would be in Lambda.
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
  it('is read once, on the first signature (not when the module loads), and signs with the stored key', async () => {
    vi.resetModules();
    const { encodeCursor, decodeCursor } = await import('../../shared/db/cursor.ts');
    expect(fake.calls).toEqual([]);
    const cursor = await encodeCursor({ PK: 'ACCOUNT#a', SK: 'KEY#1' }, 'caller');
    expect(fake.calls).toEqual([{ action: 'GetSecretValue', secretId: 'control-plane/cursor' }]);
    const [payload, signature] = cursor.split('.');
    expect(signature).toBe(createHmac('sha256', 'key-from-secrets-manager').update(payload!).digest('base64url'));
    expect(await decodeCursor(cursor, 'caller')).toEqual({ PK: 'ACCOUNT#a', SK: 'KEY#1' });
    await encodeCursor({ x: 1 }, 'caller');
    expect(fake.calls).toHaveLength(1); // cached
  });

  it('fails listings while the key cannot be read, and the next signature reads it again', async () => {
    fake.secrets.delete('control-plane/cursor');
    resetConfig();
    vi.resetModules();
    const { encodeCursor } = await import('../../shared/db/cursor.ts');
    await expect(encodeCursor({ x: 1 }, 'caller')).rejects.toThrow(/could not be read from Secrets Manager \(ResourceNotFoundException\)/);
    fake.secrets.set('control-plane/cursor', 'key-from-secrets-manager');
    await expect(encodeCursor({ x: 1 }, 'caller')).resolves.toMatch(/\./);
  });

  it('refuses to sign in AWS with neither the ARN nor CURSOR_SECRET (functions that never sign cursors)', async () => {
    delete process.env.CURSOR_SECRET_ARN;
    resetConfig();
    vi.resetModules();
    const calls = fake.calls.length;
    const { encodeCursor } = await import('../../shared/db/cursor.ts');
    await expect(encodeCursor({ x: 1 }, 'caller')).rejects.toThrow(/No cursor key/);
    expect(fake.calls).toHaveLength(calls);
  });
});
