import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { App, Stack, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { AwsSolutionsChecks } from 'cdk-nag';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Metafile } from 'esbuild';
import { bundleDir, chunkSizes, handlerGroups, ROOT, type BundleResult } from '../../infra/bundle.ts';
import { startFakeSecretsManager } from '../helpers/fake-secrets-manager.ts';
import { bundlesOfThisRun, withBuildLock } from '../helpers/build-lock.ts';
import { buildApp, type BuiltApp } from '../../infra/app.ts';
import type { AppFunction } from '../../infra/constructs/app-function.ts';
import { GROUPS, routeEntries, toTemplatePath } from '../../shared/api/routes.ts';
import { KEY_SENTINEL, leadingKeyPatterns, PARTITIONS, TABLE_ACCESS, type TableAccess } from '../../shared/db/key-prefixes.ts';
import { keys } from '../../shared/db/keys.ts';
import { createTableInput, TABLE } from '../../shared/db/table.ts';
import { readConfig } from '../../shared/config/env.ts';
import { FONTS_DIR, INVOICE_FONT_FILES } from '../../shared/invoices/fonts.ts';
import { AUTHORIZER_CACHE_SECONDS, CURSOR_KEY_VERIFIERS, cursorSigningGroups, isAdminRoutePath } from '../../infra/stacks/api-stack.ts';
import { BATCH_READ_ACTIONS, READ_ACTIONS, WRITE_ACTIONS } from '../../infra/constructs/app-function.ts';
import { logger } from '../../shared/observability/logger.ts';

/**
 * The CDK app against the project's sources of truth: the table from shared/db/table.ts, the API
 * routes from the route table, the house defaults of every function, cdk-nag, and the bundles.
 * Bundles once (about 2 s), then builds and synthesizes the app once into a temporary directory.
 */
const MAX_BUNDLE_BYTES = 1.5 * 1024 * 1024;
const execFileAsync = promisify(execFile);

type Resource = { Type: string; Properties: Record<string, any>; DeletionPolicy?: string; UpdateReplacePolicy?: string };

let bundles: BundleResult[];
let built: BuiltApp;
let outdir: string;
let dataTemplate: Template;
let apiTemplate: Template;
let billingTemplate: Template;
let webhooksTemplate: Template;
/** What synthesis threw, if anything (asserted by the cdk-nag test, so the other tests still report). */
let synthError: unknown;

/** Groups that get a function in AWS: a handler exists, the group is in the route table, not `dev`. */
let deployed: string[];

/** The main app is built as an operator would deploy it: with the Stripe secret and an alarm address. */
const STRIPE_SECRET_NAME = 'control-plane/stripe';
const ALARM_EMAIL = 'ops@example.com';

beforeAll(async () => {
  // The dashboard (web/dist) is deployed by ApiStack too. The lock keeps the other infra test
  // file's rebuild of the same folders away from this synthesis (tests/helpers/build-lock.ts).
  bundles = await bundlesOfThisRun();
  await withBuildLock(async () => {
    outdir = mkdtempSync(join(tmpdir(), 'cdk-test-'));
    built = buildApp({
      outdir,
      account: '123456789012',
      region: 'eu-west-1',
      context: { stripeSecretName: STRIPE_SECRET_NAME, alarmEmail: ALARM_EMAIL },
    });
    // Synthesis runs the cdk-nag plugin (Validations): any unacknowledged finding throws here.
    try {
      built.app.synth();
    } catch (err) {
      synthError = err;
    }
  });
  // The templates synthesis wrote (they are written before validation runs, so a nag failure
  // still leaves the other tests something to check). Template.fromStack would re-run the plugin.
  const written = (stack: Stack) => Template.fromJSON(JSON.parse(readFileSync(join(outdir, stack.templateFile), 'utf8')));
  dataTemplate = written(built.dataStack!);
  apiTemplate = written(built.apiStack);
  billingTemplate = written(built.billingStack);
  webhooksTemplate = written(built.webhooksStack);
  deployed = handlerGroups().filter((g) => (GROUPS as readonly string[]).includes(g) && g !== 'dev');
}, 600_000);

afterAll(() => {
  if (outdir) rmSync(outdir, { recursive: true, force: true });
});

const resourcesOf = (template: Template, type: string): [string, Resource][] =>
  Object.entries(template.findResources(type)) as [string, Resource][];

/**
 * The API stack's resources without CDK's BucketDeployment function, its role and policy (it copies
 * the dashboard into its bucket at deploy time; tests/infra/dashboard.test.ts covers it).
 */
const isDashboardDeployment = ([id, r]: [string, Resource]): boolean =>
  id.startsWith('CustomCDKBucketDeployment') || JSON.stringify(r.Properties.Roles ?? []).includes('CustomCDKBucketDeployment');
const ownResourcesOf = (template: Template, type: string): [string, Resource][] =>
  resourcesOf(template, type).filter((entry) => !isDashboardDeployment(entry));

const logicalId = (stack: Stack, construct: { node: { defaultChild?: unknown } }): string =>
  stack.getLogicalId(construct.node.defaultChild as CfnElement);

type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: Record<string, Record<string, unknown>> };

/** Every function of the app, by a readable name, with its stack and template. */
const allFunctions = (): { name: string; stack: Stack; template: Template; fn: AppFunction }[] => [
  ...[...built.apiStack.functions].map(([group, fn]) => ({ name: group, stack: built.apiStack as Stack, template: apiTemplate, fn })),
  { name: 'billing-scheduler', stack: built.billingStack, template: billingTemplate, fn: built.billingStack.scheduler },
  { name: 'billing-worker', stack: built.billingStack, template: billingTemplate, fn: built.billingStack.worker },
  { name: 'billing-repairs', stack: built.billingStack, template: billingTemplate, fn: built.billingStack.repairs },
  { name: 'webhooks', stack: built.webhooksStack, template: webhooksTemplate, fn: built.webhooksStack.dispatcher },
  { name: 'authorizer', stack: built.apiStack, template: apiTemplate, fn: built.apiStack.authorizerFunction },
];

/** The statements of the role policy of one function (one policy per role). */
const statementsOf = (stack: Stack, template: Template, fn: AppFunction): Statement[] => {
  const roleId = logicalId(stack, fn.role);
  const policies = resourcesOf(template, 'AWS::IAM::Policy').filter(([, p]) => JSON.stringify(p.Properties.Roles).includes(`"${roleId}"`));
  expect(policies, `policy of ${roleId}`).toHaveLength(1);
  return policies[0]![1].Properties.PolicyDocument.Statement as Statement[];
};

const actionsOf = (s: Statement): string[] => (Array.isArray(s.Action) ? s.Action : [s.Action]);

/** The properties of one function's AWS::Lambda::Function. */
const functionProps = (stack: Stack, template: Template, fn: AppFunction): Record<string, any> => {
  const found = resourcesOf(template, 'AWS::Lambda::Function').find(([id]) => id === logicalId(stack, fn.fn));
  expect(found, `function ${logicalId(stack, fn.fn)}`).toBeDefined();
  return found![1].Properties;
};

describe('data stack: the table is the shared schema', () => {
  it('has exactly one table, with the key schema, attributes, GSIs and TTL of shared/db/table.ts', () => {
    const tables = resourcesOf(dataTemplate, 'AWS::DynamoDB::Table');
    expect(tables).toHaveLength(1);
    const props = tables[0]![1].Properties;
    const expected = createTableInput('unused');

    expect(props.KeySchema).toEqual(expected.KeySchema);
    const byName = (a: { AttributeName: string }, b: { AttributeName: string }) => a.AttributeName.localeCompare(b.AttributeName);
    expect([...props.AttributeDefinitions].sort(byName)).toEqual([...expected.AttributeDefinitions].sort(byName));
    expect(props.BillingMode).toBe('PAY_PER_REQUEST');

    const indexes = props.GlobalSecondaryIndexes as { IndexName: string }[];
    expect(indexes.map((i) => i.IndexName).sort()).toEqual(TABLE.indexes.map((i) => i.name).sort());
    for (const index of expected.GlobalSecondaryIndexes) {
      expect(indexes.find((i) => i.IndexName === index.IndexName)).toEqual(index);
    }

    expect(props.TimeToLiveSpecification).toEqual({ AttributeName: TABLE.ttlAttribute, Enabled: true });
  });

  it('is protected: point-in-time recovery, deletion protection, retained, stack termination protection', () => {
    const [, table] = resourcesOf(dataTemplate, 'AWS::DynamoDB::Table')[0]!;
    expect(table.Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    expect(table.Properties.DeletionProtectionEnabled).toBe(true);
    expect(table.DeletionPolicy).toBe('Retain');
    expect(table.UpdateReplacePolicy).toBe('Retain');
    expect(built.dataStack!.terminationProtection).toBe(true);
  });
});

describe('api stack: routes come from the route table', () => {
  /** Route key -> logical id of the function its integration invokes. */
  const routeTargets = (): Map<string, string> => {
    const integrations = new Map(resourcesOf(apiTemplate, 'AWS::ApiGatewayV2::Integration'));
    const targets = new Map<string, string>();
    for (const [, route] of resourcesOf(apiTemplate, 'AWS::ApiGatewayV2::Route')) {
      const join = route.Properties.Target?.['Fn::Join'] as [string, [string, { Ref: string }]] | undefined;
      expect(join?.[1][0]).toBe('integrations/');
      const integration = integrations.get(join![1][1].Ref);
      expect(integration, `integration of ${route.Properties.RouteKey}`).toBeDefined();
      expect(integration!.Properties.IntegrationType).toBe('AWS_PROXY');
      expect(integration!.Properties.PayloadFormatVersion).toBe('2.0');
      const uri = integration!.Properties.IntegrationUri as { 'Fn::GetAtt': [string, string] };
      expect(uri['Fn::GetAtt'][1]).toBe('Arn');
      targets.set(route.Properties.RouteKey, uri['Fn::GetAtt'][0]);
    }
    return targets;
  };

  const functionIdOf = (group: string): string => {
    const fn = built.apiStack.functions.get(group as never);
    expect(fn, `function of group ${group}`).toBeDefined();
    return logicalId(built.apiStack, fn!.fn);
  };

  it('deploys a function for every route group but dev (public, account, catalog, servers, server-tools, server-history, billing, payments, admin, admin-panels, admin-storefront)', () => {
    expect([...deployed].sort()).toEqual(GROUPS.filter((g) => g !== 'dev').sort());
    expect([...built.apiStack.functions.keys()].sort()).toEqual([...deployed].sort());
  });

  it('gives the billing pass bundle no API function and no route (it is not a route group)', () => {
    expect(handlerGroups()).toContain('billing-pass');
    expect(deployed).not.toContain('billing-pass');
    const codeOf = (fn: AppFunction, stack: Stack, template: Template) => JSON.stringify(functionProps(stack, template, fn).Code);
    const billingCode = codeOf(built.billingStack.worker, built.billingStack, billingTemplate);
    for (const fn of built.apiStack.functions.values()) expect(codeOf(fn, built.apiStack, apiTemplate)).not.toBe(billingCode);
    // The route groups and the admin authorizer.
    expect(ownResourcesOf(apiTemplate, 'AWS::Lambda::Function').map(([, f]) => f.Properties.Handler)).toEqual(
      [...deployed, 'authorizer'].map(() => 'index.handler'),
    );
  });

  it("has every non-dev route of a deployed group, integrated with that group's function", () => {
    const targets = routeTargets();
    const expected = routeEntries().filter(([, def]) => def.group !== 'dev' && deployed.includes(def.group));
    expect(expected.length).toBeGreaterThan(10);
    for (const [id, def] of expected) {
      const key = `${def.method} ${toTemplatePath(def.path)}`;
      expect(targets.get(key), `route ${id} (${key})`).toBe(functionIdOf(def.group));
    }
    // Nothing else besides $default: no stray or duplicated routes.
    expect(targets.size).toBe(expected.length + 1);
  });

  it('routes nothing to groups without a handler, and nothing under /dev', () => {
    const keys = [...routeTargets().keys()];
    for (const [, def] of routeEntries().filter(([, d]) => !deployed.includes(d.group))) {
      expect(keys).not.toContain(`${def.method} ${toTemplatePath(def.path)}`);
    }
    expect(keys.filter((k) => k.includes('/dev'))).toEqual([]);
    expect(routeEntries().some(([, d]) => d.group === 'dev')).toBe(true); // the check above is not vacuous
  });

  it('sends $default to the public function (it answers 404/405)', () => {
    expect(routeTargets().get('$default')).toBe(functionIdOf('public'));
  });

  it('routes the Stripe webhook to the payments function and checkout to the billing function', () => {
    const targets = routeTargets();
    expect(targets.get('POST /v1/webhooks/stripe')).toBe(functionIdOf('payments'));
    expect(targets.get('POST /v1/billing/checkout')).toBe(functionIdOf('billing'));
    expect(targets.get('POST /v1/servers')).toBe(functionIdOf('servers'));
  });

  it("routes a server's startup, files and backups to the server-tools function, the server itself to servers", () => {
    const targets = routeTargets();
    expect(functionIdOf('server-tools')).not.toBe(functionIdOf('servers'));
    for (const key of ['GET /v1/servers/{id}', 'PATCH /v1/servers/{id}', 'DELETE /v1/servers/{id}', 'POST /v1/servers/{id}/power'])
      expect(targets.get(key), key).toBe(functionIdOf('servers'));
    for (const key of [
      'GET /v1/servers/{id}/startup',
      'PUT /v1/servers/{id}/startup',
      'GET /v1/servers/{id}/files',
      'POST /v1/servers/{id}/files/write',
      'GET /v1/servers/{id}/backups',
      'DELETE /v1/servers/{id}/backups/{backupId}',
    ])
      expect(targets.get(key), key).toBe(functionIdOf('server-tools'));
  });

  it('has no CORS configuration (API-first: programs, not browsers on other origins)', () => {
    const [, api] = resourcesOf(apiTemplate, 'AWS::ApiGatewayV2::Api')[0]!;
    expect(api.Properties.CorsConfiguration).toBeUndefined();
  });

  it('logs access on the $default stage, with throttling', () => {
    const stages = resourcesOf(apiTemplate, 'AWS::ApiGatewayV2::Stage');
    expect(stages).toHaveLength(1);
    const stage = stages[0]![1].Properties;
    expect(stage.StageName).toBe('$default');
    expect(stage.AutoDeploy).toBe(true);
    expect(stage.AccessLogSettings.DestinationArn).toBeDefined();
    const format = JSON.parse(stage.AccessLogSettings.Format);
    expect(format).toMatchObject({ requestId: '$context.requestId', status: '$context.status', error: '$context.integrationErrorMessage' });
    // Lean on purpose (≈ 125 bytes a line): what traces a request and shows a failure.
    expect(Object.keys(format).sort()).toEqual(['error', 'ip', 'latencyMs', 'method', 'path', 'requestId', 'status']);
    expect(stage.DefaultRouteSettings.ThrottlingRateLimit).toBeGreaterThan(0);
    expect(stage.DefaultRouteSettings.ThrottlingBurstLimit).toBeGreaterThan(0);
  });

  it('outputs the API URL, the user pool id and the client id', () => {
    const outputs = Object.keys(apiTemplate.toJSON().Outputs ?? {});
    expect(outputs).toEqual(expect.arrayContaining(['ApiUrl', 'UserPoolId', 'UserPoolClientId']));
  });
});

describe('api stack: functions carry the house defaults', () => {
  it('every function runs nodejs24.x on arm64 with handler index.handler and the house environment', () => {
    const functions = ownResourcesOf(apiTemplate, 'AWS::Lambda::Function');
    expect(functions).toHaveLength(deployed.length + 1); // + the admin authorizer
    const poolId = logicalId(built.apiStack, built.apiStack.userPool!);
    const clientId = logicalId(built.apiStack, built.apiStack.userPoolClient!);
    for (const [id, fn] of functions) {
      const p = fn.Properties;
      expect(p.Runtime, id).toBe('nodejs24.x');
      expect(p.Architectures, id).toEqual(['arm64']);
      expect(p.Handler, id).toBe('index.handler');
      expect(p.MemorySize, id).toBe(256); // DEFAULT_MEMORY_MB (infra/constructs/app-function.ts)
      expect(p.Timeout, id).toBeGreaterThanOrEqual(10);
      expect(p.Timeout, id).toBeLessThanOrEqual(29);
      expect(p.TracingConfig, id).toEqual({ Mode: 'Active' });
      expect(p.LoggingConfig?.LogGroup?.Ref, id).toBeDefined();
      // No START/END/REPORT line per request (docs/costs.md); warnings and errors stay.
      expect(p.LoggingConfig, id).toMatchObject({ LogFormat: 'JSON', SystemLogLevel: 'WARN', ApplicationLogLevel: 'INFO' });
      const env = p.Environment.Variables as Record<string, unknown>;
      expect(env).toMatchObject({
        STAGE: 'aws',
        NODE_OPTIONS: '--enable-source-maps',
        LOG_LEVEL: 'info',
        ADMIN_EMAILS: '',
        OIDC_TOKEN_USE: 'id',
      });
      for (const name of ['TABLE_NAME', 'OIDC_ISSUER', 'OIDC_JWKS_URL', 'OIDC_AUDIENCE', 'SERVICE_NAME']) {
        expect(env[name], `${id} ${name}`).toBeDefined();
      }
      expect(JSON.stringify(env.OIDC_ISSUER)).toContain('https://cognito-idp.eu-west-1.amazonaws.com/');
      expect(JSON.stringify(env.OIDC_ISSUER)).toContain(poolId);
      // The API client's and the dashboard client's ID tokens (tests/infra/dashboard.test.ts).
      const dashboardClientId = logicalId(built.apiStack, built.apiStack.dashboardClient!);
      expect(env.OIDC_AUDIENCE).toEqual({ 'Fn::Join': ['', [{ Ref: clientId }, ',', { Ref: dashboardClientId }]] });
      // The cursor key is read at run time (CURSOR_SECRET_ARN), never put in the environment.
      expect(env.CURSOR_SECRET, id).toBeUndefined();
    }
  });

  it('keeps each function log group one month and grants table access without wildcards', () => {
    for (const fn of built.apiStack.functions.values()) {
      const group = resourcesOf(apiTemplate, 'AWS::Logs::LogGroup').find(([id]) => id === logicalId(built.apiStack, fn.logGroup));
      expect(group?.[1].Properties.RetentionInDays).toBe(30);
    }
    const policies = ownResourcesOf(apiTemplate, 'AWS::IAM::Policy').map(([, p]) => JSON.stringify(p.Properties.PolicyDocument));
    expect(policies).toHaveLength(deployed.length + 1); // + the admin authorizer
    for (const doc of policies) {
      expect(doc).toContain('dynamodb:PutItem');
      expect(doc).not.toContain('/index/*');
    }
    // Only the admin function (GSI1: users, servers, audit log; GSI2: the admin home's queue counts) and
    // server-history (GSI2: one server's activity, `SERVERLOG#*` only) query an index, named one by one.
    for (const [group, fn] of built.apiStack.functions) {
      const doc = JSON.stringify(statementsOf(built.apiStack, apiTemplate, fn));
      if (group === 'admin') expect(doc).toContain('/index/GSI1');
      else if (group === 'server-history') {
        expect(doc).toContain('/index/GSI2');
        expect(doc).not.toContain('/index/GSI1');
      } else expect(doc, group).not.toContain('/index/');
    }
    expect(resourcesOf(apiTemplate, 'AWS::IAM::Role').map(([, r]) => JSON.stringify(r.Properties))).not.toContain(
      'AWSLambdaBasicExecutionRole',
    );
  });

  it('gives the functions that wait on panels longer timeouts (a server create may take the panel 20 s)', () => {
    const timeoutOf = (group: string) => {
      const fn = built.apiStack.functions.get(group as never)!;
      return resourcesOf(apiTemplate, 'AWS::Lambda::Function').find(([id]) => id === logicalId(built.apiStack, fn.fn))![1].Properties
        .Timeout;
    };
    expect(timeoutOf('servers')).toBe(29);
    expect(timeoutOf('server-tools')).toBe(29);
    expect(timeoutOf('account')).toBe(10);
  });

  it('lets only the admin-panels function write panel keys; panel readers may only read them; others get nothing', () => {
    const docOf = (group: string) => {
      const fn = built.apiStack.functions.get(group as never)!;
      const roleId = logicalId(built.apiStack, fn.role);
      const policy = resourcesOf(apiTemplate, 'AWS::IAM::Policy').find(([, p]) => JSON.stringify(p.Properties.Roles).includes(roleId));
      return JSON.stringify(policy?.[1].Properties.PolicyDocument ?? {});
    };
    // The admin-panels function: exactly the Secrets Manager calls of the panel-key store, RestoreSecret
    // included (keys set again within a deleted secret's recovery window), on the instances' names.
    const panels = built.apiStack.functions.get('admin-panels')!;
    const onPanelKeys = statementsOf(built.apiStack, apiTemplate, panels).filter(
      (s) => s.Effect === 'Allow' && JSON.stringify(s.Resource).includes('secret:control-plane/instances/*'),
    );
    const store = readFileSync(join(ROOT, 'shared', 'secrets', 'aws-store.ts'), 'utf8');
    const called = [...new Set([...store.matchAll(/new sm\.(\w+)Command\(/g)].map((m) => `secretsmanager:${m[1]}`))].sort();
    expect(called).toContain('secretsmanager:RestoreSecret');
    expect(onPanelKeys.flatMap(actionsOf).sort()).toEqual(called);
    // Readers call panels: the catalog and servers, and account (budget change) and payments
    // (top-up) lift a suspension on the panel at once (shared/servers/suspension.ts); admin suspends.
    for (const group of ['admin', 'catalog', 'servers', 'server-tools', 'server-history', 'account', 'payments']) {
      const doc = docOf(group);
      expect(doc, group).toContain('secretsmanager:GetSecretValue');
      expect(doc, group).toContain('secret:control-plane/instances/*');
      expect(doc, group).not.toContain('secretsmanager:PutSecretValue');
      expect(doc, group).not.toContain('secretsmanager:CreateSecret');
    }
    for (const group of ['public', 'billing']) expect(docOf(group), group).not.toContain('control-plane/instances');
  });

  it("lets only the admin function put the brand's logo, under brand/ of the dashboard bucket; no other function touches the bucket", () => {
    const bucketId = logicalId(built.apiStack, built.apiStack.dashboard!.bucket);
    const admin = built.apiStack.functions.get('admin')!;
    const onBucket = statementsOf(built.apiStack, apiTemplate, admin).filter((s) => JSON.stringify(s.Resource).includes(bucketId));
    expect(onBucket).toEqual([
      { Effect: 'Allow', Action: 's3:PutObject', Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId, 'Arn'] }, '/brand/*']] } },
    ]);
    const env = functionProps(built.apiStack, apiTemplate, admin).Environment.Variables;
    expect(env.BRAND_BUCKET).toEqual({ Ref: bucketId });
    expect(JSON.stringify(env.BRAND_BASE_URL)).toContain('DomainName');
    for (const { name, stack, template, fn } of allFunctions().filter((f) => f.fn !== admin)) {
      expect(JSON.stringify(statementsOf(stack, template, fn)), name).not.toContain(bucketId);
      expect(functionProps(stack, template, fn).Environment?.Variables?.BRAND_BUCKET, name).toBeUndefined();
    }
  });

  it('trusts an external issuer instead of Cognito when oidcIssuer and oidcAudience are given', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cdk-test-oidc-'));
    try {
      const external = buildApp({
        outdir: dir,
        region: 'eu-west-1',
        context: {
          oidcIssuer: 'https://login.example.com/',
          oidcAudience: 'control-plane',
          adminEmails: 'ops@example.com, boss@example.com',
        },
      });
      const template = Template.fromStack(external.apiStack);
      template.resourceCountIs('AWS::Cognito::UserPool', 0);
      // No dashboardOidcClientId: the dashboard is not deployed.
      template.resourceCountIs('AWS::CloudFront::Distribution', 0);
      const functions = resourcesOf(template, 'AWS::Lambda::Function');
      expect(functions).toHaveLength(deployed.length + 1); // + the admin authorizer
      for (const [, fn] of functions) {
        expect(fn.Properties.Environment.Variables).toMatchObject({
          // Exactly as configured (Auth0's issuers end in a slash, and so does their tokens' iss).
          OIDC_ISSUER: 'https://login.example.com/',
          OIDC_AUDIENCE: 'control-plane',
          ADMIN_EMAILS: 'ops@example.com,boss@example.com',
        });
        // No guessed key URL: the functions read jwks_uri from the issuer's discovery document.
        expect(fn.Properties.Environment.Variables.OIDC_JWKS_URL).toBeUndefined();
        expect(fn.Properties.Environment.Variables.OIDC_TOKEN_USE).toBeUndefined();
        // No stripeSecretName: payments are off, nothing may read a Stripe secret.
        expect(fn.Properties.Environment.Variables.STRIPE_SECRET_ARN).toBeUndefined();
      }
      for (const [, policy] of resourcesOf(template, 'AWS::IAM::Policy')) {
        expect(JSON.stringify(policy.Properties.PolicyDocument)).not.toContain('control-plane/stripe');
      }
      // No alarmEmail: the topic exists, without subscriptions.
      template.resourceCountIs('AWS::SNS::Topic', 1);
      template.resourceCountIs('AWS::SNS::Subscription', 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses an external issuer that is not an https URL without query or fragment', () => {
    for (const oidcIssuer of [
      'http://login.example.com',
      'login.example.com',
      'https://login.example.com/?tenant=a',
      'https://login.example.com/#x',
    ]) {
      const dir = mkdtempSync(join(tmpdir(), 'cdk-test-oidc-'));
      try {
        expect(
          () => buildApp({ outdir: dir, region: 'eu-west-1', context: { oidcIssuer, oidcAudience: 'control-plane' } }),
          oidcIssuer,
        ).toThrow(/Context oidcIssuer=.*: an https URL without query or fragment/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });
});

describe('billing stack: the hourly pass (rule → scheduler → queue → workers)', () => {
  const id = (construct: { node: { defaultChild?: unknown } }) => logicalId(built.billingStack, construct);
  const arnOf = (construct: { node: { defaultChild?: unknown } }) => ({ 'Fn::GetAtt': [id(construct), 'Arn'] });
  const props = (fn: AppFunction) => functionProps(built.billingStack, billingTemplate, fn);

  it('runs the scheduler from an hourly rule at :03, with retries and a dead-letter queue', () => {
    const rules = resourcesOf(billingTemplate, 'AWS::Events::Rule').filter(([ruleId]) => ruleId === id(built.billingStack.rule));
    expect(rules).toHaveLength(1);
    const rule = rules[0]![1].Properties;
    expect(rule.ScheduleExpression).toBe('cron(3 * * * ? *)');
    expect(rule.State).toBe('ENABLED');
    expect(rule.Targets).toHaveLength(1);
    const target = rule.Targets[0];
    expect(target.Arn).toEqual(arnOf(built.billingStack.scheduler.fn));
    expect(target.DeadLetterConfig).toEqual({ Arn: arnOf(built.billingStack.schedulerDlq) });
    expect(target.RetryPolicy.MaximumRetryAttempts).toBeGreaterThanOrEqual(2);
    expect(target.RetryPolicy.MaximumEventAgeInSeconds).toBeLessThanOrEqual(3600);
    // EventBridge may invoke it, and only from this rule.
    const permissions = resourcesOf(billingTemplate, 'AWS::Lambda::Permission').filter(
      ([, p]) => JSON.stringify(p.Properties.FunctionName) === JSON.stringify(arnOf(built.billingStack.scheduler.fn)),
    );
    expect(permissions.map(([, p]) => p.Properties)).toEqual([
      expect.objectContaining({
        Principal: 'events.amazonaws.com',
        FunctionName: arnOf(built.billingStack.scheduler.fn),
        SourceArn: { 'Fn::GetAtt': [rules[0]![0], 'Arn'] },
      }),
    ]);
  });

  it("sends scheduler runs that still fail after Lambda's async retries to the same dead-letter queue", () => {
    const configs = resourcesOf(billingTemplate, 'AWS::Lambda::EventInvokeConfig');
    expect(configs).toHaveLength(1);
    const config = configs[0]![1].Properties;
    expect(config.FunctionName).toEqual({ Ref: id(built.billingStack.scheduler.fn) });
    expect(config.DestinationConfig.OnFailure.Destination).toEqual(arnOf(built.billingStack.schedulerDlq));
    expect(config.MaximumRetryAttempts).toBe(2);
    // EventBridge may write to that queue (its DLQ), only for this rule.
    const policy = resourcesOf(billingTemplate, 'AWS::SQS::QueuePolicy').find(
      ([, p]) => JSON.stringify(p.Properties.Queues) === JSON.stringify([{ Ref: id(built.billingStack.schedulerDlq) }]),
    );
    const allow = (policy![1].Properties.PolicyDocument.Statement as Statement[]).find((s) => s.Effect === 'Allow')!;
    expect(allow).toMatchObject({ Action: 'sqs:SendMessage', Principal: { Service: 'events.amazonaws.com' } });
    expect(JSON.stringify(allow.Condition)).toContain(id(built.billingStack.rule));
  });

  it('has both billing functions on nodejs24.x/arm64 with handlers index.scheduler and index.worker from the billing-pass bundle', () => {
    const scheduler = props(built.billingStack.scheduler);
    const worker = props(built.billingStack.worker);
    expect(resourcesOf(billingTemplate, 'AWS::Lambda::Function')).toHaveLength(3); // + the repairs (below)
    for (const p of [scheduler, worker]) {
      expect(p.Runtime).toBe('nodejs24.x');
      expect(p.Architectures).toEqual(['arm64']);
      expect(p.TracingConfig).toEqual({ Mode: 'Active' });
      expect(p.Environment.Variables).toMatchObject({
        STAGE: 'aws',
        SECRETS_PREFIX: 'control-plane',
        NODE_OPTIONS: '--enable-source-maps',
      });
      expect(p.Environment.Variables.TABLE_NAME).toBeDefined();
      expect(p.Environment.Variables.CURSOR_SECRET).toBeUndefined();
      expect(p.Environment.Variables.STRIPE_SECRET_ARN).toBeUndefined();
    }
    expect(scheduler.Handler).toBe('index.scheduler');
    expect(worker.Handler).toBe('index.worker');
    expect(scheduler.Timeout).toBeGreaterThanOrEqual(60);
    expect(worker.Timeout).toBe(300);
    expect(worker.MemorySize).toBe(1769);
    // The scheduler queues (BILLING_QUEUE_URL set); the worker must not (it would re-plan the pass).
    expect(scheduler.Environment.Variables.BILLING_QUEUE_URL).toEqual({ Ref: id(built.billingStack.queue) });
    expect(worker.Environment.Variables.BILLING_QUEUE_URL).toBeUndefined();
    // The scheduler signs cursors (the reconciler pages through every server): it gets the key's ARN.
    expect(scheduler.Environment.Variables.CURSOR_SECRET_ARN).toBeDefined();
    expect(worker.Environment.Variables.CURSOR_SECRET_ARN).toBeUndefined();

    // The code is the billing-pass bundle, byte for byte (the staged asset is named after its hash).
    const expected = readFileSync(join(bundleDir('billing-pass'), 'index.mjs'));
    for (const p of [scheduler, worker]) {
      const hash = String(p.Code.S3Key).replace(/\.zip$/, '');
      expect(readFileSync(join(outdir, `asset.${hash}`, 'index.mjs')).equals(expected)).toBe(true);
      // With the chunks it loads (infra/bundle.ts: splitting), which the asset folder carries as they are.
      expect(readdirSync(join(outdir, `asset.${hash}`, 'chunks')).sort()).toEqual(
        readdirSync(join(bundleDir('billing-pass'), 'chunks')).sort(),
      );
    }
  });

  it('has a work queue with a DLQ (5 receives), visibility ≥ 6× the worker timeout, SSE and TLS only', () => {
    const queues = new Map(resourcesOf(billingTemplate, 'AWS::SQS::Queue'));
    expect(queues.size).toBe(3);
    const work = queues.get(id(built.billingStack.queue))!.Properties;
    expect(work.RedrivePolicy).toEqual({ deadLetterTargetArn: arnOf(built.billingStack.workDlq), maxReceiveCount: 5 });
    expect(work.VisibilityTimeout).toBeGreaterThanOrEqual(6 * props(built.billingStack.worker).Timeout);
    for (const [queueId, queue] of queues) {
      expect(queue.Properties.SqsManagedSseEnabled, queueId).toBe(true);
      const policy = resourcesOf(billingTemplate, 'AWS::SQS::QueuePolicy').find(
        ([, p]) => JSON.stringify(p.Properties.Queues) === JSON.stringify([{ Ref: queueId }]),
      );
      const deny = (policy?.[1].Properties.PolicyDocument.Statement as Statement[] | undefined)?.find((s) => s.Effect === 'Deny');
      expect(deny?.Condition, queueId).toEqual({ Bool: { 'aws:SecureTransport': 'false' } });
    }
    // The dead-letter queues keep messages longer than the work queue does.
    for (const dlq of [built.billingStack.workDlq, built.billingStack.schedulerDlq]) {
      expect(queues.get(id(dlq))!.Properties.MessageRetentionPeriod).toBe(14 * 86_400);
    }
  });

  it('feeds the worker one message at a time, reporting batch item failures, with a concurrency cap', () => {
    const mappings = resourcesOf(billingTemplate, 'AWS::Lambda::EventSourceMapping');
    expect(mappings).toHaveLength(1);
    const m = mappings[0]![1].Properties;
    expect(m.EventSourceArn).toEqual(arnOf(built.billingStack.queue));
    expect(m.FunctionName).toEqual({ Ref: id(built.billingStack.worker.fn) });
    expect(m.BatchSize).toBe(1);
    expect(m.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
    expect(m.ScalingConfig.MaximumConcurrency).toBeGreaterThanOrEqual(2);
    expect(m.ScalingConfig.MaximumConcurrency).toBeLessThanOrEqual(16);
  });

  it('lets the scheduler send to the queue, the worker consume it; both RW on the table and read panel keys', () => {
    const scheduler = statementsOf(built.billingStack, billingTemplate, built.billingStack.scheduler);
    const worker = statementsOf(built.billingStack, billingTemplate, built.billingStack.worker);
    const queueArn = JSON.stringify(arnOf(built.billingStack.queue));
    const on = (statements: Statement[], action: string) =>
      statements.filter((s) => s.Effect === 'Allow' && actionsOf(s).includes(action)).map((s) => JSON.stringify(s.Resource));
    expect(on(scheduler, 'sqs:SendMessage').join()).toContain(queueArn);
    expect(on(worker, 'sqs:SendMessage').join()).not.toContain(queueArn);
    expect(on(worker, 'sqs:ReceiveMessage').join()).toContain(queueArn);
    expect(on(worker, 'sqs:DeleteMessage').join()).toContain(queueArn);
    expect(on(scheduler, 'sqs:ReceiveMessage')).toEqual([]);
    for (const statements of [scheduler, worker]) {
      for (const action of ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:GetItem']) expect(on(statements, action)).toHaveLength(1);
      // The table (under leading-key conditions) and each of the two indexes (the reconciler's GSI1, the shards' GSI2).
      expect(on(statements, 'dynamodb:Query')).toHaveLength(3);
      expect(on(statements, 'secretsmanager:GetSecretValue').join()).toContain('secret:control-plane/instances/*');
      expect(on(statements, 'secretsmanager:PutSecretValue')).toEqual([]);
    }
  });

  it('runs the every-minute passes (index.minutePasses, the billing-pass bundle) every minute, with the billing table access and panel keys', () => {
    const repairs = props(built.billingStack.repairs);
    expect(repairs.Handler).toBe('index.minutePasses');
    // The deployed names stay: a new logical id would replace the function, its role and its log group.
    expect(id(built.billingStack.repairs.fn)).toMatch(/^BillingRepairsFunction[0-9A-F]{8}$/);
    expect(id(built.billingStack.repairsRule)).toMatch(/^RepairsRule[0-9A-F]{8}$/);
    expect(repairs.Runtime).toBe('nodejs24.x');
    expect(repairs.Code).toEqual(props(built.billingStack.worker).Code);
    expect(repairs.Environment.Variables.BILLING_QUEUE_URL).toBeUndefined();
    const rule = resourcesOf(billingTemplate, 'AWS::Events::Rule').find(([ruleId]) => ruleId === id(built.billingStack.repairsRule))![1];
    expect(rule.Properties.ScheduleExpression).toBe('rate(1 minute)');
    expect(rule.Properties.Targets.map((t: { Arn: unknown }) => t.Arn)).toEqual([arnOf(built.billingStack.repairs.fn)]);
    const statements = statementsOf(built.billingStack, billingTemplate, built.billingStack.repairs);
    const on = (action: string) =>
      statements.filter((s) => s.Effect === 'Allow' && actionsOf(s).includes(action)).map((s) => JSON.stringify(s.Resource));
    expect(on('sqs:SendMessage')).toEqual([]);
    expect(on('secretsmanager:GetSecretValue').join()).toContain('secret:control-plane/instances/*');
    expect(on('secretsmanager:PutSecretValue')).toEqual([]);
    // The Stripe event reconciliation (every five minutes in this entry): the Stripe key, and its cursor item.
    expect(on('secretsmanager:GetSecretValue').join()).toContain(`secret:${STRIPE_SECRET_NAME}-??????`);
    const cursorWrites = statements.filter(
      (s) =>
        s.Effect === 'Allow' &&
        actionsOf(s).includes('dynamodb:UpdateItem') &&
        (s.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'] as string[] | undefined)?.includes(
          keys.stripeEventsCursor().PK,
        ),
    );
    expect(cursorWrites).toHaveLength(1);
  });

  it('outputs the queue and dead-letter queue URLs (for redrive and purge)', () => {
    expect(Object.keys(billingTemplate.toJSON().Outputs ?? {})).toEqual(
      expect.arrayContaining(['BillingQueueUrl', 'BillingWorkDlqUrl', 'BillingSchedulerDlqUrl']),
    );
  });
});

describe('least privilege: settings and the Stripe keys', () => {
  it('denies writes to the SETTINGS partition to every function but admin (and nothing else)', () => {
    expect(keys.settings().PK).toBe('SETTINGS');
    const all = allFunctions();
    expect(all).toHaveLength(deployed.length + 5); // + billing scheduler, worker and repairs, webhook dispatcher, authorizer
    for (const { name, stack, template, fn } of all) {
      const denies = statementsOf(stack, template, fn).filter((s) => s.Effect === 'Deny');
      if (name === 'admin') {
        expect(denies, name).toEqual([]);
        continue;
      }
      expect(denies, name).toHaveLength(1);
      const deny = denies[0]!;
      expect(actionsOf(deny), name).toEqual(expect.arrayContaining(['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem']));
      // Exactly SETTINGS: servers and the billing pass write the INSTANCES partition (server counts).
      expect(deny.Condition, name).toEqual({ 'ForAnyValue:StringEquals': { 'dynamodb:LeadingKeys': ['SETTINGS'] } });
      // On the table the function writes to.
      const allow = statementsOf(stack, template, fn).find((s) => s.Effect === 'Allow' && actionsOf(s).includes('dynamodb:PutItem'))!;
      expect([allow.Resource].flat()[0], name).toEqual([deny.Resource].flat()[0]);
    }
  });

  it('sets STRIPE_SECRET_ARN on billing, payments, admin (refunds, the health view) and the every-minute billing-repairs (auto top-ups, the Stripe event reconciliation) only, and lets only their roles read the secret', () => {
    for (const { name, stack, template, fn } of allFunctions()) {
      const env = functionProps(stack, template, fn).Environment.Variables as Record<string, unknown>;
      const reads = statementsOf(stack, template, fn).filter(
        (s) => s.Effect === 'Allow' && JSON.stringify(s.Resource).includes(`:secret:${STRIPE_SECRET_NAME}`),
      );
      // Admin: POST /v1/admin/invoices/:id/refund reads the keys (without them it answers 503 payments_unavailable).
      if (name === 'billing' || name === 'payments' || name === 'admin' || name === 'billing-repairs') {
        expect(JSON.stringify(env.STRIPE_SECRET_ARN), name).toContain(
          `:secretsmanager:eu-west-1:123456789012:secret:${STRIPE_SECRET_NAME}`,
        );
        expect(reads, name).toHaveLength(1);
        expect(actionsOf(reads[0]!), name).toContain('secretsmanager:GetSecretValue');
        // The imported name plus Secrets Manager's six-character suffix: that one secret only.
        expect(JSON.stringify(reads[0]!.Resource), name).toContain(`:secret:${STRIPE_SECRET_NAME}-??????`);
      } else {
        expect(env.STRIPE_SECRET_ARN, name).toBeUndefined();
        expect(reads, name).toEqual([]);
      }
    }
  });
});

describe('webhook dispatcher (ControlPlaneWebhooks)', () => {
  it('runs the webhooks bundle (index.handler) every minute from an EventBridge rule, with no API route', () => {
    expect(handlerGroups()).toContain('webhooks');
    expect(deployed).not.toContain('webhooks');
    const fns = resourcesOf(webhooksTemplate, 'AWS::Lambda::Function');
    expect(fns).toHaveLength(1);
    expect(fns[0]![1].Properties).toMatchObject({ Handler: 'index.handler', Runtime: 'nodejs24.x', Architectures: ['arm64'] });
    const rules = resourcesOf(webhooksTemplate, 'AWS::Events::Rule');
    expect(rules).toHaveLength(1);
    expect(rules[0]![1].Properties.ScheduleExpression).toBe('rate(1 minute)');
    expect(JSON.stringify(rules[0]![1].Properties.Targets)).toContain(logicalId(built.webhooksStack, built.webhooksStack.dispatcher.fn));
  });

  it('may query GSI2 and touch only ACCOUNT#* and WHDLV#* (least privilege)', () => {
    expect(TABLE_ACCESS.webhooks).toEqual({
      // MAIL#: the fan-out queues the mail an event calls for (shared/webhooks/mail-queue.ts).
      write: ['account', 'webhookDelivery', 'mail'],
      read: [],
      indexes: ['GSI2'],
      indexPartitions: ['outbox', 'deliveryDue'],
    });
    expect(leadingKeyPatterns(TABLE_ACCESS.webhooks).write.sort()).toEqual(['ACCOUNT#*', 'MAIL#*', 'WHDLV#*']);
  });
});

describe('alarms', () => {
  type Alarm = Record<string, any>;
  const alarmsOf = (template: Template): Alarm[] => resourcesOf(template, 'AWS::CloudWatch::Alarm').map(([, a]) => a.Properties);
  const allAlarms = (): Alarm[] => [...alarmsOf(apiTemplate), ...alarmsOf(billingTemplate), ...alarmsOf(webhooksTemplate)];
  const topicId = () => logicalId(built.apiStack, built.apiStack.alarms.topic as never);
  const filtersOf = (template: Template) => resourcesOf(template, 'AWS::Logs::MetricFilter').map(([, f]) => f.Properties);

  it('notify the ControlPlaneAlarms topic (TLS only) on alarm and on recovery, from both stacks', () => {
    const topics = resourcesOf(apiTemplate, 'AWS::SNS::Topic');
    expect(topics).toHaveLength(1);
    expect(topics[0]![1].Properties.TopicName).toBe('ControlPlaneAlarms');
    const [, policy] = resourcesOf(apiTemplate, 'AWS::SNS::TopicPolicy')[0]!;
    const statements = policy.Properties.PolicyDocument.Statement as Statement[];
    expect(statements.find((s) => s.Effect === 'Deny')?.Condition).toEqual({ Bool: { 'aws:SecureTransport': 'false' } });
    expect(statements.find((s) => s.Effect === 'Allow')).toMatchObject({
      Action: 'sns:Publish',
      Principal: { Service: 'cloudwatch.amazonaws.com' },
    });
    const [, subscription] = resourcesOf(apiTemplate, 'AWS::SNS::Subscription')[0]!;
    expect(subscription.Properties).toMatchObject({ Protocol: 'email', Endpoint: ALARM_EMAIL, TopicArn: { Ref: topicId() } });

    for (const alarm of alarmsOf(apiTemplate)) {
      expect(alarm.AlarmActions, alarm.AlarmName).toEqual([{ Ref: topicId() }]);
      expect(alarm.OKActions, alarm.AlarmName).toEqual([{ Ref: topicId() }]);
    }
    for (const alarm of [...alarmsOf(billingTemplate), ...alarmsOf(webhooksTemplate)]) {
      expect(JSON.stringify(alarm.AlarmActions), alarm.AlarmName).toContain('"StackName":"ControlPlaneApi"');
      expect(JSON.stringify(alarm.AlarmActions), alarm.AlarmName).toContain(topicId());
      expect(alarm.OKActions, alarm.AlarmName).toEqual(alarm.AlarmActions);
    }
  });

  it('watch every function: Lambda Errors and Throttles, ≥ 1 in 5 minutes', () => {
    const all = allFunctions();
    expect(all.map((f) => f.name)).toEqual(
      expect.arrayContaining([
        'public',
        'account',
        'catalog',
        'servers',
        'server-tools',
        'server-history',
        'billing',
        'payments',
        'admin',
        'admin-panels',
        'admin-storefront',
        'billing-scheduler',
        'billing-worker',
        'webhooks',
      ]),
    );
    for (const { name, stack, template, fn } of all) {
      for (const metric of ['Errors', 'Throttles']) {
        const found = alarmsOf(template).filter(
          (a) =>
            a.Namespace === 'AWS/Lambda' &&
            a.MetricName === metric &&
            JSON.stringify(a.Dimensions) === JSON.stringify([{ Name: 'FunctionName', Value: { Ref: logicalId(stack, fn.fn) } }]),
        );
        expect(found, `${name} ${metric}`).toHaveLength(1);
        expect(found[0], `${name} ${metric}`).toMatchObject({
          Threshold: 1,
          ComparisonOperator: 'GreaterThanOrEqualToThreshold',
          Period: 300,
          Statistic: 'Sum',
          EvaluationPeriods: 1,
          TreatMissingData: 'notBreaching',
        });
      }
    }
  });

  it('count logged errors ({"level":"error"}) of every function', () => {
    for (const { name, stack, template, fn } of allFunctions()) {
      const filter = filtersOf(template).find(
        (f) =>
          f.FilterPattern === '{ $.level = "error" }' &&
          JSON.stringify(f.LogGroupName) === JSON.stringify({ Ref: logicalId(stack, fn.logGroup) }),
      );
      expect(filter, name).toBeDefined();
      const { MetricName, MetricNamespace } = filter!.MetricTransformations[0];
      const alarm = alarmsOf(template).find((a) => a.MetricName === MetricName && a.Namespace === MetricNamespace);
      expect(alarm, name).toMatchObject({
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        Period: 300,
        Statistic: 'Sum',
      });
    }
  });

  it('alarm on the API 5xx rate: 5xx / Count > 1 % over 5 minutes, from a minimum request count', () => {
    const apiRef = { Ref: logicalId(built.apiStack, built.apiStack.api) };
    const found = alarmsOf(apiTemplate).filter((a) => JSON.stringify(a.Metrics ?? []).includes('"MetricName":"5xx"'));
    expect(found).toHaveLength(1);
    const alarm = found[0]!;
    expect(alarm).toMatchObject({ Threshold: 1, ComparisonOperator: 'GreaterThanThreshold', TreatMissingData: 'notBreaching' });
    const metrics = alarm.Metrics as {
      Id: string;
      Expression?: string;
      ReturnData: boolean;
      MetricStat?: { Metric: Record<string, unknown>; Period: number; Stat: string };
    }[];
    const stat = (name: string) => metrics.find((m) => m.MetricStat?.Metric.MetricName === name)!;
    for (const name of ['5xx', 'Count']) {
      expect(stat(name).MetricStat).toEqual({
        Metric: { Namespace: 'AWS/ApiGateway', MetricName: name, Dimensions: [{ Name: 'ApiId', Value: apiRef }] },
        Period: 300,
        Stat: 'Sum',
      });
    }
    const expression = metrics.find((m) => m.ReturnData)!.Expression!;
    const [errors, requests] = [stat('5xx').Id, stat('Count').Id];
    expect(expression).toBe(`IF(${requests} >= 100, 100 * ${errors} / ${requests}, 0)`);
  });

  it('alarm on messages in either billing dead-letter queue (≥ 1)', () => {
    for (const dlq of [built.billingStack.workDlq, built.billingStack.schedulerDlq]) {
      const queueName = { 'Fn::GetAtt': [logicalId(built.billingStack, dlq), 'QueueName'] };
      const found = alarmsOf(billingTemplate).filter(
        (a) => a.Namespace === 'AWS/SQS' && JSON.stringify(a.Dimensions) === JSON.stringify([{ Name: 'QueueName', Value: queueName }]),
      );
      expect(found, dlq.node.id).toHaveLength(1);
      expect(found[0]).toMatchObject({
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      });
    }
    // The work queue itself is not alarmed on (messages there are work, not failures).
    const workName = JSON.stringify({ 'Fn::GetAtt': [logicalId(built.billingStack, built.billingStack.queue), 'QueueName'] });
    expect(alarmsOf(billingTemplate).filter((a) => JSON.stringify(a.Dimensions ?? []).includes(workName))).toEqual([]);
  });

  it('alarm when the billing watermark lags over two hours, or the scheduler stops reporting for ~3 hours', () => {
    const schedulerLogs = { Ref: logicalId(built.billingStack, built.billingStack.scheduler.logGroup) };
    const filters = filtersOf(billingTemplate).filter((f) => f.FilterPattern === '{ $.message = "billing watermark" }');
    expect(filters).toHaveLength(1);
    expect(filters[0]!.LogGroupName).toEqual(schedulerLogs);
    const transform = filters[0]!.MetricTransformations[0];
    expect(transform.MetricValue).toBe('$.lagHours');
    // No default value: a metric published only when the scheduler runs, so silence is missing data.
    expect(transform.DefaultValue).toBeUndefined();
    const alarm = alarmsOf(billingTemplate).find((a) => a.MetricName === transform.MetricName && a.Namespace === transform.MetricNamespace);
    expect(alarm).toMatchObject({
      Threshold: 2,
      ComparisonOperator: 'GreaterThanThreshold',
      Statistic: 'Maximum',
      TreatMissingData: 'breaching',
      DatapointsToAlarm: 1,
    });
    expect(alarm!.Period * alarm!.EvaluationPeriods).toBe(3 * 3600);
  });

  it('alarm on ≥ 5 rejected Stripe webhook signatures in 5 minutes (payments log group)', () => {
    const paymentsLogs = { Ref: logicalId(built.apiStack, built.apiStack.functions.get('payments')!.logGroup) };
    const filters = filtersOf(apiTemplate).filter((f) => f.FilterPattern === '{ $.message = "stripe webhook rejected" }');
    expect(filters).toHaveLength(1);
    expect(filters[0]!.LogGroupName).toEqual(paymentsLogs);
    const transform = filters[0]!.MetricTransformations[0];
    const alarm = alarmsOf(apiTemplate).find((a) => a.MetricName === transform.MetricName && a.Namespace === transform.MetricNamespace);
    expect(alarm).toMatchObject({ Threshold: 5, ComparisonOperator: 'GreaterThanOrEqualToThreshold', Period: 300, Statistic: 'Sum' });
  });

  it('key on log lines the code really writes (message, level and lagHours fields of the JSON logger)', () => {
    // The callers: the scheduler logs the watermark lag, the Stripe client the rejections.
    expect(readFileSync(join(ROOT, 'functions', 'billing-pass', 'handler.ts'), 'utf8')).toMatch(
      /logger\.info\('billing watermark', \{ lagHours/,
    );
    expect(readFileSync(join(ROOT, 'shared', 'payments', 'stripe-client.ts'), 'utf8')).toContain("logger.warn('stripe webhook rejected'");
    // The shape of a line: JSON with `level`, `message` and the fields at the top level.
    const lines: string[] = [];
    const level = process.env.LOG_LEVEL;
    const out = process.stdout.write.bind(process.stdout);
    const err = process.stderr.write.bind(process.stderr);
    process.env.LOG_LEVEL = 'info';
    process.stdout.write = ((chunk: string) => {
      lines.push(chunk);
      return true;
    }) as typeof process.stdout.write;
    process.stderr.write = ((chunk: string) => {
      lines.push(chunk);
      return true;
    }) as typeof process.stderr.write;
    try {
      logger.info('billing watermark', { lagHours: 3 });
      logger.error('unhandled error', {});
    } finally {
      process.stdout.write = out;
      process.stderr.write = err;
      process.env.LOG_LEVEL = level;
    }
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      expect.objectContaining({ level: 'info', message: 'billing watermark', lagHours: 3 }),
      expect.objectContaining({ level: 'error', message: 'unhandled error' }),
    ]);
  });

  it('are all accounted for (no stray or missing alarm)', () => {
    // Per function Errors + Throttles, one logged-errors alarm per stack, 5xx rate, webhook; two DLQs, watermark lag.
    // Then the metric alarms (tests/infra/metrics.test.ts): panels unreachable, paused, budget, table
    // throttles (API); repairs, suspension spike, pending work (billing); webhook backlog.
    expect(alarmsOf(apiTemplate)).toHaveLength((deployed.length + 1) * 2 + 3 + 4); // + the admin authorizer
    expect(alarmsOf(billingTemplate)).toHaveLength(3 * 2 + 1 + 3 + 3); // scheduler, worker, repairs
    expect(alarmsOf(webhooksTemplate)).toHaveLength(2 + 1 + 1);
    const names = allAlarms().map((a) => a.AlarmName);
    expect(new Set(names).size).toBe(names.length);
  });
});

describe('customer mail (ControlPlaneMail, context mailDomain)', () => {
  const arnOfIn = (stack: Stack, construct: { node: { defaultChild?: unknown } }) => ({
    'Fn::GetAtt': [logicalId(stack, construct), 'Arn'],
  });
  const MAIL_DOMAIN = 'mail.example.com';
  let mailApp: BuiltApp;
  let mailTemplate: Template;
  let mailWebhooksTemplate: Template;
  let mailSynthError: unknown;

  beforeAll(async () => {
    await withBuildLock(async () => {
      const dir = mkdtempSync(join(tmpdir(), 'cdk-mail-test-'));
      try {
        mailApp = buildApp({ outdir: dir, account: '123456789012', region: 'eu-west-1', context: { mailDomain: MAIL_DOMAIN } });
        try {
          mailApp.app.synth();
        } catch (err) {
          mailSynthError = err;
        }
        const written = (stack: Stack) => Template.fromJSON(JSON.parse(readFileSync(join(dir, stack.templateFile), 'utf8')));
        mailTemplate = written(mailApp.mailStack!);
        mailWebhooksTemplate = written(mailApp.webhooksStack);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }, 600_000);

  it('is left out without the context: no stack, and the dispatcher queues no mail', () => {
    expect(built.mailStack).toBeUndefined();
    expect(
      functionProps(built.webhooksStack, webhooksTemplate, built.webhooksStack.dispatcher).Environment.Variables.MAIL_FROM,
    ).toBeUndefined();
    for (const { name, stack, template, fn } of allFunctions()) {
      const sends = statementsOf(stack, template, fn).filter((s) => actionsOf(s).some((a) => a.startsWith('ses:')));
      expect(sends, name).toEqual([]);
    }
  });

  it('holds the domain identity with Easy DKIM (2048-bit) in a configuration set that suppresses bounces and complaints', () => {
    const identities = resourcesOf(mailTemplate, 'AWS::SES::EmailIdentity');
    expect(identities).toHaveLength(1);
    const identity = identities[0];
    expect(identity![1].Properties).toMatchObject({
      EmailIdentity: MAIL_DOMAIN,
      DkimAttributes: { SigningEnabled: true },
      DkimSigningAttributes: { NextSigningKeyLength: 'RSA_2048_BIT' },
      ConfigurationSetAttributes: { ConfigurationSetName: { Ref: expect.any(String) } },
    });
    const sets = resourcesOf(mailTemplate, 'AWS::SES::ConfigurationSet');
    expect(sets).toHaveLength(1);
    expect(sets[0]![1].Properties).toMatchObject({
      SuppressionOptions: { SuppressedReasons: ['BOUNCE', 'COMPLAINT'] },
      DeliveryOptions: { TlsPolicy: 'REQUIRE' },
    });
    expect(Object.keys(mailTemplate.toJSON().Outputs ?? {})).toContain('MailDkimRecords');
  });

  it('sends bounces and complaints to an SNS topic that feeds the bounces function', () => {
    const destinations = resourcesOf(mailTemplate, 'AWS::SES::ConfigurationSetEventDestination');
    expect(destinations).toHaveLength(1);
    const destination = destinations[0];
    expect(destination![1].Properties.EventDestination).toMatchObject({
      Enabled: true,
      MatchingEventTypes: ['bounce', 'complaint'],
      SnsDestination: { TopicARN: { Ref: logicalId(mailApp.mailStack!, mailApp.mailStack!.notifications as never) } },
    });
    const subscriptions = resourcesOf(mailTemplate, 'AWS::SNS::Subscription');
    expect(subscriptions).toHaveLength(1);
    expect(subscriptions[0]![1].Properties).toMatchObject({
      Protocol: 'lambda',
      Endpoint: arnOfIn(mailApp.mailStack!, mailApp.mailStack!.bounceHandler.fn),
    });
    expect(functionProps(mailApp.mailStack!, mailTemplate, mailApp.mailStack!.bounceHandler).Handler).toBe('index.bounces');
  });

  it('lets only the sender send, from its address through the identity and the configuration set', () => {
    const mail = mailApp.mailStack!;
    const sendersOf = (stack: Stack, template: Template, fn: AppFunction) =>
      statementsOf(stack, template, fn).filter((s) => s.Effect === 'Allow' && actionsOf(s).some((a) => a.startsWith('ses:')));
    const [send, ...more] = sendersOf(mail, mailTemplate, mail.sender);
    expect(more).toEqual([]);
    expect(actionsOf(send!).sort()).toEqual(['ses:SendEmail', 'ses:SendRawEmail']);
    const resources = JSON.stringify(send!.Resource);
    expect(resources).toContain(`:identity/${MAIL_DOMAIN}`);
    expect(resources).toContain(':configuration-set/');
    expect(resources).not.toContain('*');
    expect(send!.Condition).toEqual({ StringLike: { 'ses:FromAddress': [`billing@${MAIL_DOMAIN}`] } });
    expect(sendersOf(mail, mailTemplate, mail.bounceHandler)).toEqual([]);
    expect(sendersOf(mailApp.webhooksStack, mailWebhooksTemplate, mailApp.webhooksStack.dispatcher)).toEqual([]);
    const env = functionProps(mail, mailTemplate, mail.sender).Environment.Variables;
    expect(env).toMatchObject({ MAIL_FROM: `billing@${MAIL_DOMAIN}`, MAIL_CONFIGURATION_SET: { Ref: expect.any(String) } });
    // It signs the unsubscribe links with the cursor key, read at run time (never in the environment).
    expect(env.CURSOR_SECRET_ARN).toBeDefined();
    expect(env.API_URL).toBeDefined();
    // The dispatcher queues mail once there is a sender.
    expect(
      functionProps(mailApp.webhooksStack, mailWebhooksTemplate, mailApp.webhooksStack.dispatcher).Environment.Variables.MAIL_FROM,
    ).toBe(`billing@${MAIL_DOMAIN}`);
  });

  it('gives the sender and the bounces function only their partitions, and alarms on failed sends', () => {
    expect(leadingKeyPatterns(TABLE_ACCESS.mail).write).toEqual(['MAIL#*']);
    expect(leadingKeyPatterns(TABLE_ACCESS['mail-events']).write).toEqual(['MAILSUPPRESS#*']);
    expect(leadingKeyPatterns(TABLE_ACCESS['mail-events']).read).toEqual(['MAILSUPPRESS#*']);
    const alarms = resourcesOf(mailTemplate, 'AWS::CloudWatch::Alarm').map(([, a]) => a.Properties);
    expect(alarms.find((a) => a.MetricName === 'MailSendFailures')).toMatchObject({ Statistic: 'Sum', Period: 900, Threshold: 5 });
    const rules = resourcesOf(mailTemplate, 'AWS::Events::Rule');
    expect(rules.map(([, r]) => r.Properties.ScheduleExpression)).toEqual(['rate(1 minute)']);
  });

  it('passes cdk-nag', () => {
    const report = mailApp.nag.validateScope(mailApp.mailStack!);
    expect(report.violations.map((v) => `${v.ruleName} @ ${v.violatingResources.map((r) => r.constructPath).join(', ')}`)).toEqual([]);
    expect(mailSynthError).toBeUndefined();
  });
});

describe('cdk-nag (AwsSolutions)', () => {
  it('reports no unacknowledged finding on any stack, and synthesis (which runs it) succeeds', () => {
    for (const stack of [built.dataStack!, built.apiStack, built.billingStack, built.webhooksStack]) {
      const report = built.nag.validateScope(stack);
      expect(
        report.violations.map((v) => `${v.ruleName} @ ${v.violatingResources.map((r) => r.constructPath).join(', ')}`),
        stack.stackName,
      ).toEqual([]);
      expect(report.success).toBe(true);
    }
    expect(synthError).toBeUndefined();
  });

  it('is live: an unacknowledged finding is reported (control)', () => {
    const app = new App();
    const stack = new Stack(app, 'NagControl');
    new secretsmanager.Secret(stack, 'Unrotated');
    const report = new AwsSolutionsChecks(app).validateScope(stack);
    expect(report.violations.map((v) => v.ruleName)).toContain('AwsSolutions-SMG4');
  });
});

describe('bundles', () => {
  it('exist for every deployed group and stay under 1.5 MB', () => {
    expect(bundles.map((b) => b.group).sort()).toEqual(handlerGroups());
    for (const b of bundles) {
      const file = join(b.dir, 'index.mjs');
      expect(existsSync(file), file).toBe(true);
      expect(statSync(file).size).toBe(b.bytes);
      expect(b.bytes, `${b.group} index.mjs`).toBeLessThan(MAX_BUNDLE_BYTES);
      // index.mjs alone may be small: code it shares with a lazy chunk sits in a chunk it imports
      // statically (public: the OpenAPI document's chunk shares the pipeline), so count what it loads.
      expect(b.startBytes, `${b.group} at start`).toBeGreaterThan(10_000);
      expect(existsSync(join(b.dir, 'index.mjs.map')), `${b.group} source map`).toBe(true);
    }
  });

  it('ship the Swagger UI assets with the public function only', () => {
    for (const b of bundles) {
      const assets = existsSync(join(b.dir, 'assets')) ? readdirSync(join(b.dir, 'assets')).sort() : [];
      expect(assets, b.group).toEqual(b.group === 'public' ? ['swagger-ui-bundle.js', 'swagger-ui.css'] : []);
    }
  });

  it('ship the invoice PDF fonts where a bundle renders PDFs, and load fontkit only with the first PDF', () => {
    const renders: string[] = [];
    for (const b of bundles) {
      const meta = JSON.parse(readFileSync(join(ROOT, 'dist', 'meta', `${b.group}.json`), 'utf8')) as Metafile;
      const fonts = existsSync(join(b.dir, FONTS_DIR)) ? readdirSync(join(b.dir, FONTS_DIR)).sort() : [];
      const holdsLoader = 'shared/invoices/fonts.ts' in meta.inputs;
      expect(fonts, b.group).toEqual(holdsLoader ? [...Object.values(INVOICE_FONT_FILES), 'LICENSE'].sort() : []);
      if (holdsLoader) renders.push(b.group);
      // fontkit is a package apart: imported by name, dynamically, never part of a chunk.
      const fontkit = Object.values(meta.outputs).flatMap((o) => o.imports.filter((i) => i.path === '#lazy/pdf-lib-fontkit'));
      expect(
        fontkit.map((i) => i.kind),
        b.group,
      ).toEqual(holdsLoader ? ['dynamic-import'] : []);
      expect(
        Object.keys(meta.inputs).filter((input) => input.includes('node_modules/@pdf-lib/fontkit/')),
        b.group,
      ).toEqual([]);
    }
    expect(renders).toContain('billing');
  });

  it('load as ES modules in a plain Node process and export their entry points', () => {
    // A separate process, as on Lambda (and vitest's module runner would transform 1 MB files).
    // Endpoint groups export `handler`; the billing pass exports `scheduler` and `worker`.
    const script = `for (const f of JSON.parse(process.argv[1])) { const m = await import(f); console.log(typeof (m.handler ?? (typeof m.scheduler === typeof m.worker ? m.worker : undefined))); }`;
    const files = bundles.map((b) => pathToFileURL(join(b.dir, 'index.mjs')).href);
    const out = execFileSync(process.execPath, ['--enable-source-maps', '--input-type=module', '-e', script, JSON.stringify(files)], {
      env: { PATH: process.env.PATH, STAGE: 'aws', TABLE_NAME: 'bundle-load-test', CURSOR_SECRET: 'x', AWS_REGION: 'eu-west-1' },
      encoding: 'utf8',
    });
    expect(out.trim().split('\n')).toEqual(bundles.map(() => 'function'));
  });

  it('hold every chunk they load in their asset folder; Stripe, Secrets Manager and the credential chain only in lazy chunks', () => {
    for (const b of bundles) {
      const meta = JSON.parse(readFileSync(join(ROOT, 'dist', 'meta', `${b.group}.json`), 'utf8')) as Metafile;
      const sizes = chunkSizes(meta);
      // The files on disk are what the metafile says loads at start (and what bench/ reports).
      expect(
        sizes.startFiles.reduce((sum, file) => sum + statSync(join(ROOT, file)).size, 0),
        b.group,
      ).toBe(b.startBytes);
      // What a cold start loads stays within the budget bench/README.md states (350 KB; the floor is 184 KB).
      expect(sizes.start, `${b.group} loads ${sizes.start} bytes at start`).toBeLessThanOrEqual(350 * 1024);
      // In a handful of files: each costs the ESM loader ≈ 0.4 ms. index.mjs, what it shares with the
      // schema chunk, and what it shares with the SDK's own lazy imports (infra/bundle.ts).
      expect(sizes.startFiles.length, `${b.group} loads ${sizes.startFiles.join(', ')} at start`).toBeLessThanOrEqual(5);
      for (const file of [...sizes.startFiles, ...sizes.lazyFiles]) expect(existsSync(join(ROOT, file)), file).toBe(true);
      const startInputs = sizes.startFiles.flatMap((file) => Object.keys(meta.outputs[file]!.inputs));
      for (const lazy of [
        'node_modules/stripe/',
        'node_modules/jose/',
        '@aws-sdk/client-secrets-manager/',
        '@aws-sdk/credential-provider-ini/',
        '@aws-sdk/nested-clients/',
      ]) {
        expect(
          startInputs.filter((input) => input.includes(lazy)),
          `${b.group} loads ${lazy} at start`,
        ).toEqual([]);
      }
      // No ESM import of node:http: its namespace loads undici (≈ 20 ms of CPU; infra/bundle.ts, httpWithoutUndici).
      expect(
        sizes.startFiles.flatMap((file) => meta.outputs[file]!.imports.filter((i) => /^(node:)?http$/.test(i.path))),
        `${b.group} imports node:http as an ES module`,
      ).toEqual([]);
      // The route table at start is the generated one (infra/bundle.ts, lazyRouteSchemas): the route
      // modules as written (their schemas) and the barrel of every schema are never at start.
      expect(
        startInputs.filter((input) => input === 'shared/api/schemas.ts' || input.startsWith('shared/api/routes/')),
        `${b.group} loads route modules with their schemas at start`,
      ).toEqual([]);
      // No zod and no schema at start: a route's request schemas load with its first request
      // (infra/bundle.ts, lazyRouteSchemas; the route module at start is the generated one).
      expect(
        startInputs.filter((input) => input.includes('node_modules/zod/') || input.startsWith('shared/api/schemas/')),
        `${b.group} loads zod or a schema at start`,
      ).toEqual([]);
    }
    // Only the servers function deploys: the deploy path (placement, egg variables) is in no other start.
    const startInputsOf = (group: string) => {
      const meta = JSON.parse(readFileSync(join(ROOT, 'dist', 'meta', `${group}.json`), 'utf8')) as Metafile;
      return chunkSizes(meta).startFiles.flatMap((file) => Object.keys(meta.outputs[file]!.inputs));
    };
    for (const group of ['admin', 'account', 'catalog', 'server-tools'])
      expect(startInputsOf(group), group).not.toContain('shared/servers/deploy.ts');
    // The whole route table (other groups' routes, for 404 and 405) only in the public function, which
    // API Gateway's `$default` route sends every request no route takes; the others hold their own.
    const routeModulesAt = (group: string) =>
      startInputsOf(group)
        .filter((input) => input.startsWith('lazy-route-schemas:'))
        .map((input) => input.replace(/^.*\/routes\/|\.ts$/g, ''));
    expect(routeModulesAt('public').sort()).toEqual([...GROUPS].sort());
    for (const group of ['account', 'catalog', 'servers', 'server-tools', 'server-history', 'billing', 'admin-panels', 'admin-storefront'])
      expect(routeModulesAt(group), group).toEqual([group]);
    // A server's startup settings, files and backups are the server-tools function's: none of it in the servers start.
    for (const module of ['shared/servers/startup.ts', 'shared/servers/files.ts', 'shared/servers/backups.ts']) {
      expect(startInputsOf('servers'), module).not.toContain(module);
      expect(startInputsOf('server-tools'), module).toContain(module);
    }
    // The packages of shared/packages.ts are files of their own (infra/bundle.ts, PACKAGES_APART),
    // imported by name through the asset folder's package.json: only where a function loads them.
    const payments = JSON.parse(readFileSync(join(ROOT, 'dist', 'meta', 'payments.json'), 'utf8')) as Metafile;
    const imported = Object.values(payments.outputs).flatMap((o) => o.imports.filter((i) => i.path.startsWith('#lazy/')));
    expect(imported.map((i) => i.path)).toContain('#lazy/stripe');
    expect(imported.every((i) => i.kind === 'dynamic-import')).toBe(true);
    expect(existsSync(join(bundleDir('payments'), 'lazy', 'stripe.mjs'))).toBe(true);
    expect(existsSync(join(bundleDir('webhooks'), 'lazy', 'stripe.mjs'))).toBe(false);
    // `import('stripe')` gets its default export, the constructor shared/payments calls.
    const script = `const m = await import('#lazy/stripe'); console.log(typeof m.default, typeof m.Stripe);`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: bundleDir('payments'),
      env: { PATH: process.env.PATH, STAGE: 'aws', TABLE_NAME: 'bundle-stripe-test', CURSOR_SECRET: 'x', AWS_REGION: 'eu-west-1' },
      encoding: 'utf8',
    });
    expect(out.trim()).toBe('function function');
  });

  it('read a secret through their Secrets Manager file with the credentials Lambda sets, or else the whole default chain', async () => {
    const fake = await startFakeSecretsManager();
    const dir = mkdtempSync(join(tmpdir(), 'bundle-credentials-'));
    try {
      fake.secrets.set('control-plane/cursor', 'k');
      const ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:control-plane/cursor-AbCdEf';
      const base = {
        PATH: process.env.PATH,
        STAGE: 'aws',
        TABLE_NAME: 'bundle-chunk-test',
        AWS_REGION: 'eu-west-1',
        AWS_ENDPOINT_URL_SECRETS_MANAGER: fake.url,
        AWS_EC2_METADATA_DISABLED: 'true',
        AWS_CONFIG_FILE: join(dir, 'config'),
        AWS_SHARED_CREDENTIALS_FILE: join(dir, 'credentials'),
      };
      // The client as shared/packages.ts loads it in the account function (the cursor key's read).
      const script = `const sm = await import('#lazy/aws-sdk-client-secrets-manager'); await new sm.SecretsManagerClient({}).send(new sm.GetSecretValueCommand({ SecretId: ${JSON.stringify(ARN)} }));`;
      const load = (env: Record<string, string | undefined>) =>
        execFileAsync(process.execPath, ['--input-type=module', '-e', script], { env, cwd: bundleDir('account') });
      // As in Lambda: the role's credentials in the environment.
      await load({ ...base, AWS_ACCESS_KEY_ID: 'AKIDLAMBDA', AWS_SECRET_ACCESS_KEY: 's', AWS_SESSION_TOKEN: 't' });
      expect(fake.calls).toEqual([{ action: 'GetSecretValue', secretId: 'control-plane/cursor' }]);
      // Elsewhere: the rest of the SDK's chain, loaded from its own file (here the shared credentials file).
      writeFileSync(join(dir, 'credentials'), '[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = s\n');
      await load(base);
      expect(fake.calls).toHaveLength(2);
    } finally {
      await fake.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('identity and the AWS edge: the admin routes', () => {
  const authorizers = () => resourcesOf(apiTemplate, 'AWS::ApiGatewayV2::Authorizer');

  it('has one Lambda REQUEST authorizer: payload 2.0, simple responses, the Authorization header, cached ≤ 300 s', () => {
    expect(authorizers()).toHaveLength(1);
    const [, authorizer] = authorizers()[0]!;
    const p = authorizer.Properties;
    expect(p.AuthorizerType).toBe('REQUEST');
    expect(p.AuthorizerPayloadFormatVersion).toBe('2.0');
    expect(p.EnableSimpleResponses).toBe(true);
    expect(p.IdentitySource).toEqual(['$request.header.Authorization']);
    expect(p.AuthorizerResultTtlInSeconds).toBe(AUTHORIZER_CACHE_SECONDS);
    expect(p.AuthorizerResultTtlInSeconds).toBeGreaterThan(0);
    expect(p.AuthorizerResultTtlInSeconds).toBeLessThanOrEqual(300);
    // It invokes the authorizer function (functions/authorizer), not an endpoint group's.
    expect(JSON.stringify(p.AuthorizerUri)).toContain(logicalId(built.apiStack, built.apiStack.authorizerFunction.fn));
    for (const fn of built.apiStack.functions.values()) {
      expect(JSON.stringify(p.AuthorizerUri)).not.toContain(`"${logicalId(built.apiStack, fn.fn)}"`);
    }
    const bundle = bundles.find((b) => b.group === 'authorizer');
    expect(bundle, 'authorizer bundle').toBeDefined();
  });

  it('guards every route under /v1/admin with it (CUSTOM + AuthorizerId), and no other route', () => {
    const [authorizerId] = authorizers()[0]!;
    const routes = resourcesOf(apiTemplate, 'AWS::ApiGatewayV2::Route');
    const admin = routes.filter(([, r]) => (r.Properties.RouteKey as string).split(' ')[1]?.startsWith('/v1/admin'));
    expect(admin.length).toBe(routeEntries().filter(([, d]) => d.path.startsWith('/v1/admin')).length);
    expect(admin.length).toBeGreaterThan(5);
    for (const [, route] of routes) {
      const key = route.Properties.RouteKey as string;
      if (admin.some(([, r]) => r === route)) {
        expect(route.Properties.AuthorizationType, key).toBe('CUSTOM');
        expect(route.Properties.AuthorizerId, key).toEqual({ Ref: authorizerId });
      } else {
        expect(route.Properties.AuthorizationType ?? 'NONE', key).toBe('NONE');
        expect(route.Properties.AuthorizerId, key).toBeUndefined();
      }
    }
    expect(isAdminRoutePath('/v1/admin')).toBe(true);
    expect(isAdminRoutePath('/v1/administrators')).toBe(false);
  });

  it('lets API Gateway invoke the authorizer, and the authorizer only read key hashes', () => {
    const permissions = resourcesOf(apiTemplate, 'AWS::Lambda::Permission').filter(([, p]) =>
      JSON.stringify(p.Properties.FunctionName).includes(logicalId(built.apiStack, built.apiStack.authorizerFunction.fn)),
    );
    expect(permissions.length).toBeGreaterThanOrEqual(1);
    expect(permissions[0]![1].Properties.Principal).toBe('apigateway.amazonaws.com');
    const statements = statementsOf(built.apiStack, apiTemplate, built.apiStack.authorizerFunction);
    const writes = statements.find((s) => s.Effect === 'Allow' && actionsOf(s).includes('dynamodb:PutItem'));
    expect(JSON.stringify(writes?.Condition)).not.toContain(PARTITIONS.apiKeyHash);
    expect(JSON.stringify(statements)).not.toContain('secretsmanager:');
  });
});

describe('least privilege: table access by partition (shared/db/key-prefixes.ts)', () => {
  const accessOf = (name: string): TableAccess =>
    name.startsWith('billing-') ? TABLE_ACCESS['billing-pass'] : TABLE_ACCESS[name as keyof typeof TABLE_ACCESS];

  it('derives a pattern for the partition of every key builder (no item kind without one)', () => {
    const asRegex = (pattern: string) => new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);
    const patterns = Object.values(PARTITIONS).map(asRegex);
    let checked = 0;
    for (const [name, build] of Object.entries(keys)) {
      const built = (build as (...args: unknown[]) => unknown)(KEY_SENTINEL, KEY_SENTINEL, KEY_SENTINEL, KEY_SENTINEL);
      const pk = typeof built === 'object' && built && 'PK' in built ? (built as { PK: string }).PK : undefined;
      if (pk === undefined) continue; // index keys (GSI1PK/GSI2PK) and shard names: not table partitions
      expect(
        patterns.some((re) => re.test(pk)),
        `${name}: ${pk}`,
      ).toBe(true);
      checked++;
    }
    expect(checked).toBeGreaterThan(25);
    expect(PARTITIONS).toMatchObject({ account: 'ACCOUNT#*', apiKeyHash: 'KEYHASH#*', rateWindow: 'RATE#*', settings: 'SETTINGS' });
    // PANEL#* must not cover the call budgets (their own grant).
    expect(asRegex(PARTITIONS.panelCopies).test(keys.panelCallBudget('i', 'app').PK)).toBe(false);
  });

  it("limits every function's item actions on the table by dynamodb:LeadingKeys, to its own partitions", () => {
    for (const { name, stack, template, fn } of allFunctions()) {
      const statements = statementsOf(stack, template, fn).filter(
        (s) => s.Effect === 'Allow' && actionsOf(s).some((a) => a.startsWith('dynamodb:')),
      );
      const expected = leadingKeyPatterns(accessOf(name));
      const onTable = statements.filter((s) => !JSON.stringify(s.Resource).includes('/index/'));
      expect(onTable.length, name).toBeGreaterThanOrEqual(1);
      for (const s of onTable) {
        const patterns = s.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'] as string[] | undefined;
        expect(patterns, `${name}: ${actionsOf(s).join()}`).toBeDefined();
        const isWrite = actionsOf(s).some((a) => (WRITE_ACTIONS as readonly string[]).includes(a));
        const isBatch = actionsOf(s).some((a) => (BATCH_READ_ACTIONS as readonly string[]).includes(a));
        expect([...patterns!].sort(), name).toEqual([...(isWrite ? expected.write : isBatch ? expected.batchRead : expected.read)].sort());
        expect(patterns, name).not.toContain('*');
      }
      // Only the actions the code uses: no Scan, no batch (but the billing pass's profile reads), no stream, no table admin.
      const actions = statements.flatMap(actionsOf);
      const batch = accessOf(name).batchRead?.length ? BATCH_READ_ACTIONS : [];
      for (const a of actions) expect([...READ_ACTIONS, ...WRITE_ACTIONS, ...batch] as string[], `${name}: ${a}`).toContain(a);
      if (batch.length) expect(actions, name).toContain('dynamodb:BatchGetItem');
      // Index queries: only where the code queries an index, on the named index, Query only.
      const onIndexes = statements.filter((s) => JSON.stringify(s.Resource).includes('/index/'));
      const indexes = accessOf(name).indexes;
      if (indexes.length === 0) expect(onIndexes, name).toEqual([]);
      for (const s of onIndexes) expect(actionsOf(s), name).toEqual(['dynamodb:Query']);
      for (const index of indexes) expect(JSON.stringify(onIndexes.map((s) => s.Resource)), name).toContain(`/index/${index}`);
    }
  });

  it('keeps the public and billing functions off panel work and the authorizer off everything but sign-in', () => {
    expect(leadingKeyPatterns(TABLE_ACCESS.public).write).not.toContain(PARTITIONS.instances);
    expect(leadingKeyPatterns(TABLE_ACCESS.public).read).toContain(PARTITIONS.instances);
    expect(leadingKeyPatterns(TABLE_ACCESS.billing).read).not.toContain(PARTITIONS.panelCallBudget);
    expect(leadingKeyPatterns(TABLE_ACCESS.authorizer).write.sort()).toEqual(
      [PARTITIONS.subject, PARTITIONS.account, PARTITIONS.ledgerGuard, PARTITIONS.rateWindow].sort(),
    );
    for (const access of Object.values(TABLE_ACCESS)) {
      if (access !== TABLE_ACCESS.admin) expect(leadingKeyPatterns(access).write).not.toContain(PARTITIONS.settings);
    }
  });
});

describe('no secret in a function environment: the cursor key is read at run time', () => {
  const cursorSecretId = () => logicalId(built.apiStack, built.apiStack.cursorSecret);

  it('puts no secret value and no {{resolve:…}} reference in any function environment', () => {
    for (const { name, stack, template, fn } of allFunctions()) {
      const env = functionProps(stack, template, fn).Environment.Variables as Record<string, unknown>;
      expect(JSON.stringify(env), name).not.toContain('{{resolve:');
      for (const key of Object.keys(env)) {
        // Names of secret values (CURSOR_SECRET, STRIPE_SECRET_KEY, …); ARNs and the secrets prefix are pointers, not secrets.
        expect(key, `${name}: ${key}`).not.toMatch(/(SECRET|PASSWORD|_TOKEN|_KEY)$/);
      }
    }
  });

  it('gives CURSOR_SECRET_ARN and read access to the cursor key only to the functions that sign cursors', () => {
    expect(cursorSigningGroups()).toEqual(['account', 'admin', 'billing', 'server-history', 'servers']);
    // The public group verifies mail unsubscribe tokens, made with the same key (shared/mail/unsubscribe.ts).
    expect(CURSOR_KEY_VERIFIERS).toEqual(['public']);
    const signers = new Set([...cursorSigningGroups(), ...CURSOR_KEY_VERIFIERS, 'billing-scheduler']);
    for (const { name, stack, template, fn } of allFunctions()) {
      const env = functionProps(stack, template, fn).Environment.Variables as Record<string, unknown>;
      const reads = statementsOf(stack, template, fn).filter(
        (s) =>
          s.Effect === 'Allow' &&
          actionsOf(s).includes('secretsmanager:GetSecretValue') &&
          JSON.stringify(s.Resource).includes(cursorSecretId()),
      );
      if (signers.has(name)) {
        expect(JSON.stringify(env.CURSOR_SECRET_ARN), name).toContain(cursorSecretId());
        expect(reads, name).toHaveLength(1);
      } else {
        expect(env.CURSOR_SECRET_ARN, name).toBeUndefined();
        expect(reads, name).toEqual([]);
      }
    }
    // Across stacks: a CloudFormation-resolved output reference of the API stack, never a string-built reference.
    const schedulerArn = JSON.stringify(
      functionProps(built.billingStack, billingTemplate, built.billingStack.scheduler).Environment.Variables.CURSOR_SECRET_ARN,
    );
    expect(schedulerArn).toMatch(/Fn::GetStackOutput|Fn::ImportValue/);
  });

  it('reads the key lazily in AWS: CURSOR_SECRET is no longer required, CURSOR_SECRET_ARN is passed through', () => {
    const config = readConfig({ STAGE: 'aws', TABLE_NAME: 't', CURSOR_SECRET_ARN: 'arn:aws:secretsmanager:eu-west-1:1:secret:c-AbCdEf' });
    expect(config.cursorSecret).toBeUndefined();
    expect(config.cursorSecretArn).toBe('arn:aws:secretsmanager:eu-west-1:1:secret:c-AbCdEf');
    expect(readConfig({ STAGE: 'local', TABLE_NAME: 't' }).cursorSecret).toBe('local-cursor-secret');
    expect(readConfig({ STAGE: 'local', TABLE_NAME: 't', CURSOR_SECRET: 'mine' }).cursorSecret).toBe('mine');
  });
});

describe('identity: Cognito keeps access-deciding attributes out of users’ hands', () => {
  it('keeps the original e-mail until the new one is verified', () => {
    const [, pool] = resourcesOf(apiTemplate, 'AWS::Cognito::UserPool')[0]!;
    expect(pool.Properties.UserAttributeUpdateSettings).toEqual({ AttributesRequireVerificationBeforeUpdate: ['email'] });
  });

  it('sets read and write attributes explicitly: users may write their e-mail only, never email_verified or custom attributes', () => {
    const [, client] = resourcesOf(apiTemplate, 'AWS::Cognito::UserPoolClient')[0]!;
    const write = client.Properties.WriteAttributes as string[];
    const read = client.Properties.ReadAttributes as string[];
    expect(write).toEqual(['email']);
    expect(read.sort()).toEqual(['email', 'email_verified']);
    for (const attr of write) expect(attr).not.toMatch(/^custom:|email_verified/);
  });
});

describe('deploy options: stage prefix, custom domain, SES', () => {
  let staged: BuiltApp;
  beforeAll(() => {
    staged = buildApp({
      outdir: mkdtempSync(join(tmpdir(), 'cdk-test-stage-')),
      account: '123456789012',
      region: 'eu-west-1',
      context: {
        stage: 'staging',
        domainName: 'api.example.com',
        certificateArn: 'arn:aws:acm:eu-west-1:123456789012:certificate/00000000-0000-0000-0000-000000000000',
        sesFromEmail: 'no-reply@example.com',
        currency: 'EUR',
      },
    });
  });

  it('gives every function the deployment currency (context currency), usd without it; refuses one without cents', () => {
    for (const [app, currency] of [
      [staged, 'eur'],
      [built, 'usd'],
    ] as const) {
      for (const stack of [app.apiStack, app.billingStack, app.webhooksStack]) {
        const fns = resourcesOf(Template.fromStack(stack), 'AWS::Lambda::Function').filter(
          ([, f]) => f.Properties.Environment?.Variables?.STAGE === 'aws',
        );
        expect(fns.length, stack.stackName).toBeGreaterThan(0);
        for (const [id, f] of fns) expect(f.Properties.Environment.Variables.CURRENCY, id).toBe(currency);
      }
    }
    expect(() => buildApp({ context: { currency: 'jpy' } })).toThrow(/Context currency=jpy/);
  });

  it('prefixes every fixed name with the stage (stacks, topic, API, panel-key secrets); none without a stage', () => {
    expect([built.dataStack!, built.apiStack, built.billingStack].map((s) => s.stackName)).toEqual([
      'ControlPlaneData',
      'ControlPlaneApi',
      'ControlPlaneBilling',
    ]);
    expect([staged.dataStack!, staged.apiStack, staged.billingStack].map((s) => s.stackName)).toEqual([
      'staging-ControlPlaneData',
      'staging-ControlPlaneApi',
      'staging-ControlPlaneBilling',
    ]);
    const api = Template.fromStack(staged.apiStack);
    const billing = Template.fromStack(staged.billingStack);
    expect(resourcesOf(api, 'AWS::SNS::Topic')[0]![1].Properties.TopicName).toBe('staging-ControlPlaneAlarms');
    expect(resourcesOf(api, 'AWS::ApiGatewayV2::Api')[0]![1].Properties.Name).toBe('staging-control-plane');
    for (const template of [api, billing]) {
      for (const [id, f] of resourcesOf(template, 'AWS::Lambda::Function')) {
        if (f.Properties.Environment.Variables.SECRETS_PREFIX !== undefined) {
          expect(f.Properties.Environment.Variables.SECRETS_PREFIX, id).toBe('control-plane-staging');
        }
      }
      const docs = resourcesOf(template, 'AWS::IAM::Policy').map(([, p]) => JSON.stringify(p.Properties.PolicyDocument));
      expect(docs.join()).toContain('secret:control-plane-staging/instances/*');
      expect(docs.join()).not.toContain('secret:control-plane/instances/*');
    }
    // Without a stage nothing is renamed (an existing deployment stays as it is).
    expect(resourcesOf(apiTemplate, 'AWS::SNS::Topic')[0]![1].Properties.TopicName).toBe('ControlPlaneAlarms');
    expect(() => buildApp({ context: { stage: 'Bad Stage' } })).toThrow(/stage/);
  });

  it('maps a custom domain with its ACM certificate to the $default stage, and outputs the DNS target', () => {
    const api = Template.fromStack(staged.apiStack);
    const [, domain] = resourcesOf(api, 'AWS::ApiGatewayV2::DomainName')[0]!;
    expect(domain.Properties.DomainName).toBe('api.example.com');
    expect(JSON.stringify(domain.Properties.DomainNameConfigurations)).toContain('arn:aws:acm:eu-west-1:123456789012:certificate/');
    api.resourceCountIs('AWS::ApiGatewayV2::ApiMapping', 1);
    expect(Object.keys(api.toJSON().Outputs)).toEqual(expect.arrayContaining(['CustomDomainTarget', 'CustomDomainHostedZoneId']));
    apiTemplate.resourceCountIs('AWS::ApiGatewayV2::DomainName', 0);
    expect(() => buildApp({ context: { domainName: 'api.example.com' } })).toThrow(/certificateArn/);
  });

  it('sends Cognito e-mail through SES from the configured address', () => {
    const [, pool] = resourcesOf(Template.fromStack(staged.apiStack), 'AWS::Cognito::UserPool')[0]!;
    expect(pool.Properties.EmailConfiguration).toMatchObject({ EmailSendingAccount: 'DEVELOPER', From: 'no-reply@example.com' });
    expect(JSON.stringify(pool.Properties.EmailConfiguration.SourceArn)).toContain(':identity/no-reply@example.com');
    const [, defaultPool] = resourcesOf(apiTemplate, 'AWS::Cognito::UserPool')[0]!;
    expect(defaultPool.Properties.EmailConfiguration?.EmailSendingAccount ?? 'COGNITO_DEFAULT').toBe('COGNITO_DEFAULT');
  });
});
