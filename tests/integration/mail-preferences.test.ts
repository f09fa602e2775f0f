import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ParsedMail, simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../shared/db/keys.ts';
import { appendLedger } from '../../shared/ledger/index.ts';
import { mailIdOf } from '../../shared/webhooks/mail-queue.ts';
import { storedMessages } from '../../dev/mail-server.ts';
import { getRaw } from '../helpers/db.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { waitFor } from '../helpers/until.ts';

/**
 * The customer's choices (docs/mail.md): per-account preferences for optional mail, refused for
 * transactional mail, and the one-click unsubscribe (RFC 8058) of the messages' headers, read back
 * from the test stack's real SMTP server with mailparser. `low-balance` is the optional type
 * (shared/api/mail-classes.ts); the receipts' lack of the headers is asserted in mail.test.ts.
 */
let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({ panel: false });
});
afterAll(async () => {
  await api?.stop();
});

async function messagesTo(email: string): Promise<ParsedMail[]> {
  const dir = api.mail!.dir;
  const all = await Promise.all(storedMessages(dir).map((f) => simpleParser(readFileSync(join(dir, f)))));
  return all.filter((m) => [m.to ?? []].flat().some((to) => to.value.some((v) => v.address === email)));
}

/** A header as sent (unfolded), not as mailparser interprets List-* headers. */
const rawHeader = (mail: ParsedMail, name: string): string | undefined =>
  mail.headerLines
    .find((h) => h.key === name)
    ?.line.slice(name.length + 1)
    .replace(/\r?\n[ \t]+/g, ' ')
    .trim();

/** A new account whose next charge crosses its low-balance threshold: returns the balance.low event's id. */
async function account(email: string) {
  const token = await api.session(email);
  const { id, balanceCents } = (await api.call('GET', '/v1/account', { token })).body;
  expect((await api.call('PUT', '/v1/account/alerts', { token, body: { lowBalanceThresholdCents: balanceCents + 500 } })).status).toBe(200);
  const lowBalance = async () => {
    await appendLedger(id, [{ type: 'charge', amountCents: -1, idempotencyKey: `mail-prefs:${id}` }]);
    const page = await waitFor(
      () => api.call('GET', '/v1/events?type=balance.low&limit=1', { token }),
      (res) => res.body?.data?.length > 0,
    );
    return page.body.data[0].id as string;
  };
  return { token, id: id as string, lowBalance };
}

const closedMail = (eventId: string, type: string) =>
  waitFor(
    () => getRaw(keys.mail(mailIdOf(eventId, type))),
    (item) => item !== undefined && item.status !== 'pending',
  );

describe('mail preferences', () => {
  it('every optional type is on by default; transactional types are listed', async () => {
    const { token } = await account('prefs-default@example.com');
    const res = await api.call('GET', '/v1/account/mail-preferences', { token });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      preferences: { 'low-balance': true, 'server-installed': true },
      transactional: [
        'receipt',
        'credit-note',
        'auto-topup-failed',
        'server-suspended',
        'server-unsuspended',
        'server-install-failed',
        'runway-warning',
        'webhook-endpoint-disabled',
        'api-key-created',
        'sftp-password-set',
        'email-confirm',
        'email-change-notice',
        'email-changed',
      ],
    });
  });

  it('refuses to turn off transactional mail with a 400 naming it, and changes nothing', async () => {
    const { token } = await account('prefs-refused@example.com');
    const res = await api.call('PUT', '/v1/account/mail-preferences', {
      token,
      body: { preferences: { 'low-balance': false, receipt: false, 'credit-note': false } },
    });
    expectEnvelope(res, 400, 'validation_failed');
    expect(res.body.error.message).toContain('receipt, credit-note');
    const unknown = await api.call('PUT', '/v1/account/mail-preferences', { token, body: { preferences: { 'no-such-mail': false } } });
    expectEnvelope(unknown, 400, 'validation_failed');
    expect((await api.call('GET', '/v1/account/mail-preferences', { token })).body.preferences).toEqual({
      'low-balance': true,
      'server-installed': true,
    });
  });

  it('an optional type turned off is not sent: the message is closed as skipped', async () => {
    const email = 'prefs-off@example.com';
    const { token, lowBalance } = await account(email);
    const off = await api.call('PUT', '/v1/account/mail-preferences', { token, body: { preferences: { 'low-balance': false } } });
    expect(off.status, off.text).toBe(200);
    expect(off.body.preferences).toEqual({ 'low-balance': false, 'server-installed': true });
    const eventId = await lowBalance();
    expect(await closedMail(eventId, 'low-balance')).toMatchObject({ status: 'skipped' });
    expect(await messagesTo(email)).toEqual([]);
  });
});

describe('one-click unsubscribe (RFC 8058)', () => {
  const email = 'prefs-unsubscribe@example.com';
  let user: Awaited<ReturnType<typeof account>>;
  let link: URL;

  it('an optional message carries List-Unsubscribe with the API link and List-Unsubscribe-Post', async () => {
    user = await account(email);
    const eventId = await user.lowBalance();
    expect(await closedMail(eventId, 'low-balance')).toMatchObject({ status: 'sent' });
    const [mail] = await messagesTo(email);
    const header = rawHeader(mail!, 'list-unsubscribe');
    expect(header).toMatch(/^<[^<>]+>$/);
    link = new URL(header!.slice(1, -1));
    expect(`${link.origin}${link.pathname}`).toBe(`${api.baseUrl}/v1/mail/unsubscribe`);
    expect(link.searchParams.get('token')).toBeTruthy();
    expect(rawHeader(mail!, 'list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
  });

  it('opening the link shows a page with the button and changes nothing', async () => {
    const page = await api.call('GET', `${link.pathname}${link.search}`, { token: null });
    expect(page.status, page.text).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.text).toContain('<form method="post"');
    expect((await api.call('GET', '/v1/account/mail-preferences', { token: user.token })).body.preferences).toEqual({
      'low-balance': true,
      'server-installed': true,
    });
  });

  it('a forged or altered token is 400 and changes nothing', async () => {
    const token = link.searchParams.get('token')!;
    const [payload, signature] = token.split('.') as [string, string];
    const otherAccount = Buffer.from(JSON.stringify({ a: (await account('prefs-victim@example.com')).id, t: 'low-balance' })).toString(
      'base64url',
    );
    const flipped = `${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BB' : 'AA'}`;
    for (const forged of [`${otherAccount}.${signature}`, `${payload}.${flipped}`, payload, `${payload}.${signature}.x`]) {
      const res = await api.call('POST', `/v1/mail/unsubscribe?token=${encodeURIComponent(forged)}`, {
        token: null,
        rawBody: 'List-Unsubscribe=One-Click',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expectEnvelope(res, 400, 'validation_failed');
      expectEnvelope(
        await api.call('GET', `/v1/mail/unsubscribe?token=${encodeURIComponent(forged)}`, { token: null }),
        400,
        'validation_failed',
      );
    }
    expect((await api.call('GET', '/v1/account/mail-preferences', { token: user.token })).body.preferences).toEqual({
      'low-balance': true,
      'server-installed': true,
    });
  });

  it('the one-click POST (no credential, form body) turns that type off', async () => {
    const res = await api.call('POST', `${link.pathname}${link.search}`, {
      token: null,
      rawBody: 'List-Unsubscribe=One-Click',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ unsubscribed: true, messageType: 'low-balance' });
    expect((await api.call('GET', '/v1/account/mail-preferences', { token: user.token })).body.preferences).toEqual({
      'low-balance': false,
      'server-installed': true,
    });
  });
});
