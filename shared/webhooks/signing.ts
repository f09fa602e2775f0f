import { createHmac, randomBytes } from 'node:crypto';

/**
 * Signatures by the Standard Webhooks convention (standardwebhooks.com), so receivers verify with
 * the off-the-shelf libraries: headers `webhook-id`, `webhook-timestamp` (epoch seconds) and
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, keyed with the
 * base64 part of a `whsec_…` secret. During a rotation both secrets sign (space-separated).
 */
const PREFIX = 'whsec_';

/** A new signing secret: `whsec_` + 32 random bytes in base64. Shown to the account once. */
export const newSigningSecret = (): string => `${PREFIX}${randomBytes(32).toString('base64')}`;

const keyOf = (secret: string): Buffer => Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');

/** `v1,<base64>` for one secret. */
export function signature(secret: string, id: string, timestampSeconds: number, body: string): string {
  return `v1,${createHmac('sha256', keyOf(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/** The three headers of one delivery attempt, signed with every secret given (current first). */
export function signedHeaders(secrets: string[], id: string, timestampSeconds: number, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((s) => signature(s, id, timestampSeconds, body)).join(' '),
  };
}
