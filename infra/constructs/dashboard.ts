import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CfnOutput, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as acm from 'aws-cdk-lib/aws-certificatemanager';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import type * as iam from 'aws-cdk-lib/aws-iam';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3deploy from 'aws-cdk-lib/aws-s3-deployment';
import { Construct } from 'constructs';
import type { DashboardConfig } from '../../web/dashboard-config.ts';
import { WEB_DIST } from '../../web/build.ts';
import { contentSecurityPolicy, DASHBOARD_HEADERS } from '../../web/security-headers.ts';

/** The dashboard's base path (web/vite.config.ts `base`): its objects are stored under `app/`. */
export const DASHBOARD_BASE = '/app/';

/** Paths CloudFront sends to the HTTP API instead of the bucket: the API on the dashboard's own origin. */
export const API_PATH_PATTERNS = ['/v1/*', '/openapi.json', '/docs', '/docs/*'] as const;

/** HSTS: two years, subdomains included (the value hstspreload.org asks for). */
export const HSTS_MAX_AGE = Duration.days(730);

/**
 * The viewer-request function of the default (bucket) behaviour. The dashboard is a single-page
 * app: a path under /app/ without a file extension (/app/, /app/servers/srv_1, /app/callback) is
 * a page and gets /app/index.html; files (/app/assets/*.js, /app/config.json) are fetched as
 * they are. `/` and `/app` redirect to /app/. The rewritten URI is the cache key, so every page
 * shares the one cached index.html (and its one invalidation).
 */
export const VIEWER_REQUEST_FUNCTION = `function handler(event) {
  var request = event.request;
  var uri = request.uri;
  if (uri === '/' || uri === '/app') {
    return { statusCode: 302, statusDescription: 'Found', headers: { location: { value: '/app/' }, 'cache-control': { value: 'no-cache' } } };
  }
  if (uri.indexOf('/app/') === 0) {
    var last = uri.substring(uri.lastIndexOf('/') + 1);
    if (last.indexOf('.') === -1) request.uri = '/app/index.html';
  }
  return request;
}`;

/** The identity provider's origins, which the CSP must allow. */
export interface IdentityOrigins {
  /** Origins the browser fetches from (discovery document, token endpoint): connect-src. */
  connect: string[];
  /** Origins a sign-in form may post to: form-action. */
  formAction: string[];
}

export interface DashboardProps {
  /** The HTTP API that `/v1/*` (and /openapi.json, /docs) go to. */
  apiId: string;
  identityOrigins: IdentityOrigins;
  /** A custom domain for the dashboard: its name and an ACM certificate in us-east-1 (CloudFront's region). */
  customDomain?: { domainName: string; certificateArn: string };
  /** Built web app (default web/dist, built by infra/app.ts and the infra tests before synthesis). */
  distDir?: string;
}

/**
 * The dashboard in AWS: web/dist in a private S3 bucket, served by CloudFront (origin access
 * control, HTTPS only, the security headers and strict CSP of web/security-headers.ts), with the
 * API's paths forwarded to API Gateway on the same origin (no CORS needed). The build and its
 * config.json are deployed afterwards with `deploy(oidc)`, because the OIDC client needs the
 * distribution's domain in its callback URLs and config.json needs the client: one construct in
 * one stack, no cycle (client → distribution → HTTP API; the API itself needs neither).
 */
export class Dashboard extends Construct {
  readonly bucket: s3.Bucket;
  readonly logBucket: s3.Bucket;
  readonly distribution: cloudfront.Distribution;
  readonly responseHeaders: cloudfront.ResponseHeadersPolicy;
  readonly viewerRequest: cloudfront.Function;
  /** `https://<domain>`: the custom domain if any, else the distribution's own. */
  readonly url: string;
  /** Every origin the dashboard is served on (callback and logout URLs are registered for each). */
  readonly origins: string[];
  /** The Content-Security-Policy header the distribution sends. */
  readonly csp: string;
  private readonly distDir: string;
  private deployed = false;

  constructor(scope: Construct, id: string, props: DashboardProps) {
    super(scope, id);
    this.distDir = props.distDir ?? WEB_DIST;
    if (!existsSync(join(this.distDir, 'index.html'))) {
      throw new Error(`No dashboard build at ${this.distDir}: run \`npm run web\` first (infra/app.ts builds it before synthesis)`);
    }
    const stack = Stack.of(this);

    // Access logs of the bucket and of CloudFront (standard logs), kept 90 days. Retained with the
    // stack: the lifecycle rule still empties it, and a stack deletion never fails on a full bucket.
    // CloudFront's standard logs are delivered with an ACL grant, hence object ownership
    // "bucket owner preferred" (the only thing ACLs are enabled for; no public access at all).
    this.logBucket = new s3.Bucket(this, 'Logs', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
      lifecycleRules: [{ expiration: Duration.days(90), abortIncompleteMultipartUploadAfter: Duration.days(1) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(this.logBucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason: 'This is the access log bucket of the dashboard bucket and distribution; logging it into itself would loop.',
    });

    // The build. Not versioned: every object is rebuilt from the repository at each deployment, and
    // a rollback is a redeployment of the older commit; versions would only keep every old build.
    // Destroyed with the stack (autoDelete off: CloudFormation refuses to delete it while it holds
    // objects, so `cdk destroy` stops until the operator empties it; nothing else is lost).
    this.bucket = new s3.Bucket(this, 'Bucket', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      versioned: false,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: this.logBucket,
      serverAccessLogsPrefix: 's3/',
      removalPolicy: RemovalPolicy.DESTROY,
      autoDeleteObjects: false,
    });

    this.viewerRequest = new cloudfront.Function(this, 'ViewerRequest', {
      code: cloudfront.FunctionCode.fromInline(VIEWER_REQUEST_FUNCTION),
      runtime: cloudfront.FunctionRuntime.JS_2_0,
      comment: 'Dashboard: app paths to /app/index.html, / to /app/',
    });

    this.csp = contentSecurityPolicy({ connect: props.identityOrigins.connect, formAction: props.identityOrigins.formAction });
    this.responseHeaders = new cloudfront.ResponseHeadersPolicy(this, 'SecurityHeaders', {
      comment: 'Dashboard: strict CSP and security headers (web/security-headers.ts)',
      securityHeadersBehavior: securityHeaders(this.csp),
      customHeadersBehavior: {
        customHeaders: Object.entries(DASHBOARD_HEADERS)
          .filter(([name]) => !SECURITY_HEADER_NAMES.has(name))
          .map(([header, value]) => ({ header, value, override: true })),
      },
    });

    // The API: API Gateway's execute-api domain, HTTPS (TLS 1.2) only, nothing cached, every
    // method, the viewer's headers, query and cookies forwarded but Host (API Gateway routes on its own).
    const apiOrigin = new origins.HttpOrigin(`${props.apiId}.execute-api.${stack.region}.${stack.urlSuffix}`, {
      protocolPolicy: cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
      originSslProtocols: [cloudfront.OriginSslPolicy.TLS_V1_2],
    });
    const apiBehavior: cloudfront.BehaviorOptions = {
      origin: apiOrigin,
      viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
      allowedMethods: cloudfront.AllowedMethods.ALLOW_ALL,
      cachePolicy: cloudfront.CachePolicy.CACHING_DISABLED,
      originRequestPolicy: cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
      compress: true,
    };

    const certificate = props.customDomain
      ? acm.Certificate.fromCertificateArn(this, 'Certificate', props.customDomain.certificateArn)
      : undefined;
    this.distribution = new cloudfront.Distribution(this, 'Distribution', {
      comment: 'Hosting control plane dashboard',
      defaultBehavior: {
        origin: origins.S3BucketOrigin.withOriginAccessControl(this.bucket),
        viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        allowedMethods: cloudfront.AllowedMethods.ALLOW_GET_HEAD,
        cachePolicy: cloudfront.CachePolicy.CACHING_OPTIMIZED,
        responseHeadersPolicy: this.responseHeaders,
        compress: true,
        functionAssociations: [{ function: this.viewerRequest, eventType: cloudfront.FunctionEventType.VIEWER_REQUEST }],
      },
      additionalBehaviors: Object.fromEntries(API_PATH_PATTERNS.map((pattern) => [pattern, apiBehavior])),
      // North America and Europe only: the cheapest price class; others are served from there too.
      priceClass: cloudfront.PriceClass.PRICE_CLASS_100,
      httpVersion: cloudfront.HttpVersion.HTTP2_AND_3,
      enableIpv6: true,
      enableLogging: true,
      logBucket: this.logBucket,
      logFilePrefix: 'cloudfront/',
      ...(props.customDomain && certificate
        ? {
            domainNames: [props.customDomain.domainName],
            certificate,
            minimumProtocolVersion: cloudfront.SecurityPolicyProtocol.TLS_V1_2_2021,
          }
        : {}),
    });

    const own = `https://${this.distribution.distributionDomainName}`;
    this.origins = props.customDomain ? [`https://${props.customDomain.domainName}`, own] : [own];
    this.url = this.origins[0]!;

    new CfnOutput(stack, 'DashboardUrl', { value: `${this.url}${DASHBOARD_BASE}`, description: 'The customer dashboard' });
    if (props.customDomain) {
      new CfnOutput(stack, 'DashboardDomainTarget', {
        value: this.distribution.distributionDomainName,
        description: `Point ${props.customDomain.domainName} here (CNAME, or a Route 53 alias to the CloudFront distribution)`,
      });
    }

    const acknowledgements = [
      {
        id: 'AwsSolutions-CFR1',
        reason: 'No geo restriction: customers may be anywhere; sign-in and the API decide who gets in, not the country.',
      },
      {
        id: 'AwsSolutions-CFR2',
        reason:
          'No AWS WAF web ACL: it costs at least ≈ $6/month (ACL + rules) before requests, more than the dashboard itself at this scale. The API behind /v1 has its own per-credential and per-IP rate limits and API Gateway throttling; add a web ACL when traffic warrants it.',
      },
    ];
    if (!props.customDomain) {
      acknowledgements.push({
        id: 'AwsSolutions-CFR4',
        reason:
          "The distribution uses CloudFront's default certificate (*.cloudfront.net), with which CloudFront cannot enforce a minimum TLS version. Context dashboardDomainName + dashboardCertificateArn gives a custom domain with TLS 1.2 minimum (docs/deploy.md).",
      });
    }
    Validations.of(this.distribution).acknowledge(...acknowledgements);
  }

  /**
   * Deploys the build and its config.json (the identity provider for oidc-client-ts). Index and config are re-read on every load
   * (`no-cache`) and invalidated at each deployment; the hashed assets are immutable. Called once.
   */
  deploy(oidc: DashboardConfig['oidc']): void {
    if (this.deployed) throw new Error('Dashboard.deploy() is called once');
    this.deployed = true;
    const config: DashboardConfig = { oidc: { scope: 'openid email profile', ...oidc } };

    // One log group for the deployment function (a singleton shared by both deployments).
    const logGroup = new logs.LogGroup(this, 'DeploymentLogs', {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const prefix = DASHBOARD_BASE.slice(1);
    // One asset (uploaded once), filtered by each deployment. The hashed assets first, never
    // pruned: a browser still holding the previous index.html keeps finding the files it names
    // while the new one rolls out (old builds are a few hundred KB each).
    const build = s3deploy.Source.asset(this.distDir);
    const assets = new s3deploy.BucketDeployment(this, 'Assets', {
      sources: [build],
      destinationBucket: this.bucket,
      destinationKeyPrefix: prefix,
      exclude: ['index.html', 'config.json'],
      prune: false,
      cacheControl: [
        s3deploy.CacheControl.setPublic(),
        s3deploy.CacheControl.maxAge(Duration.days(365)),
        s3deploy.CacheControl.immutable(),
      ],
      outputObjectKeys: false,
      logGroup,
    });
    // Then what names them: index.html and config.json, re-validated on every load, invalidated.
    const entry = new s3deploy.BucketDeployment(this, 'Entry', {
      sources: [build, s3deploy.Source.jsonData('config.json', config)],
      destinationBucket: this.bucket,
      destinationKeyPrefix: prefix,
      include: ['index.html', 'config.json'],
      exclude: ['*'],
      prune: false,
      cacheControl: [s3deploy.CacheControl.noCache()],
      distribution: this.distribution,
      distributionPaths: [`${DASHBOARD_BASE}index.html`, `${DASHBOARD_BASE}config.json`],
      outputObjectKeys: false,
      logGroup,
    });
    entry.node.addDependency(assets);

    acknowledgeDeploymentFunction(Stack.of(this), assets);
  }
}

/**
 * BucketDeployment's function is a singleton of the stack (`Custom::CDKBucketDeployment<uuid>`),
 * created and granted by CDK: its findings are acknowledged there, the wildcards one by one as
 * cdk-nag names them (read from its role's policy, so a CDK upgrade that changes them is followed).
 */
function acknowledgeDeploymentFunction(stack: Stack, deployment: s3deploy.BucketDeployment): void {
  const handler = stack.node.children.find((c) => c.node.id.startsWith('Custom::CDKBucketDeployment'));
  if (!handler) throw new Error('BucketDeployment function not found');
  const policy = deployment.handlerRole.node.tryFindChild('DefaultPolicy') as iam.Policy | undefined;
  const statements =
    (stack.resolve(policy?.document.toJSON()) as { Statement?: { Action: string | string[]; Resource: unknown }[] })?.Statement ?? [];
  const wildcards = new Set<string>();
  for (const statement of statements) {
    for (const action of [statement.Action].flat()) if (action.includes('*')) wildcards.add(`Action::${action}`);
    for (const resource of [statement.Resource].flat()) {
      const name = nagName(resource);
      if (name.includes('*')) wildcards.add(`Resource::${name}`);
    }
  }
  const reason =
    "BucketDeployment's function (CDK-managed) copies the build from the CDK asset bucket into the dashboard bucket and invalidates the distribution: s3:GetObject*/GetBucket*/List* on the asset object, s3:DeleteObject*/Abort*/PutObject*/List* on <dashboard bucket>/*, and cloudfront:CreateInvalidation/GetInvalidation, which support no resource-level permission (Resource *).";
  Validations.of(handler).acknowledge(
    {
      id: 'AwsSolutions-L1',
      reason: "BucketDeployment's function: its runtime is CDK's choice and moves with aws-cdk-lib upgrades.",
    },
    {
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      reason: "BucketDeployment's function role (CDK-managed): the basic execution policy, for its own logs.",
    },
    ...[...wildcards].map((finding) => ({ id: `AwsSolutions-IAM5[${finding}]`, reason })),
  );
}

/** A resource as cdk-nag prints it: `Ref` as `<Id>`, `Fn::GetAtt` as `<Id.Attr>`, `Fn::Join` joined, `${X}` of `Fn::Sub` as `<X>`. */
function nagName(value: unknown): string {
  if (typeof value === 'string') return value;
  const v = value as { Ref?: string; 'Fn::GetAtt'?: [string, string]; 'Fn::Join'?: [string, unknown[]]; 'Fn::Sub'?: unknown };
  if (v.Ref) return `<${v.Ref}>`;
  // The CDK asset bucket of an environment-agnostic stack: `cdk-…-assets-${AWS::AccountId}-…`.
  if (typeof v['Fn::Sub'] === 'string') return v['Fn::Sub'].replace(/\$\{([^}]+)\}/g, '<$1>');
  if (v['Fn::GetAtt']) return `<${v['Fn::GetAtt'].join('.')}>`;
  if (v['Fn::Join']) return v['Fn::Join'][1].map(nagName).join(v['Fn::Join'][0]);
  return JSON.stringify(value);
}

/** Headers the response headers policy sets as security headers (not allowed as custom headers too). */
const SECURITY_HEADER_NAMES = new Set(['x-content-type-options', 'x-frame-options', 'referrer-policy', 'strict-transport-security']);

function securityHeaders(csp: string): cloudfront.ResponseSecurityHeadersBehavior {
  return {
    contentSecurityPolicy: { contentSecurityPolicy: csp, override: true },
    strictTransportSecurity: { accessControlMaxAge: HSTS_MAX_AGE, includeSubdomains: true, override: true },
    contentTypeOptions: { override: true },
    frameOptions: { frameOption: cloudfront.HeadersFrameOption.DENY, override: true },
    referrerPolicy: { referrerPolicy: cloudfront.HeadersReferrerPolicy.NO_REFERRER, override: true },
  };
}
