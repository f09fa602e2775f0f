import * as accessPatterns from '../db/access-patterns.ts';
import type { EmailChangeItem, MailItem } from '../db/items.ts';
import { currentTime } from '../clock.ts';
import { confirmationToken, readConfirmation } from '../accounts/email-change.ts';
import { escapeHtml } from './templates.ts';

/**
 * The mail side of an e-mail change (shared/accounts/email-change.ts, docs/mail.md "A changed
 * e-mail"): who each message goes to, the confirmation link, and the page the link opens.
 */

/** The link of the confirmation message: the API's public page for the token (a GET changes nothing). */
export async function confirmationUrl(apiUrl: string, item: Pick<EmailChangeItem, 'accountId' | 'nonce'>): Promise<string> {
  const url = new URL('v1/account/email/confirm', apiUrl);
  url.searchParams.set('token', await confirmationToken(item));
  return url.toString();
}

/** What GET on the link shows: the address it confirms and the button that posts it. */
export async function confirmationPage(token: string): Promise<string> {
  const item = await readConfirmation(token);
  const action = `confirm?token=${encodeURIComponent(token)}`;
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">',
    '<title>Confirm your e-mail</title></head>',
    '<body style="font-family:Arial,Helvetica,sans-serif;color:#1f2933;max-width:560px;margin:0 auto;padding:24px">',
    `<main><h1 style="font-size:20px">Receive your account's mail at ${escapeHtml(item.email)}?</h1>`,
    `<form method="post" action="${escapeHtml(action)}"><button type="submit">Confirm</button></form>`,
    '<p>Signing in does not change.</p></main>',
    '</body></html>',
    '',
  ].join('\n');
}

/**
 * Where a message goes (the mail sender asks): the account's e-mail, except the e-mail change's own
 * messages. The confirmation goes to the pending address its event names, and only while that
 * request is the account's latest, unconfirmed and unexpired (else null: not sent). The two notices
 * go to the address the account had when their event was written (`previousEmail`, read from the
 * profile, never from the request), so the old owner hears of a change even once it is done.
 */
export async function recipientOf(
  item: Pick<MailItem, 'accountId' | 'messageType' | 'data'>,
  accountEmail: string,
  apiUrl: string,
): Promise<{ to: string; confirmUrl?: string } | null> {
  const data = item.data as { requestId?: string; email?: string; previousEmail?: string };
  if (item.messageType === 'email-change-notice' || item.messageType === 'email-changed') return { to: data.previousEmail! };
  if (item.messageType !== 'email-confirm') return { to: accountEmail };
  const change = await accessPatterns.emailChange(item.accountId);
  if (!change || change.requestId !== data.requestId || change.confirmedAt) return null;
  if (currentTime() >= Date.parse(change.tokenExpiresAt)) return null;
  return { to: change.email, confirmUrl: await confirmationUrl(apiUrl, change) };
}
