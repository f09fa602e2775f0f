import { createHmac, timingSafeEqual } from 'node:crypto';
import { cursorSecretArnAtLoad, getConfig } from '../config/env.ts';
import { ApiError } from '../errors.ts';

/**
 * Opaque, signed pagination cursors. A cursor carries the DynamoDB position and the identity of
 * the query it belongs to (caller + listing); a cursor from another caller or listing, or one
 * that was tampered with, is refused with 400 `invalid_cursor` before any read.
 */
type Position = Record<string, unknown>;

/**
 * The key in AWS: read from Secrets Manager (`CURSOR_SECRET_ARN`) instead of the environment, so
 * it is never in a function's configuration. Signing is synchronous and called from deep inside
 * the access patterns, so the first read happens while the module loads (a top-level await in the
 * ESM bundle, during Lambda's init phase), and only in a process that has the ARN: functions that
 * never sign cursors get none and never call Secrets Manager. After that the key is re-read in the
 * background at most every CURSOR_KEY_CACHE_MS (as the panel keys), so a new version reaches
 * running functions within minutes; until a read succeeds the key held is kept.
 *
 * A failed first read does not fail the module (and with it every route of the function): only
 * listings fail, with a 500, and each of them starts another read until one succeeds.
 */
const CURSOR_KEY_CACHE_MS = 5 * 60_000;
let held: { value: string; at: number } | undefined;
let reading: Promise<void> | undefined;
let lastFailure: string | undefined;
let smClient: import('@aws-sdk/client-secrets-manager').SecretsManagerClient | undefined;

async function readKeyFromSecretsManager(secretArn: string): Promise<string> {
  const sm = await import('@aws-sdk/client-secrets-manager');
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

const bootArn = cursorSecretArnAtLoad();
if (bootArn) await refreshKey(bootArn);

function cursorKey(): string {
  const config = getConfig();
  if (config.cursorSecret) return config.cursorSecret;
  if (config.cursorSecretArn) {
    if (!held || Date.now() - held.at > CURSOR_KEY_CACHE_MS) void refreshKey(config.cursorSecretArn);
    if (held) return held.value;
    throw new Error(`The cursor key could not be read from Secrets Manager yet (${lastFailure ?? 'reading'})`);
  }
  throw new Error('No cursor key: set CURSOR_SECRET, or CURSOR_SECRET_ARN (read from Secrets Manager when the module loads)');
}

const sign = (payload: string): string => createHmac('sha256', cursorKey()).update(payload).digest('base64url');

export function encodeCursor(position: Position, boundTo: string): string {
  const payload = Buffer.from(JSON.stringify({ p: position, b: boundTo })).toString('base64url');
  return `${payload}.${sign(payload)}`;
}

export function decodeCursor(cursor: string | undefined, boundTo: string): Position | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  const invalid = new ApiError('invalid_cursor', 'The cursor is not valid for this listing', { field: 'cursor' });
  const [payload, signature] = cursor.split('.');
  if (!payload || !signature) throw invalid;
  const expected = Buffer.from(sign(payload));
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
