import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Stack } from 'aws-cdk-lib';
import type { APIGatewayProxyStructuredResultV2, SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleDir } from '../../infra/bundle.ts';
import { ensureTable } from '../../dev/dynamodb.ts';
import { startPanelSim, type PanelSim } from '../../dev/panel-sim/index.ts';
import { ensureAccountForSubject } from '../../shared/accounts/index.ts';
import { createApiKey } from '../../shared/api-keys/index.ts';
import { scopesOfAccount } from '../../shared/api/scopes.ts';
import { openApiDocument } from '../../shared/openapi/document.ts';
import { ASSETS_DIR, DOCUMENT_FILE, SWAGGER_UI_FILES } from '../../shared/openapi/bundle-files.ts';
import { bundlesOfThisRun, withBuildLock } from '../helpers/build-lock.ts';
import { startFakeSecretsManager, type FakeSecretsManager } from '../helpers/fake-secrets-manager.ts';
import { allows, type Resolver, resolveValue, roleStatements, type Statement } from '../helpers/iam.ts';
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
import { signedStripeEvent } from '../helpers/stripe-events.ts';
import { functionsOf, removeSyntheses, synthesize, type Synth, TEST_ACCOUNT, TEST_REGION } from '../helpers/synth.ts';

/**
 * Every function as deployed: its built bundle copied to a folder with no node_modules above it,
 * loaded by path in a Node process of its own with the environment of its synthesized
 * AWS::Lambda::Function, and driven with the events API Gateway, EventBridge and SQS send, against
 * DynamoDB Local, the panel simulator and a Secrets Manager stand-in. Every AWS call a function
 * makes is recorded on its way (tests/helpers/lambda-bundle.ts, startAwsRecorder) and checked
 * against that function's role in the template: a call its policy does not allow fails the run.
 */
const ADMIN_EMAIL = 'admin@localhost';
const STRIPE_SECRET_NAME = 'control-plane/stripe';
const WEBHOOK_SECRET = 'whsec_bundle_test';

let synth: Synth;
let root: string;
let sm: FakeSecretsManager;
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
function physical(_stack: string, id: string, type: string): { ref: string; arn: string } | undefined {
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
  // Configuration only (the OIDC issuer and audiences): the tests sign in with API keys.
  if (type === 'AWS::Cognito::UserPool') return { ref: `${region}_${id}`, arn: `arn:aws:cognito-idp:${region}:${account}:userpool/${id}` };
  if (type === 'AWS::Cognito::UserPoolClient') return { ref: `client-${id}`, arn: '' };
  return undefined;
}

beforeAll(async () => {
  await bundlesOfThisRun();
  root = mkdtempSync(join(tmpdir(), 'lambda-tasks-'));
  await withBuildLock(async () => {
    synth = synthesize({ stripeSecretName: STRIPE_SECRET_NAME, alarmEmail: 'ops@example.com', adminEmails: ADMIN_EMAIL });
    // Copied under the lock: no other file's build empties dist/functions meanwhile.
    for (const group of new Set(functionsOf(synth).map((f) => bundleOf(f.name)))) copyBundle(bundleDir(group), join(root, group));
  });
  resolver = { templates: synth.templates, region: TEST_REGION, account: TEST_ACCOUNT, physical };

  await ensureTable(process.env.DYNAMODB_ENDPOINT!, process.env.TABLE_NAME!);
  sm = await startFakeSecretsManager();
  // The stack's own secrets (the cursor key), under the name their ARN stands for (`physical`).
  for (const t of synth.templates.values())
    for (const [id, r] of Object.entries(t.Resources)) if (r.Type === 'AWS::SecretsManager::Secret') sm.secrets.set(id, `value of ${id}`);
  sim = await startPanelSim({ seed: 'default', installMs: 50 });
  // The accounts and keys, written as a sign-in and POST /v1/keys would.
  adminKey = await keyFor(ADMIN_EMAIL, true);
  customerKey = await keyFor('bundle-customer@example.com', false);
}, 600_000);

afterAll(async () => {
  for (const r of running.values()) {
    await r.lambda.stop();
    await r.recorder.close();
  }
  await sim?.close();
  await sm?.close();
  if (root) rmSync(root, { recursive: true, force: true });
  removeSyntheses();
});

async function keyFor(email: string, admin: boolean): Promise<string> {
  const account = await ensureAccountForSubject('bundle-test', `bundle|${email}`, email);
  if (!admin) customerId = account.accountId;
  const principal = { accountId: account.accountId, email, scopes: new Set(scopesOfAccount(admin)) };
  return (await createApiKey(principal, { name: `${email} (bundle test)` })).secret;
}

/** The bundle a function runs (the billing functions share the billing-pass bundle). */
const bundleOf = (name: string): string => (name.startsWith('billing-') && name !== 'billing' ? 'billing-pass' : name);

/** Starts a function as Lambda would: its bundle, the handler and environment of its template resource. */
async function fn(name: string): Promise<Running> {
  const existing = running.get(name);
  if (existing) return existing;
  const entry = functionsOf(synth).find((f) => f.name === name);
  if (!entry) throw new Error(`no function ${name}`);
  const stack = entry.stack;
  const template = synth.templates.get(stack.stackName)!;
  const props = template.Resources[stack.getLogicalId(entry.fn.fn.node.defaultChild as never)]!.Properties;
  const recorder = await startAwsRecorder({ dynamodb: process.env.DYNAMODB_ENDPOINT!, secretsManager: sm.url });
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
    LOG_LEVEL: 'error',
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

describe('each function bundle, loaded as Lambda loads it', () => {
  it('is copied where no node_modules is above it, and holds what it serves', () => {
    expect(nodeModulesAbove(root)).toEqual([]);
    expect(JSON.parse(readFileSync(join(root, 'public', DOCUMENT_FILE), 'utf8')).openapi).toBe('3.1.0');
    for (const file of SWAGGER_UI_FILES) expect(readFileSync(join(root, 'public', ASSETS_DIR, file)).length).toBeGreaterThan(1000);
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

  it('admin: registers the panel (its keys into Secrets Manager) and credits the customer', async () => {
    const created = await call('admin', 'POST', '/v1/admin/instances', {
      token: adminKey,
      body: { name: 'Simulator', baseUrl: sim.url, appApiKey: sim.appKey, clientApiKey: sim.clientKey },
    });
    expect(created.statusCode, created.body).toBe(201);
    expect([...sm.secrets.keys()].filter((k) => k.startsWith('control-plane/instances/'))).not.toEqual([]);
    const credited = await call('admin', 'POST', `/v1/admin/users/${customerId}/credits`, {
      token: adminKey,
      body: { amountCents: 5000, note: 'bundle test' },
    });
    expect(credited.statusCode, credited.body).toBe(200);
    const users = await call('admin', 'GET', '/v1/admin/users?limit=1', { token: adminKey });
    expect(users.statusCode, users.body).toBe(200);
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

  it('servers: deploys a server on the panel and lists it', async () => {
    const created = await call('servers', 'POST', '/v1/servers', {
      token: customerKey,
      body: { name: 'bundle server', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
    });
    expect(created.statusCode, created.body).toBe(201);
    const list = await call('servers', 'GET', '/v1/servers', { token: customerKey });
    expect(list.statusCode, list.body).toBe(200);
    expect(json(list).data.map((s: { id: string }) => s.id)).toContain(json(created).id);
  });

  it('billing: its configuration and the invoice list', async () => {
    const config = await call('billing', 'GET', '/v1/billing/config', { token: customerKey });
    expect(config.statusCode, config.body).toBe(200);
    const invoices = await call('billing', 'GET', '/v1/invoices', { token: customerKey });
    expect(invoices.statusCode, invoices.body).toBe(200);
  });

  it('payments: a signed Stripe webhook, its secret read from Secrets Manager', async () => {
    sm.secrets.set(STRIPE_SECRET_NAME, JSON.stringify({ secretKey: 'sk_test_bundle', webhookSecret: WEBHOOK_SECRET }));
    const event = signedStripeEvent('customer.created', { id: 'cus_bundle', object: 'customer' }, { secret: WEBHOOK_SECRET });
    const payments = (await fn('payments')).lambda;
    const res = await payments.invoke<Answer>(
      apiEvent('POST', '/v1/webhooks/stripe', {
        headers: { 'content-type': 'application/json', 'stripe-signature': event.signature },
        body: event.body,
      }),
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(json(res)).toMatchObject({ received: true });
  });

  it('billing pass: the scheduler queues the shards, the worker charges them, the repairs run', async () => {
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
    });
  });

  it('webhooks: the dispatcher runs', async () => {
    const summary = await (await fn('webhooks')).lambda.invoke<Record<string, number>>({});
    expect(Object.values(summary).length).toBeGreaterThan(0);
    for (const count of Object.values(summary)) expect(count).toEqual(expect.any(Number));
  });
});

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
    for (const action of ['secretsmanager:CreateSecret', 'secretsmanager:GetSecretValue', 'sqs:SendMessage', 'dynamodb:Query'])
      expect(all).toContain(action);
  });

  it('finds no call outside the synthesized policies', () => {
    expect(missing(statementsOf)).toEqual([]);
  });

  it('is live: a role without its Secrets Manager grants is reported (control)', () => {
    const withoutSecrets = (name: string, r: Running) =>
      statementsOf(name, r).filter((s) => ![s.Action].flat().some((a) => String(a).startsWith('secretsmanager:')));
    expect(missing(withoutSecrets)).toEqual(expect.arrayContaining([expect.stringMatching(/^admin: secretsmanager:CreateSecret /)]));
  });
});
