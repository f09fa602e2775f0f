/**
 * The request and response shapes of the API, one module per domain under schemas/. The route
 * table (routes/<group>.ts) points at these; the routers validate with them and the OpenAPI
 * document is generated from them.
 *
 * This barrel is for code that wants them all (the OpenAPI document, tests, dev tools). Code that
 * runs in a Lambda imports the one module it needs (`./schemas/servers.ts`): every schema is built
 * when its module loads, and esbuild keeps every module a bundle imports, so importing a value
 * through here would make a function build the schemas of every group at its cold start.
 */
export * from './schemas/common.ts';
export * from './schemas/health.ts';
export * from './schemas/account.ts';
export * from './schemas/keys.ts';
export * from './schemas/settings.ts';
export * from './schemas/instances.ts';
export * from './schemas/orphans.ts';
export * from './schemas/catalog.ts';
export * from './schemas/servers.ts';
export * from './schemas/startup.ts';
export * from './schemas/sftp.ts';
export * from './schemas/subdomains.ts';
export * from './schemas/money.ts';
export * from './schemas/alerts.ts';
export * from './schemas/billing-profile.ts';
export * from './schemas/billing.ts';
export * from './schemas/credit-notes.ts';
export * from './schemas/admin.ts';
export * from './schemas/admin-home.ts';
export * from './schemas/payments.ts';
export * from './schemas/dev.ts';
export * from './schemas/webhooks.ts';
export * from './schemas/backups.ts';
export * from './schemas/schedules.ts';
export * from './schemas/network.ts';
export * from './schemas/events.ts';
export * from './schemas/quote.ts';
export * from './schemas/addons.ts';
export * from './schemas/databases.ts';
export * from './schemas/usage.ts';
