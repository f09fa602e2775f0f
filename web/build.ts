import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Builds the dashboard (web/) into web/dist with Vite, unless the build there is newer than every
 * source file: `npm start`, the browser tests, the benchmark and `cdk synth` all call this, so a
 * fresh clone needs no separate build step. `npm run web` forces a build.
 */
export const WEB_DIR = fileURLToPath(new URL('.', import.meta.url));
export const WEB_DIST = join(WEB_DIR, 'dist');
const SOURCES = [
  join(WEB_DIR, 'src'),
  join(WEB_DIR, 'index.html'),
  join(WEB_DIR, 'vite.config.ts'),
  join(WEB_DIR, '../clients/typescript'),
];

function newestMtime(path: string): number {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path)) {
    if (entry === 'node_modules' || entry === 'dist') continue;
    newest = Math.max(newest, newestMtime(join(path, entry)));
  }
  return newest;
}

export function dashboardIsBuilt(): boolean {
  const index = join(WEB_DIST, 'index.html');
  return existsSync(index) && statSync(index).mtimeMs >= Math.max(...SOURCES.map(newestMtime));
}

/** Builds web/dist if it is missing or stale (or always, with `force`); answers its path. */
export async function buildDashboard(options: { force?: boolean } = {}): Promise<string> {
  if (!options.force && dashboardIsBuilt()) return WEB_DIST;
  const { build } = await import('vite');
  await build({ configFile: join(WEB_DIR, 'vite.config.ts') });
  return WEB_DIST;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await buildDashboard({ force: true });
  process.stdout.write(`dashboard built in ${WEB_DIST}\n`);
}
