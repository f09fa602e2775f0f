import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, expectEnvelope, type TestApi } from '../helpers/stack.ts';
import { pdfText } from '../helpers/pdf-text.ts';
import { png } from '../helpers/png.ts';
import { contrastRatio, relativeLuminance } from '../../shared/colour/contrast.ts';
import { inspectImage } from '../../shared/brand/logo.ts';

/**
 * The operator's brand end to end over HTTP: set by an admin (PUT /v1/admin/settings, the logo by
 * PUT /v1/admin/brand/logo), read by anyone (GET /v1/brand), printed on the next invoice PDF while
 * an invoice paid before keeps its copy. Payments run in the local sandbox (its signed webhook).
 *
 * The adversary: an admin who picks an unreadable colour, or uploads an SVG (script), a file that
 * is no image, or one too large; none of them changes anything.
 */
let api: TestApi;

beforeAll(async () => {
  delete process.env.STRIPE_SECRET_KEY;
  delete process.env.STRIPE_WEBHOOK_SECRET;
  api = await startTestApi();
});
afterAll(async () => api?.stop());

const brand = async () => (await api.call('GET', '/v1/brand', { token: null })).body;
const upload = (bytes: Buffer) => api.call('PUT', '/v1/admin/brand/logo', { body: { dataBase64: bytes.toString('base64') } });

async function paidTopUp(email: string) {
  const token = await api.session(email);
  const checkout = await api.call('POST', '/v1/billing/checkout', { token, body: { amountCents: 1000 } });
  expect(checkout.status).toBe(201);
  const invoiceId = checkout.body.invoiceId as string;
  const done = await api.call('POST', `/dev/checkout/${invoiceId}/complete`, { token: null, body: { outcome: 'paid' } });
  expect(done.body).toEqual({ received: true, outcome: 'credited' });
  return { token, invoiceId };
}

async function pdfLines(invoiceId: string, token: string) {
  const res = await fetch(`${api.baseUrl}/v1/invoices/${invoiceId}/pdf`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return pdfText(new Uint8Array(await res.arrayBuffer()));
}

const BRAND = {
  name: 'Blockhost',
  primaryColor: '#1d4ed8',
  supportEmail: 'help@blockhost.example',
  supportUrl: 'https://blockhost.example/support',
  termsUrl: 'https://blockhost.example/terms',
  privacyUrl: 'https://blockhost.example/privacy',
  legalFooter: 'Blockhost GmbH, Friedrichstraße 123, 10117 Berlin. Amtsgericht Charlottenburg HRB 123456 B.',
};

describe('WCAG contrast', () => {
  it('computes relative luminance and the ratio exactly as WCAG 2 defines them', () => {
    expect(relativeLuminance('#ffffff')).toBe(1);
    expect(relativeLuminance('#000000')).toBe(0);
    expect(contrastRatio('#000000', '#FFFFFF')).toBe(21);
    // #777777 is the classic just-failing grey: 4.48:1 on white; #767676 the just-passing one.
    expect(contrastRatio('#777777', '#ffffff')).toBeCloseTo(4.4781, 4);
    expect(contrastRatio('#767676', '#ffffff')).toBeCloseTo(4.5422, 4);
    // The linear segment under 0.04045 (sRGB 10/255 = 0.0392): c / 12.92.
    expect(relativeLuminance('#0a0a0a')).toBeCloseTo(10 / 255 / 12.92, 12);
  });
});

describe('the brand', () => {
  let before: { token: string; invoiceId: string };

  it('is public, and the default until an admin sets one', async () => {
    const res = await api.call('GET', '/v1/brand', { token: null });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'Control panel', primaryColor: '#2f5fd0', logo: null, legalFooter: null });
    before = await paidTopUp('brand-before@example.com');
  });

  it('refuses an unreadable colour with a 400 naming the field, and changes nothing (the name sent with it neither)', async () => {
    for (const primaryColor of ['#777777', '#ffcc00', '#f6f7f9']) {
      const res = await api.call('PUT', '/v1/admin/settings', { body: { brand: { name: 'Never', primaryColor } } });
      expectEnvelope(res, 400, 'validation_failed');
      const issue = res.body.error.details.issues.find((i: { field: string }) => i.field === 'body.brand.primaryColor');
      expect(issue?.message).toMatch(/^unreadable: contrast \d+\.\d\d:1 against white text/);
    }
    expectEnvelope(await api.call('PUT', '/v1/admin/settings', { body: { brand: { primaryColor: 'blue' } } }), 400, 'validation_failed');
    expect(await brand()).toMatchObject({ name: 'Control panel', primaryColor: '#2f5fd0' });
  });

  it('once set, is what GET /v1/brand and GET /v1/admin/settings answer', async () => {
    const res = await api.call('PUT', '/v1/admin/settings', { body: { brand: BRAND } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.brand).toEqual({ ...BRAND, logo: null });
    expect(await brand()).toEqual({ ...BRAND, logo: null });
    // A part keeps the rest.
    expect((await api.call('PUT', '/v1/admin/settings', { body: { brand: { supportUrl: null } } })).body.brand.name).toBe('Blockhost');
    expect((await api.call('PUT', '/v1/admin/settings', { body: { brand: { supportUrl: BRAND.supportUrl } } })).status).toBe(200);
  });

  it('is printed on the next invoice PDF, while an invoice paid before keeps printing without it', async () => {
    const after = await paidTopUp('brand-after@example.com');
    const next = await pdfLines(after.invoiceId, after.token);
    expect(next.lines[0]).toBe('Blockhost');
    expect(next.text).toContain('Amtsgericht Charlottenburg HRB 123456 B.');
    const earlier = await pdfLines(before.invoiceId, before.token);
    expect(earlier.text).not.toContain('Blockhost');
    expect(earlier.text).not.toContain('Amtsgericht');
    expect(earlier.lines[0]).toMatch(/^INV-\d{4}-\d{6}$/);
  });
});

describe('PUT /v1/admin/brand/logo', () => {
  it('takes a PNG, serves it at its URL as image/png, and the brand keeps its URL and hash', async () => {
    const file = png(64, 32);
    const res = await upload(file);
    expect(res.status, res.text).toBe(200);
    const { logo } = res.body;
    expect(logo).toMatchObject({ contentType: 'image/png', width: 64, height: 32, bytes: file.length });
    expect(logo.url).toMatch(new RegExp(`^${api.baseUrl}/brand/logo-${logo.sha256.slice(0, 16)}\\.png$`));
    expect((await brand()).logo).toEqual(logo);
    const served = await fetch(logo.url);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await served.arrayBuffer()).equals(file)).toBe(true);
    // Sending the settings back as read keeps the logo; a different one is not set this way.
    const settings = (await api.call('GET', '/v1/admin/settings')).body;
    expect((await api.call('PUT', '/v1/admin/settings', { body: settings })).status).toBe(200);
    const forged = await api.call('PUT', '/v1/admin/settings', { body: { brand: { logo: { ...logo, sha256: 'a'.repeat(64) } } } });
    expectEnvelope(forged, 400, 'validation_failed');
    expect((await brand()).logo).toEqual(logo);
  });

  it('refuses an SVG, a file that is no image, one too large and one too small, changing nothing', async () => {
    const kept = (await brand()).logo;
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64"><script>alert(1)</script></svg>');
    const refusals: [Buffer, RegExp][] = [
      [svg, /only PNG and JPEG/],
      [Buffer.from('just some text, not a picture at all'), /only PNG and JPEG/],
      [png(64, 64, 262_145), /more than 256 KB/],
      [png(8, 8), /each side must be 16 to 1024/],
      [png(2000, 16), /each side must be 16 to 1024/],
    ];
    for (const [file, message] of refusals) {
      const res = await upload(file);
      expectEnvelope(res, 400, 'validation_failed');
      expect(res.body.error.details.issues[0]).toMatchObject({ field: 'body.dataBase64' });
      expect(res.body.error.details.issues[0].message).toMatch(message);
    }
    // Past the base64 bound the schema refuses it before it is decoded.
    const huge = await upload(png(64, 64, 400_000));
    expectEnvelope(huge, 400, 'validation_failed');
    expect(huge.text).toContain('256 KB');
    expect((await brand()).logo).toEqual(kept);
    // Nothing but the logo names is served from the brand folder.
    expect((await fetch(`${api.baseUrl}/brand/../panel-keys.json`)).status).toBe(404);
  });

  it('needs an admin', async () => {
    const token = await api.session('brand-customer@example.com');
    const res = await api.call('PUT', '/v1/admin/brand/logo', { token, body: { dataBase64: png(32, 32).toString('base64') } });
    expect(res.status).toBe(403);
  });

  it('reads the size of a JPEG from its frame header', () => {
    // SOI, an APP0 segment, then SOF0 (precision 8, height 40, width 120).
    const jpeg = Buffer.from([
      0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, 0xff, 0xc0, 0x00, 0x0b, 0x08, 0x00, 0x28, 0x00, 0x78, 0x01, 0x01, 0x11, 0x00,
    ]);
    expect(inspectImage(jpeg)).toEqual({ contentType: 'image/jpeg', width: 120, height: 40 });
  });
});
