import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ParsedMail, simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storedMessages } from '../../dev/mail-server.ts';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { runPassInProcess } from '../../shared/billing/pass.ts';
import { resetConfig } from '../../shared/config/env.ts';
import { keys } from '../../shared/db/keys.ts';
import { sendDueMail } from '../../shared/mail/sender.ts';
import { formatMoment } from '../../shared/mail/templates.ts';
import { runAutoTopUps } from '../../shared/payments/autotopup.ts';
import { HOUR_MS, hourStart } from '../../shared/pricing/hours.ts';
import { runInstallWatch } from '../../shared/servers/install-watch.ts';
import { drainOutbox } from '../../shared/webhooks/dispatch.ts';
import { customer } from '../helpers/customer.ts';
import { setAttributes } from '../helpers/db.ts';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { waitFor } from '../helpers/until.ts';

/**
 * The messages about a customer's servers and auto top-up (docs/mail.md), read as a person
 * receives them from the test stack's real SMTP server (.eml files, parsed with mailparser): the
 * runway warning, the failed auto top-up with its payment page, the suspension and its end, the
 * installed server. Real parts: DynamoDB Local, the panel simulator, the sandbox payment provider
 * (no Stripe keys: its card and checkout pages). Time is the test stack's clock, moved an hour at a
 * time, with the billing pass run at it (as tests/integration/grace-period.test.ts does); the
 * outbox is fanned out here (no dispatcher loop), and the stack's mail loop sends.
 */
let api: TestApi;
let sim: PanelSim;

beforeAll(async () => {
  delete process.env.STRIPE_SECRET_KEY;
  delete process.env.STRIPE_WEBHOOK_SECRET;
  delete process.env.STRIPE_API_URL;
  resetConfig();
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0 }, webhooks: false });
  sim = api.panel!.sim;
});
afterAll(async () => api?.stop());

/** Every message in the SMTP server's folder to `email` of `type` (X-Message-Type), parsed. */
async function messagesTo(email: string, type: string): Promise<ParsedMail[]> {
  const dir = api.mail!.dir;
  const all = await Promise.all(storedMessages(dir).map((f) => simpleParser(readFileSync(join(dir, f)))));
  return all.filter(
    (m) => m.headers.get('x-message-type') === type && [m.to ?? []].flat().some((to) => to.value.some((v) => v.address === email)),
  );
}

/** Fans the outbox out (queues the mail) and waits for the stack's sender to deliver one message of `type` to `email`. */
async function arrived(email: string, type: string): Promise<ParsedMail> {
  await drainOutbox();
  const [message] = await waitFor(
    () => messagesTo(email, type),
    (list) => list.length > 0,
    { what: `${type} to ${email}` },
  );
  return message!;
}

/** The outbox fanned out and every due message sent once more: still exactly one of `type`. */
async function expectOnlyOne(email: string, type: string) {
  await drainOutbox();
  await sendDueMail();
  expect(await messagesTo(email, type)).toHaveLength(1);
}

const billing = () => `${api.baseUrl}/app/billing`;
const iso = (ms: number) => new Date(ms).toISOString();
const medium = { name: 'Mail world', eggId: 1, ramMb: 4096, cpuPercent: 200, diskMb: 20480 }; // 2,400 millicents an hour

function clockTo(ms: number) {
  const now = api.clock.now();
  if (ms > now) api.clock.advance(ms - now);
}

async function passAt(ms: number) {
  clockTo(ms);
  return runPassInProcess(new Date(ms));
}

describe('a prepaid server running out of credit', () => {
  const email = 'mail-runway@example.com';
  let owner: { token: string; id: string };
  let server: { id: string; identifier: string; name: string; priceCentsPerHour: number };
  let hour: (n: number) => number;

  it('the 24 h runway warning: one message with the hours left, the suspension time and the top-up link', async () => {
    owner = await customer(api, email);
    server = (await api.call('POST', '/v1/servers', { token: owner.token, body: medium })).body;
    expect(server.id).toBeDefined();
    // The server's life starts at the clock's next hour, T; with 60 cents its credit lasts 25 hours.
    const T = hourStart(api.clock.now()) + HOUR_MS;
    clockTo(T);
    await setAttributes(keys.server(owner.id, server.id), {
      createdAt: iso(T),
      history: [{ at: iso(T), status: 'active', priceCentsPerHour: server.priceCentsPerHour, priceMillicentsPerHour: 2400 }],
    });
    const deducted = await api.call('POST', `/v1/admin/users/${owner.id}/credits`, { body: { amountCents: -440, note: 'leave 60 cents' } });
    expect(deducted.status, deducted.text).toBe(200);
    hour = (n: number) => T + n * HOUR_MS + 5 * 60_000;

    await passAt(hour(1)); // 24 hours of credit left: the 24-hour horizon
    const warning = await arrived(email, 'runway-warning');
    expect(warning.subject).toBe('Your servers stop in about 24 hours: top up to keep them running');
    expect(warning.text).toContain(`your servers will be suspended at ${formatMoment(iso(hour(25)))}`);
    expect(warning.text).toContain(`Top up: ${billing()}`);
    expect(warning.html).toContain(`href="${billing()}"`);
    // The next hours stay above the 2-hour horizon: no second warning.
    await passAt(hour(2));
    await passAt(hour(3));
    await expectOnlyOne(email, 'runway-warning');
  }, 60_000);

  it('the suspension: one message with the reason, the amount that brings the server back and the top-up link', async () => {
    const deducted = await api.call('POST', `/v1/admin/users/${owner.id}/credits`, { body: { amountCents: -60, note: 'to zero' } });
    expect(deducted.status, deducted.text).toBe(200);
    const run = await passAt(hour(4));
    expect(run.suspended).toBe(1);
    expect(sim.server(server.identifier)!.status).toBe('suspended');
    const { balanceCents } = (await api.call('GET', '/v1/account', { token: owner.token })).body;
    expect(balanceCents).toBeLessThanOrEqual(0);
    const suspended = await arrived(email, 'server-suspended');
    expect(suspended.subject).toBe('Your server Mail world is suspended');
    expect(suspended.text).toContain('your credit ran out');
    // The checkout's minimum (500 cents) lifts a balance this close to zero.
    expect(suspended.text).toContain('A top-up of at least $5.00 brings your balance above zero');
    expect(suspended.html).toContain(`href="${billing()}"`);
    await passAt(hour(5));
    await expectOnlyOne(email, 'server-suspended');
  }, 60_000);

  it('a top-up ends it: one message that the server runs again, linking its page', async () => {
    const checkout = await api.call('POST', '/v1/billing/checkout', { token: owner.token, body: { amountCents: 500 } });
    expect(checkout.status, checkout.text).toBe(201);
    const paid = await api.call('POST', `/dev/checkout/${checkout.body.invoiceId}/complete`, { token: null, body: { outcome: 'paid' } });
    expect(paid.status, paid.text).toBe(200);
    const back = await arrived(email, 'server-unsuspended');
    expect(back.subject).toBe('Your server Mail world runs again');
    expect(back.html).toContain(`href="${api.baseUrl}/app/servers/${server.id}"`);
    await expectOnlyOne(email, 'server-unsuspended');
    await arrived(email, 'receipt');
    await expectOnlyOne(email, 'receipt');
  }, 60_000);
});

describe('an auto top-up that needs the customer', () => {
  it('one message with the reason and a link to the page that completes the payment on-session', async () => {
    const email = 'mail-sca@example.com';
    const owner = await customer(api, email);
    const setup = await api.call('POST', '/v1/billing/payment-method/checkout', { token: owner.token, body: {} });
    expect(setup.status, setup.text).toBe(201);
    const saved = await api.call('POST', `/dev/payment-method/${setup.body.sessionId}/complete`, {
      token: null,
      body: { card: 'pm_card_authenticationRequired' },
    });
    expect(saved.body).toMatchObject({ outcome: 'card_saved' });
    const rule = await api.call('PUT', '/v1/billing/auto-topup', {
      token: owner.token,
      body: { enabled: true, belowCents: 400, amountCents: 500, maxPerDay: 3 },
    });
    expect(rule.status, rule.text).toBe(200);
    const debit = await api.call('POST', `/v1/admin/users/${owner.id}/credits`, { body: { amountCents: -200, note: 'below the rule' } });
    expect(debit.status, debit.text).toBe(200);
    await runAutoTopUps();
    const [invoice] = (await api.call('GET', '/v1/invoices?limit=10', { token: owner.token })).body.data;
    const paymentUrl = `${api.baseUrl}/dev/checkout/${invoice.id}`;

    const failed = await arrived(email, 'auto-topup-failed');
    expect(failed.subject).toBe(`Your automatic top-up needs your confirmation: invoice ${invoice.number}`);
    expect(failed.text).toContain('your bank asks you to confirm it');
    expect(failed.text).toContain(`Complete the payment: ${paymentUrl}`);
    expect(failed.html).toContain(`href="${paymentUrl}"`);
    // The link is the payment page of that invoice.
    expect((await fetch(paymentUrl)).status).toBe(200);
    await expectOnlyOne(email, 'auto-topup-failed');
  }, 60_000);
});

describe('a deploy', () => {
  it('one message when the server is installed, linking its page', async () => {
    const email = 'mail-install@example.com';
    const owner = await customer(api, email, { grantCents: 10_000 });
    const res = await api.call('POST', '/v1/servers', {
      token: owner.token,
      body: { name: 'Fresh world', eggId: 1, ramMb: 512, cpuPercent: 50, diskMb: 1024 },
    });
    expect(res.status, res.text).toBe(201);
    // The install watch as the every-minute loop runs it, a minute later each time, until the install it follows ended.
    let minutes = 0;
    await waitFor(
      async () => {
        await runInstallWatch(new Date(Date.now() + ++minutes * 60_000));
        return (await api.call('GET', '/v1/events?type=server.installed&limit=10', { token: owner.token })).body.data.length;
      },
      (count) => count > 0,
      { what: 'server.installed' },
    );
    const installed = await arrived(email, 'server-installed');
    expect(installed.subject).toBe('Your server Fresh world is ready');
    expect(installed.text).toContain('is installed and ready');
    expect(installed.text).toContain(`View your server: ${api.baseUrl}/app/servers/${res.body.id}`);
    expect(installed.html).toContain(`href="${api.baseUrl}/app/servers/${res.body.id}"`);
    await runInstallWatch(new Date(Date.now() + 10 * 60_000));
    await expectOnlyOne(email, 'server-installed');
  }, 60_000);
});

describe('security notices', () => {
  it('a new API key and a new SFTP password: one message each, naming the key, never a secret', async () => {
    const email = 'mail-security@example.com';
    const owner = await customer(api, email, { grantCents: 10_000 });
    const created = await api.call('POST', '/v1/keys', { token: owner.token, body: { name: 'ci bot', scopes: ['servers:read'] } });
    expect(created.status, created.text).toBe(201);
    const notice = await arrived(email, 'api-key-created');
    expect(notice.subject).toBe('A new API key was created for your account: ci bot');
    expect(notice.text).toContain(`(${created.body.prefix}…${created.body.last4})`);
    expect(notice.text).toContain(`View your API keys: ${api.baseUrl}/app/keys`);
    expect(`${notice.text}${notice.html}`).not.toContain(created.body.secret);
    await expectOnlyOne(email, 'api-key-created');

    expect((await api.call('POST', '/v1/servers', { token: owner.token, body: { ...medium, name: 'Files' } })).status).toBe(201);
    const set = await api.call('POST', '/v1/account/sftp-password', { token: owner.token, body: {} });
    expect(set.status, set.text).toBe(200);
    const sftp = await arrived(email, 'sftp-password-set');
    expect(sftp.subject).toBe('A new SFTP password was set for your servers');
    expect(sftp.html).toContain(`href="${api.baseUrl}/app/servers"`);
    expect(`${sftp.text}${sftp.html}`).not.toContain(set.body.password);
    await expectOnlyOne(email, 'sftp-password-set');
  }, 60_000);
});
