import { createGroupHandler } from '../../shared/http/handler.ts';
import { sharedAccessOfRoute } from '../../shared/servers/share-access.ts';
import { setAddons } from '../../shared/servers/addons.ts';
import { serverToolRoutes } from '../../shared/api/routes/server-tools.ts';
import * as control from '../../shared/servers/control.ts';
import * as files from '../../shared/servers/files.ts';
import * as backups from '../../shared/servers/backups.ts';
import * as schedules from '../../shared/servers/schedules.ts';
import * as databases from '../../shared/servers/databases.ts';
import * as network from '../../shared/servers/network.ts';
import { getStartup, updateStartup } from '../../shared/servers/startup.ts';

/** Server-tools group: what a player uses inside a server (startup, files, backups, schedules, databases, ports, add-ons). */
export const handler = createGroupHandler(
  'server-tools',
  serverToolRoutes,
  {
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
    chmodFiles: async (ctx) => files.chmodFiles(ctx),
    listBackups: async (ctx) => backups.listBackups(ctx),
    createBackup: async (ctx) => backups.createBackup(ctx),
    downloadBackup: async (ctx) => backups.backupDownloadLink(ctx),
    restoreBackup: async (ctx) => backups.restoreBackup(ctx),
    lockBackup: async (ctx) => backups.lockBackup(ctx),
    deleteBackup: async (ctx) => backups.deleteBackup(ctx),
    listSchedules: async (ctx) => schedules.listSchedules(ctx),
    createSchedule: async (ctx) => schedules.createSchedule(ctx),
    getSchedule: async (ctx) => schedules.getSchedule(ctx),
    updateSchedule: async (ctx) => schedules.updateSchedule(ctx),
    deleteSchedule: async (ctx) => schedules.deleteSchedule(ctx),
    runSchedule: async (ctx) => schedules.runSchedule(ctx),
    listAllocations: async (ctx) => network.listAllocations(ctx),
    addAllocation: async (ctx) => network.addAllocation(ctx),
    updateAllocation: async (ctx) => network.updateAllocation(ctx),
    removeAllocation: async (ctx) => network.removeAllocation(ctx),
    listDatabases: async (ctx) => databases.listDatabases(ctx),
    createDatabase: async (ctx) => databases.createDatabase(ctx),
    rotateDatabasePassword: async (ctx) => databases.rotateDatabasePassword(ctx),
    deleteDatabase: async (ctx) => databases.deleteDatabase(ctx),

    setServerAddons: async ({ principal, params, body, audit }) => {
      audit.target = `server:${params.id}`;
      const server = await setAddons(principal.accountId, params.id, body);
      audit.details = { addons: server.addons, priceMillicentsPerHour: server.priceMillicentsPerHour };
      return server;
    },
  },
  { sharedAccess: sharedAccessOfRoute },
);
