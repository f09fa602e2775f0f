import { describe, expect, it } from 'vitest';
import { checksumValid, generateApiKey, hasOurPrefix, hashApiKey } from '../../shared/auth/api-key-format.ts';

describe('API key format', () => {
  it('is prefix, 32 random base62 characters and a 6-character checksum', () => {
    const key = generateApiKey('cp_live');
    expect(key).toMatch(/^cp_live_[0-9A-Za-z]{38}$/);
    expect(hasOurPrefix(key)).toBe(true);
    expect(checksumValid(key)).toBe(true);
  });

  it('catches any single changed character', () => {
    const key = generateApiKey('cp_test');
    let caught = 0;
    for (let i = 8; i < key.length; i++) {
      const c = key[i] === 'a' ? 'b' : 'a';
      if (!checksumValid(key.slice(0, i) + c + key.slice(i + 1))) caught++;
    }
    expect(caught).toBe(key.length - 8);
  });

  it('never repeats and hashes to 64 hex characters', () => {
    const seen = new Set(Array.from({ length: 500 }, () => generateApiKey('cp_test')));
    expect(seen.size).toBe(500);
    expect(hashApiKey('x')).toMatch(/^[0-9a-f]{64}$/);
  });
});
