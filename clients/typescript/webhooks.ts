import type { Schema } from './errors.ts';

/** Each event of the union, as a delivery carries it: `timestamp` for `createdAt`. */
type AsDelivered<E> = E extends { createdAt: string } ? Omit<E, 'createdAt'> & { timestamp: string } : never;

/**
 * A delivery's body: the event as `GET /v1/events/:id` shows it, with `timestamp` for `createdAt`.
 * A union discriminated by `type`: `if (event.type === 'server.installed') event.data.install.kind`.
 */
export type WebhookEvent = AsDelivered<Schema<'Event'>>;

/** The delivery of one event type: `EventOf<'invoice.paid'>['data']` is an invoice. */
export type EventOf<T extends Schema<'EventType'>> = Extract<WebhookEvent, { type: T }>;

export interface VerifyWebhookOptions {
  /** How far `webhook-timestamp` may be from now, either way (default 300 s, as Standard Webhooks advises). */
  toleranceSeconds?: number;
  /** Now, in milliseconds (tests). */
  now?: number;
}

/** Thrown by `verifyWebhook`: the delivery is not one the service signed with this secret, or is too old. */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : value;
}

const fromBase64 = (text: string): Uint8Array => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

/** Constant-time comparison of two byte strings. */
function equal(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/**
 * Checks a webhook delivery per Standard Webhooks and answers its event: `webhook-signature` must
 * hold a `v1,` HMAC-SHA256 of `"<webhook-id>.<webhook-timestamp>.<body>"` keyed with the base64
 * part of `secret` (`whsec_…`; during a rotation the header holds two, and either may match), and
 * `webhook-timestamp` must be within the tolerance of now. `body` is the raw request body exactly
 * as received (parsing and re-serializing it changes the bytes the signature covers).
 * Throws WebhookVerificationError otherwise. Deduplicate deliveries on `webhook-id` (at least once).
 */
export async function verifyWebhook(
  secret: string,
  headers: HeaderSource,
  body: string | Uint8Array,
  options: VerifyWebhookOptions = {},
): Promise<WebhookEvent> {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('Missing webhook-id, webhook-timestamp or webhook-signature');
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError('Invalid webhook-timestamp');
  const tolerance = options.toleranceSeconds ?? 300;
  const nowSeconds = Math.floor((options.now ?? Date.now()) / 1000);
  if (Math.abs(nowSeconds - Number(timestamp)) > tolerance)
    throw new WebhookVerificationError('webhook-timestamp is outside the tolerance');

  let keyBytes: Uint8Array;
  try {
    keyBytes = fromBase64(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret);
  } catch {
    throw new WebhookVerificationError('The secret is not a whsec_ base64 secret');
  }
  // The HMAC covers the body's bytes as received: bytes are signed as they are, a string as its UTF-8.
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
  const prefix = new TextEncoder().encode(`${id}.${timestamp}.`);
  const content = new Uint8Array(prefix.length + bytes.length);
  content.set(prefix);
  content.set(bytes, prefix.length);
  const key = await crypto.subtle.importKey('raw', keyBytes as Uint8Array<ArrayBuffer>, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const expected = new Uint8Array(await crypto.subtle.sign('HMAC', key, content));
  const matches = signatures.split(' ').some((entry) => {
    const [version, value] = entry.split(',', 2);
    if (version !== 'v1' || !value) return false;
    try {
      return equal(fromBase64(value), expected);
    } catch {
      return false;
    }
  });
  if (!matches) throw new WebhookVerificationError('No matching signature');
  try {
    return JSON.parse(typeof body === 'string' ? body : new TextDecoder().decode(body)) as WebhookEvent;
  } catch {
    throw new WebhookVerificationError('The body is not JSON');
  }
}
