import { mkdtempSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resetConfig } from '../shared/config/env.ts';
import { resetDbClient } from '../shared/db/client.ts';
import { ensureAccountForSubject } from '../shared/accounts/index.ts';
import { createApiKey } from '../shared/api-keys/index.ts';
import { hashApiKey } from '../shared/auth/api-key-format.ts';
import * as accessPatterns from '../shared/db/access-patterns.ts';
import { scopesOfAccount } from '../shared/api/scopes.ts';
import { clearSettingsCache, DEFAULT_SETTINGS, getSettings } from '../shared/settings/index.ts';
import { updateSettings } from '../shared/settings/update.ts';
import { EXAMPLE_SELLER } from '../shared/invoices/parties.ts';
import { ensureTable, startDynamoLocal, type LocalDynamo } from './dynamodb.ts';
import { createLocalApi, listen, loadGroupHandlers, type Preroute } from './local-api.ts';
import { keepLocalIdpKeyIn, LOCAL_AUDIENCE, localIssuer as localIssuerUrl } from './local-idp.ts';
import { DASHBOARD_PATH, serveBrandFiles, serveDashboard } from './local-web.ts';
import { localOidc } from './local-oidc.ts';
import { buildDashboard } from '../web/build.ts';
import { GRACE_MS, runPassInProcess } from '../shared/billing/pass.ts';
import { reconcileAll } from '../shared/servers/reconcile.ts';
import { HOUR_MS } from '../shared/pricing/hours.ts';
import { logger, errorFields } from '../shared/observability/logger.ts';
import { startPanelSim, type PanelSim } from './panel-sim/index.ts';
import type { SftpOptions } from './panel-sim/sftp.ts';
import { createInstance, listInstances, updateInstance } from '../shared/instances/index.ts';
import { DEFAULT_PANEL_RATE_LIMITS, PELICAN_RATE_LIMITS } from '../shared/instances/call-budget.ts';
import { startWebhookLoop, type WebhookLoopOptions } from './webhook-loop.ts';
import { startRepairLoop, type RepairLoopOptions } from './repair-loop.ts';
import { installSandboxProvider } from './sandbox-events.ts';
import { startViesStandIn, type ViesStandIn } from './vies-stand-in.ts';
import { mailPage, startMailServer, type LocalMailServer } from './mail-server.ts';
import { startMailLoop } from './mail-loop.ts';
import { resetMailTransport } from '../shared/mail/transport.ts';
import { type LocalDns, startLocalDns } from './local-dns.ts';

/**
 * The whole service on one machine: DynamoDB Local (or a given endpoint), the table, the API
 * routed to the same handlers as the Lambdas, the local identity provider, and a first admin
 * with an API key. `npm start` (dev/start.ts) and the integration tests both start it from here.
 */
export interface LocalStackOptions {
  port?: number;
  host?: string;
  tableName?: string;
  /** Use this DynamoDB instead of starting DynamoDB Local. */
  dynamodbEndpoint?: string;
  /** DynamoDB Local's data folder; undefined keeps everything in memory. */
  dataDir?: string;
  adminEmails?: string[];
  /** The first admin's API key has exactly this secret. */
  localAdminApiKey?: string;
  /** Panel keys file (mode 0600); undefined keeps them in memory. */
  secretsFile?: string;
  /** The local identity provider's key file (mode 0600), so session tokens survive a restart; undefined keeps it in memory. */
  idpKeyFile?: string;
  /** Run the hourly billing pass on the clock, as the EventBridge rule does in AWS. */
  billingSchedule?: boolean;
  /** Start the panel simulator and register it as an instance (LOCAL_PANEL=off says no). */
  panel?: false | PanelOptions;
  /**
   * Run the webhook dispatcher in this process (dev/webhook-loop.ts): fan-out and due attempts,
   * every 250 ms unless `intervalMs` says otherwise. Off when omitted or `false`: `npm start` and
   * `startTestApi` turn it on; the benchmarks leave it off, since its queries would count among the
   * DynamoDB round trips they measure, and so do tests that drive `drainOutbox`/`runDueDeliveries`
   * with their own clock.
   */
  webhooks?: false | WebhookLoopOptions;
  /**
   * Run the pending-repair pass in this process (dev/repair-loop.ts): the suspensions and repairs
   * that did not complete, and the due auto top-ups, every minute unless `intervalMs` says otherwise, as the every-minute
   * function does in AWS. Off when omitted or `false`: `npm start` and `startTestApi` turn it on.
   */
  repairs?: false | RepairLoopOptions;
  /**
   * Serve the dashboard (web/, built first if stale) under `/app/` on the API's origin, signing in
   * against the local identity provider. `npm start` and the browser tests turn it on.
   */
  dashboard?: boolean;
  /**
   * Customer mail (docs/mail.md): a real SMTP server (dev/mail-server.ts) keeping every message as
   * an .eml file in `dir` (default: `mail/` of `dataDir`, else a temporary folder), the page that
   * shows them (GET /dev/mail), and the mail sender in this process every `intervalMs` (250 ms).
   * Off when omitted or `false`: `npm start` and `startTestApi` turn it on.
   */
  mail?: false | { dir?: string; port?: number; intervalMs?: number };
  /**
   * Server subdomains (docs/api.md "Subdomains"): a real DNS server (dev/local-dns.ts) on 127.0.0.1
   * answering the zone (`DNS_ZONE`, default `play.test`) from the records the API wrote to the table.
   * Off when omitted or `false`: `npm start` and `startTestApi` turn it on.
   */
  dns?: false | { zone?: string; port?: number };
}

export interface PanelOptions {
  /** The panel the simulator plays (default Pterodactyl); the instance detects it at registration. */
  kind?: 'pterodactyl' | 'pelican';
  port?: number;
  installMs?: number;
  transitionMs?: number;
  resourcesCacheMs?: number;
  /** The simulator's per-user limits a minute (the panel's defaults when omitted: 240 and 720, Pelican 256 and 256). */
  rateLimits?: { application?: number; client?: number };
  /** Wings' `allowed_origins` on the console websocket. */
  allowedOrigins?: string[];
  /** Run due schedules at each wall-clock minute (`npm start`); tests make a minute pass with the simulator's control. */
  scheduleTick?: boolean;
  /** Schedule tasks' time offsets scaled (0: no waits). */
  scheduleOffsetScale?: number;
  /** false: a panel without a database host (the default seed has one). */
  databaseHost?: boolean;
  /** Wings' SFTP for real, one listener a node (dev/panel-sim/sftp.ts); off when omitted. */
  sftp?: SftpOptions;
}

export interface LocalStack {
  baseUrl: string;
  docsUrl: string;
  dynamodbEndpoint: string;
  tableName: string;
  adminEmail: string;
  adminApiKey: string;
  /** The panel simulator and its instance id, when started. */
  panel?: { sim: PanelSim; instanceId: string };
  /** The dashboard's URL, when served. */
  dashboardUrl?: string;
  /** The VIES stand-in VAT ids are checked against (LOCAL_VIES=off: the real VIES, none here). */
  vies?: ViesStandIn;
  /** The local mail server and its page, when started. */
  mail?: LocalMailServer & { pageUrl: string };
  /** The local DNS server of the subdomains' zone, when started. */
  dns?: LocalDns;
  stop(): Promise<void>;
}

export const LOCAL_ISSUER = 'local-idp';

export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  let dynamo: LocalDynamo | undefined;
  if (!options.dynamodbEndpoint) dynamo = await startDynamoLocal({ dataDir: options.dataDir });
  const dynamodbEndpoint = options.dynamodbEndpoint ?? dynamo!.endpoint;
  const tableName = options.tableName ?? 'control-plane';
  const adminEmails = options.adminEmails?.length ? options.adminEmails : ['admin@localhost'];
  await ensureTable(dynamodbEndpoint, tableName);

  if (options.idpKeyFile) keepLocalIdpKeyIn(options.idpKeyFile);
  const handlers = await loadGroupHandlers();
  const webDir = options.dashboard ? await buildDashboard() : undefined;
  let web: Preroute | undefined;
  let oidc: Preroute | undefined;
  let mailRoute: Preroute | undefined;
  // The identity provider's sign-in (always on: tests use it without the dashboard), the brand's logo, the mail page, then the dashboard.
  // The brand's logo: in the data folder, or a temporary one for a stack in memory (tests).
  const brandDir = options.dataDir ? join(options.dataDir, 'brand') : mkdtempSync(join(tmpdir(), 'control-plane-brand-'));
  const brandFiles = serveBrandFiles(brandDir);
  const server: Server = createLocalApi(
    handlers,
    () => (req, res) => Boolean(oidc?.(req, res) || brandFiles(req, res) || mailRoute?.(req, res) || web?.(req, res)),
  );
  const baseUrl = await listen(server, options.port ?? 0, options.host ?? '127.0.0.1');
  oidc = localOidc({ baseUrl, issuer: LOCAL_ISSUER, clientId: LOCAL_AUDIENCE });
  // VAT ids are checked against a stand-in with VIES's answers, offline (LOCAL_VIES=off: the real VIES).
  const vies = process.env.LOCAL_VIES === 'off' ? undefined : await startViesStandIn();
  const mailServer = options.mail
    ? await startMailServer({
        dir: options.mail.dir ?? (options.dataDir ? join(options.dataDir, 'mail') : mkdtempSync(join(tmpdir(), 'control-plane-mail-'))),
        port: options.mail.port,
      })
    : undefined;
  if (mailServer) mailRoute = mailPage(mailServer.dir);
  const dns = options.dns
    ? await startLocalDns({ zone: options.dns.zone ?? (process.env.DNS_ZONE || 'play.test'), port: options.dns.port })
    : undefined;
  if (webDir) web = serveDashboard({ dir: webDir, config: { oidc: { authority: localIssuerUrl(baseUrl), clientId: LOCAL_AUDIENCE } } });

  Object.assign(process.env, {
    STAGE: process.env.STAGE ?? 'local',
    TABLE_NAME: tableName,
    DYNAMODB_ENDPOINT: dynamodbEndpoint,
    ADMIN_EMAILS: adminEmails.join(','),
    OIDC_ISSUER: LOCAL_ISSUER,
    OIDC_JWKS_URL: `${baseUrl}/dev/oidc/.well-known/jwks.json`,
    OIDC_AUDIENCE: LOCAL_AUDIENCE,
    OIDC_TOKEN_USE: 'id',
    LOCAL_SECRETS_FILE: options.secretsFile ?? '',
    BRAND_DIR: brandDir,
    ...(dns ? { DNS_ZONE: dns.zone } : {}),
    ...(vies ? { VIES_API_URL: vies.url } : {}),
    ...(mailServer
      ? {
          SMTP_URL: mailServer.url,
          MAIL_FROM: process.env.MAIL_FROM || 'billing@control-plane.localhost',
          DASHBOARD_URL: `${baseUrl}${DASHBOARD_PATH}`,
        }
      : {}),
  });
  resetConfig();
  resetMailTransport();
  resetDbClient();
  clearSettingsCache();
  // Without a Stripe key payments run in the sandbox, whose cards and signed events live in dev/.
  installSandboxProvider();

  const adminEmail = adminEmails[0]!;
  const adminApiKey = await seedAdminKey(adminEmail, options.localAdminApiKey);
  await seedExampleSeller();
  // The dashboard's origin is the API's: Wings must accept it on the console websocket.
  const panel = options.panel ? await startAndRegisterPanel({ allowedOrigins: webDir ? [baseUrl] : [], ...options.panel }) : undefined;
  const schedule = options.billingSchedule ? scheduleBilling() : undefined;
  const webhookLoop = options.webhooks ? startWebhookLoop(options.webhooks) : undefined;
  const repairLoop = options.repairs ? startRepairLoop(options.repairs) : undefined;
  const mailLoop = options.mail ? startMailLoop(options.mail.intervalMs) : undefined;

  return {
    baseUrl,
    docsUrl: `${baseUrl}/docs`,
    dynamodbEndpoint,
    tableName,
    adminEmail,
    adminApiKey,
    panel,
    ...(webDir ? { dashboardUrl: `${baseUrl}${DASHBOARD_PATH}` } : {}),
    ...(vies ? { vies } : {}),
    ...(mailServer ? { mail: { ...mailServer, pageUrl: `${baseUrl}/dev/mail` } } : {}),
    ...(dns ? { dns } : {}),
    stop: async () => {
      await dns?.close();
      await mailLoop?.stop();
      await mailServer?.close();
      schedule?.stop();
      await webhookLoop?.stop();
      await repairLoop?.stop();
      await panel?.sim.close();
      await vies?.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await dynamo?.stop();
    },
  };
}

/**
 * A fictional seller while none is set, so top-ups work locally (checkout refuses to open an invoice
 * without one) and every local invoice says plainly that its seller is made up. Seller details an
 * admin saved are kept; cleared ones come back at the next start.
 */
async function seedExampleSeller(): Promise<void> {
  const { invoiceIssuer } = await getSettings(true);
  if (JSON.stringify(invoiceIssuer) !== JSON.stringify(DEFAULT_SETTINGS.invoiceIssuer)) return;
  await updateSettings({ invoiceIssuer: EXAMPLE_SELLER }, 'local-stack');
}

/** The first admin's account (as if it had signed in) and an API key for it. */
async function seedAdminKey(email: string, fixedSecret: string | undefined): Promise<string> {
  const account = await ensureAccountForSubject(LOCAL_ISSUER, `local|${email}`, email);
  if (fixedSecret !== undefined) {
    if (fixedSecret.length < 20) throw new Error('LOCAL_ADMIN_API_KEY must be at least 20 characters');
    if (await accessPatterns.apiKeyByHash(hashApiKey(fixedSecret))) return fixedSecret;
  }
  const principal = { accountId: account.accountId, email: account.email, scopes: new Set(scopesOfAccount(true)) };
  const { secret } = await createApiKey(principal, { name: 'local admin (npm start)' }, fixedSecret);
  return secret;
}

/**
 * The panel simulator, registered as an instance "Local panel" with its keys (the simulator keeps
 * its state in memory, so its servers start afresh with each start; the instance record is reused).
 */
async function startAndRegisterPanel(options: PanelOptions) {
  // The local stack's consoles are served by the simulator itself, at an address this machine resolves.
  const sim = await startPanelSim({ seed: 'default', wingsAddress: 'simulator', ...options });
  // The instance's call budget plans for the limits this panel really has: the detected kind's defaults, unless set.
  const panelRateLimits = options.rateLimits
    ? {
        applicationPerMinute: Math.min(options.rateLimits.application ?? (options.kind === 'pelican' ? 256 : 240), 100_000),
        clientPerMinute: Math.min(options.rateLimits.client ?? (options.kind === 'pelican' ? 256 : 720), 100_000),
      }
    : undefined;
  const existing = (await listInstances()).find((i) => i.baseUrl === sim.url);
  const instanceId = existing
    ? // A record kept from a start with the other kind: the limits of this one.
      (
        await updateInstance(existing.id, {
          appApiKey: sim.appKey,
          clientApiKey: sim.clientKey,
          panelRateLimits: panelRateLimits ?? (options.kind === 'pelican' ? PELICAN_RATE_LIMITS : DEFAULT_PANEL_RATE_LIMITS),
        })
      ).view.id
    : (
        await createInstance({
          name: 'Local panel (simulator)',
          baseUrl: sim.url,
          appApiKey: sim.appKey,
          clientApiKey: sim.clientKey,
          priority: 100,
          enabled: true,
          ...(panelRateLimits ? { panelRateLimits } : {}),
        })
      ).id;
  return { sim, instanceId };
}

/**
 * The local stand-in for the EventBridge hourly rule: a pass a little after every full hour (once
 * the grace period is over), the same handler `POST /dev/billing/run` calls.
 */
function scheduleBilling(): { stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    const next = Math.floor(Date.now() / HOUR_MS) * HOUR_MS + HOUR_MS + GRACE_MS + 5_000;
    timer = setTimeout(async () => {
      try {
        logger.info('reconciled', { ...(await reconcileAll()) });
        const summary = await runPassInProcess(new Date());
        logger.info('hourly billing pass', { ...summary });
      } catch (err) {
        logger.error('hourly billing pass failed', errorFields(err));
      }
      arm();
    }, next - Date.now());
    timer.unref();
  };
  arm();
  return { stop: () => clearTimeout(timer) };
}
