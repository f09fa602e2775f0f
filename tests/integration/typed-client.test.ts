import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createControlPlaneClient, type ControlPlaneClient, type ErrorCode, type ErrorEnvelope } from '../../clients/typescript/index.ts';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * The customer journey through the generated client (clients/typescript) only: every call after
 * the session token is typed from the OpenAPI document, so this file stops compiling (`tsc
 * --noEmit`, part of `npm run check`) when a path, parameter or field it uses is renamed, and
 * fails here when the service stops answering what the document says.
 *
 * Two steps are not the control plane's API and are not in the document: the session token comes
 * from the local identity provider (`POST /dev/session`, through the stack's helper), and the
 * sandbox payment page is completed through `POST /dev/checkout/:invoiceId/complete` with plain
 * fetch, which sends the signed webhook Stripe would send.
 */
let api: TestApi;

beforeAll(async () => {
  // The local sandbox checkout, not Stripe: nothing outside this machine is called.
  delete process.env.STRIPE_SECRET_KEY;
  delete process.env.STRIPE_WEBHOOK_SECRET;
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0 } });
});
afterAll(async () => api?.stop());

/** The typed error of a failed call, asserted to be the envelope with this status and code. */
function expectError(result: { error?: ErrorEnvelope; response: Response }, status: number, code: ErrorCode): void {
  expect(result.response.status).toBe(status);
  expect(result.error?.error.code).toBe(code);
  expect(typeof result.error?.error.message).toBe('string');
}

// The whole journey in one test: on a loaded machine it can outlast the default 30 s.
describe('the customer journey through the typed client', { timeout: 120_000 }, () => {
  it('session → key → catalog → deploy → read → power → files → resize → checkout → invoices → delete', async () => {
    // A session from the local identity provider; the first one creates the account with its trial credit.
    const session = createControlPlaneClient({ baseUrl: api.baseUrl, token: await api.session('journey@example.com') });

    // An API key for everything that follows. Scopes are the document's enum: a misspelt one does not compile.
    const key = await session.POST('/v1/keys', {
      body: {
        name: 'journey',
        expiresInDays: 1,
        scopes: ['account:read', 'servers:read', 'servers:write', 'billing:read', 'billing:write'],
      },
      headers: { 'Idempotency-Key': 'journey-key-1' },
    });
    expect(key.response.status).toBe(201);
    expect(key.data).toMatchObject({ name: 'journey', status: 'active', revokedAt: null });
    expect(key.data!.secret).toMatch(/^cp_(live|test)_/);
    const client: ControlPlaneClient = createControlPlaneClient({ baseUrl: api.baseUrl, token: key.data!.secret! });

    const account = await client.GET('/v1/account');
    expect(account.response.status).toBe(200);
    expect(account.data!.email).toBe('journey@example.com');
    expect(account.data!.trialGranted).toBe(true);
    const trialCents = account.data!.balanceCents;
    expect(trialCents).toBeGreaterThan(0);

    // The catalog: instances, regions with stock, eggs and one egg's variables.
    const instances = await client.GET('/v1/instances');
    expect(instances.response.status).toBe(200);
    const instance = instances.data!.data.find((i) => i.id === api.panel!.instanceId)!;
    expect(instance).toMatchObject({ name: expect.any(String), priority: expect.any(Number), controlAvailable: expect.any(Boolean) });
    const regions = await client.GET('/v1/regions');
    expect(regions.data!.data.map((r) => r.region)).toContain('eu-central');
    expect(regions.data!.data.find((r) => r.region === 'eu-central')!.largestFreeMemoryMb).toBeGreaterThanOrEqual(2048);
    const eggs = await client.GET('/v1/eggs');
    const paper = eggs.data!.data.find((e) => e.instanceId === instance.id && e.name.includes('Paper'))!;
    expect(paper.eggId).toEqual(expect.any(Number));
    const egg = await client.GET('/v1/eggs/{instanceId}/{eggId}', { params: { path: { instanceId: instance.id, eggId: paper.eggId } } });
    expect(egg.response.status).toBe(200);
    expect(egg.data!.variables.map((v) => v.env)).toContain('MINECRAFT_VERSION');

    // A body the schema refuses: the typed error envelope names the failure.
    const refused = await client.POST('/v1/servers', {
      body: { name: 'too small', eggId: paper.eggId, ramMb: 1, cpuPercent: 100, diskMb: 2048 },
    });
    expectError(refused, 400, 'validation_failed');
    expect(refused.data).toBeUndefined();

    // Deploy, then read it until the panel has installed it.
    const deployed = await client.POST('/v1/servers', {
      body: {
        name: 'journey',
        eggId: paper.eggId,
        instanceId: instance.id,
        region: 'eu-central',
        ramMb: 1024,
        cpuPercent: 100,
        diskMb: 2048,
        environment: { MINECRAFT_VERSION: '1.21.1' },
      },
      headers: { 'Idempotency-Key': 'journey-deploy-1' },
    });
    expect(deployed.response.status).toBe(201);
    const server = deployed.data!;
    expect(server).toMatchObject({ name: 'journey', eggId: paper.eggId, instanceId: instance.id, region: 'eu-central', status: 'active' });
    expect(server.resources).toEqual({ ramMb: 1024, cpuPercent: 100, diskMb: 2048 });
    const byId = { params: { path: { id: server.id } } };
    await until(async () => (await client.GET('/v1/servers/{id}', byId)).data?.live.installStatus === 'installed');
    const listed = await client.GET('/v1/servers', { params: { query: { limit: 10 } } });
    expect(listed.data!.data.map((s) => s.id)).toEqual([server.id]);
    expect(listed.data!.nextCursor).toBeNull();

    // Power.
    const power = await client.POST('/v1/servers/{id}/power', { ...byId, body: { signal: 'start' } });
    expect(power.data).toEqual({ id: server.id, signal: 'start', accepted: true });
    // Live usage: the specification's `attributes.current_state`, typed by the client, beside `powerState`.
    await until(async () => (await client.GET('/v1/servers/{id}/resources', byId)).data?.attributes.current_state === 'running');
    const usage = (await client.GET('/v1/servers/{id}/resources', byId)).data!;
    expect(usage.powerState).toBe(usage.attributes.current_state);
    expect(usage.attributes.resources.memory_bytes).toBe(usage.resources?.memoryBytes);

    // Files: write, list, read.
    const written = await client.POST('/v1/servers/{id}/files/write', { ...byId, body: { file: 'motd.txt', content: 'Welcome ✓' } });
    expect(written.data).toEqual({ file: '/motd.txt', written: true, bytes: Buffer.byteLength('Welcome ✓') });
    const files = await client.GET('/v1/servers/{id}/files', { params: { path: { id: server.id }, query: { directory: '/' } } });
    expect(files.data!.data.find((f) => f.name === 'motd.txt')).toMatchObject({ isFile: true, size: Buffer.byteLength('Welcome ✓') });
    const contents = await client.GET('/v1/servers/{id}/files/contents', {
      params: { path: { id: server.id }, query: { file: 'motd.txt' } },
    });
    expect(contents.data!.content).toBe('Welcome ✓');

    // Resize.
    const resized = await client.PATCH('/v1/servers/{id}', { ...byId, body: { ramMb: 2048, cpuPercent: 200, diskMb: 4096 } });
    expect(resized.response.status).toBe(200);
    expect(resized.data!.resources).toEqual({ ramMb: 2048, cpuPercent: 200, diskMb: 4096 });
    expect(resized.data!.priceMillicentsPerHour).toBeGreaterThan(server.priceMillicentsPerHour);

    // Checkout: a top-up through the local sandbox.
    const config = await client.GET('/v1/billing/config');
    expect(config.data).toMatchObject({ provider: 'sandbox', paymentsEnabled: true });
    const checkout = await client.POST('/v1/billing/checkout', {
      body: { amountCents: 1000 },
      headers: { 'Idempotency-Key': 'journey-topup-1' },
    });
    expect(checkout.response.status).toBe(201);
    const { invoiceId, invoiceNumber, url } = checkout.data!;
    expect(url).toBe(`${api.baseUrl}/dev/checkout/${invoiceId}`);
    // The sandbox page's "pay" button: a local-only route outside the document, hence plain fetch.
    const paid = await fetch(`${api.baseUrl}/dev/checkout/${invoiceId}/complete`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ outcome: 'paid' }),
    });
    expect(await paid.json()).toEqual({ received: true, outcome: 'credited' });

    // Invoices: the paid one in the list and on its own; the balance received the top-up and its bonus.
    const invoices = await client.GET('/v1/invoices');
    expect(invoices.data!.data.map((i) => [i.id, i.status])).toContainEqual([invoiceId, 'paid']);
    const invoice = await client.GET('/v1/invoices/{id}', { params: { path: { id: invoiceId } } });
    expect(invoice.data).toMatchObject({
      number: invoiceNumber,
      status: 'paid',
      totalCents: 1000,
      paidCents: 1000,
      payment: { provider: 'sandbox' },
    });
    const credited = invoice.data!.creditedCents;
    expect(invoice.data!.credits.map((c) => c.type)).toEqual(credited > 1000 ? ['topup', 'bonus'] : ['topup']);
    expect((await client.GET('/v1/account')).data!.balanceCents).toBe(trialCents + credited);

    // Delete: the record stays, marked deleted.
    const deleted = await client.DELETE('/v1/servers/{id}', byId);
    expect(deleted.response.status).toBe(200);
    expect(deleted.data).toMatchObject({ id: server.id, status: 'deleted' });
    const after = await client.GET('/v1/servers/{id}', byId);
    expect(after.data).toMatchObject({ status: 'deleted', deletedAt: deleted.data!.deletedAt });
    expectError(await client.POST('/v1/servers/{id}/power', { ...byId, body: { signal: 'stop' } }), 409, 'conflict');

    // The key revoked by the session that made it no longer opens anything.
    const revoked = await session.DELETE('/v1/keys/{id}', { params: { path: { id: key.data!.id } } });
    expect(revoked.data).toMatchObject({ id: key.data!.id, revoked: true });
    expectError(await client.GET('/v1/account'), 401, 'unauthorized');
  });
});
