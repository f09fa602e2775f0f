import { resolve } from 'node:path';
import { startLocalStack } from './stack.ts';
import type { PanelSim } from './panel-sim/index.ts';
import { testInstance } from '../shared/instances/test.ts';
import { setUpCurrency } from '../shared/config/env.ts';
import { getSettings } from '../shared/settings/index.ts';
import { type Seller, sellerStatus } from '../shared/invoices/parties.ts';

/**
 * `npm start`: the whole service on this machine. Knobs (README "Local stack knobs"):
 * PORT, DATA_DIR, LOCAL_IN_MEMORY, DYNAMODB_ENDPOINT, ADMIN_EMAILS, LOCAL_ADMIN_API_KEY, WEBHOOK_INTERVAL_MS,
 * REPAIR_INTERVAL_MS, LOCAL_DASHBOARD, LOCAL_SFTP, PANEL_SIM_SFTP_PORT, PANEL_KIND (pterodactyl|pelican); CURRENCY, SMTP_PORT, MAIL_FROM (docs/local-stack.md).
 */
const env = process.env;
// A currency the platform cannot charge in stops the start here, not at the first checkout.
setUpCurrency();
// Metric lines (CloudWatch EMF) are for CloudWatch; the local console shows them with METRICS=on.
if (env.METRICS !== 'on') env.METRICS = 'off';
const inMemory = env.LOCAL_IN_MEMORY === '1' || env.LOCAL_IN_MEMORY === 'true';

const stack = await startLocalStack({
  port: Number(env.PORT ?? 3000),
  dynamodbEndpoint: env.DYNAMODB_ENDPOINT || undefined,
  dataDir: inMemory ? undefined : resolve(env.DATA_DIR ?? '.data'),
  secretsFile: inMemory ? undefined : resolve(env.DATA_DIR ?? '.data', 'panel-keys.json'),
  idpKeyFile: inMemory ? undefined : resolve(env.DATA_DIR ?? '.data', 'local-idp-key.json'),
  adminEmails: (env.ADMIN_EMAILS ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean),
  localAdminApiKey: env.LOCAL_ADMIN_API_KEY || undefined,
  panel:
    env.LOCAL_PANEL === 'off'
      ? false
      : {
          port: Number(env.PANEL_SIM_PORT ?? 8081),
          // PANEL_KIND=pelican: the simulator plays a Pelican panel (docs/pelican.md).
          ...(env.PANEL_KIND === 'pelican' ? { kind: 'pelican' as const } : {}),
          scheduleTick: true,
          // Wings' SFTP, for real: one port a node from PANEL_SIM_SFTP_PORT on (docs/local-stack.md).
          ...(env.LOCAL_SFTP === 'off' ? {} : { sftp: { host: '127.0.0.1', port: Number(env.PANEL_SIM_SFTP_PORT ?? 2022) } }),
        },
  billingSchedule: true,
  webhooks: { intervalMs: env.WEBHOOK_INTERVAL_MS ? Number(env.WEBHOOK_INTERVAL_MS) : undefined },
  repairs: { intervalMs: env.REPAIR_INTERVAL_MS ? Number(env.REPAIR_INTERVAL_MS) : undefined },
  dashboard: env.LOCAL_DASHBOARD !== 'off',
  mail: { port: env.SMTP_PORT ? Number(env.SMTP_PORT) : undefined },
  dns: env.LOCAL_DNS === 'off' ? false : { port: Number(env.DNS_PORT ?? 10053) },
});
// What an operator does after registering a panel: the instance test, which the catalog's
// `controlAvailable` reflects (false until a test resolved the client key).
const panelTest = stack.panel ? await testInstance(stack.panel.instanceId) : undefined;

const line = '─'.repeat(64);
process.stdout.write(
  [
    line,
    ' Hosting control plane — local stack',
    line,
    ` Dashboard  ${stack.dashboardUrl ?? 'off (LOCAL_DASHBOARD=off)'}`,
    ` API        ${stack.baseUrl}`,
    ` Docs       ${stack.docsUrl}`,
    ` OpenAPI    ${stack.baseUrl}/openapi.json`,
    ` DynamoDB   ${stack.dynamodbEndpoint} (table ${stack.tableName}${inMemory ? ', in memory' : `, data in ${env.DATA_DIR ?? '.data'}`})`,
    ` Panel      ${stack.panel ? `${stack.panel.sim.url} (simulator, instance ${stack.panel.instanceId}, test ${panelTest?.ok ? 'ok' : 'failed'})` : 'off (LOCAL_PANEL=off)'}`,
    ` SFTP       ${sftpLine(stack.panel?.sim)}`,
    ` Billing    hourly pass at :02 past each hour; run one now: curl -X POST ${stack.baseUrl}/dev/billing/run -d '{}' -H 'content-type: application/json'`,
    ` Payments   ${process.env.STRIPE_SECRET_KEY ? 'Stripe' : 'sandbox checkout (no STRIPE_SECRET_KEY)'}, in ${(await getSettings(true)).currency.toUpperCase()}`,
    ` Seller     ${sellerLine((await getSettings(true)).invoiceIssuer)}`,
    ` Webhooks   dispatcher in this process, a pass every ${env.WEBHOOK_INTERVAL_MS ?? 250} ms (outbox fan-out, then due attempts)`,
    ` Mail       ${stack.mail ? `${stack.mail.pageUrl} (SMTP ${stack.mail.url}, messages kept in ${stack.mail.dir})` : 'off'}`,
    ` DNS        ${stack.dns ? `${stack.dns.host}:${stack.dns.port} (UDP), zone ${stack.dns.zone}: dig @${stack.dns.host} -p ${stack.dns.port} <name>.${stack.dns.zone}` : 'off (LOCAL_DNS=off)'}`,
    ` Repairs    pending suspensions and repairs, and due auto top-ups, in this process every ${env.REPAIR_INTERVAL_MS ?? 60_000} ms`,
    ` Admin      ${stack.adminEmail}`,
    ` Admin key  ${stack.adminApiKey}`,
    '',
    ` Try:  curl -H "Authorization: Bearer ${stack.adminApiKey}" ${stack.baseUrl}/v1/account`,
    line,
    '',
  ].join('\n'),
);

const shutdown = async () => {
  await stack.stop();
  process.exit(0);
};
process.once('SIGINT', shutdown);
process.once('SIGTERM', shutdown);

/** Where the simulated nodes' SFTP listens: the host and port each server's `sftp` view names. */
function sftpLine(sim: PanelSim | undefined): string {
  if (!sim) return 'off (LOCAL_PANEL=off)';
  if (!sim.sftpPorts) return 'off (LOCAL_SFTP=off)';
  const nodes = [...sim.sftpPorts].map(([id, port]) => `${sim.state.nodes.get(id)?.name ?? id} ${port}`).join(', ');
  return `sftp://127.0.0.1 (${nodes}); log in with the password from POST /v1/account/sftp-password`;
}

/** What the invoices name as the seller: the fictional one the local stack seeds says so. */
function sellerLine(seller: Seller): string {
  const { status, missingFields } = sellerStatus(seller);
  if (status === 'example') return `${seller.legalName}, on every invoice until you set yours`;
  if (status === 'missing') return `not set (${missingFields.join(', ')}): checkouts are refused until it is`;
  return `${seller.legalName}`;
}
