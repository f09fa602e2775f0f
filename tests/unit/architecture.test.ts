import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cycles, describeCycles, type Graph, graphOf, groupGraph, readSources } from '../helpers/import-graph.ts';

/**
 * The layering rules of ARCHITECTURE.md, checked on the source itself as the bundler reads it
 * (static imports and `import()`, tests/helpers/import-graph.ts): neither the folders nor the files
 * of shared/ form an import cycle, and only the HTTP edge imports shared/http. The lint rules that
 * hold the written conventions (CONTRIBUTING.md, "Conventions") are exercised too, so removing one
 * fails here.
 */
const root = normalize(join(import.meta.dirname, '../..'));

/** The files of shared/ and their imports of one another. */
function sharedFiles(): Graph {
  const graph = graphOf(readSources(root, 'shared'));
  for (const edges of graph.values()) for (const to of edges.keys()) if (!graph.has(to)) edges.delete(to);
  return graph;
}

/** The shared/ folder a file belongs to (`errors` for shared/errors.ts). */
const folderOf = (file: string): string => file.split('/')[1]!.replace(/\.ts$/, '');

describe('architecture', () => {
  const files = sharedFiles();
  const folders = groupGraph(files, folderOf);

  it('the folders of shared/ import each other without cycles, import() included', () => {
    expect(folders.size).toBeGreaterThan(10);
    expect(describeCycles(folders)).toEqual([]);
  });

  it('the files of shared/ import each other without cycles, import() included', () => {
    expect(files.size).toBeGreaterThan(100);
    expect(describeCycles(files)).toEqual([]);
  });

  it('import() only in shared/packages.ts, one loader per package: our own modules are imported statically', () => {
    const sources = new Map([...readSources(root, 'shared'), ...readSources(root, 'functions')]);
    expect(sources.get('shared/packages.ts')).toMatch(/import\('stripe'\)/);
    const lazy = [...sources]
      .filter(([file, text]) => file !== 'shared/packages.ts' && /\bimport\(/.test(text))
      .map(([file]) => `${file}: import() is for the packages of shared/packages.ts; import our own modules statically`);
    expect(lazy).toEqual([]);
    const loaders = [...sources.get('shared/packages.ts')!.matchAll(/import\('([^']+)'\)/g)].map((m) => m[1]);
    expect(new Set(loaders).size, 'one loader per package').toBe(loaders.length);
  });

  it('only the HTTP edge imports shared/http', () => {
    const importers = [...folders].filter(([, to]) => to.has('http')).map(([from]) => from);
    expect(importers.filter((from) => from !== 'openapi')).toEqual([]);
  });

  describe('the cycle check, on planted cycles', () => {
    it('finds a cycle closed by import(), and names the file to move', () => {
      const graph = graphOf(
        new Map([
          [
            'shared/budgets/set.ts',
            "import { keys } from '../db/keys.ts';\nexport const lift = async () => (await import('../servers/suspension.ts')).lift();\n",
          ],
          ['shared/servers/suspension.ts', "import { getBudget } from '../budgets/set.ts';\nexport const lift = () => getBudget;\n"],
          ['shared/db/keys.ts', 'export const keys = {};\n'],
        ]),
      );
      expect(cycles(graph)).toEqual([['shared/budgets/set.ts', 'shared/servers/suspension.ts']]);
      expect(describeCycles(graph)).toEqual([
        'shared/budgets/set.ts ⇢ import() shared/servers/suspension.ts → shared/budgets/set.ts: move what the others need out of shared/budgets/set.ts, or have its caller do the part that imports back',
      ]);
      // Between folders too: budgets ⇢ servers → budgets.
      expect(describeCycles(groupGraph(graph, folderOf))).toEqual([
        'budgets ⇢ import() servers → budgets: move what the others need out of budgets, or have its caller do the part that imports back',
      ]);
    });

    it('finds a cycle of static imports between files of one folder, and names the file most of it runs through', () => {
      const graph = graphOf(
        new Map([
          [
            'shared/payments/index.ts',
            "import { charge } from './autotopup.ts';\nexport { sign } from './sandbox.ts';\nexport const stripe = 1;\n",
          ],
          [
            'shared/payments/autotopup.ts',
            "import { stripe } from './index.ts';\nimport { sign } from './sandbox.ts';\nexport const charge = 1;\n",
          ],
          ['shared/payments/sandbox.ts', "import {\n  stripe,\n} from './index.ts';\nexport const sign = 1;\n"],
          ['shared/payments/events.ts', "import type { charge } from './autotopup.ts';\nexport const events = 1;\n"],
        ]),
      );
      expect(cycles(graph)).toEqual([['shared/payments/autotopup.ts', 'shared/payments/index.ts', 'shared/payments/sandbox.ts']]);
      expect(describeCycles(graph)).toEqual([
        'shared/payments/index.ts → shared/payments/autotopup.ts → shared/payments/index.ts (the cycle holds shared/payments/autotopup.ts, shared/payments/index.ts, shared/payments/sandbox.ts): move what the others need out of shared/payments/index.ts, or have its caller do the part that imports back',
      ]);
      // The folder graph has no edges inside a folder: this cycle is the file check's alone.
      expect(cycles(groupGraph(graph, folderOf))).toEqual([]);
    });

    it('reads no cycle into type-only imports, which the bundler erases', () => {
      const graph = graphOf(
        new Map([
          ['shared/a.ts', "import type { B } from './b.ts';\nexport type A = { b: B };\n"],
          ['shared/b.ts', "import { a } from './c.ts';\nexport type B = typeof import('./a.ts');\nexport const b = a;\n"],
          ['shared/c.ts', "export type { A } from './a.ts';\nexport const a = 1;\n"],
        ]),
      );
      expect(graph.get('shared/b.ts')).toEqual(new Map([['shared/c.ts', 'static']]));
      expect(cycles(graph)).toEqual([]);
    });
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
