import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ParsedMail, simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storedMessages } from '../../dev/mail-server.ts';
import { keys } from '../../shared/db/keys.ts';
import { sendDueMail } from '../../shared/mail/sender.ts';
import { drainOutbox } from '../../shared/webhooks/dispatch.ts';
import { EMAIL_TOKEN_TTL_MS } from '../../shared/accounts/email-change.ts';
import { customer } from '../helpers/customer.ts';
import { getRaw } from '../helpers/db.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { waitFor } from '../helpers/until.ts';

/**
 * A changed e-mail, as the people at both addresses receive it (docs/mail.md, "A changed e-mail"):
 * messages read back from the test stack's real SMTP server (.eml files, mailparser); the
 * confirmation link taken from the message and followed over HTTP. The outbox is fanned out here
 * (no dispatcher loop); the stack's mail loop sends. Expiry: the test stack's clock moved past 24 h.
 */
let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({ panel: false, webhooks: false });
});
afterAll(async () => api?.stop());

async function messagesTo(email: string, type: string): Promise<ParsedMail[]> {
  const dir = api.mail!.dir;
  const all = await Promise.all(storedMessages(dir).map((f) => simpleParser(readFileSync(join(dir, f)))));
  return all.filter(
    (m) => m.headers.get('x-message-type') === type && [m.to ?? []].flat().some((to) => to.value.some((v) => v.address === email)),
  );
}

/** Fans the outbox out and waits for `count` messages of `type` to `email`. */
async function arrived(email: string, type: string, count = 1): Promise<ParsedMail[]> {
  await drainOutbox();
  return waitFor(
    () => messagesTo(email, type),
    (list) => list.length >= count,
    { what: `${count} ${type} to ${email}` },
  );
}

/** Everything queued sent: no more messages of `type` to `email` than `count`. */
async function expectCount(email: string, type: string, count: number) {
  await drainOutbox();
  await sendDueMail();
  expect(await messagesTo(email, type)).toHaveLength(count);
}

/** The confirmation link of a message, as a path and query on the test API. */
function linkOf(message: ParsedMail): string {
  const url = /Confirm this address: (\S+)/.exec(message.text ?? '')?.[1];
  expect(url, message.text).toBeDefined();
  expect(message.html).toContain(`href="${url!.replace(/&/g, '&amp;')}"`);
  const parsed = new URL(url!);
  expect(parsed.pathname).toBe('/v1/account/email/confirm');
  return `${parsed.pathname}${parsed.search}`;
}

const accountEmail = async (token: string) => (await api.call('GET', '/v1/account', { token })).body.email as string;
const newKey = (token: string, name: string) => api.call('POST', '/v1/keys', { token, body: { name, scopes: ['servers:read'] } });

describe('changing the account e-mail', () => {
  const oldEmail = 'change-old@example.com';
  const newEmail = 'change-new@example.com';
  let owner: { token: string; id: string };
  let link: string;

  it('a request sends one confirmation to the new address and one notice to the old; the e-mail stays', async () => {
    owner = await customer(api, oldEmail);
    const before = api.clock.now();
    const res = await api.call('PUT', '/v1/account/email', { token: owner.token, body: { email: 'Change-New@Example.com' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ email: oldEmail, pendingEmail: newEmail });
    // 24 hours from the request, by the stack's clock.
    const expires = Date.parse(res.body.tokenExpiresAt);
    expect(expires).toBeGreaterThanOrEqual(before + EMAIL_TOKEN_TTL_MS);
    expect(expires).toBeLessThanOrEqual(api.clock.now() + EMAIL_TOKEN_TTL_MS);

    const [confirm] = await arrived(newEmail, 'email-confirm');
    expect(confirm!.subject).toBe('Confirm your new e-mail address');
    link = linkOf(confirm!);
    const [notice] = await arrived(oldEmail, 'email-change-notice');
    expect(notice!.text).toContain(`to ${newEmail} instead of ${oldEmail}`);
    // The token is in no event and no stored item: only its hash.
    const events = (await api.call('GET', '/v1/events?type=account.email_change_requested', { token: owner.token })).body.data;
    expect(events).toHaveLength(1);
    const token = new URL(link, api.baseUrl).searchParams.get('token')!;
    expect(JSON.stringify(events)).not.toContain(token);
    expect(JSON.stringify(await getRaw(keys.emailChange(owner.id)))).not.toContain(token);

    await expectCount(newEmail, 'email-confirm', 1);
    await expectCount(oldEmail, 'email-change-notice', 1);
    expect(await messagesTo(oldEmail, 'email-confirm')).toHaveLength(0);
    expect(await accountEmail(owner.token)).toBe(oldEmail);
  });

  it('until confirmed, mail goes to the old address', async () => {
    expect((await newKey(owner.token, 'before')).status).toBe(201);
    await arrived(oldEmail, 'api-key-created');
    await expectCount(newEmail, 'api-key-created', 0);
  });

  it('opening the link changes nothing; a forged or altered token is 400 and changes nothing', async () => {
    const page = await api.call('GET', link, { token: null });
    expect(page.status, page.text).toBe(200);
    expect(page.text).toContain(newEmail);
    expect(await accountEmail(owner.token)).toBe(oldEmail);

    const token = new URL(link, api.baseUrl).searchParams.get('token')!;
    const altered = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`;
    for (const bad of [altered, `${owner.id}.forged`, 'nonsense', `${token}.x`]) {
      const query = `/v1/account/email/confirm?token=${encodeURIComponent(bad)}`;
      expectEnvelope(await api.call('POST', query, { token: null }), 400, 'validation_failed');
      expectEnvelope(await api.call('GET', query, { token: null }), 400, 'validation_failed');
    }
    expect(await accountEmail(owner.token)).toBe(oldEmail);
    await expectCount(oldEmail, 'email-changed', 0);
  });

  it('posting the link switches the e-mail, the old address is told, later mail goes to the new one', async () => {
    const res = await api.call('POST', link, { token: null });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ confirmed: true, email: newEmail, previousEmail: oldEmail });
    expect(await accountEmail(owner.token)).toBe(newEmail);

    const [changed] = await arrived(oldEmail, 'email-changed');
    expect(changed!.text).toContain(`changed from ${oldEmail} to ${newEmail}`);
    expect((await newKey(owner.token, 'after')).status).toBe(201);
    await arrived(newEmail, 'api-key-created');
    await expectCount(oldEmail, 'api-key-created', 1);
  });

  it('the link posted again answers the same and changes nothing', async () => {
    const again = await api.call('POST', link, { token: null });
    expect(again.status, again.text).toBe(200);
    expect(again.body).toEqual({ confirmed: true, email: newEmail, previousEmail: oldEmail });
    expect(await accountEmail(owner.token)).toBe(newEmail);
    const events = (await api.call('GET', '/v1/events?type=account.email_changed', { token: owner.token })).body.data;
    expect(events).toHaveLength(1);
    await expectCount(oldEmail, 'email-changed', 1);
  });
});

describe('a confirmation that comes too late or was replaced', () => {
  it('an expired link is 400 and changes nothing; a newer request voids the older link', async () => {
    const email = 'late-old@example.com';
    const owner = await customer(api, email);
    expect((await api.call('PUT', '/v1/account/email', { token: owner.token, body: { email: 'late-first@example.com' } })).status).toBe(
      200,
    );
    const first = linkOf((await arrived('late-first@example.com', 'email-confirm'))[0]!);
    expect((await api.call('PUT', '/v1/account/email', { token: owner.token, body: { email: 'late-second@example.com' } })).status).toBe(
      200,
    );
    const second = linkOf((await arrived('late-second@example.com', 'email-confirm'))[0]!);
    expectEnvelope(await api.call('POST', first, { token: null }), 400, 'validation_failed');

    api.clock.advance(EMAIL_TOKEN_TTL_MS);
    expectEnvelope(await api.call('POST', second, { token: null }), 400, 'validation_failed');
    expect(await accountEmail(owner.token)).toBe(email);
    const events = (await api.call('GET', '/v1/events?type=account.email_changed', { token: owner.token })).body.data;
    expect(events).toHaveLength(0);
  });

  it('the current address, or one of ADMIN_EMAILS, is refused', async () => {
    const owner = await customer(api, 'same@example.com');
    for (const email of ['SAME@example.com', 'admin@localhost']) {
      expectEnvelope(await api.call('PUT', '/v1/account/email', { token: owner.token, body: { email } }), 400, 'validation_failed');
    }
    expect(await getRaw(keys.emailChange(owner.id))).toBeUndefined();
  });
});
