import { CfnOutput, Duration, Lazy, RemovalPolicy, Stack, Token, Validations, type StackProps } from 'aws-cdk-lib';
import { dnsZoneFromContext } from '../dns.ts';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { ACCESS_LOG_FIELDS } from '../access-log.ts';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaAuthorizer, HttpLambdaResponseType } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import * as acm from 'aws-cdk-lib/aws-certificatemanager';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import { ADMIN_GROUPS, GROUPS, routeEntries, toTemplatePath, type Group, type RouteDef } from '../../shared/api/routes.ts';
import { TABLE_ACCESS } from '../../shared/db/key-prefixes.ts';
import { handlerGroups } from '../bundle.ts';
import { Alarms } from '../constructs/alarms.ts';
import { AppFunction, SETTINGS_PARTITION } from '../constructs/app-function.ts';
import { Dashboard, DASHBOARD_BASE, type IdentityOrigins } from '../constructs/dashboard.ts';
import { OpsDashboard } from '../constructs/ops-dashboard.ts';
import type { FunctionEgress } from '../constructs/egress.ts';
import { panelSecretsPrefix, stageName } from '../stage.ts';

/** An external OIDC provider used instead of the Cognito user pool. */
export interface ExternalOidc {
  issuer: string;
  audience: string;
}

export interface ApiStackProps extends StackProps {
  table: ITable;
  /** Admin e-mail addresses (ADMIN_EMAILS). Default: context `adminEmails`, else none. */
  adminEmails?: string[];
  /** Use this issuer instead of a Cognito user pool. Default: context `oidcIssuer` + `oidcAudience`, else Cognito. */
  oidc?: ExternalOidc;
  /** Default: context `selfSignUp` (`true`/`false`), else false. */
  selfSignUp?: boolean;
  /**
   * Name of an existing Secrets Manager secret holding `{"secretKey", "webhookSecret"}` (Stripe).
   * Default: context `stripeSecretName`, else none: payments are off.
   */
  stripeSecretName?: string;
  /** Where alarm notifications go (an e-mail subscription). Default: context `alarmEmail`, else none. */
  alarmEmail?: string;
  /**
   * A custom domain for the API: `domainName` with an ACM certificate (same region, covering the
   * name) given by ARN. Default: context `domainName` + `certificateArn`, else none.
   */
  customDomain?: { domainName: string; certificateArn: string };
  /**
   * Cognito sends its e-mail (sign-up codes, e-mail changes, password resets) through SES from this
   * verified address instead of Cognito's own sender, whose daily quota is meant for tests.
   * Default: context `sesFromEmail`, else Cognito's sender.
   */
  sesFromEmail?: string;
  /**
   * The dashboard's custom domain: a name and an ACM certificate in us-east-1 (CloudFront's).
   * Default: context `dashboardDomainName` + `dashboardCertificateArn`, else the distribution's own domain.
   */
  dashboardDomain?: { domainName: string; certificateArn: string };
  /**
   * With an external issuer: the dashboard's OIDC client id there (a public client, code + PKCE).
   * Default: context `dashboardOidcClientId`; without it the dashboard is not deployed.
   */
  dashboardOidcClientId?: string;
  /** The Cognito hosted UI's domain prefix. Default: context `cognitoDomainPrefix`, else `<stage->control-plane-<account>`. */
  cognitoDomainPrefix?: string;
  /**
   * The fixed outgoing address (context `fixedEgress`, the network stack): the functions that call
   * panels (PANEL_KEY_ACCESS) run in its VPC; the others stay out. Default: none, no VPC.
   */
  egress?: FunctionEgress;
}

/** The `/v1/admin` routes: API Gateway lets them through only after the admin authorizer said yes. */
export const ADMIN_PATH_PREFIX = '/v1/admin';
export const isAdminRoutePath = (path: string): boolean => path === ADMIN_PATH_PREFIX || path.startsWith(`${ADMIN_PATH_PREFIX}/`);

/**
 * How long API Gateway keeps the authorizer's answer per `Authorization` header: 60 s. Long
 * enough that a burst of admin calls (a dashboard paging through users, logs and servers) costs
 * one authorizer run and one key or token check; short enough that a revoked key, a token past its
 * expiry or an address removed from ADMIN_EMAILS stops passing the edge within a minute. The edge
 * is the second check, not the only one: the admin function authenticates every request itself,
 * so the cache never extends what the function accepts.
 */
export const AUTHORIZER_CACHE_SECONDS = 60;

/**
 * Groups whose code signs pagination cursors: those with a listing route (a `cursor` in its
 * query). Only these get CURSOR_SECRET_ARN and read access to the cursor key.
 */
export function cursorSigningGroups(): Group[] {
  const signs = (def: RouteDef) => Boolean(def.query && 'cursor' in def.query.shape);
  return [...new Set(routeEntries().flatMap(([, def]) => (signs(def) ? [def.group] : [])))].sort();
}

/**
 * Groups that check HMACs made with the cursor key without signing cursors: the public group
 * verifies the mail unsubscribe tokens (shared/mail/unsubscribe.ts). They get its ARN and read access too.
 */
export const CURSOR_KEY_VERIFIERS: readonly Group[] = ['public'];

/**
 * Per-group overrides of the house defaults (AppFunction: 256 MB, 10 s). Functions that call the
 * panels wait on them: a server create may take the panel 20 s (it waits on Wings), so the servers
 * function gets the 29 s API Gateway allows; the catalog and admin read several panels at once.
 */
const FUNCTION_SETTINGS: Partial<Record<Group, { memorySize?: number; timeout?: Duration }>> = {
  servers: { timeout: Duration.seconds(29) },
  // Files and backups wait on Wings through the panel (a compress, a restore) as the servers function did.
  'server-tools': { timeout: Duration.seconds(29) },
  catalog: { timeout: Duration.seconds(20) },
  admin: { timeout: Duration.seconds(20) },
  'admin-panels': { timeout: Duration.seconds(20) },
  // Stripe calls time out after 10 s and are retried twice (shared/payments); the webhook also
  // unsuspends servers on the panels after a credit.
  billing: { timeout: Duration.seconds(20) },
  payments: { timeout: Duration.seconds(20) },
};

/**
 * Panel keys: the admin-panels function registers, rotates and removes them; these functions call panels
 * and read them (account and payments lift a suspension at once after a budget change or a top-up,
 * shared/servers/suspension.ts); the others (public, billing) get nothing. These are also the
 * functions placed behind the fixed outgoing address (context `fixedEgress`).
 */
export const PANEL_KEY_ACCESS: Partial<Record<Group, 'read' | 'write'>> = {
  // Registers, rotates and removes them.
  'admin-panels': 'write',
  // Suspends, unsuspends, reinstalls and deletes servers on their panels.
  admin: 'read',
  catalog: 'read',
  servers: 'read',
  'server-tools': 'read',
  // The panel's activity log of a server (one call a page).
  'server-history': 'read',
  account: 'read',
  payments: 'read',
};

/**
 * Checkout (billing), the webhook (payments), refunds (admin, POST /v1/admin/invoices/:id/refund) and the
 * admin health view (admin: it reads the webhook endpoint from Stripe) use the Stripe keys; nothing else may read them.
 */
export const STRIPE_READERS: readonly Group[] = ['billing', 'payments', 'admin'];

/** The groups that change a server's subdomain records (shared/servers/subdomain.ts): its routes and deploys, and deletes (admin's too). */
export const DNS_WRITERS: readonly Group[] = ['servers', 'admin'];

/** Token lifetimes of both app clients (the API's and the dashboard's). */
const TOKEN_VALIDITY = {
  idTokenValidity: Duration.hours(1),
  accessTokenValidity: Duration.hours(1),
  refreshTokenValidity: Duration.days(30),
};

/**
 * The stage's throttle (requests a second, burst): API Gateway's, for every caller together; the
 * per-credential limit (240/min) is enforced by the functions themselves. Context `throttleRate`
 * and `throttleBurst` override it (docs/deploy.md, "Throttling").
 */
export const THROTTLE: apigwv2.ThrottleSettings = { rateLimit: 100, burstLimit: 200 };

/**
 * How many accounts, each at its default request ceiling (600 a minute, 10 a second), it takes to
 * fill a route's own throttle. API Gateway counts a route's requests before any function knows who
 * sends them, so a route limit below one account's ceiling would let one customer take every
 * deploy slot of the platform. At 3, one account sending nothing but that route still leaves two
 * thirds of it to everyone else (tests/infra/operations.test.ts holds the rule).
 */
export const ACCOUNTS_PER_ROUTE_THROTTLE = 3;

/**
 * Tighter limits on the expensive routes (stage `RouteSettings`): a deploy creates a server on a
 * panel (up to 20 s of the panel and Wings), a quote reads the panels' topology. Never above the
 * stage's own limits, never below ACCOUNTS_PER_ROUTE_THROTTLE accounts' ceilings. Fairness between
 * customers is the functions' (per-account ceilings, the pending-work queue, the panels' call
 * budgets); these only cap what all customers together send to the panels.
 */
export const ROUTE_THROTTLES: Readonly<Record<string, apigwv2.ThrottleSettings>> = {
  'POST /v1/servers': { rateLimit: 30, burstLimit: 60 },
  'POST /v1/servers/quote': { rateLimit: 60, burstLimit: 120 },
};

/** The stage throttle with context `throttleRate` / `throttleBurst` over THROTTLE; refuses what is not a positive number. */
export function throttleFromContext(scope: Construct): Required<apigwv2.ThrottleSettings> {
  const read = (key: string, fallback: number, integer: boolean): number => {
    const value: unknown = scope.node.tryGetContext(key);
    if (value === undefined || value === '') return fallback;
    const n = typeof value === 'number' ? value : Number(String(value).trim());
    if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
      throw new Error(`Context ${key}=${String(value)}: a positive ${integer ? 'whole ' : ''}number of requests`);
    }
    return n;
  };
  return { rateLimit: read('throttleRate', THROTTLE.rateLimit!, false), burstLimit: read('throttleBurst', THROTTLE.burstLimit!, true) };
}

/** The access log line (infra/access-log.ts). */
const ACCESS_LOG_FORMAT = AccessLogFormat.custom(JSON.stringify(ACCESS_LOG_FIELDS));

const pascal = (s: string): string => s.replace(/(^|[-_])([a-z])/g, (_, __, c: string) => c.toUpperCase());

/**
 * The stateless stack: one Lambda per endpoint group, the HTTP API routed from the route table,
 * the identity provider, the cursor key, the alarm topic and the alarms of the API. Safe to
 * destroy and recreate, except the user pool, which holds identities and is therefore retained.
 * The billing pass has its own stack (billing-stack.ts).
 */
export class ApiStack extends Stack {
  readonly api: apigwv2.HttpApi;
  readonly stage: apigwv2.HttpStage;
  readonly functions: ReadonlyMap<Group, AppFunction>;
  /** The Lambda authorizer of the admin routes (functions/authorizer/handler.ts). */
  readonly authorizerFunction: AppFunction;
  readonly adminAuthorizer: HttpLambdaAuthorizer;
  readonly domainName: apigwv2.DomainName | undefined;
  readonly userPool: cognito.UserPool | undefined;
  readonly userPoolClient: cognito.UserPoolClient | undefined;
  /** The dashboard's app client (code + PKCE through the hosted UI), with Cognito. */
  readonly dashboardClient: cognito.UserPoolClient | undefined;
  /** The hosted UI's domain, with Cognito. */
  readonly userPoolDomain: cognito.UserPoolDomain | undefined;
  /** The dashboard (bucket + CloudFront), unless an external issuer without a dashboard client is used. */
  readonly dashboard: Dashboard | undefined;
  readonly cursorSecret: secretsmanager.Secret;
  /** The Stripe keys (context `stripeSecretName`), if payments are configured. */
  readonly stripeSecret: secretsmanager.ISecret | undefined;
  readonly alarms: Alarms;
  /** The stage's CloudWatch dashboard (infra/constructs/ops-dashboard.ts). */
  readonly opsDashboard: OpsDashboard;

  constructor(scope: Construct, id: string, props: ApiStackProps) {
    super(scope, id, props);

    // ---- identity: Cognito unless an external issuer is configured ----
    const oidc = props.oidc ?? externalOidcFromContext(this);
    const sesFromEmail = props.sesFromEmail ?? stringFromContext(this.node.tryGetContext('sesFromEmail'));
    let oidcEnv: Record<string, string>;
    // The client ids whose ID tokens the API accepts (OIDC_AUDIENCE, a list): the API's and the
    // dashboard's. Read lazily, since the dashboard's client is made once the distribution exists.
    const audiences: string[] = [];
    const audienceList = Lazy.string({ produce: () => audiences.join(',') });
    /** What the dashboard needs of the identity provider (its client is made with the distribution, below). */
    let dashboardIdentity:
      | { origins: IdentityOrigins; authority: string; clientId?: string; metadata?: Record<string, string> }
      | undefined;
    if (oidc) {
      this.userPool = undefined;
      this.userPoolClient = undefined;
      this.userPoolDomain = undefined;
      // Exactly as configured (tokens' `iss` is compared with it, a trailing slash included); no
      // OIDC_JWKS_URL: the functions find the keys through the issuer's discovery document.
      const issuer = checkedIssuer(oidc.issuer);
      audiences.push(oidc.audience);
      oidcEnv = { OIDC_ISSUER: issuer, OIDC_AUDIENCE: audienceList };
      new CfnOutput(this, 'OidcIssuer', { value: issuer, description: 'External OIDC issuer the API trusts' });
      // The dashboard signs in at the external issuer only if the operator registered a client
      // for it there (context dashboardOidcClientId, docs/deploy.md); without one it is not deployed.
      const clientId = props.dashboardOidcClientId ?? stringFromContext(this.node.tryGetContext('dashboardOidcClientId'));
      if (clientId) {
        audiences.push(clientId);
        const origin = new URL(issuer).origin;
        dashboardIdentity = { origins: { connect: [origin], formAction: [origin] }, authority: issuer, clientId };
      }
    } else {
      this.userPool = new cognito.UserPool(this, 'UserPool', {
        signInAliases: { email: true },
        // Admin rights follow the e-mail address (ADMIN_EMAILS): a changed address takes effect
        // only once its owner verified it; until then the user keeps, and signs in with, the old one.
        keepOriginal: { email: true },
        signInCaseSensitive: false,
        selfSignUpEnabled: props.selfSignUp ?? String(this.node.tryGetContext('selfSignUp')) === 'true',
        ...(sesFromEmail ? { email: cognito.UserPoolEmail.withSES({ fromEmail: sesFromEmail, sesRegion: this.region }) } : {}),
        autoVerify: { email: true },
        standardAttributes: { email: { required: true, mutable: true } },
        passwordPolicy: {
          minLength: 12,
          requireLowercase: true,
          requireUppercase: true,
          requireDigits: true,
          requireSymbols: true,
          tempPasswordValidity: Duration.days(3),
        },
        mfa: cognito.Mfa.OPTIONAL,
        mfaSecondFactor: { sms: false, otp: true },
        accountRecovery: cognito.AccountRecovery.EMAIL_ONLY,
        featurePlan: cognito.FeaturePlan.ESSENTIALS,
        // Identities are state: accounts are bound to (issuer, subject), and a new pool is a new issuer.
        deletionProtection: true,
        removalPolicy: RemovalPolicy.RETAIN,
      });
      this.userPoolClient = this.userPool.addClient('ApiClient', {
        generateSecret: false,
        authFlows: { userSrp: true, userPassword: true },
        disableOAuth: true,
        preventUserExistenceErrors: true,
        // Explicit, so no attribute added to the pool later becomes readable or writable by users
        // by default. Users may change their e-mail (kept as the original until verified), never
        // `email_verified` nor any custom attribute: those would decide access.
        readAttributes: new cognito.ClientAttributes().withStandardAttributes({ email: true, emailVerified: true }),
        writeAttributes: new cognito.ClientAttributes().withStandardAttributes({ email: true }),
        ...TOKEN_VALIDITY,
      });
      const issuer = `https://cognito-idp.${this.region}.amazonaws.com/${this.userPool.userPoolId}`;
      audiences.push(this.userPoolClient.userPoolClientId);
      oidcEnv = {
        OIDC_ISSUER: issuer,
        // Cognito's documented key URL, given so a cold start skips the discovery request.
        OIDC_JWKS_URL: `${issuer}/.well-known/jwks.json`,
        OIDC_AUDIENCE: audienceList,
        OIDC_TOKEN_USE: 'id',
        OIDC_CLIENT_IDS: audienceList,
      };
      new CfnOutput(this, 'UserPoolId', { value: this.userPool.userPoolId });
      new CfnOutput(this, 'UserPoolClientId', { value: this.userPoolClient.userPoolClientId });

      // The hosted UI (classic) the dashboard signs in through: authorize, token and logout
      // endpoints on https://<prefix>.auth.<region>.amazoncognito.com.
      this.userPoolDomain = this.userPool.addDomain('HostedUi', {
        cognitoDomain: { domainPrefix: props.cognitoDomainPrefix ?? cognitoDomainPrefixOf(this) },
      });
      const hostedUi = this.userPoolDomain.baseUrl();
      // Discovery is read from the issuer (cognito-idp), tokens from the hosted UI's domain (both
      // answer CORS); the sign-in form posts to the hosted UI.
      dashboardIdentity = {
        origins: { connect: [`https://cognito-idp.${this.region}.amazonaws.com`, hostedUi], formAction: [hostedUi] },
        authority: issuer,
        // Cognito's discovery has no end_session_endpoint; its /logout takes client_id and logout_uri.
        metadata: { end_session_endpoint: `${hostedUi}/logout` },
      };
      new CfnOutput(this, 'HostedUiUrl', { value: hostedUi, description: 'Cognito hosted UI (dashboard sign-in)' });

      Validations.of(this.userPool).acknowledge(
        {
          id: 'AwsSolutions-COG2',
          reason:
            'MFA is offered (TOTP, optional); requiring it for every API customer is a product decision not taken yet. Automation uses API keys, not the pool.',
        },
        {
          id: 'AwsSolutions-COG8',
          reason:
            'The Plus feature plan (threat protection) has no free tier and is priced per MAU; Essentials with a strong password policy is the cost-appropriate default for now.',
        },
      );
    }

    // ---- the cursor HMAC key ----
    this.cursorSecret = new secretsmanager.Secret(this, 'CursorSecret', {
      description: 'HMAC key that signs pagination cursors',
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
    });
    Validations.of(this.cursorSecret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'Cursors are short-lived list positions; rotating the key only invalidates cursors in flight, so it is rotated by hand (a new version) rather than by a rotation Lambda.',
    });

    const adminEmails = props.adminEmails ?? listFromContext(this.node.tryGetContext('adminEmails'));
    // No secret in any function's environment: the cursor key is read from Secrets Manager at run
    // time (shared/db/cursor.ts), by the functions that sign cursors only (CURSOR_SECRET_ARN below).
    const sharedEnv: Record<string, string> = {
      ADMIN_EMAILS: adminEmails.join(','),
      ...oidcEnv,
      SECRETS_PREFIX: panelSecretsPrefix(this),
    };
    const cursorSigners = cursorSigningGroups();
    // Server subdomains: only with contexts dnsZone + dnsHostedZoneId (infra/dns.ts).
    const dnsZone = dnsZoneFromContext(this);

    // ---- the Stripe keys: an existing secret the operator created (docs/deploy.md), read at run time ----
    const stripeSecretName = props.stripeSecretName ?? stringFromContext(this.node.tryGetContext('stripeSecretName'));
    this.stripeSecret = stripeSecretName ? secretsmanager.Secret.fromSecretNameV2(this, 'StripeSecret', stripeSecretName) : undefined;

    // ---- one function per endpoint group that has a handler ----
    // Every route group has a handler now; a group without one would get no function and its routes
    // would be skipped below, so no route ever points at a missing function. `dev` is local-only
    // and never deployed; the billing pass (functions/billing-pass) is not a route group at all.
    const deployable = handlerGroups().filter((g): g is Exclude<Group, 'dev'> => (GROUPS as readonly string[]).includes(g) && g !== 'dev');
    const functions = new Map<Group, AppFunction>();
    for (const group of deployable) {
      const panelKeys = PANEL_KEY_ACCESS[group];
      // Whoever may read panel keys calls panels: with a fixed outgoing address, through its NAT.
      const egress = panelKeys && props.egress ? { egress: props.egress } : {};
      const fn = new AppFunction(this, pascal(group), { group, ...FUNCTION_SETTINGS[group], environment: sharedEnv, ...egress });
      // Only the partitions and actions the group's code uses (shared/db/key-prefixes.ts).
      fn.bindTable(props.table, TABLE_ACCESS[group]);
      if (cursorSigners.includes(group) || CURSOR_KEY_VERIFIERS.includes(group)) {
        fn.addEnvironment('CURSOR_SECRET_ARN', this.cursorSecret.secretArn);
        this.cursorSecret.grantRead(fn.role);
      }
      // Only the admin function may write platform settings.
      if (group !== 'admin') fn.denyPartitionWrites(props.table, [SETTINGS_PARTITION]);
      if (panelKeys) fn.grantPanelKeys(panelKeys);
      if (this.stripeSecret && STRIPE_READERS.includes(group)) grantStripeSecret(fn, this.stripeSecret);
      if (dnsZone && DNS_WRITERS.includes(group)) fn.grantDnsZone(dnsZone);
      functions.set(group, fn);
    }
    this.functions = functions;
    const publicFn = functions.get('public');
    if (!publicFn) throw new Error('The public function (functions/public/handler.ts) is required: it answers $default');

    // ---- the HTTP API ----
    const integrations = new Map<Group, HttpLambdaIntegration>();
    for (const [group, fn] of functions) {
      // One invoke permission per function instead of one per route: keeps the function policy small.
      integrations.set(group, new HttpLambdaIntegration(`${pascal(group)}Integration`, fn.fn, { scopePermissionToRoute: false }));
    }

    // No CORS: the API is for programs (API keys, bearer tokens), not for browsers on other
    // origins; the only browser pages (/docs, the checkout redirect) are same-origin or Stripe's.
    // A browser front end on its own origin would add `corsPreflight` here, with its origin only.
    this.api = new apigwv2.HttpApi(this, 'HttpApi', {
      apiName: stageName(this, 'control-plane'),
      description: 'Hosting control plane API',
      createDefaultStage: false,
      // Unknown paths and methods reach the public function, which answers the 404/405 envelope.
      defaultIntegration: integrations.get('public'),
    });

    const accessLogs = new logs.LogGroup(this, 'AccessLogs', {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const throttle = throttleFromContext(this);
    this.stage = new apigwv2.HttpStage(this, 'DefaultStage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      throttle,
      accessLogSettings: { destination: new apigwv2.LogGroupLogDestination(accessLogs), format: ACCESS_LOG_FORMAT },
    });

    // ---- the admin authorizer: `/v1/admin/*` reaches the admin function only for an admin ----
    this.authorizerFunction = new AppFunction(this, 'AdminAuthorizer', {
      group: 'authorizer',
      description: 'Control plane: Lambda authorizer of the admin routes (admin credentials only)',
      environment: { ADMIN_EMAILS: sharedEnv.ADMIN_EMAILS!, ...oidcEnv },
    });
    this.authorizerFunction.bindTable(props.table, TABLE_ACCESS.authorizer);
    this.authorizerFunction.denyPartitionWrites(props.table, [SETTINGS_PARTITION]);
    this.adminAuthorizer = new HttpLambdaAuthorizer('AdminAuthorizer', this.authorizerFunction.fn, {
      authorizerName: 'admin',
      responseTypes: [HttpLambdaResponseType.SIMPLE],
      identitySource: ['$request.header.Authorization'],
      resultsCacheTtl: Duration.seconds(AUTHORIZER_CACHE_SECONDS),
    });

    const routeKeyIds = new Map<string, string>();
    for (const [routeId, def] of routeEntries()) {
      routeKeyIds.set(`${def.method} ${toTemplatePath(def.path)}`, routeId);
      const integration = integrations.get(def.group);
      if (def.group === 'dev' || !integration) continue;
      const path = toTemplatePath(def.path);
      // By path, not by group: whatever group a route under /v1/admin belongs to, the edge guards it.
      const guarded = isAdminRoutePath(path);
      if (guarded !== ADMIN_GROUPS.includes(def.group))
        throw new Error(`Route ${routeId}: ${path} and group ${def.group} disagree about admin`);
      new apigwv2.HttpRoute(this.api, `Route-${routeId}`, {
        httpApi: this.api,
        routeKey: apigwv2.HttpRouteKey.with(path, apigwv2.HttpMethod[def.method]),
        integration,
        ...(guarded ? { authorizer: this.adminAuthorizer } : {}),
      });
    }

    // ---- per-route throttles (ROUTE_THROTTLES), on routes that exist: the stage is created after them ----
    const cfnStage = this.stage.node.defaultChild as apigwv2.CfnStage;
    const routeSettings: Record<string, { ThrottlingRateLimit: number; ThrottlingBurstLimit: number }> = {};
    for (const [routeKey, limits] of Object.entries(ROUTE_THROTTLES)) {
      const route = this.api.node.tryFindChild(`Route-${routeKeyIds.get(routeKey)}`);
      if (!route) throw new Error(`ROUTE_THROTTLES: no route ${routeKey} in the route table`);
      cfnStage.node.addDependency(route);
      routeSettings[routeKey] = {
        ThrottlingRateLimit: Math.min(limits.rateLimit!, throttle.rateLimit),
        ThrottlingBurstLimit: Math.min(limits.burstLimit!, throttle.burstLimit),
      };
    }
    cfnStage.routeSettings = routeSettings;

    // ---- an optional custom domain (docs/deploy.md) ----
    const customDomain = props.customDomain ?? customDomainFromContext(this);
    if (customDomain) {
      this.domainName = new apigwv2.DomainName(this, 'CustomDomain', {
        domainName: customDomain.domainName,
        certificate: acm.Certificate.fromCertificateArn(this, 'CustomDomainCertificate', customDomain.certificateArn),
      });
      new apigwv2.ApiMapping(this, 'CustomDomainMapping', { api: this.api, domainName: this.domainName, stage: this.stage });
      new CfnOutput(this, 'CustomDomainTarget', {
        value: this.domainName.regionalDomainName,
        description: `Point ${customDomain.domainName} here (CNAME, or a Route 53 alias with hosted zone CustomDomainHostedZoneId)`,
      });
      new CfnOutput(this, 'CustomDomainHostedZoneId', { value: this.domainName.regionalHostedZoneId });
    } else {
      this.domainName = undefined;
    }

    new CfnOutput(this, 'ApiUrl', { value: this.stage.url, description: 'Base URL of the API' });

    // ---- the dashboard: web/dist on S3 + CloudFront, /v1/* to the API on the same origin ----
    // Its app client needs the distribution's domain (callback URLs), so it is made here, after
    // the distribution; the functions read its id lazily (OIDC_AUDIENCE above). No cycle: client →
    // distribution → HTTP API, and the API resource itself depends on neither.
    if (dashboardIdentity) {
      const dashboardDomain = props.dashboardDomain ?? dashboardDomainFromContext(this);
      const dashboard = new Dashboard(this, 'Dashboard', {
        apiId: this.api.apiId,
        identityOrigins: dashboardIdentity.origins,
        ...(dashboardDomain ? { customDomain: dashboardDomain } : {}),
      });
      let clientId = dashboardIdentity.clientId;
      if (this.userPool) {
        this.dashboardClient = this.userPool.addClient('DashboardClient', {
          generateSecret: false,
          // Of the user pools API only the refresh-token flow: sign-in happens on the hosted UI.
          authFlows: { userSrp: false },
          oAuth: {
            flows: { authorizationCodeGrant: true, implicitCodeGrant: false, clientCredentials: false },
            scopes: [cognito.OAuthScope.OPENID, cognito.OAuthScope.EMAIL, cognito.OAuthScope.PROFILE],
            callbackUrls: dashboard.origins.map((origin) => `${origin}${DASHBOARD_BASE}callback`),
            logoutUrls: dashboard.origins.map((origin) => `${origin}${DASHBOARD_BASE}`),
          },
          supportedIdentityProviders: [cognito.UserPoolClientIdentityProvider.COGNITO],
          preventUserExistenceErrors: true,
          readAttributes: new cognito.ClientAttributes().withStandardAttributes({ email: true, emailVerified: true }),
          writeAttributes: new cognito.ClientAttributes().withStandardAttributes({ email: true }),
          ...TOKEN_VALIDITY,
        });
        clientId = this.dashboardClient.userPoolClientId;
        audiences.push(clientId);
        new CfnOutput(this, 'DashboardClientId', { value: clientId });
      } else {
        this.dashboardClient = undefined;
      }
      // The brand's logo (shared/brand/logo.ts): the admin function alone puts it, under brand/ of
      // the dashboard's bucket, and CloudFront serves it at /brand/… (the bucket behaviour).
      functions.get('admin')?.grantBrandAssets(dashboard.bucket, dashboard.url);
      dashboard.deploy({
        authority: dashboardIdentity.authority,
        clientId: clientId!,
        ...(dashboardIdentity.metadata ? { metadata: dashboardIdentity.metadata } : {}),
      });
      this.dashboard = dashboard;
    } else {
      this.dashboardClient = undefined;
      this.dashboard = undefined;
    }

    // ---- alarms (the topic lives here; the billing stack's alarms notify it too) ----
    this.alarms = new Alarms(this, 'Alarms', { email: props.alarmEmail ?? stringFromContext(this.node.tryGetContext('alarmEmail')) });
    for (const [group, fn] of functions) this.alarms.forFunction(pascal(group), fn);
    this.alarms.forFunction('AdminAuthorizer', this.authorizerFunction);
    this.alarms.loggedErrors('Api', [...functions.values(), this.authorizerFunction]);
    this.alarms.apiServerErrorRate(this.api);
    this.alarms.panels();
    this.alarms.tableThrottles(props.table);

    // ---- the operations dashboard (CloudWatch): API, billing, panels, webhooks, DynamoDB, repairs ----
    this.opsDashboard = new OpsDashboard(this, 'OpsDashboard', {
      api: this.api,
      functions: [
        ...[...functions].map(([group, fn]) => ({ name: group as string, fn })),
        { name: 'authorizer', fn: this.authorizerFunction },
      ],
      table: props.table,
    });
    const paymentsFn = functions.get('payments');
    if (paymentsFn) this.alarms.webhookRejections(paymentsFn.logGroup);

    Validations.of(this.api).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason:
        'The /v1/admin routes have a Lambda authorizer (admin credentials only). The other routes authenticate in the functions, in the one pipeline every group shares (shared/http/handler.ts): callers use API keys as well as OIDC session tokens, which no JWT authorizer accepts; health, docs and the Stripe webhook are public by design.',
    });
  }
}

function externalOidcFromContext(scope: Construct): ExternalOidc | undefined {
  const issuer: unknown = scope.node.tryGetContext('oidcIssuer');
  const audience: unknown = scope.node.tryGetContext('oidcAudience');
  if (typeof issuer === 'string' && issuer && typeof audience === 'string' && audience) return { issuer, audience };
  if (issuer || audience) throw new Error('Context oidcIssuer and oidcAudience must be given together');
  return undefined;
}

/**
 * An issuer as OIDC defines it (Core §2): an https URL without query or fragment. Kept as given,
 * a trailing slash included; whitespace around it is dropped.
 */
function checkedIssuer(value: string): string {
  const issuer = value.trim();
  const protocol = URL.canParse(issuer) ? new URL(issuer).protocol : undefined;
  if (protocol !== 'https:' || /[?#]/.test(issuer)) {
    throw new Error(`Context oidcIssuer=${value}: an https URL without query or fragment, exactly as the tokens' iss claim`);
  }
  return issuer;
}

function dashboardDomainFromContext(scope: Construct): { domainName: string; certificateArn: string } | undefined {
  const domainName = stringFromContext(scope.node.tryGetContext('dashboardDomainName'));
  const certificateArn = stringFromContext(scope.node.tryGetContext('dashboardCertificateArn'));
  if (domainName && certificateArn) return { domainName, certificateArn };
  if (domainName || certificateArn) throw new Error('Context dashboardDomainName and dashboardCertificateArn must be given together');
  return undefined;
}

/**
 * The hosted UI's domain prefix: context `cognitoDomainPrefix`, else `control-plane-<account>`
 * (with a stage, `<stage>-control-plane-<account>`), unique across AWS as Cognito requires.
 * Cognito refuses prefixes with `aws`, `amazon` or `cognito` in them.
 */
function cognitoDomainPrefixOf(scope: Stack): string {
  const prefix =
    stringFromContext(scope.node.tryGetContext('cognitoDomainPrefix')) ?? `${stageName(scope, 'control-plane')}-${scope.account}`;
  if (!Token.isUnresolved(prefix) && (!/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(prefix) || /aws|amazon|cognito/.test(prefix))) {
    throw new Error(
      `Cognito domain prefix ${prefix}: lower-case letters, digits and dashes (at most 63), without aws, amazon or cognito; set context cognitoDomainPrefix`,
    );
  }
  return prefix;
}

function customDomainFromContext(scope: Construct): { domainName: string; certificateArn: string } | undefined {
  const domainName = stringFromContext(scope.node.tryGetContext('domainName'));
  const certificateArn = stringFromContext(scope.node.tryGetContext('certificateArn'));
  if (domainName && certificateArn) return { domainName, certificateArn };
  if (domainName || certificateArn) throw new Error('Context domainName and certificateArn must be given together');
  return undefined;
}

/** Context values come as a string from `-c key=a,b` and as a list from cdk.json. */
function listFromContext(value: unknown): string[] {
  const items = Array.isArray(value) ? value.map(String) : typeof value === 'string' ? value.split(',') : [];
  return items.map((s) => s.trim()).filter(Boolean);
}

/** A context value that is a non-empty string, else undefined (cdk.json keeps them as ""). */
function stringFromContext(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() ? value.trim() : undefined;
}

/**
 * STRIPE_SECRET_ARN and read access to the Stripe secret. The secret is imported by name, so its
 * ARN here is partial (no random suffix): GetSecretValue accepts it, and the grant covers exactly
 * the name followed by the six-character suffix Secrets Manager adds (`-??????`, one secret).
 */
function grantStripeSecret(fn: AppFunction, secret: secretsmanager.ISecret): void {
  fn.addEnvironment('STRIPE_SECRET_ARN', secret.secretArn);
  secret.grantRead(fn.role);
}
