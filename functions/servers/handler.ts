import { createGroupHandler } from '../../shared/http/handler.ts';
import { serverRoutes } from '../../shared/api/routes/servers.ts';
import { getServerWithLive } from '../../shared/servers/live.ts';
import { listServers } from '../../shared/servers/read.ts';

// Power, console, usage and files load with their first call: reading and listing servers is most of the traffic.
const control = () => import('../../shared/servers/control.ts');
const files = () => import('../../shared/servers/files.ts');
const backups = () => import('../../shared/servers/backups.ts');

/** Servers group: /v1/servers and everything under /v1/servers/:id. */
export const handler = createGroupHandler('servers', serverRoutes, {
  listServers: async ({ principal, query }) => listServers(principal.accountId, { ...query, boundTo: `servers:${principal.accountId}` }),

  createServer: async ({ principal, body, audit }) => {
    // The deploy path (placement, egg variables, the panel's create) is loaded with the first deploy,
    // not at every cold start (a lazily loaded chunk, infra/bundle.ts); reads and power are most calls.
    const { deployServer } = await import('../../shared/servers/deploy.ts');
    const server = await deployServer(principal, body);
    audit.target = `server:${server.id}`;
    audit.details = {
      name: server.name,
      instanceId: server.instanceId,
      eggId: server.eggId,
      region: server.region,
      resources: server.resources,
      priceCentsPerHour: server.priceCentsPerHour,
    };
    return server;
  },

  quoteServer: async ({ principal, body }) => (await import('../../shared/servers/quote.ts')).quoteDeploy(principal.accountId, body),

  getServer: async ({ principal, params }) => getServerWithLive(principal.accountId, params.id),

  updateServer: async ({ principal, params, body, audit }) => {
    audit.target = `server:${params.id}`;
    // Like deploy, the rename and resize path (topology copy, placement room, budgets) loads with the first of them.
    const { resizeOf, updateServer } = await import('../../shared/servers/update.ts');
    const resize = resizeOf(body);
    if (!resize) audit.action = body.name === undefined ? 'servers.labels' : 'servers.rename';
    const { server, renamed, labels } = await updateServer(principal.accountId, params.id, body);
    audit.details = {
      ...(resize ? { resources: server.resources, priceCentsPerHour: server.priceCentsPerHour } : {}),
      ...(renamed ? { name: renamed } : {}),
      ...(labels ? { labels } : {}),
    };
    return server;
  },

  serverStartup: async ({ principal, params }) => {
    const { getStartup } = await import('../../shared/servers/startup.ts');
    return getStartup(principal.accountId, params.id);
  },

  updateServerStartup: async ({ principal, params, body, audit }) => {
    audit.target = `server:${params.id}`;
    // Names only: a value may be a secret (an RCON password).
    audit.details = { variables: Object.keys(body.variables ?? {}), ...(body.dockerImage ? { dockerImage: body.dockerImage } : {}) };
    const { updateStartup } = await import('../../shared/servers/startup.ts');
    const result = await updateStartup(principal.accountId, params.id, body);
    audit.details = {
      variables: result.changed.filter((c) => c !== 'dockerImage'),
      ...(result.changed.includes('dockerImage') ? { dockerImage: result.dockerImage } : {}),
    };
    return result;
  },

  deleteServer: async ({ principal, params, audit }) => {
    audit.target = `server:${params.id}`;
    // Once per server's life: loaded with the first delete, like deploy.
    return (await import('../../shared/servers/delete.ts')).deleteServer(principal.accountId, params.id);
  },

  reinstallServer: async ({ principal, params, audit }) => {
    audit.target = `server:${params.id}`;
    // Loaded on use, like deploy and resize: the start chunk stays within its budget.
    const { reinstallServer } = await import('../../shared/servers/reinstall.ts');
    const result = await reinstallServer(principal.accountId, params.id);
    audit.details = { installStatus: result.installStatus, watchedUntil: result.watchedUntil };
    return result;
  },

  powerServer: async ({ principal, params, body, audit }) => {
    audit.target = `server:${params.id}`;
    audit.details = { signal: body.signal };
    return (await control()).sendPower(principal.accountId, params.id, body.signal);
  },

  serverResources: async ({ principal, params }) => (await control()).liveUsage(principal.accountId, params.id),

  serverCommand: async ({ principal, params, body, audit }) => {
    audit.target = `server:${params.id}`;
    // The command itself may hold secrets (passwords typed at a console): only its length is logged.
    audit.details = { length: body.command.length };
    return (await control()).sendCommand(principal.accountId, params.id, body.command);
  },

  serverConsole: async ({ principal, params }) => (await control()).consoleCredentials(principal.accountId, params.id),

  listFiles: async ({ principal, params, query }) => (await control()).listFiles(principal.accountId, params.id, query.directory),

  fileContents: async ({ principal, params, query }) => (await control()).readFile(principal.accountId, params.id, query.file),

  writeFile: async ({ principal, params, body, audit }) => {
    audit.target = `server:${params.id}`;
    audit.details = { file: body.file, bytes: Buffer.byteLength(body.content) };
    return (await control()).writeFile(principal.accountId, params.id, body.file, body.content);
  },

  downloadFile: async ({ principal, params, query }) => (await control()).downloadLink(principal.accountId, params.id, query.file),

  deleteFiles: async ({ principal, params, body, audit }) => {
    audit.target = `server:${params.id}`;
    audit.details = { root: body.root ?? '/', files: body.files };
    return (await control()).deleteFiles(principal.accountId, params.id, body.root, body.files);
  },

  // Files beyond list/read/write/delete, and backups: their modules load with their first call and
  // name the activity entry themselves (shared/servers/files.ts, backups.ts).
  createFolder: async (ctx) => (await files()).createFolder(ctx),
  renameFiles: async (ctx) => (await files()).renameFiles(ctx),
  uploadFiles: async (ctx) => (await files()).uploadLink(ctx),
  compressFiles: async (ctx) => (await files()).compressFiles(ctx),
  decompressFile: async (ctx) => (await files()).decompressFile(ctx),
  listBackups: async (ctx) => (await backups()).listBackups(ctx),
  createBackup: async (ctx) => (await backups()).createBackup(ctx),
  downloadBackup: async (ctx) => (await backups()).backupDownloadLink(ctx),
  restoreBackup: async (ctx) => (await backups()).restoreBackup(ctx),
  lockBackup: async (ctx) => (await backups()).lockBackup(ctx),
  deleteBackup: async (ctx) => (await backups()).deleteBackup(ctx),
});
