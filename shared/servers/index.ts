/**
 * Servers: the module's public face. Each job has its own file:
 *   deploy.ts   placement, the panel's create, the record
 *   read.ts     the caller's servers, with live state from the panel
 *   resize.ts   the panel's build, then the record
 *   delete.ts   the panel, then the record
 *   control.ts  power, usage, console, files
 *   suspension.ts  suspend and unsuspend to match balance and budget
 *   reconcile.ts   panel and records brought back into agreement
 *   records.ts  every stored change of a server, each written in exactly one place
 *   limits.ts   caps, the per-account limit, the runway
 */
export { deleteServer } from './delete.ts';
export { deployServer } from './deploy.ts';
export { getServerWithLive } from './live.ts';
export { getOwnedServer, listAllServers, listServers } from './read.ts';
export { resizeServer } from './resize.ts';
export { type ServerView, toServerView } from './views.ts';
