import { type CurrencyCode, DEFAULT_CURRENCY, parseCurrency } from '../currency.ts';

/**
 * Process configuration, read from the environment once and then cached. Functions in AWS get
 * these from the CDK stack; the local stack sets them in dev/start.ts; tests in tests/setup.ts.
 */
export interface Config {
  /** Where this process runs: `aws` (Lambda), `local` (npm start) or `test`. */
  stage: 'aws' | 'local' | 'test';
  tableName: string;
  region: string;
  /** Only set outside AWS: DynamoDB Local's address. */
  dynamodbEndpoint: string | undefined;
  adminEmails: Set<string>;
  /**
   * HMAC key for pagination cursors, when given as a value (local, tests: `CURSOR_SECRET`, default
   * `local-cursor-secret` outside AWS). In AWS the functions that sign cursors get
   * `cursorSecretArn` instead and shared/db/cursor.ts reads the key from Secrets Manager at run
   * time, so the key is never part of a function's configuration.
   */
  cursorSecret: string | undefined;
  /** `CURSOR_SECRET_ARN`: the Secrets Manager secret holding the cursor key (AWS). */
  cursorSecretArn: string | undefined;
  /** `cp_live` in AWS, `cp_test` elsewhere: tells a key's environment at a glance. */
  apiKeyPrefix: string;
  oidc: OidcConfig | undefined;
  rateLimitPerMinute: number;
  /** Where panel keys live: Secrets Manager in AWS, a local file (or memory) elsewhere. */
  secrets: { kind: 'aws'; prefix: string } | { kind: 'local'; file: string | undefined };
  /** Panel call timeouts: every call, and server creation (which waits on Wings). */
  panelTimeoutMs: number;
  panelCreateTimeoutMs: number;
  /**
   * How long a compress or decompress is waited for (shared/servers/files.ts): the panel's own wait on
   * Wings, 15 minutes; the request's deadline cuts it (tests set less to reach the timeout path).
   */
  panelArchiveWaitMs: number;
  /** How long the shared copy of a panel's topology and free allocations stays fresh (shared/catalog/topology.ts). */
  panelTopologyTtlMs: number;
  /** How long the shared copy of a panel's eggs and their variables stays fresh (shared/catalog/eggs.ts). */
  panelEggsTtlMs: number;
  /** How long a server's live state is answered from the table before one reader asks the panel again. */
  liveStateTtlMs: number;
  /** The same while it installs, starts or stops, so a customer watching sees the change promptly. */
  liveStateTransitionTtlMs: number;
  payments: PaymentsConfig;
  /** `VIES_API_URL`: the EU's VIES REST API (VAT id checks, shared/accounts/vies.ts); the local stack points it at its stand-in. */
  viesApiUrl: string;
  /** `BILLING_QUEUE_URL`: with it the hourly scheduler queues one message per shard, without it it runs the pass in one process. */
  billingQueueUrl: string | undefined;
  /**
   * `LAMBDA_TASK_ROOT` (set by Lambda): the function's asset folder, holding the files infra/bundle.ts
   * wrote beside the bundle (shared/openapi/bundle-files.ts). Undefined outside Lambda.
   */
  bundleFolder: string | undefined;
  /**
   * Where the brand's logo is kept (shared/brand/logo.ts): in AWS `BRAND_BUCKET`, the dashboard's bucket,
   * served by its CloudFront at `BRAND_BASE_URL`; elsewhere the folder `BRAND_DIR`, served by the local stack.
   */
  brandAssets: { bucket: string | undefined; baseUrl: string | undefined; dir: string | undefined };
  mail: MailConfig;
  dns: DnsConfig;
}

/**
 * Per-server subdomains (shared/dns, docs/api.md "Subdomains"): on when `DNS_ZONE` is set. In AWS the
 * records go to the Route 53 hosted zone `DNS_HOSTED_ZONE_ID` (contexts `dnsZone`, `dnsHostedZoneId`);
 * elsewhere to the table, which the local DNS server (dev/local-dns.ts) answers from.
 */
export interface DnsConfig {
  /** `DNS_ZONE`, lower case without a trailing dot (`play.example.com`); undefined: subdomains are off. */
  zone: string | undefined;
  provider: 'route53' | 'local' | null;
  /** `DNS_HOSTED_ZONE_ID`: the Route 53 hosted zone holding `zone` (AWS). */
  hostedZoneId: string | undefined;
  /** `DNS_TTL_S`: the records' TTL (60 s: a moved port reaches players within a minute). */
  ttlSeconds: number;
}

/**
 * Customer mail (shared/mail, docs/mail.md): on when `MAIL_FROM` is set. AWS sends through SES
 * (`MAIL_CONFIGURATION_SET`); elsewhere to the SMTP server at `SMTP_URL` (the local stack's).
 */
export interface MailConfig {
  /** `MAIL_FROM`: the sending address; undefined: mail is off (no message is queued). */
  from: string | undefined;
  transport: 'ses' | 'smtp' | null;
  /** `SMTP_URL`, `smtp://host:port`. */
  smtpUrl: string | undefined;
  /** `MAIL_CONFIGURATION_SET`: the SES configuration set (bounces, complaints, suppression). */
  configurationSet: string | undefined;
  /** `DASHBOARD_URL`: where the messages' links point (ends with `/`). */
  dashboardUrl: string;
  /** `API_URL`: the API's public address (ends with `/`), for the unsubscribe links; default: the dashboard's origin (the local stack serves both). */
  apiUrl: string;
}

export interface PaymentsConfig {
  /** In AWS: a Secrets Manager secret `{"secretKey", "webhookSecret"}` read at run time (payments/stripe-client.ts). */
  stripeSecretArn: string | undefined;
  /** `stripe` with a secret key; `sandbox` outside AWS without one; null: payments off. */
  provider: 'stripe' | 'sandbox' | null;
  stripeSecretKey: string | undefined;
  webhookSecret: string | undefined;
  /** Where the Stripe client sends its requests (tests point it at a local fake). */
  stripeApiUrl: string | undefined;
  successUrl: string | undefined;
  cancelUrl: string | undefined;
}

/** The local sandbox signs its webhooks with this unless STRIPE_WEBHOOK_SECRET says otherwise. */
export const SANDBOX_WEBHOOK_SECRET = 'whsec_local_sandbox_not_a_secret';

export interface OidcConfig {
  /** OIDC_ISSUER exactly as configured: tokens' `iss` must equal it, a trailing slash included. */
  issuer: string;
  /**
   * OIDC_JWKS_URL (Cognito's, the local stack's); unset: the `jwks_uri` of the issuer's discovery
   * document, read with the first session token (shared/auth/jwt.ts).
   */
  jwksUrl: string | undefined;
  /**
   * Accepted `aud` values (ID tokens and generic OIDC), from OIDC_AUDIENCE, comma-separated: the
   * API's client and the dashboard's (infra/stacks/api-stack.ts). A token needs one of them.
   */
  audience: string[] | undefined;
  /** Cognito: expected `token_use` claim (`id` or `access`). */
  tokenUse: 'id' | 'access' | undefined;
  /** Cognito access tokens carry `client_id` instead of `aud`. */
  clientIds: string[];
  algorithms: string[];
}

/**
 * What the logger reads, on every line and apart from the rest: it logs before a full config can
 * be read (no TABLE_NAME in a dev tool) and tests switch LOG_LEVEL while they run.
 */
export const logSettings = (): { level: string | undefined; service: string | undefined } => ({
  level: process.env.LOG_LEVEL,
  service: process.env.SERVICE_NAME,
});

/** Metric lines (shared/observability/metrics.ts): `METRICS=off` mutes them; the stack names the namespace. */
export const metricSettings = (): { off: boolean; namespace: string | undefined; service: string | undefined } => ({
  off: process.env.METRICS === 'off',
  namespace: process.env.METRICS_NAMESPACE || undefined,
  service: process.env.SERVICE_NAME,
});

/**
 * `CURRENCY` (context `currency` in AWS): the deployment's currency until an admin saves one with
 * the settings (shared/settings/index.ts); an unsupported code fails loudly rather than charging in it.
 */
export const setUpCurrency = (): CurrencyCode =>
  process.env.CURRENCY ? parseCurrency(process.env.CURRENCY, 'CURRENCY') : DEFAULT_CURRENCY;

let cached: Config | undefined;

export function getConfig(): Config {
  cached ??= readConfig(process.env);
  return cached;
}

/** Tests and the local stack change the environment before the first request; this forgets the old read. */
export function resetConfig(): void {
  cached = undefined;
}

function required(env: NodeJS.ProcessEnv, name: string): string {
  const value = env[name];
  if (!value) throw new Error(`Missing required environment variable ${name}`);
  return value;
}

export function readConfig(env: NodeJS.ProcessEnv): Config {
  const stage = (env.STAGE ?? (env.AWS_LAMBDA_FUNCTION_NAME ? 'aws' : 'local')) as Config['stage'];
  const issuer = env.OIDC_ISSUER;
  const tokenUse = env.OIDC_TOKEN_USE;
  return {
    stage,
    tableName: required(env, 'TABLE_NAME'),
    region: env.AWS_REGION ?? 'us-east-1',
    dynamodbEndpoint: env.DYNAMODB_ENDPOINT || undefined,
    adminEmails: new Set(
      (env.ADMIN_EMAILS ?? '')
        .split(',')
        .map((e) => e.trim().toLowerCase())
        .filter(Boolean),
    ),
    // Not required in AWS: only the functions that sign cursors get CURSOR_SECRET_ARN, and signing
    // without a key fails there (shared/db/cursor.ts), not the start of every function.
    cursorSecret: env.CURSOR_SECRET || (stage === 'aws' ? undefined : 'local-cursor-secret'),
    cursorSecretArn: env.CURSOR_SECRET_ARN || undefined,
    apiKeyPrefix: stage === 'aws' ? 'cp_live' : 'cp_test',
    oidc: issuer
      ? {
          issuer,
          jwksUrl: env.OIDC_JWKS_URL || undefined,
          audience: env.OIDC_AUDIENCE ? env.OIDC_AUDIENCE.split(',') : undefined,
          tokenUse: tokenUse === 'id' || tokenUse === 'access' ? tokenUse : undefined,
          clientIds: (env.OIDC_CLIENT_IDS ?? '').split(',').filter(Boolean),
          algorithms: (env.OIDC_ALGORITHMS ?? 'RS256').split(',').filter(Boolean),
        }
      : undefined,
    rateLimitPerMinute: Number(env.RATE_LIMIT_PER_MINUTE ?? 240),
    payments: {
      stripeSecretArn: env.STRIPE_SECRET_ARN || undefined,
      provider: env.STRIPE_SECRET_KEY || env.STRIPE_SECRET_ARN ? 'stripe' : stage === 'aws' ? null : 'sandbox',
      stripeSecretKey: env.STRIPE_SECRET_KEY || undefined,
      webhookSecret: env.STRIPE_WEBHOOK_SECRET || (stage === 'aws' ? undefined : SANDBOX_WEBHOOK_SECRET),
      stripeApiUrl: env.STRIPE_API_URL || undefined,
      successUrl: env.CHECKOUT_SUCCESS_URL || undefined,
      cancelUrl: env.CHECKOUT_CANCEL_URL || undefined,
    },
    viesApiUrl: env.VIES_API_URL || 'https://ec.europa.eu/taxation_customs/vies/rest-api',
    billingQueueUrl: env.BILLING_QUEUE_URL || undefined,
    bundleFolder: env.LAMBDA_TASK_ROOT || undefined,
    brandAssets: { bucket: env.BRAND_BUCKET || undefined, baseUrl: env.BRAND_BASE_URL || undefined, dir: env.BRAND_DIR || undefined },
    mail: {
      from: env.MAIL_FROM || undefined,
      transport: !env.MAIL_FROM ? null : stage === 'aws' ? 'ses' : env.SMTP_URL ? 'smtp' : null,
      smtpUrl: env.SMTP_URL || undefined,
      configurationSet: env.MAIL_CONFIGURATION_SET || undefined,
      dashboardUrl: (env.DASHBOARD_URL || 'http://127.0.0.1:3000/app/').replace(/\/?$/, '/'),
      apiUrl: (env.API_URL || new URL('/', env.DASHBOARD_URL || 'http://127.0.0.1:3000/').toString()).replace(/\/?$/, '/'),
    },
    dns: dnsConfigOf(env, stage),
    panelTimeoutMs: Number(env.PANEL_TIMEOUT_MS ?? 10_000),
    panelCreateTimeoutMs: Number(env.PANEL_CREATE_TIMEOUT_MS ?? 20_000),
    panelArchiveWaitMs: Number(env.PANEL_ARCHIVE_WAIT_MS ?? 15 * 60_000),
    panelTopologyTtlMs: Number(env.PANEL_TOPOLOGY_TTL_S ?? 60) * 1000,
    panelEggsTtlMs: Number(env.PANEL_EGGS_TTL_S ?? 300) * 1000,
    // The panel caches a server's resources for 20 s itself; asking more often returns the same numbers.
    liveStateTtlMs: Number(env.LIVE_STATE_TTL_MS ?? 20_000),
    liveStateTransitionTtlMs: Number(env.LIVE_STATE_TRANSITION_TTL_MS ?? 5_000),
    secrets:
      stage === 'aws'
        ? { kind: 'aws', prefix: env.SECRETS_PREFIX ?? 'control-plane' }
        : { kind: 'local', file: env.LOCAL_SECRETS_FILE || undefined },
  };
}

function dnsConfigOf(env: NodeJS.ProcessEnv, stage: Config['stage']): DnsConfig {
  const zone = env.DNS_ZONE?.trim().toLowerCase().replace(/\.$/, '') || undefined;
  const hostedZoneId = env.DNS_HOSTED_ZONE_ID || undefined;
  return {
    zone,
    // In AWS only with a hosted zone; elsewhere the local provider unless a hosted zone is named (tests of the Route 53 path).
    provider: !zone ? null : hostedZoneId ? 'route53' : stage === 'aws' ? null : 'local',
    hostedZoneId,
    ttlSeconds: Number(env.DNS_TTL_S ?? 60),
  };
}
