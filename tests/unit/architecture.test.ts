import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The layering rules of ARCHITECTURE.md, checked on the source itself: folders of shared/ form no
 * import cycle, and only the HTTP edge imports shared/http. The lint rules that hold the written
 * conventions (CONTRIBUTING.md, "Conventions") are exercised too, so removing one fails here.
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

  /**
   * Each written convention held by a lint rule, proven to fire: probe files are written where a
   * contributor might break the convention (and where it is allowed), linted with the repository's
   * biome.json in one run, and removed again. Removing a rule or widening its exceptions fails here.
   */
  describe('the lint rules behind the conventions', () => {
    const SDK = "import { GetCommand } from '@aws-sdk/lib-dynamodb';\nexport const probe = GetCommand;\n";
    const SDK_CLIENT = "import { DynamoDBClient } from '@aws-sdk/client-dynamodb';\nexport const probe = DynamoDBClient;\n";
    const HTTP = "import { rateLimitHeaders } from '../http/rate-limit.ts';\nexport const probe = rateLimitHeaders;\n";
    const ENV = 'export const probe = process.env.TABLE_NAME;\n';
    const ENV_DESTRUCTURED = 'const { env } = process;\nexport const probe = env.TABLE_NAME;\n';
    const ENV_IMPORTED = "import { env } from 'node:process';\nexport const probe = env.TABLE_NAME;\n";
    const probes: Record<string, string> = {
      'ledger-sdk': `shared/ledger/probe-sdk-${process.pid}.ts|${SDK}`,
      'ledger-sdk-client': `shared/ledger/probe-sdkc-${process.pid}.ts|${SDK_CLIENT}`,
      'handler-sdk': `functions/billing-pass/probe-sdk-${process.pid}.ts|${SDK}`,
      'http-sdk': `shared/http/probe-sdk-${process.pid}.ts|${SDK}`,
      'db-sdk': `shared/db/probe-sdk-${process.pid}.ts|${SDK}`,
      'ledger-http': `shared/ledger/probe-http-${process.pid}.ts|${HTTP}`,
      'db-http': `shared/db/probe-http-${process.pid}.ts|${HTTP}`,
      'http-http': `shared/http/probe-http-${process.pid}.ts|${HTTP}`,
      'ledger-env': `shared/ledger/probe-env-${process.pid}.ts|${ENV}`,
      'db-env': `shared/db/probe-env-${process.pid}.ts|${ENV}`,
      'handler-env': `functions/billing-pass/probe-env-${process.pid}.ts|${ENV}`,
      'ledger-env-destructured': `shared/ledger/probe-envd-${process.pid}.ts|${ENV_DESTRUCTURED}`,
      'ledger-env-imported': `shared/ledger/probe-envi-${process.pid}.ts|${ENV_IMPORTED}`,
      'config-env': `shared/config/probe-env-${process.pid}.ts|${ENV}`,
    };
    /** Probe name → the rules (and their messages) Biome reported for it; [] when it accepted the file. */
    const lint = (): Record<string, string[]> => {
      const files = Object.fromEntries(Object.entries(probes).map(([name, spec]) => [name, spec.split('|') as [string, string]]));
      for (const [path, text] of Object.values(files)) writeFileSync(join(root, path), text);
      let out: string;
      try {
        const paths = Object.values(files).map(([path]) => path);
        try {
          out = execFileSync(join(root, 'node_modules/.bin/biome'), ['lint', '--reporter=json', ...paths], {
            cwd: root,
            stdio: 'pipe',
          }).toString();
        } catch (err) {
          out = String((err as { stdout?: Buffer }).stdout ?? '');
        }
      } finally {
        for (const [path] of Object.values(files)) rmSync(join(root, path), { force: true });
      }
      const diagnostics = (JSON.parse(out) as { diagnostics: { category: string; message: string; location: { path: string } }[] })
        .diagnostics;
      return Object.fromEntries(
        Object.entries(files).map(([name, [path]]) => [
          name,
          diagnostics.filter((d) => d.location.path === path).map((d) => `${d.category}: ${d.message}`),
        ]),
      );
    };
    let found: Record<string, string[]>;
    const rules = (name: string) => {
      found ??= lint();
      return found[name]!;
    };
    const sdkRule = expect.stringMatching(
      /^lint\/style\/noRestrictedImports: The DynamoDB SDK is used only in shared\/db: .*access-patterns\.ts.*write\.ts/,
    );
    const envHelper = expect.stringMatching(/getConfig\(\) from shared\/config\/env\.ts/);

    it('the DynamoDB SDK only in shared/db: the rule names the access patterns and the write helpers', () => {
      for (const name of ['ledger-sdk', 'ledger-sdk-client', 'handler-sdk', 'http-sdk']) expect(rules(name), name).toEqual([sdkRule]);
      expect(rules('db-sdk')).toEqual([]);
    });

    it('the domain never imports the HTTP layer', () => {
      for (const name of ['ledger-http', 'db-http']) {
        expect(rules(name), name).toEqual([expect.stringMatching(/^lint\/style\/noRestrictedImports: Only the HTTP edge/)]);
      }
      expect(rules('http-http')).toEqual([]);
    });

    it('process.env only in shared/config: the rule and a message naming getConfig()', () => {
      for (const name of ['ledger-env', 'db-env', 'handler-env']) {
        expect(rules(name), name).toEqual(expect.arrayContaining([expect.stringMatching(/^lint\/style\/noProcessEnv: /), envHelper]));
      }
      // Destructured from process: Biome's own rule does not see it, the plugin does.
      expect(rules('ledger-env-destructured')).toEqual([expect.stringMatching(/^plugin: .*getConfig\(\)/)]);
      // Imported from node:process: the import is refused too, with the helper's name.
      expect(rules('ledger-env-imported')).toEqual(
        expect.arrayContaining([expect.stringMatching(/^lint\/style\/noRestrictedImports: .*getConfig\(\)/)]),
      );
      expect(rules('config-env')).toEqual([]);
    });
  });
});
