import { createHmac, timingSafeEqual } from 'node:crypto';
import * as accessPatterns from '../db/access-patterns.ts';
import { cursorKey } from '../db/cursor.ts';
import { ApiError } from '../errors.ts';
import { isOptionalMessageType, type OptionalMessageType } from '../api/mail-classes.ts';
import { turnOff } from './preferences.ts';
import { escapeHtml } from './templates.ts';

/**
 * One-click unsubscribe (RFC 8058, docs/mail.md): an optional message carries a link whose token
 * is an HMAC over (account, message type) with the service's key (the cursor key, read as
 * shared/db/cursor.ts reads it, under a purpose prefix of its own so a token is never a cursor
 * signature). A token never expires: a link in an old message must still work. Posting it turns
 * that type off for that account; nothing else can be done with it.
 */
const PURPOSE = 'mail-unsubscribe\n';

const sign = async (payload: string): Promise<string> =>
  createHmac('sha256', await cursorKey())
    .update(PURPOSE + payload)
    .digest('base64url');

export async function unsubscribeToken(accountId: string, type: OptionalMessageType): Promise<string> {
  const payload = Buffer.from(JSON.stringify({ a: accountId, t: type })).toString('base64url');
  return `${payload}.${await sign(payload)}`;
}

/** The link in the List-Unsubscribe header: the API's public endpoint with the token. */
export async function unsubscribeUrl(apiUrl: string, accountId: string, type: OptionalMessageType): Promise<string> {
  const url = new URL('v1/mail/unsubscribe', apiUrl);
  url.searchParams.set('token', await unsubscribeToken(accountId, type));
  return url.toString();
}

/** The account and type a token was made for; 400 for anything else (forged, altered, cut). */
export async function readUnsubscribeToken(token: string): Promise<{ accountId: string; messageType: OptionalMessageType }> {
  const invalid = new ApiError('validation_failed', 'The unsubscribe link is not valid', {
    issues: [{ field: 'query.token', message: 'invalid' }],
  });
  const [payload, signature, extra] = token.split('.');
  if (!payload || !signature || extra !== undefined) throw invalid;
  const expected = Buffer.from(await sign(payload));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw invalid;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw invalid;
  }
  const { a, t } = (parsed ?? {}) as { a?: unknown; t?: unknown };
  if (typeof a !== 'string' || typeof t !== 'string' || !isOptionalMessageType(t)) throw invalid;
  return { accountId: a, messageType: t };
}

/** POST with a valid token: that message type off for that account (again: still off). */
export async function unsubscribe(token: string): Promise<{ messageType: OptionalMessageType }> {
  const { accountId, messageType } = await readUnsubscribeToken(token);
  // A signed token of an account since deleted: nothing to turn off, and no item left behind.
  if (await accessPatterns.accountById(accountId)) await turnOff(accountId, messageType);
  return { messageType };
}

const TYPE_NAMES: Record<OptionalMessageType, string> = {
  'low-balance': 'low balance warnings',
  'server-installed': 'notices that a server finished installing',
};

/** What GET on the link shows: what the link turns off and the button that posts it (a GET changes nothing). */
export async function unsubscribePage(token: string): Promise<string> {
  const { messageType } = await readUnsubscribeToken(token);
  const action = `unsubscribe?token=${encodeURIComponent(token)}`;
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">',
    '<title>Unsubscribe</title></head>',
    '<body style="font-family:Arial,Helvetica,sans-serif;color:#1f2933;max-width:560px;margin:0 auto;padding:24px">',
    `<main><h1 style="font-size:20px">Stop ${escapeHtml(TYPE_NAMES[messageType])} by e-mail?</h1>`,
    `<form method="post" action="${escapeHtml(action)}">`,
    '<input type="hidden" name="List-Unsubscribe" value="One-Click">',
    '<button type="submit">Unsubscribe</button></form>',
    '<p>Receipts, credit notes and warnings before a server stops are always sent.</p></main>',
    '</body></html>',
    '',
  ].join('\n');
}
