import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { keepLocalIdpKeyIn, LOCAL_AUDIENCE, localJwks, mintSessionToken } from '../../dev/local-idp.ts';

/** `npm start` keeps the local identity provider's key in DATA_DIR: a restart keeps every session token valid. */
describe('local identity provider key', () => {
  it('survives a restart when kept in a file (mode 0600), and a new file means a new key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'idp-'));
    keepLocalIdpKeyIn(join(dir, 'data', 'local-idp-key.json'));
    const { token } = await mintSessionToken('http://127.0.0.1:3000/dev/oidc', 'ann@example.com');
    expect(statSync(join(dir, 'data', 'local-idp-key.json')).mode & 0o777).toBe(0o600);

    keepLocalIdpKeyIn(join(dir, 'data', 'local-idp-key.json')); // what a restart does: the key is read again
    const jwks = await localJwks();
    expect(jwks.keys[0]).not.toHaveProperty('d'); // the JWKS never carries the private part
    const { payload } = await jwtVerify(token, createLocalJWKSet(jwks), { audience: LOCAL_AUDIENCE });
    expect(payload.email).toBe('ann@example.com');

    keepLocalIdpKeyIn(join(dir, 'other.json'));
    await expect(jwtVerify(token, createLocalJWKSet(await localJwks()), { audience: LOCAL_AUDIENCE })).rejects.toThrow();
  });
});
