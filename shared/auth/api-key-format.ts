import { createHash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * API key format: `<prefix>_<32 base62 chars of randomness><6 base62 chars of CRC32>`, e.g.
 * `cp_live_5cJ2…`. The prefix tells a live key from a test key (and lets secret scanners find
 * them); the checksum lets us refuse a mistyped or made-up key without a database read.
 * Only the SHA-256 of the whole key is stored.
 */
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function toBase62(value: bigint, width: number): string {
  let out = '';
  let v = value;
  while (v > 0n) {
    out = BASE62[Number(v % 62n)] + out;
    v /= 62n;
  }
  return out.padStart(width, '0');
}

const checksum = (body: string): string => toBase62(BigInt(crc32(body)), 6);

export function generateApiKey(prefix: string): string {
  const random = toBase62(BigInt(`0x${randomBytes(24).toString('hex')}`), 33).slice(-32);
  const body = `${prefix}_${random}`;
  return `${body}${checksum(body)}`;
}

/** Keys of our format carry a valid checksum. Operator-chosen keys (LOCAL_ADMIN_API_KEY) skip this check. */
export function hasOurPrefix(token: string): boolean {
  return /^cp_(live|test)_/.test(token);
}

export function checksumValid(token: string): boolean {
  if (token.length < 12) return false;
  return checksum(token.slice(0, -6)) === token.slice(-6);
}

export const hashApiKey = (token: string): string => createHash('sha256').update(token).digest('hex');

/** What a listing may show of a key: enough to recognise it, never enough to use it. */
export const displayPrefix = (token: string): string => token.slice(0, 12);
export const lastFour = (token: string): string => token.slice(-4);
