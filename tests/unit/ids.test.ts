import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isTimeOrderedId, newId, timeOfId, uuidV7Generator } from '../../shared/ids.ts';
import { Uuid } from '../../shared/api/schemas.ts';
import { keys } from '../../shared/db/keys.ts';

/** The time-ordered ids of shared/ids.ts (RFC 9562 UUIDv7) and the sort keys built from them. */
const FORMAT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const bytesOf = (id: string) => Buffer.from(id.replace(/-/g, ''), 'hex');

describe('newId (UUIDv7)', () => {
  it('is a lowercase UUID with version 7 and the RFC variant, accepted by the API schema', () => {
    for (let i = 0; i < 1000; i++) {
      const id = newId();
      expect(id).toMatch(FORMAT);
      const b = bytesOf(id);
      expect(b[6]! >> 4).toBe(7);
      expect(b[8]! >> 6).toBe(0b10);
      expect(isTimeOrderedId(id)).toBe(true);
      expect(Uuid.safeParse(id).success).toBe(true);
    }
    expect(z.uuid().safeParse(newId()).success).toBe(true);
  });

  it('carries the time it was made in its first 48 bits', () => {
    const before = Date.now();
    const id = newId();
    expect(timeOfId(id)).toBeGreaterThanOrEqual(before);
    expect(timeOfId(id)).toBeLessThanOrEqual(Date.now());
    expect(timeOfId(uuidV7Generator(() => 1_700_000_000_123)())).toBe(1_700_000_000_123);
  });

  it('ids made in one millisecond sort in the order they were made', () => {
    const next = uuidV7Generator(() => 1_763_900_000_000);
    const ids = Array.from({ length: 10_000 }, () => next());
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    expect(ids.every((id) => timeOfId(id) === 1_763_900_000_000)).toBe(true);
  });

  it('a tight loop on the real clock sorts in creation order, across many milliseconds', () => {
    // Sized by the clock, not by a count (50,000 ids took seconds on a busy machine): the generator
    // branches only on "same millisecond" (count up) and "later millisecond" (fresh seed), and the
    // order either way is decided by construction, not by chance, so more ids of the same kinds add
    // no power. 50 millisecond changes and ids sharing a millisecond take both branches on the real
    // clock; the fixed clocks above take each to its edges.
    const ids: string[] = [];
    let changes = 0;
    let sameMillisecond = 0;
    while (changes < 50 || sameMillisecond === 0) {
      const id = newId();
      const previous = ids.at(-1);
      if (previous !== undefined) {
        if (timeOfId(id) === timeOfId(previous)) sameMillisecond++;
        else changes++;
      }
      ids.push(id);
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });

  it('a clock that steps back never makes an id that sorts below the previous one', () => {
    let now = 1_763_900_000_500;
    const next = uuidV7Generator(() => now);
    const first = next();
    now -= 1000;
    const second = next();
    now += 2000;
    const third = next();
    expect([first, second, third].sort()).toEqual([first, second, third]);
    expect(timeOfId(second)).toBe(timeOfId(first));
  });

  it('a later millisecond always sorts above an earlier one, whatever the counter', () => {
    let now = 1_763_900_000_000;
    const next = uuidV7Generator(() => now);
    for (let i = 0; i < 200; i++) {
      const a = next();
      now += 1;
      const b = next();
      expect(a < b).toBe(true);
    }
  });

  it('random v4 ids are not time-ordered; the schema still accepts them', () => {
    const v4 = crypto.randomUUID();
    expect(isTimeOrderedId(v4)).toBe(false);
    expect(Uuid.safeParse(v4).success).toBe(true);
  });
});

describe('sort keys of listed ids', () => {
  it('a v7 id lists above every v4 id (newest first), and a Get builds the same key from the id', () => {
    const account = newId();
    const v7 = newId();
    const highestV4 = 'ffffffff-ffff-4fff-bfff-ffffffffffff';
    expect(keys.server(account, v7).SK > keys.server(account, highestV4).SK).toBe(true);
    expect(keys.apiKey(account, v7).SK > keys.apiKey(account, highestV4).SK).toBe(true);
    expect(keys.server(account, v7).SK).toBe(`SERVER#v7#${v7}`);
    expect(keys.server(account, highestV4).SK).toBe(`SERVER#${highestV4}`);
    expect(keys.apiKey(account, v7).SK.startsWith(keys.apiKeyPrefix(account).SKPrefix)).toBe(true);
    expect(keys.server(account, v7).SK.startsWith(keys.serverPrefix(account).SKPrefix)).toBe(true);
    const later = newId();
    expect(keys.server(account, later).SK > keys.server(account, v7).SK).toBe(true);
  });
});
