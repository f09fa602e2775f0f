import { define, PANEL, CONTROL } from '../route-def.ts';
import { IdParam } from '../schemas/common.ts';
import {
  ChmodFiles,
  ChmodResult,
  CompressFiles,
  CreateFolder,
  DecompressFile,
  DecompressResult,
  DeleteFiles,
  DeleteFilesResult,
  DirectoryQuery,
  DownloadLink,
  FileContents,
  FileEntry,
  FileList,
  FileQuery,
  FolderResult,
  RenameFiles,
  RenameResult,
  UploadLink,
  WriteFile,
  WriteResult,
} from '../schemas/servers.ts';
import { ServerStartup, StartupUpdated, UpdateStartup } from '../schemas/startup.ts';
import {
  Backup,
  BackupList,
  BackupLink,
  BackupParams,
  CreateBackup,
  DeletedBackup,
  LockBackup,
  RestoreBackup,
  RestoreResult,
} from '../schemas/backups.ts';
import {
  CreateSchedule,
  DeletedSchedule,
  Schedule,
  ScheduleList,
  ScheduleParams,
  ScheduleRun,
  UpdateSchedule,
} from '../schemas/schedules.ts';
import {
  AllocationList,
  AllocationParams,
  CreateAllocation,
  DeletedAllocation,
  ServerAllocation,
  UpdateAllocation,
} from '../schemas/network.ts';
import { CreateDatabase, DatabaseParams, DatabaseWithPassword, DeletedDatabase, ServerDatabaseList } from '../schemas/databases.ts';

import { ServerActivityList, ServerActivityQuery } from '../schemas/activity.ts';
import { ServerCost, UsageHistory, UsageHistoryQuery } from '../schemas/usage.ts';
import { AddonsUpdate } from '../schemas/addons.ts';
import { Server } from '../schemas/servers.ts';

// The frame the file and backup routes share.
const FILES = { group: 'server-tools', tag: 'Server files', auth: 'bearer' } as const;
const BACKUPS = { group: 'server-tools', tag: 'Server backups', auth: 'bearer' } as const;
// Changes under the server's lease, after the account check (lease.ts).
const LEASED = [...CONTROL, 'insufficient_credit', 'operation_in_progress'] as const;

/**
 * The server-tools group: what a player uses inside a server (startup, files, backups, schedules, databases, ports, activity).
 * Under /v1/servers/:id like the servers group's routes, in a function of its own so that neither
 * function's cold start carries the other's code.
 */
export const serverStartupRoutes = define({
  serverStartup: {
    method: 'GET',
    path: '/v1/servers/:id/startup',
    group: 'server-tools',
    tag: 'Servers',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'Startup settings: the egg variables you may see, the docker image and its choices',
    params: IdParam,
    response: ServerStartup,
    errors: ['conflict', ...PANEL],
  },
  updateServerStartup: {
    method: 'PUT',
    path: '/v1/servers/:id/startup',
    group: 'server-tools',
    tag: 'Servers',
    auth: 'bearer',
    scope: 'servers:write',
    summary: "Change variables (by the egg's rules) and/or the docker image; applies at the next start",
    params: IdParam,
    body: UpdateStartup,
    response: StartupUpdated,
    audit: 'servers.startup',
    errors: ['insufficient_credit', 'conflict', 'operation_in_progress', ...PANEL],
  },
});

/** A server's files and backups. */
export const serverStorageRoutes = define({
  listFiles: {
    method: 'GET',
    path: '/v1/servers/:id/files',
    group: 'server-tools',
    tag: 'Server files',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'Files in a directory (default /)',
    params: IdParam,
    query: DirectoryQuery,
    response: FileList,
    errors: CONTROL,
  },
  fileContents: {
    method: 'GET',
    path: '/v1/servers/:id/files/contents',
    group: 'server-tools',
    tag: 'Server files',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'Contents of a text file (the panel refuses files over 4 MiB)',
    params: IdParam,
    query: FileQuery,
    response: FileContents,
    errors: CONTROL,
  },
  writeFile: {
    method: 'POST',
    path: '/v1/servers/:id/files/write',
    group: 'server-tools',
    tag: 'Server files',
    auth: 'bearer',
    scope: 'servers:write',
    summary: 'Create or replace a file (content up to 512 KiB)',
    params: IdParam,
    body: WriteFile,
    response: WriteResult,
    audit: 'servers.files.write',
    errors: CONTROL,
  },
  downloadFile: {
    method: 'GET',
    path: '/v1/servers/:id/files/download',
    group: 'server-tools',
    tag: 'Server files',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'Signed single-use download address',
    params: IdParam,
    query: FileQuery,
    response: DownloadLink,
    errors: CONTROL,
  },
  deleteFiles: {
    method: 'POST',
    path: '/v1/servers/:id/files/delete',
    group: 'server-tools',
    tag: 'Server files',
    auth: 'bearer',
    scope: 'servers:write',
    summary: 'Delete files or directories',
    params: IdParam,
    body: DeleteFiles,
    response: DeleteFilesResult,
    audit: 'servers.files.delete',
    errors: CONTROL,
  },
  createFolder: {
    ...FILES,
    method: 'POST',
    path: '/v1/servers/:id/files/mkdir',
    scope: 'servers:write',
    summary: 'Create a directory (and its parents)',
    params: IdParam,
    body: CreateFolder,
    response: FolderResult,
    audit: 'servers.files.mkdir',
    errors: LEASED,
  },
  renameFiles: {
    ...FILES,
    method: 'POST',
    path: '/v1/servers/:id/files/rename',
    scope: 'servers:write',
    summary: 'Rename or move files and directories',
    params: IdParam,
    body: RenameFiles,
    response: RenameResult,
    audit: 'servers.files.rename',
    errors: LEASED,
  },
  uploadFiles: {
    ...FILES,
    method: 'GET',
    path: '/v1/servers/:id/files/upload',
    scope: 'servers:write',
    summary: 'Signed upload address: POST multipart `files` to it',
    params: IdParam,
    query: DirectoryQuery,
    response: UploadLink,
    audit: 'servers.files.upload',
    errors: CONTROL,
  },
  compressFiles: {
    ...FILES,
    method: 'POST',
    path: '/v1/servers/:id/files/compress',
    scope: 'servers:write',
    summary: 'Pack files into archive-<time>.tar.gz in root',
    description:
      'Sent to the panel once. If the panel (which waits up to 15 minutes on Wings) has not answered by the end of this request: 504 `panel_timeout`, the archive is still being made, and the same compress is 409 `operation_in_progress` until the panel is done with it; nothing is sent twice.',
    params: IdParam,
    body: CompressFiles,
    response: FileEntry,
    audit: 'servers.files.compress',
    errors: LEASED,
  },
  decompressFile: {
    ...FILES,
    method: 'POST',
    path: '/v1/servers/:id/files/decompress',
    scope: 'servers:write',
    summary: 'Extract an archive into root',
    description:
      'Sent to the panel once. If the panel has not answered by the end of this request: 504 `panel_timeout`, the extraction goes on, and the same decompress is 409 `operation_in_progress` until the panel is done with it; nothing is sent twice.',
    params: IdParam,
    body: DecompressFile,
    response: DecompressResult,
    audit: 'servers.files.decompress',
    errors: LEASED,
  },
  chmodFiles: {
    ...FILES,
    method: 'POST',
    path: '/v1/servers/:id/files/chmod',
    scope: 'servers:write',
    summary: 'Change the permissions (octal mode) of files and directories',
    params: IdParam,
    body: ChmodFiles,
    response: ChmodResult,
    audit: 'servers.files.chmod',
    errors: LEASED,
  },
  listBackups: {
    ...BACKUPS,
    method: 'GET',
    path: '/v1/servers/:id/backups',
    scope: 'servers:read',
    summary: "The server's backups",
    params: IdParam,
    response: BackupList,
    errors: CONTROL,
  },
  createBackup: {
    ...BACKUPS,
    method: 'POST',
    path: '/v1/servers/:id/backups',
    scope: 'servers:write',
    summary: 'Start a backup (in_progress until Wings is done)',
    params: IdParam,
    body: CreateBackup,
    status: 201,
    response: Backup,
    idempotent: true,
    audit: 'servers.backups.create',
    errors: [...LEASED, 'limit_exceeded'],
  },
  downloadBackup: {
    ...BACKUPS,
    method: 'GET',
    path: '/v1/servers/:id/backups/:backupId/download',
    scope: 'servers:read',
    summary: 'Signed single-use download address',
    params: BackupParams,
    response: BackupLink,
    audit: 'servers.backups.download',
    errors: CONTROL,
  },
  restoreBackup: {
    ...BACKUPS,
    method: 'POST',
    path: '/v1/servers/:id/backups/:backupId/restore',
    scope: 'servers:write',
    summary: 'Restore a completed backup',
    params: BackupParams,
    body: RestoreBackup,
    response: RestoreResult,
    audit: 'servers.backups.restore',
    errors: LEASED,
  },
  lockBackup: {
    ...BACKUPS,
    method: 'POST',
    path: '/v1/servers/:id/backups/:backupId/lock',
    scope: 'servers:write',
    summary: 'Lock or unlock a backup (a locked one cannot be deleted)',
    params: BackupParams,
    body: LockBackup,
    response: Backup,
    audit: 'servers.backups.lock',
    errors: LEASED,
  },
  deleteBackup: {
    ...BACKUPS,
    method: 'DELETE',
    path: '/v1/servers/:id/backups/:backupId',
    scope: 'servers:write',
    summary: 'Delete a backup (a locked one: 409)',
    params: BackupParams,
    response: DeletedBackup,
    audit: 'servers.backups.delete',
    errors: LEASED,
  },
});

const SCHEDULES = { group: 'server-tools', tag: 'Server schedules', auth: 'bearer' } as const;

/** A server's schedules (shared/servers/schedules.ts): the panel runs them at their minute (UTC). */
export const serverScheduleRoutes = define({
  listSchedules: {
    ...SCHEDULES,
    method: 'GET',
    path: '/v1/servers/:id/schedules',
    scope: 'servers:read',
    summary: "The server's schedules with their tasks",
    params: IdParam,
    response: ScheduleList,
    errors: CONTROL,
  },
  createSchedule: {
    ...SCHEDULES,
    method: 'POST',
    path: '/v1/servers/:id/schedules',
    scope: 'servers:write',
    summary: 'Create a schedule and its tasks (1 + one panel call per task)',
    description:
      'Cron fields and tasks are checked as the panel checks them (400 naming the field). At most `schedulesPerServer` schedules per server (422 `limit_exceeded`), at most 10 tasks each. A task the panel refuses removes the schedule again: nothing is left behind.',
    params: IdParam,
    body: CreateSchedule,
    status: 201,
    response: Schedule,
    idempotent: true,
    audit: 'servers.schedules.create',
    errors: [...LEASED, 'limit_exceeded'],
  },
  getSchedule: {
    ...SCHEDULES,
    method: 'GET',
    path: '/v1/servers/:id/schedules/:scheduleId',
    scope: 'servers:read',
    summary: 'One schedule with its tasks',
    params: ScheduleParams,
    response: Schedule,
    errors: CONTROL,
  },
  updateSchedule: {
    ...SCHEDULES,
    method: 'PATCH',
    path: '/v1/servers/:id/schedules/:scheduleId',
    scope: 'servers:write',
    summary: 'Change a schedule; `tasks`, when given, replaces its task list',
    params: ScheduleParams,
    body: UpdateSchedule,
    response: Schedule,
    audit: 'servers.schedules.update',
    errors: [...LEASED, 'limit_exceeded'],
  },
  deleteSchedule: {
    ...SCHEDULES,
    method: 'DELETE',
    path: '/v1/servers/:id/schedules/:scheduleId',
    scope: 'servers:write',
    summary: 'Delete a schedule and its tasks',
    params: ScheduleParams,
    response: DeletedSchedule,
    audit: 'servers.schedules.delete',
    errors: LEASED,
  },
  runSchedule: {
    ...SCHEDULES,
    method: 'POST',
    path: '/v1/servers/:id/schedules/:scheduleId/run',
    scope: 'servers:write',
    summary: 'Run a schedule now (active or not); 409 when it has no tasks',
    params: ScheduleParams,
    status: 202,
    response: ScheduleRun,
    audit: 'servers.schedules.run',
    errors: LEASED,
  },
});

const NETWORK = { group: 'server-tools', tag: 'Server network', auth: 'bearer' } as const;

/** A server's allocations (ports) on its panel (shared/servers/network.ts). */
export const serverNetworkRoutes = define({
  listAllocations: {
    ...NETWORK,
    method: 'GET',
    path: '/v1/servers/:id/allocations',
    scope: 'servers:read',
    summary: "The server's allocations (primary first) and how many it may hold",
    params: IdParam,
    response: AllocationList,
    errors: ['conflict', ...PANEL],
  },
  addAllocation: {
    ...NETWORK,
    method: 'POST',
    path: '/v1/servers/:id/allocations',
    scope: 'servers:write',
    summary: "Add a port: one of the node's free allocations (within the server's limit)",
    description:
      "Takes a free allocation of the server's node (on the primary's IP when it has one free) and assigns it to the server. The server's limit (`limit` on the list: the primary included) is 422 `limit_exceeded`; a node with no free allocation is 503 `no_capacity`. Players reach the new port after the server's next start.",
    params: IdParam,
    body: CreateAllocation,
    status: 201,
    response: ServerAllocation,
    idempotent: true,
    audit: 'servers.network.add',
    errors: [...LEASED, 'limit_exceeded', 'no_capacity'],
  },
  updateAllocation: {
    ...NETWORK,
    method: 'PATCH',
    path: '/v1/servers/:id/allocations/:allocationId',
    scope: 'servers:write',
    summary: 'Set the note of an allocation and/or make it the primary',
    description:
      "Making an allocation primary moves the server's `address` to it (after the next start for players); SFTP stays as it is (per node).",
    params: AllocationParams,
    body: UpdateAllocation,
    response: ServerAllocation,
    audit: 'servers.network.update',
    errors: LEASED,
  },
  removeAllocation: {
    ...NETWORK,
    method: 'DELETE',
    path: '/v1/servers/:id/allocations/:allocationId',
    scope: 'servers:write',
    summary: 'Remove an allocation from the server (never the primary: 409)',
    params: AllocationParams,
    response: DeletedAllocation,
    audit: 'servers.network.remove',
    errors: LEASED,
  },
});

const DATABASES = { group: 'server-tools', tag: 'Server databases', auth: 'bearer' } as const;

/** A server's databases on the panel's database hosts (shared/servers/databases.ts); one panel call each. */
export const serverDatabaseRoutes = define({
  listDatabases: {
    ...DATABASES,
    method: 'GET',
    path: '/v1/servers/:id/databases',
    scope: 'servers:read',
    summary: "The server's databases: host and port, name, user, where connections may come from (never a password)",
    params: IdParam,
    response: ServerDatabaseList,
    errors: CONTROL,
  },
  createDatabase: {
    ...DATABASES,
    method: 'POST',
    path: '/v1/servers/:id/databases',
    scope: 'servers:write',
    summary: 'Create a database; its password is in this answer only',
    description:
      'The password is shown once: it is neither stored nor logged. Not idempotent (an idempotency record would have to keep the password): a repeated create is refused with 409, the name being taken. 422 `limit_exceeded` when the server holds its `databases` limit; 409 `conflict` when the panel has no database host for the server.',
    params: IdParam,
    body: CreateDatabase,
    status: 201,
    response: DatabaseWithPassword,
    audit: 'servers.databases.create',
    errors: [...LEASED, 'limit_exceeded', 'conflict'],
  },
  rotateDatabasePassword: {
    ...DATABASES,
    method: 'POST',
    path: '/v1/servers/:id/databases/:databaseId/rotate-password',
    scope: 'servers:write',
    summary: 'Set a new random password; it is in this answer only (the old one stops working)',
    params: DatabaseParams,
    response: DatabaseWithPassword,
    audit: 'servers.databases.rotate_password',
    errors: LEASED,
  },
  deleteDatabase: {
    ...DATABASES,
    method: 'DELETE',
    path: '/v1/servers/:id/databases/:databaseId',
    scope: 'servers:write',
    summary: 'Delete a database and its user',
    params: DatabaseParams,
    response: DeletedDatabase,
    audit: 'servers.databases.delete',
    errors: LEASED,
  },
});

/** A server's activity: ours and the panel's, merged (shared/servers/activity.ts). */
export const serverActivityRoutes = define({
  serverActivity: {
    method: 'GET',
    path: '/v1/servers/:id/activity',
    group: 'server-tools',
    tag: 'Servers',
    auth: 'bearer',
    scope: 'servers:read',
    summary: "The server's activity: calls to this API and the panel's events, newest first",
    description:
      "Our entries about the server (who: the account's e-mail and the credential, API key id and name or session; also invitees and admins acting on it) and the panel's activity log for it (SFTP, schedules, reads), merged newest first. The cursor holds both positions: no entry twice, none skipped when new ones arrive between pages; a page may be shorter than `limit` and still carry a cursor. The panel's copy of our own calls (made with our API key) is left out: our entry names the real actor. At most one panel call per page (none when the server cannot be read there). A panel that does not answer does not fail the page: `panel.status` is `unavailable` with the reason, and its events follow on later pages.",
    params: IdParam,
    query: ServerActivityQuery,
    response: ServerActivityList,
  },
});

/** A server's usage history and cost this month: read from the table, no panel call (shared/servers/usage-history.ts, cost.ts). */
export const serverUsageRoutes = define({
  serverUsageHistory: {
    method: 'GET',
    path: '/v1/servers/:id/usage/history',
    group: 'server-tools',
    tag: 'Server control',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'CPU, memory, disk and network over the last hour, day or week',
    description:
      'Samples the live-state refresh kept while the server was read (at most one per 5 minutes), averaged per point: 5 minutes for `hour`, 15 for `day`, an hour for `week`. No panel call.',
    params: IdParam,
    query: UsageHistoryQuery,
    response: UsageHistory,
  },
  serverCost: {
    method: 'GET',
    path: '/v1/servers/:id/cost',
    group: 'server-tools',
    tag: 'Servers',
    auth: 'bearer',
    scope: 'servers:read',
    summary: "The server's charges this month and the projection to the month's end",
    description:
      "So far: the ledger's hourly charges of this server in the current month (UTC). Projection: so far plus every hour still to charge at the exact price billing would charge, the monthly cap applied. Both in cents rounded down, as the ledger charges. No panel call.",
    params: IdParam,
    response: ServerCost,
  },
});

/** A server's add-ons (shared/servers/addons.ts): extra backup slots, databases and ports, priced per hour. */
export const serverAddonRoutes = define({
  setServerAddons: {
    method: 'PUT',
    path: '/v1/servers/:id/addons',
    group: 'server-tools',
    tag: 'Servers',
    auth: 'bearer',
    scope: 'servers:write',
    summary: 'Set the add-ons (extra backup slots, databases, ports): feature limits on the panel at once, hourly price recomputed',
    description:
      "The extras the server has from now on (all three). Each is priced per hour (GET /v1/pricing `addons`) and added to the server's hourly price from this moment, billed by the hourly pass like resources; a removed one is no longer charged after the current hour. A higher price needs the 24-hour runway and fits the budget as an upsize does. Lowering below what the server holds (its backups, databases or ports) is 409 `conflict` naming the count. On a plan with a set price the server keeps that price, plus the add-ons beyond the plan's; fewer than the plan includes is 422 `plan_mismatch`. Owner only.",
    params: IdParam,
    body: AddonsUpdate,
    response: Server,
    audit: 'servers.addons',
    errors: ['insufficient_credit', 'limit_exceeded', 'plan_mismatch', 'conflict', 'operation_in_progress', ...PANEL],
  },
});

/** Every route of the server-tools function. */
export const serverToolRoutes = {
  ...serverStartupRoutes,
  ...serverStorageRoutes,
  ...serverScheduleRoutes,
  ...serverNetworkRoutes,
  ...serverDatabaseRoutes,
  ...serverActivityRoutes,
  ...serverUsageRoutes,
  ...serverAddonRoutes,
};
