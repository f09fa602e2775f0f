import { copyFile, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type BuildOptions } from 'esbuild';

/**
 * Builds exactly the bundles CDK deploys: one ESM bundle per folder that has a
 * `functions/<group>/handler.ts`, written to `dist/functions/<group>/index.mjs` (Lambda handler
 * `index.handler` for endpoint groups; the `billing-pass` bundle, which is no route group, exports
 * `scheduler` and `worker` for the billing stack). The folder `dist/functions/<group>/` is the Lambda asset as it is, so only what
 * runs goes in it: the bundle, its source map and (public group) the Swagger UI assets. The
 * esbuild metafiles go to `dist/meta/<group>.json`, outside the assets.
 *
 * `npx cdk synth` runs this first (infra/app.ts), the infra tests once in beforeAll, and
 * `npm run bundle` prints the sizes.
 */

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const FUNCTIONS_DIR = join(ROOT, 'functions');
export const DIST_FUNCTIONS_DIR = join(ROOT, 'dist', 'functions');
const META_DIR = join(ROOT, 'dist', 'meta');

/** Where the Lambda asset of a group lives. */
export const bundleDir = (group: string): string => join(DIST_FUNCTIONS_DIR, group);

/** Swagger UI files the public function serves from `assets/` beside its bundle (shared/openapi/docs-page.ts). */
const PUBLIC_ASSETS = ['swagger-ui.css', 'swagger-ui-bundle.js'] as const;

/**
 * Minify: yes. Measured on this codebase (esbuild 0.28, Node 24, `import()` of the bundle in a fresh
 * process, 25 interleaved runs, medians):
 *   index.mjs   public 1 759 KB → 874 KB · account 1 701 KB → 844 KB · admin 1 699 KB → 843 KB
 *   load time   account 88 ms → 87 ms (no flag) · 106 ms → 104 ms (--enable-source-maps)
 * Module load time is a wash (parsing is not the cost; zod schema construction and the SDK are),
 * but the minified asset is half the bytes Lambda has to fetch and unpack on a cold start, and the
 * unminified bundles would break the 1.5 MB budget (tests/infra). Stack traces stay readable
 * through the linked source map. (For scale: a bundle holding only the DynamoDB document client
 * is 333 KB and loads in ≈ 56 ms; --enable-source-maps itself costs ≈ 17 ms of load time.)
 */
const MINIFY = true;

export interface BundleResult {
  group: string;
  /** The Lambda asset folder (`dist/functions/<group>`). */
  dir: string;
  /** Size of `index.mjs`. */
  bytes: number;
  /** Size of everything in the asset folder (bundle, source map, assets): what gets zipped. */
  folderBytes: number;
}

export interface BundleOptions {
  /** Only these groups (default: every group with a `functions/<group>/handler.ts`). */
  groups?: string[];
  minify?: boolean;
  /** Output root (default `dist/functions`); the benchmark of minify vs not writes elsewhere. */
  outDir?: string;
}

/** Endpoint groups that have a handler today, found on disk so that new groups are picked up. */
export function handlerGroups(): string[] {
  return discover(FUNCTIONS_DIR);
}

function discover(dir: string): string[] {
  if (!existsSync(dir)) return [];
  // Synchronous, so that CDK code (ApiStack) can call it too.
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(dir, d.name, 'handler.ts')))
    .map((d) => d.name)
    .sort();
}

export async function bundleAll(options: BundleOptions = {}): Promise<BundleResult[]> {
  const groups = options.groups ?? handlerGroups();
  const outRoot = options.outDir ?? DIST_FUNCTIONS_DIR;
  const minify = options.minify ?? MINIFY;

  // Drop asset folders of groups whose handler is gone, so nothing stale is ever deployed.
  if (!options.groups && existsSync(outRoot)) {
    for (const entry of await readdir(outRoot)) {
      if (!groups.includes(entry)) await rm(join(outRoot, entry), { recursive: true, force: true });
    }
  }

  return Promise.all(groups.map((group) => bundleGroup(group, join(outRoot, group), minify)));
}

/** The esbuild options of every Lambda bundle (the benchmark's floor bundle uses them too). */
export const LAMBDA_BUILD_OPTIONS = {
  bundle: true, // everything, including @aws-sdk/* (pinned versions, tree-shaken, faster cold start)
  platform: 'node' as const,
  target: 'node24',
  format: 'esm' as const,
  mainFields: ['module', 'main'],
  treeShaking: true,
  // `linked`: a separate .map file plus the sourceMappingURL comment that --enable-source-maps needs.
  sourcemap: 'linked' as const,
  sourcesContent: false,
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning' as const,
  // CommonJS dependencies bundled into ESM still call require() for Node built-ins.
  // The import is aliased: bundled code (shared/openapi/docs-page.ts) imports createRequire
  // itself and esbuild does not rename around banner text, so without minification a bare
  // `createRequire` is declared twice ("Identifier 'createRequire' has already been declared").
  banner: {
    js: "import { createRequire as __bundleCreateRequire } from 'module'; const require = __bundleCreateRequire(import.meta.url);",
  },
} satisfies BuildOptions;

async function bundleGroup(group: string, dir: string, minify: boolean): Promise<BundleResult> {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const outfile = join(dir, 'index.mjs');

  const result = await build({
    entryPoints: [join(FUNCTIONS_DIR, group, 'handler.ts')],
    outfile,
    absWorkingDir: ROOT,
    ...LAMBDA_BUILD_OPTIONS,
    minify,
  });

  await mkdir(META_DIR, { recursive: true });
  await writeFile(join(META_DIR, `${group}.json`), JSON.stringify(result.metafile));

  if (group === 'public') {
    const dist = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
    await mkdir(join(dir, 'assets'), { recursive: true });
    await Promise.all(PUBLIC_ASSETS.map((file) => copyFile(join(dist, file), join(dir, 'assets', file))));
  }

  return { group, dir, bytes: (await stat(outfile)).size, folderBytes: await folderSize(dir) };
}

async function folderSize(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return total;
}

const kb = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KB`;

export function formatTable(results: BundleResult[]): string {
  const rows = [
    ['function', 'index.mjs', 'asset folder', 'path'],
    ...results.map((r) => [r.group, kb(r.bytes), kb(r.folderBytes), relative(ROOT, r.dir)]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows
    .map((row) => row.map((cell, i) => (i === 0 || i === 3 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  '))
    .join('\n');
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const started = performance.now();
  const results = await bundleAll();
  console.log(formatTable(results));
  console.log(`\n${results.length} bundles (${MINIFY ? 'minified' : 'not minified'}) in ${Math.round(performance.now() - started)} ms`);
}
