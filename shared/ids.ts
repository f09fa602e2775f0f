import { randomFillSync } from 'node:crypto';

/**
 * Ids of the records we list newest first (servers, API keys, accounts, activity entries): RFC 9562
 * UUIDv7, so an id's text order is its creation order and a sort key built from it lists in time.
 *
 * Layout (RFC 9562 §5.7, monotonic per §6.2 method 1): 48 bits of Unix milliseconds, the version
 * 7, a 42-bit counter spread over `rand_a` (12 bits) and the top 30 bits of `rand_b`, the variant
 * `10`, then 32 random bits. Each new millisecond seeds the counter at random below 2^41 (room for
 * 2^41 ids in one millisecond); ids made in the same millisecond by one process add one to it, so
 * they still sort in the order they were made. A clock that steps back, or a counter that runs out,
 * keeps counting on the last millisecond used, so one process never makes an id that sorts below its
 * previous one. Between processes only the millisecond orders; within one millisecond the order of
 * two processes' ids is random.
 */
const COUNTER_BITS = 42;
const COUNTER_MAX = 2 ** COUNTER_BITS - 1;
const SEED_RANGE = 2 ** (COUNTER_BITS - 1);
const TWO_24 = 2 ** 24;

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

export type IdGenerator = () => string;

/** A generator with its own clock and counter (tests pass a clock; the service uses `newId`). */
export function uuidV7Generator(clock: () => number = Date.now): IdGenerator {
  let lastMs = -1;
  let counter = 0;
  const random = Buffer.alloc(10);
  return () => {
    randomFillSync(random);
    const now = Math.floor(clock());
    if (now > lastMs) {
      lastMs = now;
      // 41 random bits: the top counter bit starts clear, leaving room to count up.
      counter = random.readUIntBE(4, 6) % SEED_RANGE;
    } else if (counter < COUNTER_MAX) {
      counter += 1;
    } else {
      // 2^41 ids in one millisecond, or a clock far behind: move to the next millisecond ourselves.
      lastMs += 1;
      counter = random.readUIntBE(4, 6) % SEED_RANGE;
    }
    const hi = Math.floor(counter / TWO_24); // top 18 bits of the counter
    const lo = counter % TWO_24; // low 24 bits
    const b = new Uint8Array(16);
    let ms = lastMs;
    for (let i = 5; i >= 0; i--) {
      b[i] = ms % 256;
      ms = Math.floor(ms / 256);
    }
    b[6] = 0x70 | ((hi >>> 14) & 0x0f);
    b[7] = (hi >>> 6) & 0xff;
    b[8] = 0x80 | (hi & 0x3f);
    b[9] = (lo >>> 16) & 0xff;
    b[10] = (lo >>> 8) & 0xff;
    b[11] = lo & 0xff;
    b[12] = random[0]!;
    b[13] = random[1]!;
    b[14] = random[2]!;
    b[15] = random[3]!;
    const h = Array.from(b, (x) => HEX[x]!);
    return `${h.slice(0, 4).join('')}-${h.slice(4, 6).join('')}-${h.slice(6, 8).join('')}-${h.slice(8, 10).join('')}-${h.slice(10).join('')}`;
  };
}

/** A new time-ordered id (UUIDv7) from this process's one generator. */
export const newId: IdGenerator = uuidV7Generator();

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Whether an id is a UUIDv7 as `newId` makes them (lowercase); ids from before them are random v4. */
export const isTimeOrderedId = (id: string): boolean => V7.test(id);

/** The millisecond a UUIDv7 was made in (its first 48 bits). */
export const timeOfId = (id: string): number => Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
