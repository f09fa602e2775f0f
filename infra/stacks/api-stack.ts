import { CfnOutput, Duration, RemovalPolicy, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import { GROUPS, routeEntries, toTemplatePath, type Group } from '../../shared/api/routes.ts';
import { handlerGroups } from '../bundle.ts';
import { Alarms } from '../constructs/alarms.ts';
import { AppFunction, PANEL_SECRETS_PREFIX, SETTINGS_PARTITION } from '../constructs/app-function.ts';

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
}

/**
 * Per-group overrides of the house defaults (AppFunction: 512 MB, 10 s). Functions that call the
 * panels wait on them: a server create may take the panel 20 s (it waits on Wings), so the servers
 * function gets the 29 s API Gateway allows; the catalog and admin read several panels at once.
 */
const FUNCTION_SETTINGS: Partial<Record<Group, { memorySize?: number; timeout?: Duration }>> = {
  servers: { timeout: Duration.seconds(29) },
  catalog: { timeout: Duration.seconds(20) },
  admin: { timeout: Duration.seconds(20) },
  // Stripe calls time out after 10 s and are retried twice (shared/payments); the webhook also
  // unsuspends servers on the panels after a credit.
  billing: { timeout: Duration.seconds(20) },
  payments: { timeout: Duration.seconds(20) },
};

/**
 * Panel keys: the admin function registers, rotates and removes them; these functions call panels
 * and read them (account and payments lift a suspension at once after a budget change or a top-up,
 * shared/servers/suspension.ts); the others (public, billing) get nothing.
 */
const PANEL_KEY_ACCESS: Partial<Record<Group, 'read' | 'write'>> = {
  admin: 'write',
  catalog: 'read',
  servers: 'read',
  account: 'read',
  payments: 'read',
};

/** Checkout (billing) and the webhook (payments) use the Stripe keys; nothing else may read them. */
const STRIPE_READERS: readonly Group[] = ['billing', 'payments'];

/** Stage-wide throttling; the per-credential limit (240/min) is enforced by the functions themselves. */
const THROTTLE: apigwv2.ThrottleSettings = { rateLimit: 100, burstLimit: 200 };

/** One JSON object per request (HTTP API context variables), so Logs Insights reads fields directly. */
const ACCESS_LOG_FORMAT = AccessLogFormat.custom(
  JSON.stringify({
    requestId: '$context.requestId',
    time: '$context.requestTime',
    ip: '$context.identity.sourceIp',
    userAgent: '$context.identity.userAgent',
    method: '$context.httpMethod',
    path: '$context.path',
    routeKey: '$context.routeKey',
    status: '$context.status',
    protocol: '$context.protocol',
    responseLength: '$context.responseLength',
    latencyMs: '$context.responseLatency',
    integrationLatencyMs: '$context.integrationLatency',
    integrationError: '$context.integrationErrorMessage',
  }),
);

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
  readonly userPool: cognito.UserPool | undefined;
  readonly userPoolClient: cognito.UserPoolClient | undefined;
  readonly cursorSecret: secretsmanager.Secret;
  /** The Stripe keys (context `stripeSecretName`), if payments are configured. */
  readonly stripeSecret: secretsmanager.ISecret | undefined;
  readonly alarms: Alarms;

  constructor(scope: Construct, id: string, props: ApiStackProps) {
    super(scope, id, props);

    // ---- identity: Cognito unless an external issuer is configured ----
    const oidc = props.oidc ?? externalOidcFromContext(this);
    let oidcEnv: Record<string, string>;
    if (oidc) {
      this.userPool = undefined;
      this.userPoolClient = undefined;
      const issuer = oidc.issuer.replace(/\/$/, '');
      oidcEnv = { OIDC_ISSUER: issuer, OIDC_JWKS_URL: `${issuer}/.well-known/jwks.json`, OIDC_AUDIENCE: oidc.audience };
      new CfnOutput(this, 'OidcIssuer', { value: issuer, description: 'External OIDC issuer the API trusts' });
    } else {
      this.userPool = new cognito.UserPool(this, 'UserPool', {
        signInAliases: { email: true },
        signInCaseSensitive: false,
        selfSignUpEnabled: props.selfSignUp ?? String(this.node.tryGetContext('selfSignUp')) === 'true',
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
        idTokenValidity: Duration.hours(1),
        accessTokenValidity: Duration.hours(1),
        refreshTokenValidity: Duration.days(30),
      });
      const issuer = `https://cognito-idp.${this.region}.amazonaws.com/${this.userPool.userPoolId}`;
      oidcEnv = {
        OIDC_ISSUER: issuer,
        OIDC_JWKS_URL: `${issuer}/.well-known/jwks.json`,
        OIDC_AUDIENCE: this.userPoolClient.userPoolClientId,
        OIDC_TOKEN_USE: 'id',
        OIDC_CLIENT_IDS: this.userPoolClient.userPoolClientId,
      };
      new CfnOutput(this, 'UserPoolId', { value: this.userPool.userPoolId });
      new CfnOutput(this, 'UserPoolClientId', { value: this.userPoolClient.userPoolClientId });

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
    const sharedEnv: Record<string, string> = {
      ADMIN_EMAILS: adminEmails.join(','),
      ...oidcEnv,
      // The functions read the key as a value (shared/config/env.ts). unsafeUnwrap() puts a
      // `{{resolve:secretsmanager:...}}` dynamic reference in the template, which CloudFormation
      // resolves at deploy time: the key never appears in the template or the cloud assembly, but
      // it is visible in the function configuration to whoever may read that.
      CURSOR_SECRET: this.cursorSecret.secretValue.unsafeUnwrap(),
      SECRETS_PREFIX: PANEL_SECRETS_PREFIX,
    };

    // ---- the Stripe keys: an existing secret the operator created (README), read at run time ----
    const stripeSecretName = props.stripeSecretName ?? stringFromContext(this.node.tryGetContext('stripeSecretName'));
    this.stripeSecret = stripeSecretName ? secretsmanager.Secret.fromSecretNameV2(this, 'StripeSecret', stripeSecretName) : undefined;

    // ---- one function per endpoint group that has a handler ----
    // Every route group has a handler now; a group without one would get no function and its routes
    // would be skipped below, so no route ever points at a missing function. `dev` is local-only
    // and never deployed; the billing pass (functions/billing-pass) is not a route group at all.
    const deployable = handlerGroups().filter((g): g is Group => (GROUPS as readonly string[]).includes(g) && g !== 'dev');
    const functions = new Map<Group, AppFunction>();
    for (const group of deployable) {
      const fn = new AppFunction(this, pascal(group), { group, ...FUNCTION_SETTINGS[group], environment: sharedEnv });
      // Every function writes rate-limit counters and activity-log entries: all need RW.
      fn.bindTable(props.table, 'RW');
      // Only the admin function may write platform settings.
      if (group !== 'admin') fn.denyPartitionWrites(props.table, [SETTINGS_PARTITION]);
      const panelKeys = PANEL_KEY_ACCESS[group];
      if (panelKeys) fn.grantPanelKeys(panelKeys);
      if (this.stripeSecret && STRIPE_READERS.includes(group)) grantStripeSecret(fn, this.stripeSecret);
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
      apiName: 'control-plane',
      description: 'Hosting control plane API',
      createDefaultStage: false,
      // Unknown paths and methods reach the public function, which answers the 404/405 envelope.
      defaultIntegration: integrations.get('public'),
    });

    const accessLogs = new logs.LogGroup(this, 'AccessLogs', {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.stage = new apigwv2.HttpStage(this, 'DefaultStage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      throttle: THROTTLE,
      accessLogSettings: { destination: new apigwv2.LogGroupLogDestination(accessLogs), format: ACCESS_LOG_FORMAT },
    });

    for (const [routeId, def] of routeEntries()) {
      const integration = integrations.get(def.group);
      if (def.group === 'dev' || !integration) continue;
      new apigwv2.HttpRoute(this.api, `Route-${routeId}`, {
        httpApi: this.api,
        routeKey: apigwv2.HttpRouteKey.with(toTemplatePath(def.path), apigwv2.HttpMethod[def.method]),
        integration,
      });
    }

    new CfnOutput(this, 'ApiUrl', { value: this.stage.url, description: 'Base URL of the API' });

    // ---- alarms (the topic lives here; the billing stack's alarms notify it too) ----
    this.alarms = new Alarms(this, 'Alarms', { email: props.alarmEmail ?? stringFromContext(this.node.tryGetContext('alarmEmail')) });
    for (const [group, fn] of functions) this.alarms.forFunction(pascal(group), fn);
    this.alarms.loggedErrors('Api', [...functions.values()]);
    this.alarms.apiServerErrorRate(this.api);
    const paymentsFn = functions.get('payments');
    if (paymentsFn) this.alarms.webhookRejections(paymentsFn.logGroup);

    Validations.of(this.api).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason:
        'Authentication happens in the functions, in the one pipeline every group shares (shared/http/handler.ts): callers use API keys as well as OIDC session tokens, which no JWT authorizer accepts; health and docs routes are public by design.',
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
