import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { bundleAll, type BundleResult, ROOT } from '../../infra/bundle.ts';
import { buildDashboard } from '../../web/build.ts';

/**
 * The infra test files need the Lambda bundles (dist/functions, emptied and rewritten by a build) and
 * the dashboard (web/dist), then synthesize the app, which reads both. Run in parallel workers,
 * one file's rebuild would pull the files from under the other's synthesis; this lock (a
 * directory, created atomically) makes them take turns. A lock older than ten minutes is stale
 * (a killed run) and is taken over.
 */
const LOCK = join(ROOT, 'dist', '.infra-build.lock');
const STALE_MS = 10 * 60_000;

export async function withBuildLock<T>(work: () => Promise<T> | T): Promise<T> {
  mkdirSync(join(ROOT, 'dist'), { recursive: true });
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      try {
        if (Date.now() - statSync(LOCK).mtimeMs > STALE_MS) rmSync(LOCK, { recursive: true, force: true });
      } catch {
        // Released meanwhile: try again.
      }
      await sleep(250);
    }
  }
  try {
    return await work();
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

/**
 * The Lambda bundles and the dashboard, built once per test run by whichever infra file asks
 * first (under the lock), then only read: a rebuild by a second file would empty
 * dist/functions/<group> under the first one's synthesis, which reads it at any moment (a
 * `buildApp` inside a test, not only in `beforeAll`). The run is named by TEST_RUN_ID
 * (tests/global-setup.ts); the results are kept beside the bundles for the files that come later.
 */
export async function bundlesOfThisRun(): Promise<BundleResult[]> {
  const marker = join(ROOT, 'dist', `.bundles-${process.env.TEST_RUN_ID ?? 'single'}.json`);
  return withBuildLock(async () => {
    if (process.env.TEST_RUN_ID && existsSync(marker)) return JSON.parse(readFileSync(marker, 'utf8')) as BundleResult[];
    const [bundles] = await Promise.all([bundleAll(), buildDashboard()]);
    writeFileSync(marker, JSON.stringify(bundles));
    return bundles;
  });
}
