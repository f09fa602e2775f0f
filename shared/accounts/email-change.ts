import { createHash, createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import * as accessPatterns from '../db/access-patterns.ts';
import { cursorKey } from '../db/cursor.ts';
import type { EmailChangeItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { isConditionFailed, transact } from '../db/write.ts';
import { ApiError, notFound } from '../errors.ts';
import { currentTime } from '../clock.ts';
import { eventWrite } from '../webhooks/events.ts';
import { isAdminEmail } from './index.ts';

/**
 * Changing the account's e-mail (docs/mail.md, "A changed e-mail"): the address where mail goes is
 * ours, apart from the sign-in (the identity provider's subject stays the account's; its e-mail
 * is never copied). A new address is used only once confirmed from it: PUT records it pending
 * with a token and emits account.email_change_requested (the confirmation goes to the new
 * address, a notice to the old); the token's POST switches the address in one transaction with
 * account.email_changed. The token is never stored: its hash is, and a random nonce from which
 * the mail sender derives it again with the service's key, so the event carries no token.
 */
export const EMAIL_TOKEN_TTL_MS = 24 * 3_600_000;
/** The item stays a week past its expiry so a late replay of a used link still answers 200. */
const KEEP_S = 7 * 86_400;
const PURPOSE = 'email-confirm\n';

export interface EmailChangeView {
  email: string;
  pendingEmail: string | null;
  tokenExpiresAt: string | null;
}

const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

/** The confirmation token of a request: `<accountId>.<HMAC of the nonce>`, the same every time it is derived. */
export async function confirmationToken(item: Pick<EmailChangeItem, 'accountId' | 'nonce'>): Promise<string> {
  const mac = createHmac('sha256', await cursorKey())
    .update(`${PURPOSE}${item.accountId}\n${item.nonce}`)
    .digest('base64url');
  return `${item.accountId}.${mac}`;
}

/** PUT /v1/account/email: the new address pending, its token (a newer request replaces an older one's). */
export async function requestEmailChange(accountId: string, rawEmail: string): Promise<EmailChangeView> {
  const email = rawEmail.toLowerCase();
  const account = await accessPatterns.accountById(accountId);
  if (!account) throw notFound('account');
  const invalid = (message: string) => new ApiError('validation_failed', message, { issues: [{ field: 'body.email', message }] });
  if (email === account.email) throw invalid("This is already the account's e-mail");
  // Admin rights follow the e-mail (ADMIN_EMAILS): a change must neither grant nor drop them.
  if (isAdminEmail(email)) throw invalid('This address cannot be set here');
  if (isAdminEmail(account.email))
    throw new ApiError('forbidden', "An administrator's e-mail is set by ADMIN_EMAILS and the identity provider");
  const now = currentTime();
  const item: EmailChangeItem = {
    ...keys.emailChange(accountId),
    kind: 'email-change',
    accountId,
    requestId: randomUUID(),
    email,
    previousEmail: account.email,
    nonce: randomBytes(32).toString('base64url'),
    tokenHash: '',
    requestedAt: new Date(now).toISOString(),
    tokenExpiresAt: new Date(now + EMAIL_TOKEN_TTL_MS).toISOString(),
    expiresAt: Math.floor((now + EMAIL_TOKEN_TTL_MS) / 1000) + KEEP_S,
  };
  item.tokenHash = hashToken(await confirmationToken(item));
  await transact([
    {
      name: 'profile',
      ConditionCheck: {
        Key: keys.account(accountId),
        ConditionExpression: 'email = :current',
        ExpressionAttributeValues: { ':current': account.email },
      },
    },
    { name: 'change', Put: { Item: item } },
    eventWrite(
      accountId,
      'account.email_change_requested',
      { requestId: item.requestId, email, previousEmail: account.email, tokenExpiresAt: item.tokenExpiresAt },
      new Date(now),
    ),
  ]);
  return { email: account.email, pendingEmail: email, tokenExpiresAt: item.tokenExpiresAt };
}

const invalidToken = () =>
  new ApiError('validation_failed', 'The confirmation link is not valid or has expired', {
    issues: [{ field: 'query.token', message: 'invalid' }],
  });

/** The request a token belongs to; 400 for anything else (forged, altered, replaced by a newer request). */
async function changeOfToken(token: string): Promise<EmailChangeItem> {
  const accountId = token.split('.')[0] ?? '';
  if (!/^[0-9a-f-]{36}$/.test(accountId)) throw invalidToken();
  const item = await accessPatterns.emailChange(accountId);
  if (!item) throw invalidToken();
  const expected = Buffer.from(item.tokenHash, 'hex');
  const given = Buffer.from(hashToken(token), 'hex');
  if (!timingSafeEqual(expected, given)) throw invalidToken();
  return item;
}

/** GET on the link: which address it confirms (nothing changes: link scanners open links). */
export async function readConfirmation(token: string): Promise<EmailChangeItem> {
  const item = await changeOfToken(token);
  if (!item.confirmedAt && currentTime() >= Date.parse(item.tokenExpiresAt)) throw invalidToken();
  return item;
}

/**
 * POST with the token: the account's e-mail becomes the confirmed address, with account.email_changed.
 * Idempotent: the link posted again answers the same and changes nothing; an expired one is 400.
 */
export async function confirmEmailChange(token: string): Promise<{ email: string; previousEmail: string }> {
  const item = await readConfirmation(token);
  const done = { email: item.email, previousEmail: item.previousEmail };
  if (item.confirmedAt) return done;
  const at = new Date(currentTime());
  try {
    await transact([
      {
        name: 'profile',
        Update: {
          Key: keys.account(item.accountId),
          UpdateExpression: 'SET email = :new',
          // The address the request replaces: a change confirmed in between makes this one stale.
          ConditionExpression: 'email = :previous',
          ExpressionAttributeValues: { ':new': item.email, ':previous': item.previousEmail },
        },
      },
      // The admin listing searches by e-mail (an account not moved to its own listing entry yet has none).
      ...((await accessPatterns.getItem(keys.accountListingEntry(item.accountId)))
        ? [
            {
              name: 'listing',
              Update: {
                Key: keys.accountListingEntry(item.accountId),
                UpdateExpression: 'SET email = :new',
                ExpressionAttributeValues: { ':new': item.email },
              },
            },
          ]
        : []),
      {
        name: 'change',
        Update: {
          Key: keys.emailChange(item.accountId),
          UpdateExpression: 'SET confirmedAt = :at',
          ConditionExpression: 'tokenHash = :hash AND attribute_not_exists(confirmedAt)',
          ExpressionAttributeValues: { ':at': at.toISOString(), ':hash': item.tokenHash },
        },
      },
      eventWrite(item.accountId, 'account.email_changed', { requestId: item.requestId, ...done }, at),
    ]);
  } catch (err) {
    if (!isConditionFailed(err)) throw err;
    // A concurrent post of the same link confirmed it first: the same answer. Otherwise the request
    // was replaced, or the address changed since: the link is stale.
    const now = await accessPatterns.emailChange(item.accountId);
    if (now?.confirmedAt && now.tokenHash === item.tokenHash) return done;
    throw invalidToken();
  }
  return done;
}
