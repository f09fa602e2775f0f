// CLI: node dev/panel-sim/main.ts
// Env: PANEL_SIM_PORT (8081), PANEL_SIM_HOST (127.0.0.1), PANEL_SIM_INSTALL_MS (3000),
//      PANEL_SIM_TRANSITION_MS (1000), PANEL_SIM_RESOURCES_CACHE_MS (20000), PANEL_SIM_SEED (default|empty),
//      PANEL_KIND (pterodactyl|pelican)
import { startPanelSim } from './server.ts';

function num(name: string): number | undefined {
  const v = process.env[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number`);
  return n;
}

const seed = process.env.PANEL_SIM_SEED === 'empty' ? 'empty' : 'default';
const opts: Parameters<typeof startPanelSim>[0] = {
  port: num('PANEL_SIM_PORT') ?? 8081,
  host: process.env.PANEL_SIM_HOST ?? '127.0.0.1',
  seed,
  scheduleTick: true,
  ...(process.env.PANEL_KIND === 'pelican' ? { kind: 'pelican' as const } : {}),
};
const installMs = num('PANEL_SIM_INSTALL_MS');
const transitionMs = num('PANEL_SIM_TRANSITION_MS');
const resourcesCacheMs = num('PANEL_SIM_RESOURCES_CACHE_MS');
if (installMs !== undefined) opts.installMs = installMs;
if (transitionMs !== undefined) opts.transitionMs = transitionMs;
if (resourcesCacheMs !== undefined) opts.resourcesCacheMs = resourcesCacheMs;

const sim = await startPanelSim(opts);
console.log(`panel-sim listening on ${sim.url}`);
console.log(`  application key : ${sim.appKey}`);
console.log(`  client key      : ${sim.clientKey}  (service user id ${sim.serviceUserId})`);
console.log(`  control routes  : ${sim.url}/__sim/state, ${sim.url}/__sim/faults`);

let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  void sim.close().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
