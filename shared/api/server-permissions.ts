/**
 * Shared access in one table: what an invitee needs for each route on one server.
 * Every route whose path starts with `/v1/servers/:id` is here, with what an invitee (an account
 * holding a share of the server, shared/servers/shares.ts) needs to call it. `owner`: only the
 * owner, ever (money, deletion, the server's identity, who has access).
 * The request pipeline reads this table (shared/http/handler.ts, `resolveServerAccess`); a route
 * missing from it is owner-only there, and tests/unit/server-permissions.test.ts fails listing it.
 * Types and constants only: every function's start loads it.
 */

/** What an owner may grant. `read-only` (see the server, its usage and activity) is implied by every grant. */
export const SERVER_PERMISSIONS = ['console', 'power', 'files', 'backups', 'schedules', 'databases', 'startup', 'read-only'] as const;
export type ServerPermission = (typeof SERVER_PERMISSIONS)[number];
export type RouteAccess = ServerPermission | 'owner';

/** At most this many accounts (invited e-mails) per server: a constant, not a setting. */
export const MAX_SHARES_PER_SERVER = 10;

export const serverRoutePermissions: Readonly<Record<string, RouteAccess>> = {
  // The server itself: its view and usage are read-only; its identity, size, labels and life are the owner's.
  getServer: 'read-only',
  updateServer: 'owner',
  deleteServer: 'owner',
  reinstallServer: 'owner',
  powerServer: 'power',
  serverResources: 'read-only',
  serverUsageHistory: 'read-only',
  serverCost: 'read-only',
  serverCommand: 'console',
  serverConsole: 'console',
  // Startup settings (server-tools).
  serverStartup: 'startup',
  updateServerStartup: 'startup',
  // Files.
  listFiles: 'files',
  fileContents: 'files',
  writeFile: 'files',
  downloadFile: 'files',
  deleteFiles: 'files',
  createFolder: 'files',
  renameFiles: 'files',
  uploadFiles: 'files',
  compressFiles: 'files',
  decompressFile: 'files',
  chmodFiles: 'files',
  // Backups.
  listBackups: 'backups',
  createBackup: 'backups',
  downloadBackup: 'backups',
  restoreBackup: 'backups',
  lockBackup: 'backups',
  deleteBackup: 'backups',
  // Schedules and databases (server-tools).
  listSchedules: 'schedules',
  getSchedule: 'schedules',
  createSchedule: 'schedules',
  updateSchedule: 'schedules',
  deleteSchedule: 'schedules',
  runSchedule: 'schedules',
  listDatabases: 'databases',
  createDatabase: 'databases',
  rotateDatabasePassword: 'databases',
  deleteDatabase: 'databases',
  // Ports: seen by every invitee; a change moves where players connect, so the owner's.
  listAllocations: 'read-only',
  addAllocation: 'owner',
  updateAllocation: 'owner',
  removeAllocation: 'owner',
  // Activity: who did what on the server.
  serverActivity: 'read-only',
  // Add-ons change what the owner pays; the subdomain is the server's public name.
  setServerAddons: 'owner',
  setServerSubdomain: 'owner',
  clearServerSubdomain: 'owner',
  // Who has access: the owner manages it; an invitee may only leave.
  listServerUsers: 'owner',
  createServerUser: 'owner',
  updateServerUser: 'owner',
  deleteServerUser: 'owner',
  leaveServer: 'read-only',
};

/** What the route needs of an invitee; unknown routes are the owner's (fail closed). */
export const accessOfRoute = (routeId: string): RouteAccess => serverRoutePermissions[routeId] ?? 'owner';

/** Whether a share holding `held` may call a route needing `needed`. */
export function allows(held: readonly ServerPermission[], needed: RouteAccess): boolean {
  if (needed === 'owner') return false;
  return needed === 'read-only' || held.includes(needed);
}

/** Routes the table covers: those on one server (`/v1/servers/:id` and below). */
export const isServerRoute = (path: string): boolean => path === '/v1/servers/:id' || path.startsWith('/v1/servers/:id/');
