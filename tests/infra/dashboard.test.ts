import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CfnElement, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type BuiltApp } from '../../infra/app.ts';
import { API_PATH_PATTERNS, VIEWER_REQUEST_FUNCTION } from '../../infra/constructs/dashboard.ts';
import { contentSecurityPolicy, DASHBOARD_HEADERS } from '../../web/security-headers.ts';
import { bundlesOfThisRun, withBuildLock } from '../helpers/build-lock.ts';

/**
 * The dashboard in AWS (infra/constructs/dashboard.ts, wired in ApiStack): a private bucket read by
 * CloudFront through origin access control, HTTPS only, the CSP of web/security-headers.ts, the
 * API on the same origin under /v1/*, and the Cognito app client whose ID tokens the API accepts.
 * Two apps are synthesized: the default (Cognito, the distribution's own domain) and one with an
 * external issuer, a dashboard client registered there and a custom domain.
 */
type Resource = { Type: string; Properties: Record<string, any>; DependsOn?: string[] };

interface Synthesized {
  built: BuiltApp;
  template: Template;
  outdir: string;
  synthError: unknown;
}

function synth(context: Record<string, unknown>, account: string | undefined = '123456789012'): Synthesized {
  const outdir = mkdtempSync(join(tmpdir(), 'cdk-dashboard-'));
  const built = buildApp({ outdir, ...(account ? { account } : {}), region: 'eu-west-1', context });
  let synthError: unknown;
  try {
    built.app.synth();
  } catch (err) {
    synthError = err;
  }
  const template = Template.fromJSON(JSON.parse(readFileSync(join(outdir, built.apiStack.templateFile), 'utf8')));
  return { built, template, outdir, synthError };
}

const EXTERNAL = {
  oidcIssuer: 'https://login.example.com/',
  oidcAudience: 'control-plane',
  dashboardOidcClientId: 'dashboard-client',
  dashboardDomainName: 'app.example.com',
  dashboardCertificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/0000-1111',
};

let main: Synthesized;
let external: Synthesized;
/** As `cdk synth` without AWS credentials makes it: no account (tokens where it appears). */
let agnostic: Synthesized;

beforeAll(async () => {
  await bundlesOfThisRun();
  await withBuildLock(async () => {
    main = synth({});
    external = synth(EXTERNAL);
    agnostic = synth({}, undefined);
  });
}, 900_000);

afterAll(() => {
  for (const s of [main, external, agnostic]) if (s) rmSync(s.outdir, { recursive: true, force: true });
});

const resourcesOf = (template: Template, type: string): [string, Resource][] =>
  Object.entries(template.findResources(type)) as [string, Resource][];
const only = (template: Template, type: string): [string, Resource] => {
  const found = resourcesOf(template, type);
  expect(found, type).toHaveLength(1);
  return found[0]!;
};
const logicalId = (stack: Stack, construct: { node: { defaultChild?: unknown } }): string =>
  stack.getLogicalId(construct.node.defaultChild as CfnElement);
const distributionConfig = (s: Synthesized) => only(s.template, 'AWS::CloudFront::Distribution')[1].Properties.DistributionConfig;

/** The config.json that BucketDeployment writes (its asset in the cloud assembly; tokens as markers). */
function deployedConfig(s: Synthesized): { json: any; markers: Record<string, unknown> } {
  const entry = resourcesOf(s.template, 'Custom::CDKBucketDeployment').find(([, r]) => r.Properties.DistributionPaths)![1].Properties;
  const index = (entry.SourceObjectKeys as string[]).findIndex((key) =>
    existsSync(join(s.outdir, `asset.${key.replace(/\.zip$/, '')}`, 'config.json')),
  );
  expect(index).toBeGreaterThanOrEqual(0);
  const file = join(s.outdir, `asset.${entry.SourceObjectKeys[index].replace(/\.zip$/, '')}`, 'config.json');
  return { json: JSON.parse(readFileSync(file, 'utf8')), markers: entry.SourceMarkers?.[index] ?? {} };
}

describe('dashboard bucket: private, read by CloudFront only', () => {
  it('blocks all public access, enforces TLS, is encrypted, logs access, and is not a website', () => {
    const bucketId = logicalId(main.built.apiStack, main.built.apiStack.dashboard!.bucket);
    const bucket = resourcesOf(main.template, 'AWS::S3::Bucket').find(([id]) => id === bucketId)![1].Properties;
    expect(bucket.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(bucket.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault.SSEAlgorithm).toBe('AES256');
    expect(bucket.WebsiteConfiguration).toBeUndefined();
    expect(bucket.VersioningConfiguration).toBeUndefined();
    expect(bucket.LoggingConfiguration.DestinationBucketName).toBeDefined();
    // Every bucket of the stack blocks public access (the log bucket too).
    for (const [id, b] of resourcesOf(main.template, 'AWS::S3::Bucket')) {
      expect(b.Properties.PublicAccessBlockConfiguration?.RestrictPublicBuckets, id).toBe(true);
    }
  });

  it('lets only cloudfront.amazonaws.com read objects, for this distribution (SourceArn), and denies plain HTTP', () => {
    const bucketId = logicalId(main.built.apiStack, main.built.apiStack.dashboard!.bucket);
    const distributionId = logicalId(main.built.apiStack, main.built.apiStack.dashboard!.distribution);
    const policy = resourcesOf(main.template, 'AWS::S3::BucketPolicy').find(([, p]) => p.Properties.Bucket.Ref === bucketId)![1];
    const statements = policy.Properties.PolicyDocument.Statement as any[];
    const allows = statements.filter((s) => s.Effect === 'Allow');
    expect(allows).toHaveLength(1);
    expect(allows[0].Principal).toEqual({ Service: 'cloudfront.amazonaws.com' });
    expect(allows[0].Action).toBe('s3:GetObject');
    expect(JSON.stringify(allows[0].Condition.StringEquals['AWS:SourceArn'])).toContain(`"Ref":"${distributionId}"`);
    const deny = statements.find((s) => s.Effect === 'Deny');
    expect(deny.Condition).toEqual({ Bool: { 'aws:SecureTransport': 'false' } });
  });

  it('is the default origin through origin access control (OAC, signing always), not an origin access identity', () => {
    const [oacId, oac] = only(main.template, 'AWS::CloudFront::OriginAccessControl');
    expect(oac.Properties.OriginAccessControlConfig).toMatchObject({ OriginAccessControlOriginType: 's3', SigningBehavior: 'always' });
    const config = distributionConfig(main);
    const s3Origin = config.Origins.find((o: any) => o.Id === config.DefaultCacheBehavior.TargetOriginId);
    expect(s3Origin.OriginAccessControlId).toEqual({ 'Fn::GetAtt': [oacId, 'Id'] });
    expect(s3Origin.S3OriginConfig.OriginAccessIdentity).toBe('');
    main.template.resourceCountIs('AWS::CloudFront::CloudFrontOriginAccessIdentity', 0);
  });
});

describe('dashboard distribution', () => {
  it('redirects HTTP to HTTPS on every behaviour, compresses, and writes standard logs', () => {
    const config = distributionConfig(main);
    for (const behavior of [config.DefaultCacheBehavior, ...config.CacheBehaviors]) {
      expect(behavior.ViewerProtocolPolicy, behavior.PathPattern ?? 'default').toBe('redirect-to-https');
      expect(behavior.Compress).toBe(true);
    }
    expect(config.Logging.Bucket).toBeDefined();
    expect(config.Enabled).toBe(true);
  });

  it('sends the CSP of web/security-headers.ts with the identity provider in connect-src and form-action', () => {
    const stack = main.built.apiStack;
    const hostedUi = stack.userPoolDomain!.baseUrl();
    const expected = contentSecurityPolicy({ connect: ['https://cognito-idp.eu-west-1.amazonaws.com', hostedUi], formAction: [hostedUi] });
    const [, policy] = only(main.template, 'AWS::CloudFront::ResponseHeadersPolicy');
    const security = policy.Properties.ResponseHeadersPolicyConfig.SecurityHeadersConfig;
    expect(security.ContentSecurityPolicy).toEqual({ ContentSecurityPolicy: stack.resolve(expected), Override: true });
    // Readable form: the hosted UI's domain (a Ref of the UserPoolDomain) in both directives.
    const rendered = render(security.ContentSecurityPolicy.ContentSecurityPolicy);
    expect(rendered).toContain("script-src 'self';");
    expect(rendered).toContain("connect-src 'self' wss: https: https://cognito-idp.eu-west-1.amazonaws.com https://<UserPoolHostedUi");
    expect(rendered).toMatch(/form-action 'self' https:\/\/<UserPoolHostedUi\w+>\.auth\.eu-west-1\.amazoncognito\.com;/);
    expect(rendered).not.toContain('unsafe');
    expect(rendered).not.toContain(' ws:');
  });

  it('sends HSTS (2 years, subdomains), nosniff, frame DENY, no-referrer and the other dashboard headers', () => {
    const [, policy] = only(main.template, 'AWS::CloudFront::ResponseHeadersPolicy');
    const { SecurityHeadersConfig: security, CustomHeadersConfig: custom } = policy.Properties.ResponseHeadersPolicyConfig;
    expect(security.StrictTransportSecurity).toEqual({
      AccessControlMaxAgeSec: 2 * 365 * 24 * 3600,
      IncludeSubdomains: true,
      Override: true,
    });
    expect(security.ContentTypeOptions).toEqual({ Override: true });
    expect(security.FrameOptions).toEqual({ FrameOption: 'DENY', Override: true });
    expect(security.ReferrerPolicy).toEqual({ ReferrerPolicy: 'no-referrer', Override: true });
    expect(DASHBOARD_HEADERS['x-content-type-options']).toBe('nosniff');
    expect(DASHBOARD_HEADERS['x-frame-options']).toBe('DENY');
    expect(DASHBOARD_HEADERS['referrer-policy']).toBe('no-referrer');
    const others = Object.entries(DASHBOARD_HEADERS).filter(
      ([name]) => !['x-content-type-options', 'x-frame-options', 'referrer-policy'].includes(name),
    );
    expect(custom.Items).toEqual(others.map(([Header, Value]) => ({ Header, Value, Override: true })));
  });

  it('sends /v1/*, /openapi.json and /docs to the HTTP API: HTTPS (TLS 1.2), nothing cached, every method, Host not forwarded', () => {
    const config = distributionConfig(main);
    const apiId = logicalId(main.built.apiStack, main.built.apiStack.api);
    expect(config.CacheBehaviors.map((b: any) => b.PathPattern)).toEqual([...API_PATH_PATTERNS]);
    for (const behavior of config.CacheBehaviors) {
      expect(behavior.CachePolicyId).toBe(cloudfront.CachePolicy.CACHING_DISABLED.cachePolicyId);
      expect(behavior.OriginRequestPolicyId).toBe(cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER.originRequestPolicyId);
      expect([...behavior.AllowedMethods].sort()).toEqual(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT']);
      // The API sets its own security headers (the Swagger page has its own CSP): no dashboard policy here.
      expect(behavior.ResponseHeadersPolicyId).toBeUndefined();
      expect(behavior.FunctionAssociations).toBeUndefined();
      const origin = config.Origins.find((o: any) => o.Id === behavior.TargetOriginId);
      expect(origin.DomainName).toEqual({ 'Fn::Join': ['', [{ Ref: apiId }, '.execute-api.eu-west-1.', { Ref: 'AWS::URLSuffix' }]] });
      expect(origin.CustomOriginConfig).toEqual({ OriginProtocolPolicy: 'https-only', OriginSSLProtocols: ['TLSv1.2'] });
    }
    // The API stays without CORS: the dashboard calls it on its own origin.
    const [, api] = only(main.template, 'AWS::ApiGatewayV2::Api');
    expect(api.Properties.CorsConfiguration).toBeUndefined();
  });

  it('maps app pages to /app/index.html and / to /app/ in a viewer-request function (cloudfront-js-2.0)', () => {
    const [fnId, fn] = only(main.template, 'AWS::CloudFront::Function');
    expect(fn.Properties.FunctionCode).toBe(VIEWER_REQUEST_FUNCTION);
    expect(fn.Properties.FunctionConfig.Runtime).toBe('cloudfront-js-2.0');
    const association = distributionConfig(main).DefaultCacheBehavior.FunctionAssociations;
    expect(association).toEqual([{ EventType: 'viewer-request', FunctionARN: { 'Fn::GetAtt': [fnId, 'FunctionARN'] } }]);

    const handler = new Function(`${VIEWER_REQUEST_FUNCTION}; return handler;`)() as (event: unknown) => any;
    const uriOf = (uri: string) => handler({ request: { uri, method: 'GET', headers: {} } }).uri;
    for (const page of ['/app/', '/app/servers', '/app/servers/srv_01HXYZ/console', '/app/callback', '/app/admin/accounts']) {
      expect(uriOf(page), page).toBe('/app/index.html');
    }
    for (const file of ['/app/config.json', '/app/assets/index-Cf-e9NLy.js', '/app/assets/index-CrT2KTIg.css', '/app/index.html']) {
      expect(uriOf(file), file).toBe(file);
    }
    for (const root of ['/', '/app']) {
      expect(handler({ request: { uri: root, method: 'GET', headers: {} } })).toMatchObject({
        statusCode: 302,
        headers: { location: { value: '/app/' } },
      });
    }
  });

  it('outputs the dashboard URL (https://<distribution domain>/app/)', () => {
    const distributionId = logicalId(main.built.apiStack, main.built.apiStack.dashboard!.distribution);
    expect(main.template.toJSON().Outputs.DashboardUrl.Value).toEqual({
      'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [distributionId, 'DomainName'] }, '/app/']],
    });
  });
});

describe('dashboard deployment (BucketDeployment)', () => {
  it('copies the hashed assets first (immutable, never pruned), then index.html and config.json (no-cache, invalidated)', () => {
    const deployments = resourcesOf(main.template, 'Custom::CDKBucketDeployment');
    expect(deployments).toHaveLength(2);
    const [assetsId, assets] = deployments.find(([, d]) => !d.Properties.DistributionPaths)!;
    const [, entry] = deployments.find(([, d]) => d.Properties.DistributionPaths)!;
    expect(assets.Properties).toMatchObject({
      DestinationBucketKeyPrefix: 'app/',
      Prune: false,
      Exclude: ['index.html', 'config.json'],
      SystemMetadata: { 'cache-control': 'public, max-age=31536000, immutable' },
    });
    expect(entry.Properties).toMatchObject({
      DestinationBucketKeyPrefix: 'app/',
      Prune: false,
      Exclude: ['*'],
      Include: ['index.html', 'config.json'],
      SystemMetadata: { 'cache-control': 'no-cache' },
      DistributionPaths: ['/app/index.html', '/app/config.json'],
    });
    expect(entry.DependsOn).toContain(assetsId);
  });

  it('writes config.json for oidc-client-ts: the pool as authority, the dashboard client, the hosted UI logout', () => {
    const stack = main.built.apiStack;
    const { json, markers } = deployedConfig(main);
    const marker = (value: string) => Object.entries(markers).find(([key]) => value.includes(key));
    expect(json.oidc.scope).toBe('openid email profile');
    expect(json.oidc.authority).toMatch(/^https:\/\/cognito-idp\.eu-west-1\.amazonaws\.com\/<<marker:/);
    expect(marker(json.oidc.authority)![1]).toEqual({ Ref: logicalId(stack, stack.userPool!) });
    expect(marker(json.oidc.clientId)![1]).toEqual({ Ref: logicalId(stack, stack.dashboardClient!) });
    expect(json.oidc.metadata.end_session_endpoint).toMatch(
      /^https:\/\/<<marker:0xbaba:\d>>\.auth\.eu-west-1\.amazoncognito\.com\/logout$/,
    );
    expect(marker(json.oidc.metadata.end_session_endpoint)![1]).toEqual({
      Ref: stack.getLogicalId(stack.userPoolDomain!.node.defaultChild as CfnElement),
    });
    expect(json.apiBaseUrl).toBeUndefined(); // same origin
  });
});

describe('Cognito: the hosted UI and the dashboard app client', () => {
  it('has a hosted UI domain with a prefix from the stage and account', () => {
    const [, domain] = only(main.template, 'AWS::Cognito::UserPoolDomain');
    expect(domain.Properties.Domain).toBe('control-plane-123456789012');
    expect(domain.Properties.CustomDomainConfig).toBeUndefined();
  });

  it('has a public dashboard client: code grant only, openid email profile, the distribution callback and logout URLs', () => {
    const stack = main.built.apiStack;
    const clients = resourcesOf(main.template, 'AWS::Cognito::UserPoolClient');
    expect(clients).toHaveLength(2);
    const dashboard = clients.find(([id]) => id === logicalId(stack, stack.dashboardClient!))![1].Properties;
    const api = clients.find(([id]) => id === logicalId(stack, stack.userPoolClient!))![1].Properties;
    const distribution = { 'Fn::GetAtt': [logicalId(stack, stack.dashboard!.distribution), 'DomainName'] };
    expect(dashboard).toMatchObject({
      GenerateSecret: false,
      AllowedOAuthFlowsUserPoolClient: true,
      AllowedOAuthFlows: ['code'],
      AllowedOAuthScopes: ['openid', 'email', 'profile'],
      CallbackURLs: [{ 'Fn::Join': ['', ['https://', distribution, '/app/callback']] }],
      LogoutURLs: [{ 'Fn::Join': ['', ['https://', distribution, '/app/']] }],
      SupportedIdentityProviders: ['COGNITO'],
      PreventUserExistenceErrors: 'ENABLED',
      // Sign-in happens on the hosted UI; of the user pools API only refreshing tokens.
      ExplicitAuthFlows: ['ALLOW_REFRESH_TOKEN_AUTH'],
    });
    for (const key of [
      'IdTokenValidity',
      'AccessTokenValidity',
      'RefreshTokenValidity',
      'TokenValidityUnits',
      'ReadAttributes',
      'WriteAttributes',
    ]) {
      expect(dashboard[key], key).toEqual(api[key]);
    }
  });

  it("makes every function accept both clients' ID tokens (OIDC_AUDIENCE and OIDC_CLIENT_IDS list both)", () => {
    const stack = main.built.apiStack;
    const both = {
      'Fn::Join': ['', [{ Ref: logicalId(stack, stack.userPoolClient!) }, ',', { Ref: logicalId(stack, stack.dashboardClient!) }]],
    };
    const functions = resourcesOf(main.template, 'AWS::Lambda::Function').filter(
      ([, f]) => f.Properties.Environment?.Variables?.OIDC_ISSUER,
    );
    expect(functions).toHaveLength(stack.functions.size + 1); // + the admin authorizer
    for (const [id, fn] of functions) {
      expect(fn.Properties.Environment.Variables.OIDC_AUDIENCE, id).toEqual(both);
      expect(fn.Properties.Environment.Variables.OIDC_CLIENT_IDS, id).toEqual(both);
    }
  });

  it('refuses a hosted UI domain prefix Cognito would refuse', () => {
    expect(() => buildApp({ context: { cognitoDomainPrefix: 'my-aws-panel' } })).toThrow(/cognitoDomainPrefix/);
  });
});

describe('an external issuer with a dashboard client, and a custom domain', () => {
  it('accepts the API audience and the dashboard client id, and lets the CSP reach the issuer', () => {
    external.template.resourceCountIs('AWS::Cognito::UserPool', 0);
    for (const [id, fn] of resourcesOf(external.template, 'AWS::Lambda::Function').filter(
      ([, f]) => f.Properties.Environment?.Variables?.OIDC_ISSUER,
    )) {
      expect(fn.Properties.Environment.Variables.OIDC_AUDIENCE, id).toBe('control-plane,dashboard-client');
    }
    const [, policy] = only(external.template, 'AWS::CloudFront::ResponseHeadersPolicy');
    expect(policy.Properties.ResponseHeadersPolicyConfig.SecurityHeadersConfig.ContentSecurityPolicy.ContentSecurityPolicy).toBe(
      contentSecurityPolicy({ connect: ['https://login.example.com'], formAction: ['https://login.example.com'] }),
    );
    const { json } = deployedConfig(external);
    // The issuer as configured: oidc-client-ts appends the well-known path after its slash.
    expect(json.oidc).toEqual({ scope: 'openid email profile', authority: 'https://login.example.com/', clientId: 'dashboard-client' });
  });

  it('serves the custom domain with its certificate (SNI, TLS 1.2 minimum) and outputs where to point it', () => {
    const config = distributionConfig(external);
    expect(config.Aliases).toEqual(['app.example.com']);
    expect(config.ViewerCertificate).toEqual({
      AcmCertificateArn: EXTERNAL.dashboardCertificateArn,
      MinimumProtocolVersion: 'TLSv1.2_2021',
      SslSupportMethod: 'sni-only',
    });
    const outputs = external.template.toJSON().Outputs;
    expect(outputs.DashboardUrl.Value).toBe('https://app.example.com/app/');
    expect(outputs.DashboardDomainTarget).toBeDefined();
  });
});

describe('cdk-nag (AwsSolutions) on the dashboard', () => {
  it('reports no unacknowledged finding: with and without a custom domain, with and without an account', () => {
    for (const s of [main, external, agnostic]) {
      const report = s.built.nag.validateScope(s.built.apiStack);
      expect(report.violations.map((v) => `${v.ruleName} @ ${v.violatingResources.map((r) => r.constructPath).join(', ')}`)).toEqual([]);
      expect(s.synthError).toBeUndefined();
    }
  });
});

/** A `Fn::Join` as text, with `<LogicalId>` for each `Ref`. */
function render(value: unknown): string {
  if (typeof value === 'string') return value;
  const v = value as { Ref?: string; 'Fn::Join'?: [string, unknown[]] };
  if (v.Ref) return `<${v.Ref}>`;
  if (v['Fn::Join']) return v['Fn::Join'][1].map(render).join(v['Fn::Join'][0]);
  return JSON.stringify(value);
}
