import { createHmac, timingSafeEqual } from 'node:crypto';
import { getConfig } from '../config/env.ts';
import { ApiError } from '../errors.ts';
import { loadSecretsManager, type SecretsManagerClient } from '../packages.ts';

/**
 * Opaque, signed pagination cursors. A cursor carries the DynamoDB position and the identity of
 * the query it belongs to (caller + listing); a cursor from another caller or listing, or one
 * that was tampered with, is refused with 400 `invalid_cursor` before any read.
 */
type Position = Record<string, unknown>;

/**
 * The key in AWS: read from Secrets Manager (`CURSOR_SECRET_ARN`) instead of the environment, so
 * it is never in a function's configuration. Read on the first signature (as the panel keys,
 * shared/secrets), so functions that never sign cursors never call Secrets Manager and no module
 * waits at load; after that re-read in the background at most every CURSOR_KEY_CACHE_MS, so a new
 * version reaches running functions within minutes; until a read succeeds the key held is kept.
 * A failed read fails only listings, with a 500, and each of them starts another read.
 */
const CURSOR_KEY_CACHE_MS = 5 * 60_000;
let held: { value: string; at: number } | undefined;
let reading: Promise<void> | undefined;
let lastFailure: string | undefined;
let smClient: SecretsManagerClient | undefined;

async function readKeyFromSecretsManager(secretArn: string): Promise<string> {
  const sm = await loadSecretsManager();
  smClient ??= new sm.SecretsManagerClient({});
  const out = await smClient.send(new sm.GetSecretValueCommand({ SecretId: secretArn }));
  if (!out.SecretString) throw new Error('The cursor key secret has no string value');
  return out.SecretString;
}

/** One read at a time; never rejects (a failure is kept for the error message). */
function refreshKey(secretArn: string): Promise<void> {
  reading ??= readKeyFromSecretsManager(secretArn)
    .then(
      (value) => {
        held = { value, at: Date.now() };
        lastFailure = undefined;
      },
      (err: unknown) => {
        lastFailure = err instanceof Error ? err.name : 'unknown error';
      },
    )
    .finally(() => {
      reading = undefined;
    });
  return reading;
}

/** The service's HMAC key: signs cursors, and (with a purpose of its own) mail unsubscribe links (shared/mail/unsubscribe.ts). */
export async function cursorKey(): Promise<string> {
  const config = getConfig();
  if (config.cursorSecret) return config.cursorSecret;
  if (config.cursorSecretArn) {
    if (!held) await refreshKey(config.cursorSecretArn);
    else if (Date.now() - held.at > CURSOR_KEY_CACHE_MS) void refreshKey(config.cursorSecretArn);
    if (held) return held.value;
    throw new Error(`The cursor key could not be read from Secrets Manager (${lastFailure ?? 'reading'})`);
  }
  throw new Error('No cursor key: set CURSOR_SECRET, or CURSOR_SECRET_ARN (read from Secrets Manager on first use)');
}

const sign = async (payload: string): Promise<string> =>
  createHmac('sha256', await cursorKey())
    .update(payload)
    .digest('base64url');

export async function encodeCursor(position: Position, boundTo: string): Promise<string> {
  const payload = Buffer.from(JSON.stringify({ p: position, b: boundTo })).toString('base64url');
  return `${payload}.${await sign(payload)}`;
}

export async function decodeCursor(cursor: string | undefined, boundTo: string): Promise<Position | undefined> {
  if (cursor === undefined || cursor === '') return undefined;
  const invalid = new ApiError('invalid_cursor', 'The cursor is not valid for this listing', { field: 'cursor' });
  const [payload, signature] = cursor.split('.');
  if (!payload || !signature) throw invalid;
  const expected = Buffer.from(await sign(payload));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw invalid;
  try {
    const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { p?: Position; b?: string };
    if (decoded.b !== boundTo || typeof decoded.p !== 'object' || decoded.p === null) throw invalid;
    return decoded.p;
  } catch {
    throw invalid;
  }
}
