import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * `npm ci` refuses a lockfile that lacks any optional dependency a locked package names. The
 * registry this project installs from serves only the Linux builds of Biome's binary, so `npm
 * install` leaves the other platforms out; they are listed by hand (CONTRIBUTING.md, "Upgrading
 * Biome"). This keeps the next upgrade from breaking every clean install.
 */
interface Lock {
  packages: Record<string, { version?: string; optionalDependencies?: Record<string, string> }>;
}

/** Node's lookup: the package's own node_modules, then each enclosing one up to the top. */
function resolve(lock: Lock, from: string, name: string) {
  let dir = from;
  for (;;) {
    const hit = lock.packages[`${dir ? `${dir}/` : ''}node_modules/${name}`];
    if (hit || !dir) return hit;
    const at = dir.lastIndexOf('/node_modules/');
    dir = at === -1 ? '' : dir.slice(0, at);
  }
}

describe('package-lock.json', () => {
  it('lists every optional dependency of every locked package, at the version asked for', () => {
    const lock = JSON.parse(readFileSync(join(import.meta.dirname, '../../package-lock.json'), 'utf8')) as Lock;
    const missing: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
        const nested = resolve(lock, path, name);
        if (!nested || (/^\d/.test(version) && nested.version !== version))
          missing.push(`${name}@${version} (for ${path || 'the project'})`);
      }
    }
    expect(missing).toEqual([]);
  });
});
