import { mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ROOT } from '../../infra/bundle.ts';

/**
 * The infra test files each build the Lambda bundles (dist/functions, emptied and rewritten) and
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
