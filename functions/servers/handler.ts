import { createGroupHandler } from '../../shared/http/handler.ts';
import { serverRoutes } from '../../shared/api/routes/servers.ts';
import { getServerWithLive } from '../../shared/servers/live.ts';
import { listServers } from '../../shared/servers/read.ts';

import * as control from '../../shared/servers/control.ts';
import * as files from '../../shared/servers/files.ts';
import * as backups from '../../shared/servers/backups.ts';
import { deployServer } from '../../shared/servers/deploy.ts';
import { quoteDeploy } from '../../shared/servers/quote.ts';
import { resizeOf, updateServer } from '../../shared/servers/update.ts';
import { getStartup, updateStartup } from '../../shared/servers/startup.ts';
import { deleteServer } from '../../shared/servers/delete.ts';
import { reinstallServer } from '../../shared/servers/reinstall.ts';

/** Servers group: /v1/servers and everything under /v1/servers/:id. */
export const handler = createGroupHandler('servers', serverRoutes, {
  listServers: async ({ principal, query }) => listServers(principal.accountId, { ...query, boundTo: `servers:${principal.accountId}` }),

  createServer: async ({ principal, body, audit }) => {
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

  quoteServer: async ({ principal, body }) => quoteDeploy(principal.accountId, body),

  getServer: async ({ principal, params }) => getServerWithLive(principal.accountId, params.id),

  updateServer: async ({ principal, params, body, audit }) => {
    audit.target = `server:${params.id}`;
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

  serverStartup: async ({ principal, params }) => getStartup(principal.accountId, params.id),

  updateServerStartup: async ({ principal, params, body, audit }) => {
    audit.target = `server:${params.id}`;
    // Names only: a value may be a secret (an RCON password).
    audit.details = { variables: Object.keys(body.variables ?? {}), ...(body.dockerImage ? { dockerImage: body.dockerImage } : {}) };
    const result = await updateStartup(principal.accountId, params.id, body);
    audit.details = {
      variables: result.changed.filter((c) => c !== 'dockerImage'),
      ...(result.changed.includes('dockerImage') ? { dockerImage: result.dockerImage } : {}),
    };
    return result;
  },

  deleteServer: async ({ principal, params, audit }) => {
    audit.target = `server:${params.id}`;
    return deleteServer(principal.accountId, params.id);
  },

  reinstallServer: async ({ principal, params, audit }) => {
    audit.target = `server:${params.id}`;
    const result = await reinstallServer(principal.accountId, params.id);
    audit.details = { installStatus: result.installStatus, watchedUntil: result.watchedUntil };
    return result;
  },

  powerServer: async ({ principal, params, body, audit }) => {
    audit.target = `server:${params.id}`;
    audit.details = { signal: body.signal };
    return control.sendPower(principal.accountId, params.id, body.signal);
  },

  serverResources: async ({ principal, params }) => control.liveUsage(principal.accountId, params.id),

  serverCommand: async ({ principal, params, body, audit }) => {
    audit.target = `server:${params.id}`;
    // The command itself may hold secrets (passwords typed at a console): only its length is logged.
    audit.details = { length: body.command.length };
    return control.sendCommand(principal.accountId, params.id, body.command);
  },

  serverConsole: async ({ principal, params }) => control.consoleCredentials(principal.accountId, params.id),

  listFiles: async ({ principal, params, query }) => control.listFiles(principal.accountId, params.id, query.directory),

  fileContents: async ({ principal, params, query }) => control.readFile(principal.accountId, params.id, query.file),

  writeFile: async ({ principal, params, body, audit }) => {
    audit.target = `server:${params.id}`;
    audit.details = { file: body.file, bytes: Buffer.byteLength(body.content) };
    return control.writeFile(principal.accountId, params.id, body.file, body.content);
  },

  downloadFile: async ({ principal, params, query }) => control.downloadLink(principal.accountId, params.id, query.file),

  deleteFiles: async ({ principal, params, body, audit }) => {
    audit.target = `server:${params.id}`;
    audit.details = { root: body.root ?? '/', files: body.files };
    return control.deleteFiles(principal.accountId, params.id, body.root, body.files);
  },

  // Files beyond list/read/write/delete, and backups: their modules name the activity entry
  // themselves (shared/servers/files.ts, backups.ts).
  createFolder: async (ctx) => files.createFolder(ctx),
  renameFiles: async (ctx) => files.renameFiles(ctx),
  uploadFiles: async (ctx) => files.uploadLink(ctx),
  compressFiles: async (ctx) => files.compressFiles(ctx),
  decompressFile: async (ctx) => files.decompressFile(ctx),
  listBackups: async (ctx) => backups.listBackups(ctx),
  createBackup: async (ctx) => backups.createBackup(ctx),
  downloadBackup: async (ctx) => backups.backupDownloadLink(ctx),
  restoreBackup: async (ctx) => backups.restoreBackup(ctx),
  lockBackup: async (ctx) => backups.lockBackup(ctx),
  deleteBackup: async (ctx) => backups.deleteBackup(ctx),
});
