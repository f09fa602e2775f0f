import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Stack } from 'aws-cdk-lib';
import type { APIGatewayProxyStructuredResultV2, SQSEvent } from 'aws-lambda';
import { simpleParser } from 'mailparser';
import Stripe from 'stripe';
import { EXAMPLE_SELLER } from '../../shared/invoices/parties.ts';
import { updateSettings } from '../../shared/settings/update.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleDir } from '../../infra/bundle.ts';
import { ensureTable } from '../../dev/dynamodb.ts';
import { startPanelSim, type PanelSim } from '../../dev/panel-sim/index.ts';
import { ensureAccountForSubject } from '../../shared/accounts/index.ts';
import { mailSuppression } from '../../shared/db/access-patterns.ts';
import { createApiKey } from '../../shared/api-keys/index.ts';
import { scopesOfAccount } from '../../shared/api/scopes.ts';
import { openApiDocument } from '../../shared/openapi/document.ts';
import { STRIPE_EVENT_TYPES } from '../../shared/payments/stripe-events.ts';
import { syncWebhookEndpoint } from '../../shared/payments/webhook-endpoint.ts';
import { ASSETS_DIR, DOCUMENT_FILE, SWAGGER_UI_FILES } from '../../shared/openapi/bundle-files.ts';
import { FONTS_DIR, INVOICE_FONT_FILES } from '../../shared/invoices/fonts.ts';
import { bundlesOfThisRun, withBuildLock } from '../helpers/build-lock.ts';
import { startFakeS3, type FakeS3 } from '../helpers/fake-s3.ts';
import { startFakeSes, type FakeSes } from '../helpers/fake-ses.ts';
import { startFakeRoute53, type FakeRoute53 } from '../helpers/fake-route53.ts';
import { startFakeSecretsManager, type FakeSecretsManager } from '../helpers/fake-secrets-manager.ts';
import { startFakeStripe, type FakeStripe } from '../helpers/fake-stripe.ts';
import { allows, type Physical, type Resolver, resolveValue, roleStatements, type Statement } from '../helpers/iam.ts';
import {
  apiEvent,
  type AwsRecorder,
  copyBundle,
  type LambdaProcess,
  nodeModulesAbove,
  secretArnOf,
  startAwsRecorder,
  startLambda,
} from '../helpers/lambda-bundle.ts';
import { pdfText } from '../helpers/pdf-text.ts';
import { png } from '../helpers/png.ts';
import { signedStripeEvent } from '../helpers/stripe-events.ts';
import { functionsOf, removeSyntheses, synthesize, type Synth, TEST_ACCOUNT, TEST_REGION } from '../helpers/synth.ts';

/**
 * Every function as deployed: its built bundle copied to a folder with no node_modules above it,
 * loaded by path in a Node process of its own with the environment of its synthesized
 * AWS::Lambda::Function, and driven with the events API Gateway, EventBridge and SQS send, against
 * DynamoDB Local, the panel simulator, Secrets Manager, S3 and SES stand-ins and the strict Stripe fake
 * (tests/helpers/fake-stripe.ts: Stripe is outside AWS, so no grant is involved; the fake answers
 * the refund, the endpoint read and the event list). Every AWS call a function
 * makes is recorded on its way (tests/helpers/lambda-bundle.ts, startAwsRecorder) and checked
 * against that function's role in the template: a call its policy does not allow fails the run.
 */
const ADMIN_EMAIL = 'admin@localhost';
const STRIPE_SECRET_NAME = 'control-plane/stripe';
const WEBHOOK_SECRET = 'whsec_bundle_test';
/** The dashboard's bucket and CloudFront domain, as the test names them (`physical`). */
const DASHBOARD_BUCKET = 'controlplane-dashboard-bucket';
const DASHBOARD_DOMAIN = 'd111111abcdef8.cloudfront.net';
/** Context `mailDomain`: the mail stack exists, so its two functions run here too. */
const MAIL_DOMAIN = 'mail.bundle.example';
const MAIL_FROM = `billing@${MAIL_DOMAIN}`;
const CUSTOMER_EMAIL = 'bundle-customer@example.com';
/** Contexts `dnsZone` and `dnsHostedZoneId`: server subdomains in Route 53 (the servers function's deploy writes one). */
const DNS_ZONE = 'play.bundle.example';
const DNS_HOSTED_ZONE_ID = 'Z0BUNDLETEST';

let synth: Synth;
let root: string;
let sm: FakeSecretsManager;
let s3: FakeS3;
let ses: FakeSes;
let route53: FakeRoute53;
let stripeFake: FakeStripe;
let sim: PanelSim;
let adminKey: string;
let customerKey: string;
let customerId: string;
let resolver: Resolver;

interface Running {
  stack: Stack;
  roleId: string;
  recorder: AwsRecorder;
  lambda: LambdaProcess;
}
const running = new Map<string, Running>();

/** The resources the functions reach, as the test stands them up (by logical id and type). */
function physical(stack: string, id: string, type: string): ReturnType<Physical> {
  const region = TEST_REGION;
  const account = TEST_ACCOUNT;
  if (type === 'AWS::DynamoDB::Table') {
    const name = process.env.TABLE_NAME!;
    return { ref: name, arn: `arn:aws:dynamodb:${region}:${account}:table/${name}` };
  }
  // A secret's Ref is its ARN; the stand-in keeps it under its logical id.
  if (type === 'AWS::SecretsManager::Secret') return { ref: secretArnOf(id), arn: secretArnOf(id) };
  if (type === 'AWS::SQS::Queue') {
    // The function's own recorder answers SQS (the queue URL names its host, as AWS_ENDPOINT_URL_SQS does).
    return { ref: `{recorder}/${account}/${id}`, arn: `arn:aws:sqs:${region}:${account}:${id}` };
  }
  // The dashboard's bucket (the admin function puts the brand's logo in it) and the CloudFront domain serving it.
  const dashboard = synth.built.apiStack.dashboard;
  if (type === 'AWS::S3::Bucket' && dashboard && id === synth.built.apiStack.getLogicalId(dashboard.bucket.node.defaultChild as never))
    return { ref: DASHBOARD_BUCKET, arn: `arn:aws:s3:::${DASHBOARD_BUCKET}` };
  if (type === 'AWS::CloudFront::Distribution') return { ref: id, arn: '', attributes: { DomainName: DASHBOARD_DOMAIN } };
  // The HTTP API's address (the mail sender's unsubscribe links point at it).
  if (type === 'AWS::ApiGatewayV2::Api') return { ref: id, arn: '', attributes: { ApiEndpoint: 'https://api.example.com' } };
  // A configuration set's Ref is its name (as the template names it).
  if (type === 'AWS::SES::ConfigurationSet') {
    const name = String(synth.templates.get(stack)?.Resources[id]?.Properties.Name ?? id);
    return { ref: name, arn: `arn:aws:ses:${region}:${account}:configuration-set/${name}` };
  }
  // Configuration only (the OIDC issuer and audiences): the tests sign in with API keys.
  if (type === 'AWS::Cognito::UserPool') return { ref: `${region}_${id}`, arn: `arn:aws:cognito-idp:${region}:${account}:userpool/${id}` };
  if (type === 'AWS::Cognito::UserPoolClient') return { ref: `client-${id}`, arn: '' };
  return undefined;
}

beforeAll(async () => {
  await bundlesOfThisRun();
  root = mkdtempSync(join(tmpdir(), 'lambda-tasks-'));
  await withBuildLock(async () => {
    synth = synthesize({
      stripeSecretName: STRIPE_SECRET_NAME,
      alarmEmail: 'ops@example.com',
      adminEmails: ADMIN_EMAIL,
      mailDomain: MAIL_DOMAIN,
      dnsZone: DNS_ZONE,
      dnsHostedZoneId: DNS_HOSTED_ZONE_ID,
    });
    // Copied under the lock: no other file's build empties dist/functions meanwhile.
    for (const group of new Set(functionsOf(synth).map((f) => bundleOf(f.name)))) copyBundle(bundleDir(group), join(root, group));
  });
  resolver = { templates: synth.templates, region: TEST_REGION, account: TEST_ACCOUNT, physical };

  await ensureTable(process.env.DYNAMODB_ENDPOINT!, process.env.TABLE_NAME!);
  sm = await startFakeSecretsManager();
  s3 = await startFakeS3();
  ses = await startFakeSes();
  route53 = await startFakeRoute53();
  // The stack's own secrets (the cursor key), under the name their ARN stands for (`physical`).
  for (const t of synth.templates.values())
    for (const [id, r] of Object.entries(t.Resources)) if (r.Type === 'AWS::SecretsManager::Secret') sm.secrets.set(id, `value of ${id}`);
  // The Stripe secret as an operator stores it (docs/deploy.md); its keys reach the fake only.
  sm.secrets.set(STRIPE_SECRET_NAME, JSON.stringify({ secretKey: 'sk_test_bundle', webhookSecret: WEBHOOK_SECRET }));
  stripeFake = await startFakeStripe();
  sim = await startPanelSim({ seed: 'default', installMs: 50 });
  // The accounts and keys, written as a sign-in and POST /v1/keys would.
  adminKey = await keyFor(ADMIN_EMAIL, true);
  customerKey = await keyFor(CUSTOMER_EMAIL, false);
  // The seller every invoice names, set before anyone tops up (docs/deploy.md, step 4).
  await updateSettings({ invoiceIssuer: EXAMPLE_SELLER }, 'bundle-test');
}, 600_000);

afterAll(async () => {
  for (const r of running.values()) {
    await r.lambda.stop();
    await r.recorder.close();
  }
  await sim?.close();
  await sm?.close();
  await s3?.close();
  await ses?.close();
  await route53?.close();
  await stripeFake?.close();
  if (root) rmSync(root, { recursive: true, force: true });
  removeSyntheses();
});

async function keyFor(email: string, admin: boolean): Promise<string> {
  const account = await ensureAccountForSubject('bundle-test', `bundle|${email}`, email);
  if (!admin) customerId = account.accountId;
  const principal = { accountId: account.accountId, email, scopes: new Set(scopesOfAccount(admin)) };
  return (await createApiKey(principal, { name: `${email} (bundle test)` })).secret;
}

/** The bundle a function runs (the billing functions share the billing-pass bundle, the mail functions the mail bundle). */
const bundleOf = (name: string): string =>
  name.startsWith('billing-') && name !== 'billing' ? 'billing-pass' : name.startsWith('mail-') ? 'mail' : name;

/** Starts a function as Lambda would: its bundle, the handler and environment of its template resource. */
async function fn(name: string): Promise<Running> {
  const existing = running.get(name);
  if (existing) return existing;
  const entry = functionsOf(synth).find((f) => f.name === name);
  if (!entry) throw new Error(`no function ${name}`);
  const stack = entry.stack;
  const template = synth.templates.get(stack.stackName)!;
  const props = template.Resources[stack.getLogicalId(entry.fn.fn.node.defaultChild as never)]!.Properties;
  const recorder = await startAwsRecorder({
    dynamodb: process.env.DYNAMODB_ENDPOINT!,
    secretsManager: sm.url,
    s3: s3.url,
    ses: ses.url,
    route53: route53.url,
  });
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries((props.Environment?.Variables ?? {}) as Record<string, unknown>)) {
    env[key] = resolveValue(value, stack.stackName, resolver).replace('{recorder}', recorder.url);
    expect(env[key], `${name}: ${key}`).not.toMatch(/unresolved/);
  }
  const lambda = await startLambda(join(root, bundleOf(name)), String(props.Handler).replace(/^index\./, ''), {
    ...env,
    AWS_LAMBDA_FUNCTION_NAME: name,
    AWS_REGION: TEST_REGION,
    // The role's credentials, as Lambda sets them.
    AWS_ACCESS_KEY_ID: 'AKIDBUNDLETEST',
    AWS_SECRET_ACCESS_KEY: 'secret',
    AWS_SESSION_TOKEN: 'token',
    // Every AWS endpoint is the recorder (DynamoDB's through the setting the code reads).
    DYNAMODB_ENDPOINT: recorder.url,
    AWS_ENDPOINT_URL_SECRETS_MANAGER: recorder.url,
    AWS_ENDPOINT_URL_SQS: recorder.url,
    AWS_ENDPOINT_URL_S3: recorder.url,
    AWS_ENDPOINT_URL_SESV2: recorder.url,
    AWS_ENDPOINT_URL_ROUTE_53: recorder.url,
    // Stripe's API host, as the local stack sets it (shared/config/env.ts); unset in AWS, so the
    // template has no such variable and the functions with STRIPE_SECRET_ARN reach the fake.
    STRIPE_API_URL: stripeFake.url,
    // The mail sender's warnings say why a message was not sent (its test shows them on failure).
    LOG_LEVEL: name === 'mail' ? 'warn' : 'error',
  });
  const started = { stack, roleId: stack.getLogicalId(entry.fn.role.node.defaultChild as never), recorder, lambda };
  running.set(name, started);
  return started;
}

type Answer = APIGatewayProxyStructuredResultV2 & { statusCode: number; headers: Record<string, string>; body: string };

async function call(name: string, method: string, path: string, options: { token?: string; body?: unknown } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  const { lambda } = await fn(name);
  const res = await lambda.invoke<Answer>(apiEvent(method, path, { headers, body }));
  // An unexpected answer shows what the function logged.
  if (res.statusCode >= 500) res.body += `\n${lambda.log()}`;
  return res;
}

const json = (res: Answer) => JSON.parse(res.body) as any;

/** Delivers a Stripe event to the payments function, signed with Stripe's own library. */
async function deliverStripeEvent(type: string, object: Record<string, unknown>): Promise<Answer> {
  const event = signedStripeEvent(type, object, { secret: WEBHOOK_SECRET });
  const res = await (await fn('payments')).lambda.invoke<Answer>(
    apiEvent('POST', '/v1/webhooks/stripe', {
      headers: { 'content-type': 'application/json', 'stripe-signature': event.signature },
      body: event.body,
    }),
  );
  if (res.statusCode >= 500) res.body += `\n${(await fn('payments')).lambda.log()}`;
  return res;
}

/** A top-up opened through the billing function (a Checkout Session at the fake), paid at Stripe. */
async function paidCheckout(amountCents: number): Promise<{ invoiceId: string; session: Record<string, unknown> }> {
  const started = await call('billing', 'POST', '/v1/billing/checkout', { token: customerKey, body: { amountCents } });
  expect(started.statusCode, started.body).toBe(201);
  const invoiceId = json(started).invoiceId as string;
  const session = [...stripeFake.sessions.values()].find((s) => s.client_reference_id === invoiceId);
  expect(session, 'the Checkout Session at Stripe').toBeDefined();
  const paymentIntent = `pi_bundle_${invoiceId.replace(/-/g, '').slice(0, 16)}`;
  return { invoiceId, session: { ...session, status: 'complete', payment_status: 'paid', payment_intent: paymentIntent } };
}

let instanceId: string;

describe('each function bundle, loaded as Lambda loads it', () => {
  it('is copied where no node_modules is above it, and holds what it serves', () => {
    expect(nodeModulesAbove(root)).toEqual([]);
    expect(JSON.parse(readFileSync(join(root, 'public', DOCUMENT_FILE), 'utf8')).openapi).toBe('3.1.0');
    for (const file of SWAGGER_UI_FILES) expect(readFileSync(join(root, 'public', ASSETS_DIR, file)).length).toBeGreaterThan(1000);
    for (const file of Object.values(INVOICE_FONT_FILES))
      expect(readFileSync(join(root, 'billing', FONTS_DIR, file)).length).toBeGreaterThan(100_000);
  });

  it('public: health, the prebuilt OpenAPI document, /docs and its assets, 404 for an unknown path', async () => {
    const health = await call('public', 'GET', '/v1/health');
    expect(health.statusCode, health.body).toBe(200);
    expect(json(health)).toMatchObject({ status: 'ok' });

    const doc = await call('public', 'GET', '/openapi.json');
    expect(doc.statusCode, doc.body).toBe(200);
    expect(doc.headers['content-type']).toBe('application/json; charset=utf-8');
    // The file written at bundle time, the caller's address in it: the bytes the local stack builds.
    expect(doc.body).toBe(JSON.stringify(openApiDocument('https://api.example.com')));

    const page = await call('public', 'GET', '/docs');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    const types: Record<string, string> = {
      'swagger-ui.css': 'text/css; charset=utf-8',
      'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
      'init.js': 'text/javascript; charset=utf-8',
    };
    for (const src of page.body.match(/(?<=(href|src)=")\/docs\/assets\/[^"]+/g) ?? []) {
      const file = src.split('/').pop()!;
      const asset = await call('public', 'GET', src);
      expect(asset.statusCode, `${src}: ${asset.body.slice(0, 200)}`).toBe(200);
      expect(asset.headers['content-type'], src).toBe(types[file]);
      if (file !== 'init.js') expect(asset.body).toBe(readFileSync(join(root, 'public', ASSETS_DIR, file), 'utf8'));
    }
    expect(page.body.match(/\/docs\/assets\//g)).toHaveLength(3);

    const unknown = await call('public', 'GET', '/v1/nothing-here');
    expect(unknown.statusCode).toBe(404);
    expect(json(unknown).error.code).toBe('not_found');
  });

  it('admin-panels registers the panel (its keys into Secrets Manager); admin credits the customer', async () => {
    const created = await call('admin-panels', 'POST', '/v1/admin/instances', {
      token: adminKey,
      body: { name: 'Simulator', baseUrl: sim.url, appApiKey: sim.appKey, clientApiKey: sim.clientKey },
    });
    expect(created.statusCode, created.body).toBe(201);
    instanceId = json(created).id;
    expect([...sm.secrets.keys()].filter((k) => k.startsWith('control-plane/instances/'))).not.toEqual([]);
    const credited = await call('admin', 'POST', `/v1/admin/users/${customerId}/credits`, {
      token: adminKey,
      body: { amountCents: 5000, note: 'bundle test' },
    });
    expect(credited.statusCode, credited.body).toBe(200);
    const users = await call('admin', 'GET', '/v1/admin/users?limit=1', { token: adminKey });
    expect(users.statusCode, users.body).toBe(200);
  });

  it('admin-storefront: sets how a region is shown and lists the plans (admin routes in a function of their own)', async () => {
    const look = await call('admin-storefront', 'PUT', '/v1/admin/regions/bundle-region', {
      token: adminKey,
      body: { displayName: 'Frankfurt 1', city: 'Frankfurt', country: 'DE' },
    });
    expect(look.statusCode, look.body).toBe(200);
    expect(json(look)).toMatchObject({ region: 'bundle-region', displayName: 'Frankfurt 1', country: 'DE' });
    const plans = await call('admin-storefront', 'GET', '/v1/admin/plans', { token: adminKey });
    expect(plans.statusCode, plans.body).toBe(200);
    expect(Array.isArray(json(plans).data)).toBe(true);
    // A customer's key is refused there as on every admin route.
    const refused = await call('admin-storefront', 'GET', '/v1/admin/plans', { token: customerKey });
    expect(refused.statusCode).toBe(403);
  });

  it('admin-panels: removes the panel and registers it again; keys set again within a recovery window restore the secret', async () => {
    const removed = await call('admin-panels', 'DELETE', `/v1/admin/instances/${instanceId}`, { token: adminKey });
    expect(removed.statusCode, removed.body).toBe(200);
    // DeleteSecret with a recovery window: Secrets Manager keeps the keys for seven days.
    expect(sm.scheduledForDeletion.has(`control-plane/instances/${instanceId}`)).toBe(true);
    const again = await call('admin-panels', 'POST', '/v1/admin/instances', {
      token: adminKey,
      body: { name: 'Simulator', baseUrl: sim.url, appApiKey: sim.appKey, clientApiKey: sim.clientKey },
    });
    expect(again.statusCode, again.body).toBe(201);
    expect(json(again).id).not.toBe(instanceId);
    instanceId = json(again).id;
    // A registration takes a new id, so its keys are a new secret: RestoreSecret is for keys set again
    // on an instance whose secret is in its recovery window (deleted outside this API, in the
    // console, or by a removal that raced the update). Stood up here as Secrets Manager holds it.
    const name = `control-plane/instances/${instanceId}`;
    sm.scheduledForDeletion.set(name, sm.secrets.get(name)!);
    sm.secrets.delete(name);
    const rekeyed = await call('admin-panels', 'PATCH', `/v1/admin/instances/${instanceId}`, {
      token: adminKey,
      body: { appApiKey: sim.appKey, clientApiKey: sim.clientKey },
    });
    expect(rekeyed.statusCode, rekeyed.body).toBe(200);
    expect(sm.scheduledForDeletion.has(name)).toBe(false);
    expect(JSON.parse(sm.secrets.get(name)!)).toEqual({ appApiKey: sim.appKey, clientApiKey: sim.clientKey });
    expect((await fn('admin-panels')).recorder.calls.map((c) => c.action)).toContain('secretsmanager:RestoreSecret');
  });

  it('admin: the health view reads the Stripe webhook endpoint; the held orphans list', async () => {
    // The endpoint as the deploy command (dev/stripe-endpoint.ts) leaves it, made with the same code.
    const operator = new Stripe('sk_test_bundle', { host: '127.0.0.1', port: Number(new URL(stripeFake.url).port), protocol: 'http' });
    const synced = await syncWebhookEndpoint(operator, 'https://api.example.com/v1/webhooks/stripe', 'bundle test');
    expect(synced.action).toBe('created');
    const health = await call('admin', 'GET', '/v1/admin/health', { token: adminKey });
    expect(health.statusCode, health.body).toBe(200);
    expect(json(health).stripeWebhook).toMatchObject({
      status: 'ok',
      endpoint: { id: synced.endpointId },
      expectedEvents: [...STRIPE_EVENT_TYPES],
      missingEvents: [],
    });
    const orphans = await call('admin-panels', 'GET', '/v1/admin/orphans', { token: adminKey });
    expect(orphans.statusCode, orphans.body).toBe(200);
    expect(json(orphans)).toEqual({ data: [] });
  });

  it("admin: uploads the brand's logo into the dashboard's bucket with the S3 client, loaded from its own file", async () => {
    const file = png(64, 32);
    const res = await call('admin', 'PUT', '/v1/admin/brand/logo', { token: adminKey, body: { dataBase64: file.toString('base64') } });
    expect(res.statusCode, res.body).toBe(200);
    const sha256 = createHash('sha256').update(file).digest('hex');
    const key = `brand/logo-${sha256.slice(0, 16)}.png`;
    // The bytes, under their hash's name, in the bucket of BRAND_BUCKET, with the headers CloudFront serves.
    expect([...s3.objects.keys()]).toEqual([`${DASHBOARD_BUCKET}/${key}`]);
    const stored = s3.objects.get(`${DASHBOARD_BUCKET}/${key}`)!;
    expect(stored.body.equals(file)).toBe(true);
    expect(stored).toMatchObject({ contentType: 'image/png', cacheControl: 'public, max-age=31536000, immutable' });
    expect(json(res).logo).toEqual({
      url: `https://${DASHBOARD_DOMAIN}/${key}`,
      sha256,
      contentType: 'image/png',
      width: 64,
      height: 32,
      bytes: file.length,
    });
    const admin = await fn('admin');
    expect(admin.recorder.calls.filter((c) => c.action.startsWith('s3:'))).toEqual([
      { action: 's3:PutObject', resource: `arn:aws:s3:::${DASHBOARD_BUCKET}/${key}` },
    ]);
    // The client is a package apart (infra/bundle.ts): in the admin function's asset folder only.
    expect(readFileSync(join(root, 'admin', 'lazy', 'aws-sdk-client-s3.mjs')).length).toBeGreaterThan(10_000);
  });

  it("admin, billing, payments: a checkout after the brand is set shows it on Stripe's page (branding_settings)", async () => {
    const set = await call('admin', 'PUT', '/v1/admin/settings', {
      token: adminKey,
      body: { brand: { name: 'Blockhost', primaryColor: '#1d4ed8' } },
    });
    expect(set.statusCode, set.body).toBe(200);
    // The logo uploaded above: its public https URL is one Stripe can fetch.
    const logoUrl = json(set).brand.logo.url as string;
    expect(logoUrl).toMatch(new RegExp(`^https://${DASHBOARD_DOMAIN}/brand/logo-[0-9a-f]{16}\\.png$`));
    const { invoiceId, session } = await paidCheckout(1000);
    const sent = stripeFake.requests.find((r) => r.path === '/v1/checkout/sessions' && r.params.client_reference_id === invoiceId);
    expect(Object.fromEntries(Object.entries(sent!.params).filter(([name]) => name.startsWith('branding_settings')))).toEqual({
      'branding_settings[display_name]': 'Blockhost',
      'branding_settings[button_color]': '#1d4ed8',
      'branding_settings[logo][type]': 'url',
      'branding_settings[logo][url]': logoUrl,
    });
    const paid = await deliverStripeEvent('checkout.session.completed', session);
    expect(json(paid).outcome, paid.body).toBe('credited');
  });

  it('authorizer: lets an admin key through, not a customer key', async () => {
    const authorizer = (await fn('authorizer')).lambda;
    const event = (token: string) => ({
      type: 'REQUEST',
      headers: { authorization: `Bearer ${token}` },
      requestContext: { http: { sourceIp: '203.0.113.9' } },
    });
    expect(await authorizer.invoke(event(adminKey))).toMatchObject({ isAuthorized: true });
    expect(await authorizer.invoke(event(customerKey))).toMatchObject({ isAuthorized: false });
  });

  it('account: the account, a new key, the key list', async () => {
    const account = await call('account', 'GET', '/v1/account', { token: customerKey });
    expect(account.statusCode, account.body).toBe(200);
    expect(json(account).id).toBe(customerId);
    expect((await call('account', 'POST', '/v1/keys', { token: customerKey, body: { name: 'second' } })).statusCode).toBe(201);
    const keys = await call('account', 'GET', '/v1/keys?limit=1', { token: customerKey });
    expect(keys.statusCode, keys.body).toBe(200);
    // A second page: the cursor is signed with the key from Secrets Manager.
    expect(json(keys).nextCursor).toEqual(expect.any(String));
  });

  it('catalog: regions and eggs, read from the panel with its keys from Secrets Manager', async () => {
    const regions = await call('catalog', 'GET', '/v1/regions', { token: customerKey });
    expect(regions.statusCode, regions.body).toBe(200);
    const eggs = await call('catalog', 'GET', '/v1/eggs', { token: customerKey });
    expect(eggs.statusCode, eggs.body).toBe(200);
    expect(json(eggs).data.length).toBeGreaterThan(0);
  });

  it('servers, server-tools, server-history: deploys a server on the panel (its subdomain in Route 53), lists it, reads its startup settings and activity', async () => {
    const created = await call('servers', 'POST', '/v1/servers', {
      token: customerKey,
      body: { name: 'bundle server', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048, subdomain: 'bundle' },
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(json(created).subdomain).toMatchObject({ fqdn: `bundle.${DNS_ZONE}`, status: 'active' });
    expect(route53.zones.get(DNS_HOSTED_ZONE_ID)?.get(`bundle.${DNS_ZONE}. A`)?.values).toEqual([json(created).address.ip]);
    const list = await call('servers', 'GET', '/v1/servers', { token: customerKey });
    expect(list.statusCode, list.body).toBe(200);
    expect(json(list).data.map((s: { id: string }) => s.id)).toContain(json(created).id);
    // The server's own tools are another function's: its startup settings, read from the panel.
    const startup = await call('server-tools', 'GET', `/v1/servers/${json(created).id}/startup`, { token: customerKey });
    expect(startup.statusCode, startup.body).toBe(200);
    expect(json(startup).dockerImage).toEqual(expect.any(String));
    // Its history is a third's: the activity (our entry of the deploy, the panel's log) and the month's cost.
    const activity = await call('server-history', 'GET', `/v1/servers/${json(created).id}/activity`, { token: customerKey });
    expect(activity.statusCode, activity.body).toBe(200);
    expect(json(activity).data.map((e: { action: string }) => e.action)).toContain('servers.create');
    const cost = await call('server-history', 'GET', `/v1/servers/${json(created).id}/cost`, { token: customerKey });
    expect(cost.statusCode, cost.body).toBe(200);
  });

  it('billing: its configuration and the invoice list', async () => {
    const config = await call('billing', 'GET', '/v1/billing/config', { token: customerKey });
    expect(config.statusCode, config.body).toBe(200);
    const invoices = await call('billing', 'GET', '/v1/invoices', { token: customerKey });
    expect(invoices.statusCode, invoices.body).toBe(200);
  });

  it('payments: a signed Stripe webhook, its secret read from Secrets Manager', async () => {
    const res = await deliverStripeEvent('customer.created', { id: 'cus_bundle', object: 'customer' });
    expect(res.statusCode, res.body).toBe(200);
    expect(json(res)).toMatchObject({ received: true });
  });

  it('billing, payments, admin: a top-up paid through Checkout, then refunded by an admin at Stripe', async () => {
    const { invoiceId, session } = await paidCheckout(2000);
    const paid = await deliverStripeEvent('checkout.session.completed', session);
    expect(paid.statusCode, paid.body).toBe(200);
    expect(json(paid).outcome).toBe('credited');
    // The Admin function reads the Stripe secret (STRIPE_SECRET_ARN) and asks Stripe for the refund.
    const refund = await call('admin', 'POST', `/v1/admin/invoices/${invoiceId}/refund`, {
      token: adminKey,
      body: { amountCents: 500, reason: 'bundle test' },
    });
    expect(refund.statusCode, refund.body).toBe(200);
    expect(stripeFake.refunds).toEqual([expect.objectContaining({ amount: 500, payment_intent: session.payment_intent })]);
    expect(json(refund)).toMatchObject({ refundId: stripeFake.refunds[0]!.id, amountCents: 500, invoice: { id: invoiceId } });
  });

  it('billing, account: an invoice PDF prints Polish, Greek and Cyrillic names exactly, its font read from the asset folder', async () => {
    // The profile before the payment: a paid invoice prints the buyer as it was when it was paid.
    const profile = await call('account', 'PUT', '/v1/account/billing-profile', {
      token: customerKey,
      body: { name: 'Zoë Łukasiewicz, Łódź', company: 'Σωκράτης', address: { line1: 'Дмитрий', country: 'PL' } },
    });
    expect(profile.statusCode, profile.body).toBe(200);
    const { invoiceId, session } = await paidCheckout(1000);
    expect((await deliverStripeEvent('checkout.session.completed', session)).statusCode).toBe(200);
    const pdf = await call('billing', 'GET', `/v1/invoices/${invoiceId}/pdf`, { token: customerKey });
    expect(pdf.statusCode, pdf.body.slice(-2000)).toBe(200);
    expect(pdf.isBase64Encoded).toBe(true);
    // The buyer's column shares its lines with the seller's: each name exactly, within its line.
    const { text } = await pdfText(Buffer.from(pdf.body, 'base64'));
    for (const name of ['Σωκράτης', 'Zoë Łukasiewicz, Łódź', 'Дмитрий', 'Poland']) expect(text).toContain(name);
  });

  it('billing pass: the scheduler queues the shards, the worker charges them, the repairs run', async () => {
    // A top-up paid at Stripe whose webhook never came: the repairs' event reconciliation books it.
    const lost = await paidCheckout(1500);
    stripeFake.recordEvent('checkout.session.completed', lost.session);
    const scheduler = await fn('billing-scheduler');
    const out = await scheduler.lambda.invoke<{ queued: number }>({ time: new Date().toISOString() });
    expect(out.queued).toBeGreaterThan(0);
    expect(scheduler.recorder.sqsMessages).toHaveLength(out.queued);
    const event: SQSEvent = {
      Records: scheduler.recorder.sqsMessages.map((body, i) => ({ messageId: `m-${i}`, body }) as SQSEvent['Records'][number]),
    };
    expect(await (await fn('billing-worker')).lambda.invoke(event)).toEqual({ batchItemFailures: [] });
    // Each pass answers null when it failed (the repairs, the auto top-ups and the install watch run apart).
    expect(await (await fn('billing-repairs')).lambda.invoke({})).toMatchObject({
      failed: 0,
      autoTopUps: expect.any(Object),
      installWatch: expect.any(Object),
      // The first run of this table's cursor: it reads the Stripe secret, lists and books, writes STRIPE#EVENTS.
      stripeEvents: { listed: 1, booked: 1, failed: 0, unreadable: 0 },
    });
    const invoice = await call('billing', 'GET', `/v1/invoices/${lost.invoiceId}`, { token: customerKey });
    expect(invoice.statusCode, invoice.body).toBe(200);
    expect(json(invoice).status).toBe('paid');
  });

  it('webhooks: the dispatcher runs', async () => {
    const summary = await (await fn('webhooks')).lambda.invoke<Record<string, number>>({});
    expect(Object.values(summary).length).toBeGreaterThan(0);
    for (const count of Object.values(summary)) expect(count).toEqual(expect.any(Number));
  });

  it('billing, payments, webhooks, mail: a paid top-up queues its receipt; the sender sends it through SES as raw MIME', async () => {
    const { invoiceId, session } = await paidCheckout(1200);
    expect(json(await deliverStripeEvent('checkout.session.completed', session)).outcome).toBe('credited');
    const invoice = json(await call('billing', 'GET', `/v1/invoices/${invoiceId}`, { token: customerKey }));
    // The dispatcher's fan-out queues the mail (it has MAIL_FROM in an app with the mail stack).
    await (await fn('webhooks')).lambda.invoke({});
    const before = ses.sent.length;
    const mail = await fn('mail');
    const summary = await mail.lambda.invoke<Record<string, number>>({});
    expect(summary, mail.lambda.log()).toMatchObject({ retrying: 0, failed: 0 });
    expect(summary.sent).toBeGreaterThan(0);
    expect(ses.sent.length - before).toBe(summary.sent);
    // Every message the file's events called for went out; the receipt of this top-up once.
    const parsed = await Promise.all(ses.sent.map(async (sent) => ({ sent, message: await simpleParser(sent.raw) })));
    const receipts = parsed.filter((p) => p.message.subject === `Receipt for your top-up: invoice ${invoice.number}`);
    expect(receipts).toHaveLength(1);
    const { sent, message } = receipts[0]!;
    expect(sent).toMatchObject({ from: MAIL_FROM, to: [CUSTOMER_EMAIL], configurationSet: mailConfigurationSet() });
    expect([message.to].flat().flatMap((a) => a!.value.map((v) => v.address))).toEqual([CUSTOMER_EMAIL]);
    expect(message.from!.value.map((v) => v.address)).toEqual([MAIL_FROM]);
    expect(message.text).toContain(invoice.number);
    expect(message.html).toEqual(expect.stringContaining(invoice.number));
    expect(message.attachments.map((a) => [a.filename, a.contentType])).toEqual([[`${invoice.number}.pdf`, 'application/pdf']]);
    expect((await pdfText(new Uint8Array(message.attachments[0]!.content))).text).toContain(invoice.number);
    // Sent once: a second run finds nothing due.
    expect(await mail.lambda.invoke<Record<string, number>>({})).toMatchObject({ sent: 0 });
    expect(ses.sent.length - before).toBe(summary.sent);
  }, 120_000);

  it('mail-bounces: an SES bounce notification through SNS puts the address on the suppression list', async () => {
    const notification = {
      eventType: 'Bounce',
      bounce: { bounceType: 'Permanent', bounceSubType: 'General', bouncedRecipients: [{ emailAddress: 'Gone@Bounced.example' }] },
      mail: { timestamp: new Date().toISOString(), source: MAIL_FROM, destination: ['Gone@Bounced.example'] },
    };
    // The event Lambda gets from an SNS subscription.
    const event = {
      Records: [
        {
          EventSource: 'aws:sns',
          EventVersion: '1.0',
          EventSubscriptionArn: `arn:aws:sns:${TEST_REGION}:${TEST_ACCOUNT}:mail-notifications:1`,
          Sns: {
            Type: 'Notification',
            MessageId: 'sns-bounce-1',
            TopicArn: `arn:aws:sns:${TEST_REGION}:${TEST_ACCOUNT}:mail-notifications`,
            Message: JSON.stringify(notification),
            Timestamp: new Date().toISOString(),
          },
        },
      ],
    };
    const bounces = (await fn('mail-bounces')).lambda;
    expect(await bounces.invoke(event)).toEqual({ suppressed: 1 });
    expect(await mailSuppression('gone@bounced.example')).toMatchObject({ email: 'gone@bounced.example', reason: 'bounce' });
    // SNS delivers at least once: the same notification again adds nothing.
    expect(await bounces.invoke(event)).toEqual({ suppressed: 0 });
  });
});

/** The configuration set's name, as the mail stack's template gives it. */
function mailConfigurationSet(): string {
  const template = synth.templates.get(synth.built.mailStack!.stackName)!;
  const set = Object.values(template.Resources).find((r) => r.Type === 'AWS::SES::ConfigurationSet')!;
  return String(set.Properties.Name);
}

describe('least privilege, as called: every AWS call a function made is allowed by its role', () => {
  /** The calls of each function that its role's policy does not allow. */
  const missing = (statementsOf: (name: string, r: Running) => Statement[]) =>
    [...running].flatMap(([name, r]) => {
      const statements = statementsOf(name, r);
      return [...new Set(r.recorder.calls.map((c) => `${c.action} ${c.resource}`))]
        .filter((c) => !allows(statements, c.split(' ')[0]!, c.split(' ')[1]!, r.stack.stackName, resolver))
        .map((c) => `${name}: ${c}`);
    });
  const statementsOf = (_name: string, r: Running) => roleStatements(synth.templates.get(r.stack.stackName)!, r.roleId);

  it('ran every function and recorded their calls', () => {
    expect([...running.keys()].sort()).toEqual(
      functionsOf(synth)
        .map((f) => f.name)
        .sort(),
    );
    for (const [name, r] of running) expect(r.recorder.calls.length, name).toBeGreaterThan(0);
    // The calls that need more than the table: the panel keys, the cursor key, the Stripe secret, the queue.
    const all = [...running.values()].flatMap((r) => r.recorder.calls.map((c) => c.action));
    for (const action of [
      'secretsmanager:CreateSecret',
      'secretsmanager:GetSecretValue',
      'secretsmanager:DeleteSecret',
      'secretsmanager:RestoreSecret',
      'secretsmanager:PutSecretValue',
      'sqs:SendMessage',
      's3:PutObject',
      'ses:SendEmail',
      'route53:ChangeResourceRecordSets',
      'dynamodb:Query',
    ])
      expect(all).toContain(action);
    // The Stripe secret, read by each function that calls Stripe here (the refund, the health view, the reconciliation).
    const stripeSecret = secretArnOf(STRIPE_SECRET_NAME);
    for (const name of ['admin', 'billing', 'payments', 'billing-repairs'])
      expect(running.get(name)!.recorder.calls, name).toContainEqual({ action: 'secretsmanager:GetSecretValue', resource: stripeSecret });
  });

  it('finds no call outside the synthesized policies', () => {
    expect(missing(statementsOf)).toEqual([]);
  });

  it('is live: the Servers role without its Route 53 grant is reported; the grant holds the hosted zone of the context only (control)', () => {
    const withoutRoute53 = (name: string, r: Running) =>
      statementsOf(name, r).filter((s) => ![s.Action].flat().some((a) => String(a).startsWith('route53:')));
    const zone = `arn:aws:route53:::hostedzone/${DNS_HOSTED_ZONE_ID}`;
    expect(missing(withoutRoute53)).toEqual(expect.arrayContaining([`servers: route53:ChangeResourceRecordSets ${zone}`]));
    const servers = running.get('servers')!;
    const serversAllow = (action: string, resource: string) =>
      allows(statementsOf('servers', servers), action, resource, servers.stack.stackName, resolver);
    expect(serversAllow('route53:ChangeResourceRecordSets', zone)).toBe(true);
    expect(serversAllow('route53:ChangeResourceRecordSets', 'arn:aws:route53:::hostedzone/ZOTHERZONE')).toBe(false);
    expect(serversAllow('route53:DeleteHostedZone', zone)).toBe(false);
    // Functions that never change a server's records get no Route 53 grant.
    const account = running.get('account')!;
    expect(allows(statementsOf('account', account), 'route53:ChangeResourceRecordSets', zone, account.stack.stackName, resolver)).toBe(
      false,
    );
  });

  it('is live: a role without its Secrets Manager grants is reported (control)', () => {
    const withoutSecrets = (name: string, r: Running) =>
      statementsOf(name, r).filter((s) => ![s.Action].flat().some((a) => String(a).startsWith('secretsmanager:')));
    expect(missing(withoutSecrets)).toEqual(expect.arrayContaining([expect.stringMatching(/^admin-panels: secretsmanager:CreateSecret /)]));
  });

  it("is live: the Admin role without its bucket grant is reported; the grant holds brand/ of the dashboard's bucket only (control)", () => {
    const withoutBucket = (name: string, r: Running) =>
      statementsOf(name, r).filter((s) => name !== 'admin' || ![s.Action].flat().includes('s3:PutObject'));
    const logoPuts = running.get('admin')!.recorder.calls.filter((c) => c.action === 's3:PutObject');
    expect(logoPuts).toHaveLength(1);
    expect(missing(withoutBucket)).toEqual([`admin: s3:PutObject ${logoPuts[0]!.resource}`]);
    const admin = running.get('admin')!;
    const adminAllows = (resource: string) =>
      allows(statementsOf('admin', admin), 's3:PutObject', resource, admin.stack.stackName, resolver);
    expect(adminAllows(`arn:aws:s3:::${DASHBOARD_BUCKET}/brand/logo-0123456789abcdef.png`)).toBe(true);
    expect(adminAllows(`arn:aws:s3:::${DASHBOARD_BUCKET}/index.html`)).toBe(false);
    expect(adminAllows(`arn:aws:s3:::${DASHBOARD_BUCKET}/assets/brand/logo.png`)).toBe(false);
    expect(adminAllows(`arn:aws:s3:::another-bucket/brand/logo-0123456789abcdef.png`)).toBe(false);
    // No other function may put anything in the bucket.
    for (const [name, r] of running)
      if (name !== 'admin')
        expect(
          allows(statementsOf(name, r), 's3:PutObject', `arn:aws:s3:::${DASHBOARD_BUCKET}/brand/x.png`, r.stack.stackName, resolver),
          name,
        ).toBe(false);
  });

  it("is live: only the mail sender's role may send, from its identity in its configuration set; without that grant its sends are reported (control)", () => {
    const sender = running.get('mail')!;
    const arn = (resource: string) => `arn:aws:ses:${TEST_REGION}:${TEST_ACCOUNT}:${resource}`;
    const sends = [`identity/${MAIL_DOMAIN}`, `configuration-set/${mailConfigurationSet()}`].map(arn);
    expect(
      [...new Set(sender.recorder.calls.filter((c) => c.action.startsWith('ses:')).map((c) => `${c.action} ${c.resource}`))].sort(),
    ).toEqual(sends.map((resource) => `ses:SendEmail ${resource}`).sort());
    const withoutSend = (name: string, r: Running) =>
      statementsOf(name, r).filter((s) => name !== 'mail' || ![s.Action].flat().some((a) => String(a).startsWith('ses:')));
    expect(missing(withoutSend).sort()).toEqual(sends.map((resource) => `mail: ses:SendEmail ${resource}`).sort());
    const senderAllows = (resource: string) =>
      allows(statementsOf('mail', sender), 'ses:SendEmail', resource, sender.stack.stackName, resolver);
    expect(senderAllows(arn('identity/other.example'))).toBe(false);
    expect(senderAllows(arn('configuration-set/another-set'))).toBe(false);
    // The From condition (allows() does not evaluate conditions): the address every send used.
    const grant = statementsOf('mail', sender).find((s) => [s.Action].flat().includes('ses:SendEmail'))!;
    expect(grant.Condition).toEqual({ StringLike: { 'ses:FromAddress': [MAIL_FROM] } });
    expect(new Set(ses.sent.map((m) => m.from))).toEqual(new Set([MAIL_FROM]));
    // No other function may send.
    for (const [name, r] of running)
      if (name !== 'mail')
        for (const resource of sends)
          expect(allows(statementsOf(name, r), 'ses:SendEmail', resource, r.stack.stackName, resolver), name).toBe(false);
  });

  it('is live: the Admin role without its Stripe secret grant, or the AdminPanels role without RestoreSecret, is reported (control)', () => {
    /** One role with `edit` applied to each of its statements (the other roles as synthesized). */
    const roleWith = (role: string, edit: (s: Statement) => Statement) => (name: string, r: Running) =>
      statementsOf(name, r).map((s) => (name === role ? edit(s) : s));
    const adminWith = (edit: (s: Statement) => Statement) => roleWith('admin', edit);
    // CDK merges the Stripe secret into one statement with the cursor secret: only its resource goes.
    const withoutStripeRead = adminWith((s) => ({
      ...s,
      Resource: [s.Resource].flat().filter((res) => !JSON.stringify(res).includes(STRIPE_SECRET_NAME)),
    }));
    const withoutRestore = roleWith('admin-panels', (s) => ({
      ...s,
      Action: [s.Action].flat().filter((a) => a !== 'secretsmanager:RestoreSecret'),
    }));
    expect(missing(withoutStripeRead)).toEqual([`admin: secretsmanager:GetSecretValue ${secretArnOf(STRIPE_SECRET_NAME)}`]);
    expect(missing(withoutRestore)).toEqual([
      `admin-panels: secretsmanager:RestoreSecret ${secretArnOf(`control-plane/instances/${instanceId}`)}`,
    ]);
  });
});
