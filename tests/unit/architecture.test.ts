import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The layering rules of ARCHITECTURE.md, checked on the source itself: folders of shared/ form no
 * import cycle, and only the HTTP edge imports shared/http (the lint rule that enforces it is
 * exercised too, so removing it from biome.json fails here).
 */
const root = normalize(join(import.meta.dirname, '../..'));

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

/** The shared/ folder a file belongs to (`errors` for shared/errors.ts). */
const folderOf = (file: string): string => file.split('/')[1]!.replace(/\.ts$/, '');

function folderGraph(): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of sourceFiles('shared')) {
    const from = folderOf(file);
    for (const match of readFileSync(join(root, file), 'utf8').matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+'(\.[^']+)'/gm)) {
      const target = relative(root, join(root, dirname(file), match[1]!));
      if (!target.startsWith('shared/')) continue;
      const to = folderOf(target);
      if (to !== from) graph.set(from, (graph.get(from) ?? new Set()).add(to));
    }
  }
  return graph;
}

/** Strongly connected components with more than one folder (Tarjan). */
function cycles(graph: Map<string, Set<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('architecture', () => {
  it('the folders of shared/ import each other without cycles', () => {
    const graph = folderGraph();
    expect(graph.size).toBeGreaterThan(10);
    expect(cycles(graph)).toEqual([]);
  });

  it('the cycle finder finds a cycle when there is one', () => {
    const graph = new Map([
      ['a', new Set(['b'])],
      ['b', new Set(['c'])],
      ['c', new Set(['a'])],
      ['d', new Set(['a'])],
    ]);
    expect(cycles(graph)).toEqual([['a', 'b', 'c']]);
  });

  it('only the HTTP edge imports shared/http', () => {
    const graph = folderGraph();
    const importers = [...graph].filter(([, to]) => to.has('http')).map(([from]) => from);
    expect(importers.filter((from) => from !== 'openapi')).toEqual([]);
  });

  it('the lint rule refuses an import of shared/http from a domain module', () => {
    const probe = "import { rateLimitHeaders } from '../http/rate-limit.ts';\nexport const probe = rateLimitHeaders;\n";
    // A real file, linted with the repository's biome.json; removed again at once.
    const lint = (path: string) => {
      const file = join(root, path);
      writeFileSync(file, probe);
      try {
        execFileSync(join(root, 'node_modules/.bin/biome'), ['lint', path], { cwd: root, stdio: 'pipe' });
        return 'accepted';
      } catch (err) {
        return String((err as { stdout?: Buffer }).stdout ?? '') + String((err as { stderr?: Buffer }).stderr ?? '');
      } finally {
        rmSync(file, { force: true });
      }
    };
    expect(lint(`shared/ledger/probe-${process.pid}.ts`)).toContain('noRestrictedImports');
    expect(lint(`shared/http/probe-${process.pid}.ts`)).toBe('accepted');
  });
});
