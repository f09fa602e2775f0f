import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { App, Stack, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { AwsSolutionsChecks } from 'cdk-nag';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleAll, handlerGroups, type BundleResult } from '../../infra/bundle.ts';
import { buildApp, type BuiltApp } from '../../infra/app.ts';
import { GROUPS, routeEntries, toTemplatePath } from '../../shared/api/routes.ts';
import { createTableInput, TABLE } from '../../shared/db/table.ts';

/**
 * The CDK app against the project's sources of truth: the table from shared/db/table.ts, the API
 * routes from the route table, the house defaults of every function, cdk-nag, and the bundles.
 * Bundles once (about 2 s), then builds and synthesizes the app once into a temporary directory.
 */
const MAX_BUNDLE_BYTES = 1.5 * 1024 * 1024;

type Resource = { Type: string; Properties: Record<string, any>; DeletionPolicy?: string; UpdateReplacePolicy?: string };

let bundles: BundleResult[];
let built: BuiltApp;
let outdir: string;
let dataTemplate: Template;
let apiTemplate: Template;
/** What synthesis threw, if anything (asserted by the cdk-nag test, so the other tests still report). */
let synthError: unknown;

/** Groups that get a function in AWS: a handler exists, the group is in the route table, not `dev`. */
let deployed: string[];

beforeAll(async () => {
  bundles = await bundleAll();
  outdir = mkdtempSync(join(tmpdir(), 'cdk-test-'));
  built = buildApp({ outdir, account: '123456789012', region: 'eu-west-1' });
  // Synthesis runs the cdk-nag plugin (Validations): any unacknowledged finding throws here.
  try {
    built.app.synth();
  } catch (err) {
    synthError = err;
  }
  // The templates synthesis wrote (they are written before validation runs, so a nag failure
  // still leaves the other tests something to check). Template.fromStack would re-run the plugin.
  const written = (stack: Stack) => Template.fromJSON(JSON.parse(readFileSync(join(outdir, stack.templateFile), 'utf8')));
  dataTemplate = written(built.dataStack);
  apiTemplate = written(built.apiStack);
  deployed = handlerGroups().filter((g) => (GROUPS as readonly string[]).includes(g) && g !== 'dev');
}, 120_000);

afterAll(() => {
  if (outdir) rmSync(outdir, { recursive: true, force: true });
});

const resourcesOf = (template: Template, type: string): [string, Resource][] =>
  Object.entries(template.findResources(type)) as [string, Resource][];

const logicalId = (stack: Stack, construct: { node: { defaultChild?: unknown } }): string =>
  stack.getLogicalId(construct.node.defaultChild as CfnElement);

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
    expect(built.dataStack.terminationProtection).toBe(true);
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

  it('deploys a function for each group with a handler (at least public, account, admin)', () => {
    expect(deployed).toEqual(expect.arrayContaining(['public', 'account', 'admin']));
    expect([...built.apiStack.functions.keys()].sort()).toEqual([...deployed].sort());
  });

  it('has every non-dev route of a deployed group, integrated with that group\'s function', () => {
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

  it('logs access on the $default stage, with throttling', () => {
    const stages = resourcesOf(apiTemplate, 'AWS::ApiGatewayV2::Stage');
    expect(stages).toHaveLength(1);
    const stage = stages[0]![1].Properties;
    expect(stage.StageName).toBe('$default');
    expect(stage.AutoDeploy).toBe(true);
    expect(stage.AccessLogSettings.DestinationArn).toBeDefined();
    expect(JSON.parse(stage.AccessLogSettings.Format)).toMatchObject({ requestId: '$context.requestId', status: '$context.status' });
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
    const functions = resourcesOf(apiTemplate, 'AWS::Lambda::Function');
    expect(functions).toHaveLength(deployed.length);
    const poolId = logicalId(built.apiStack, built.apiStack.userPool!);
    const clientId = logicalId(built.apiStack, built.apiStack.userPoolClient!);
    for (const [id, fn] of functions) {
      const p = fn.Properties;
      expect(p.Runtime, id).toBe('nodejs24.x');
      expect(p.Architectures, id).toEqual(['arm64']);
      expect(p.Handler, id).toBe('index.handler');
      expect(p.MemorySize, id).toBe(512);
      expect(p.Timeout, id).toBeGreaterThanOrEqual(10);
      expect(p.Timeout, id).toBeLessThanOrEqual(29);
      expect(p.TracingConfig, id).toEqual({ Mode: 'Active' });
      expect(p.LoggingConfig?.LogGroup?.Ref, id).toBeDefined();
      const env = p.Environment.Variables as Record<string, unknown>;
      expect(env).toMatchObject({ STAGE: 'aws', NODE_OPTIONS: '--enable-source-maps', LOG_LEVEL: 'info', ADMIN_EMAILS: '', OIDC_TOKEN_USE: 'id' });
      for (const name of ['TABLE_NAME', 'CURSOR_SECRET', 'OIDC_ISSUER', 'OIDC_JWKS_URL', 'OIDC_AUDIENCE', 'POWERTOOLS_SERVICE_NAME']) {
        expect(env[name], `${id} ${name}`).toBeDefined();
      }
      expect(JSON.stringify(env.OIDC_ISSUER)).toContain('https://cognito-idp.eu-west-1.amazonaws.com/');
      expect(JSON.stringify(env.OIDC_ISSUER)).toContain(poolId);
      expect(env.OIDC_AUDIENCE).toEqual({ Ref: clientId });
      // The cursor key is a deploy-time dynamic reference, never a literal in the template.
      expect(JSON.stringify(env.CURSOR_SECRET)).toContain('{{resolve:secretsmanager:');
    }
  });

  it('keeps each function log group one month and grants table access without wildcards', () => {
    for (const fn of built.apiStack.functions.values()) {
      const group = resourcesOf(apiTemplate, 'AWS::Logs::LogGroup').find(([id]) => id === logicalId(built.apiStack, fn.logGroup));
      expect(group?.[1].Properties.RetentionInDays).toBe(30);
    }
    const policies = resourcesOf(apiTemplate, 'AWS::IAM::Policy').map(([, p]) => JSON.stringify(p.Properties.PolicyDocument));
    expect(policies).toHaveLength(deployed.length);
    for (const doc of policies) {
      expect(doc).toContain('dynamodb:PutItem');
      expect(doc).not.toContain('/index/*');
      for (const index of TABLE.indexes) expect(doc).toContain(`/index/${index.name}`);
    }
    expect(resourcesOf(apiTemplate, 'AWS::IAM::Role').map(([, r]) => JSON.stringify(r.Properties))).not.toContain('AWSLambdaBasicExecutionRole');
  });

  it('gives the functions that wait on panels longer timeouts (a server create may take the panel 20 s)', () => {
    const timeoutOf = (group: string) => {
      const fn = built.apiStack.functions.get(group as never)!;
      return resourcesOf(apiTemplate, 'AWS::Lambda::Function').find(([id]) => id === logicalId(built.apiStack, fn.fn))![1].Properties.Timeout;
    };
    expect(timeoutOf('servers')).toBe(29);
    expect(timeoutOf('account')).toBe(10);
  });

  it('lets only the admin function write panel keys; panel readers may only read them; others get nothing', () => {
    const docOf = (group: string) => {
      const fn = built.apiStack.functions.get(group as never)!;
      const roleId = logicalId(built.apiStack, fn.role);
      const policy = resourcesOf(apiTemplate, 'AWS::IAM::Policy').find(([, p]) => JSON.stringify(p.Properties.Roles).includes(roleId));
      return JSON.stringify(policy?.[1].Properties.PolicyDocument ?? {});
    };
    const admin = docOf('admin');
    for (const action of ['CreateSecret', 'PutSecretValue', 'DeleteSecret', 'GetSecretValue']) expect(admin).toContain(`secretsmanager:${action}`);
    expect(admin).toContain('secret:control-plane/instances/*');
    const catalog = docOf('catalog');
    expect(catalog).toContain('secretsmanager:GetSecretValue');
    expect(catalog).not.toContain('secretsmanager:PutSecretValue');
    for (const group of ['public', 'account']) expect(docOf(group)).not.toContain('control-plane/instances');
  });

  it('trusts an external issuer instead of Cognito when oidcIssuer and oidcAudience are given', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cdk-test-oidc-'));
    try {
      const external = buildApp({
        outdir: dir,
        region: 'eu-west-1',
        context: { oidcIssuer: 'https://login.example.com/', oidcAudience: 'control-plane', adminEmails: 'ops@example.com, boss@example.com' },
      });
      const template = Template.fromStack(external.apiStack);
      template.resourceCountIs('AWS::Cognito::UserPool', 0);
      const functions = resourcesOf(template, 'AWS::Lambda::Function');
      expect(functions).toHaveLength(deployed.length);
      for (const [, fn] of functions) {
        expect(fn.Properties.Environment.Variables).toMatchObject({
          OIDC_ISSUER: 'https://login.example.com',
          OIDC_JWKS_URL: 'https://login.example.com/.well-known/jwks.json',
          OIDC_AUDIENCE: 'control-plane',
          ADMIN_EMAILS: 'ops@example.com,boss@example.com',
        });
        expect(fn.Properties.Environment.Variables.OIDC_TOKEN_USE).toBeUndefined();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('cdk-nag (AwsSolutions)', () => {
  it('reports no unacknowledged finding on either stack, and synthesis (which runs it) succeeds', () => {
    for (const stack of [built.dataStack, built.apiStack]) {
      const report = built.nag.validateScope(stack);
      expect(report.violations.map((v) => `${v.ruleName} @ ${v.violatingResources.map((r) => r.constructPath).join(', ')}`), stack.stackName).toEqual([]);
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
      expect(b.bytes).toBeGreaterThan(10_000);
      expect(existsSync(join(b.dir, 'index.mjs.map')), `${b.group} source map`).toBe(true);
    }
  });

  it('ship the Swagger UI assets with the public function only', () => {
    for (const b of bundles) {
      const assets = existsSync(join(b.dir, 'assets')) ? readdirSync(join(b.dir, 'assets')).sort() : [];
      expect(assets, b.group).toEqual(b.group === 'public' ? ['swagger-ui-bundle.js', 'swagger-ui.css'] : []);
    }
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
});
