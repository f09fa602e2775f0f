import { copyFile, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type BuildOptions, type Metafile, type Plugin } from 'esbuild';
import { ASSETS_DIR, DOCUMENT_FILE, SERVER_URL_PLACEHOLDER, SWAGGER_UI_FILES } from '../shared/openapi/bundle-files.ts';

/**
 * Builds exactly the bundles CDK deploys: one ESM bundle per folder that has a
 * `functions/<group>/handler.ts`, written to `dist/functions/<group>/index.mjs` (Lambda handler
 * `index.handler` for endpoint groups; the `billing-pass` bundle, which is no route group, exports
 * `scheduler` and `worker` for the billing stack). The folder `dist/functions/<group>/` is the Lambda asset as it is, so only what
 * runs goes in it: the bundle, the chunks it loads (`chunks/`, see `splitting` below), their source
 * maps and (public group) the OpenAPI document and the Swagger UI assets (shared/openapi/bundle-files.ts). The
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

/**
 * Minify: yes. Load time is a wash, but the minified asset is half the bytes Lambda fetches and
 * unpacks on a cold start, and unminified bundles would break the size budget (tests/infra). Stack
 * traces stay readable through the linked source map. The measurement: bench/README.md, "Measured once".
 */
const MINIFY = true;

export interface BundleResult {
  group: string;
  /** The Lambda asset folder (`dist/functions/<group>`). */
  dir: string;
  /** Size of `index.mjs`. */
  bytes: number;
  /** What a cold start loads: `index.mjs` and every chunk it imports statically (see `chunkSizes`). */
  startBytes: number;
  /** Chunks loaded only by a dynamic `import()` on the path that needs them (Stripe, Secrets Manager, …). */
  lazyBytes: number;
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

/**
 * Lambda gives every function its credentials in environment variables: the SDK's default chain
 * is aliased to infra/lambda-credentials.ts, which reads them and loads the rest of the chain
 * (≈ 110 KB: SSO, INI, process, web identity, metadata, their STS/SSO clients) only without them.
 */
function lambdaCredentials(): Plugin {
  const shim = join(ROOT, 'infra', 'lambda-credentials.ts');
  return {
    name: 'lambda-credentials',
    setup(b) {
      // The shim's own import of the package resolves as usual (the lazily loaded full chain).
      b.onResolve({ filter: /^@aws-sdk\/credential-provider-node$/ }, (args) => (args.importer === shim ? undefined : { path: shim }));
    },
  };
}

/**
 * `node:http` as its CommonJS exports object. An ESM import of a built-in module builds its
 * namespace from every export, and node:http's include getters (`WebSocket`, `CloseEvent`,
 * `MessageEvent`) that load undici: one `import { STATUS_CODES } from 'node:http'` (@middy/util)
 * cost ≈ 20 ms of CPU at every cold start (Node 24: `import('node:http')` 35 ms against 3 ms
 * for the module itself). Every bundled import of it reads the names it needs from
 * `process.getBuiltinModule` instead; a name missing here fails the build.
 */
function httpWithoutUndici(): Plugin {
  const names = [
    'Agent',
    'ClientRequest',
    'IncomingMessage',
    'METHODS',
    'OutgoingMessage',
    'STATUS_CODES',
    'Server',
    'ServerResponse',
    'createServer',
    'get',
    'globalAgent',
    'request',
    'validateHeaderName',
    'validateHeaderValue',
  ];
  return {
    name: 'http-without-undici',
    setup(b) {
      b.onResolve({ filter: /^(node:)?http$/ }, () => ({ path: 'node:http', namespace: 'http-without-undici' }));
      b.onLoad({ filter: /.*/, namespace: 'http-without-undici' }, () => ({
        contents: `const http = process.getBuiltinModule('node:http');\nexport default http;\nexport const { ${names.join(', ')} } = http;\n`,
        loader: 'js',
      }));
    },
  };
}

/**
 * Request validation without building the group's schemas at load. zod builds a schema when its
 * module is evaluated: a group's route module (shared/api/routes/<group>.ts), with its schemas
 * and ≈ 100 KB of zod, was most of what a function loaded above the DynamoDB-only floor
 * (ARCHITECTURE.md, "Validation at cold start", has the options measured). A function's import of its route module is replaced, in the bundle only, by
 * one generated from it here: each route as it is defined, its schemas taken out, with
 * `requestSchemas` loading the route's params, query and body schemas (and `responseSchema`, used
 * outside AWS only) by dynamic `import()` of the schema modules that define them, on the route's
 * first request. A route with no request schema never loads zod. The route table stays the one
 * source: this reads it; the OpenAPI document and the tests use it as written.
 */
function lazyRouteSchemas(): Plugin {
  const routesDir = join(ROOT, 'shared', 'api', 'routes');
  return {
    name: 'lazy-route-schemas',
    setup(b) {
      b.onResolve({ filter: /\/api\/routes\/[a-z-]+\.ts$/ }, (args) => {
        const path = resolve(args.resolveDir, args.path);
        // Only a handler's own import; the whole table (document, 404/405 fallback) stays as it is.
        if (!args.importer.startsWith(FUNCTIONS_DIR) || dirname(path) !== routesDir) return undefined;
        return { path, namespace: 'lazy-route-schemas' };
      });
      b.onLoad({ filter: /.*/, namespace: 'lazy-route-schemas' }, async (args) => ({
        contents: (await lazyRouteModule(args.path)).contents,
        loader: 'js',
        resolveDir: routesDir,
        watchFiles: [args.path],
      }));
    },
  };
}

/** What a package loaded lazily re-exports instead of the entry (see the comment in `oneStartChunk`). */
const SDK_ANCHOR = join(ROOT, 'shared', 'db', 'client.ts');
/** The namespace of the wrappers `oneStartChunk` writes: a lazy entry of the metafile is named `<it>:<path>`. */
const WRAP = 'one-start-chunk';

/**
 * What a cold start loads in two chunks instead of 13–27. esbuild puts each piece of code in the
 * chunk of the set of entry points that reach it (the function's entry and every dynamic
 * `import()` target), so code shared by the start and different lazy paths fell into many small
 * files, and each costs the ESM loader ≈ 0.4 ms of resolving, reading and linking (bench/README.md,
 * "Measured once"). Here every dynamic-import target is wrapped in a module that also re-exports
 * the entry's namespace, so every lazy path reaches all of the start's code and esbuild writes it
 * to one chunk. A lazy chunk loads nothing more by it: the start is loaded before any `import()`.
 */
function oneStartChunk(): Plugin {
  return {
    name: WRAP,
    setup(b) {
      const entries = b.initialOptions.entryPoints;
      const entry = Array.isArray(entries) && typeof entries[0] === 'string' ? resolve(ROOT, entries[0]) : undefined;
      if (!entry) return;
      b.onResolve({ filter: /.*/ }, async (args) => {
        if (args.kind !== 'dynamic-import' || args.pluginData === WRAP) return undefined;
        const target = await b.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          resolveDir: args.resolveDir,
          pluginData: WRAP,
        });
        if (target.errors.length) return { errors: target.errors };
        if (target.external) return undefined;
        return {
          path: target.path,
          namespace: WRAP,
          pluginData: { namespace: target.namespace, pkg: target.path.includes('/node_modules/') },
        };
      });
      b.onLoad({ filter: /.*/, namespace: WRAP }, async (args) => {
        const { namespace, pkg } = args.pluginData as { namespace: string; pkg: boolean };
        const from = JSON.stringify(namespace === 'file' ? args.path : `${namespace}:${args.path}`);
        // A package (the Secrets Manager client, the SDK's credential chain) reaches the DynamoDB
        // client's code only, not the whole start: the cursor key is read through it while the start
        // evaluates (a top-level await, shared/db/cursor.ts), and a chunk importing the start back
        // would wait for that evaluation to end, and it for the chunk. So packages and the SDK
        // code they share with the start make a second chunk, evaluated before the first.
        const anchor = pkg ? SDK_ANCHOR : entry;
        return {
          contents: `export * from ${from};\n${(await hasDefaultExport(args.path)) ? `export { default } from ${from};\n` : ''}export * as __start from ${JSON.stringify(anchor)};\n`,
          loader: 'js',
          resolveDir: dirname(args.path),
        };
      });
    },
  };
}

/** The module a dynamic-import entry of the metafile loads (`oneStartChunk` wraps each), relative to the root. */
export const lazyEntryModule = (entryPoint: string): string => relative(ROOT, resolve(ROOT, entryPoint.replace(`${WRAP}:`, '')));

/** An ES module with a default export (ours or a package's), or a CommonJS module (it always has one). */
async function hasDefaultExport(path: string): Promise<boolean> {
  const text = await readFile(path, 'utf8');
  if (/\bexport\s+default\b|\bas\s+default\b/.test(text)) return true;
  return /\.c?js$/.test(path) && !/^\s*(export|import)\s/m.test(text);
}

/**
 * Fields of a route that only the OpenAPI document reads, and `errors`, which besides it only the
 * contract notes read, outside AWS (shared/api/contract.ts): left out of the bundle.
 */
const DOCUMENT_ONLY = new Set(['summary', 'description', 'tag', 'hidden', 'mediaType', 'errors']);
const SCHEMA_FIELDS = ['params', 'query', 'body', 'response'] as const;

/**
 * The generated stand-in for one route module (see `lazyRouteSchemas`), and the modules its
 * routes' request schemas load from (what a first request may load: bench/bundles.ts).
 */
export async function lazyRouteModule(routeFile: string): Promise<{ contents: string; requestFiles: string[] }> {
  const isSchema = (v: unknown): boolean => typeof v === 'object' && v !== null && '_zod' in v;
  // Where each exported schema is defined: the module to import and the name to take.
  const schemaDir = join(ROOT, 'shared', 'api', 'schemas');
  const where = new Map<unknown, { file: string; name: string }>();
  for (const file of readdirSync(schemaDir)
    .filter((f) => f.endsWith('.ts'))
    .sort()) {
    const mod = (await import(pathToFileURL(join(schemaDir, file)).href)) as Record<string, unknown>;
    for (const [name, value] of Object.entries(mod))
      if (isSchema(value) && !where.has(value)) where.set(value, { file: join(schemaDir, file), name });
  }
  const mod = (await import(pathToFileURL(routeFile).href)) as Record<string, unknown>;
  const tables = Object.entries(mod).filter(
    ([, v]) =>
      typeof v === 'object' &&
      v !== null &&
      Object.values(v).every((r) => typeof r === 'object' && r !== null && 'method' in r && 'path' in r),
  ) as [string, Record<string, Record<string, unknown>>][];

  const defined = new Map<unknown, string>();
  const modules = new Map<string, string>();
  const lines: string[] = [];
  const requestFiles = new Set<string>();
  const loader = (exportName: string, id: string, def: Record<string, unknown>, fields: readonly string[], single: boolean) => {
    const present = fields.filter((f) => def[f] !== undefined);
    if (!present.length) return undefined;
    const files: string[] = [];
    const picks = present.map((f) => {
      // A schema written inline in the route module (no export of its own): from the route module itself.
      const at = where.get(def[f]) ?? { file: routeFile, name: `${exportName}[${JSON.stringify(id)}][${JSON.stringify(f)}]` };
      if (!files.includes(at.file)) files.push(at.file);
      const access = at.file === routeFile && !where.has(def[f]) ? at.name : `[${JSON.stringify(at.name)}]`;
      return `${f}: m${files.indexOf(at.file)}${access.startsWith('[') ? access : `.${access}`}`;
    });
    // One loader per schema module, shared by every route that reads it.
    const imports = files.map((f) => {
      if (!modules.has(f)) {
        modules.set(f, `schemas${modules.size}`);
        lines.push(`const ${modules.get(f)} = () => import(${JSON.stringify(f)});`);
      }
      return `${modules.get(f)}()`;
    });
    const value = single ? picks[0]!.slice(picks[0]!.indexOf(':') + 2) : `{ ${picks.join(', ')} }`;
    return files.length === 1
      ? `() => ${imports[0]}.then((m0) => (${value}))`
      : `() => Promise.all([${imports.join(', ')}]).then(([${files.map((_, i) => `m${i}`).join(', ')}]) => (${value}))`;
  };
  for (const [exportName, table] of tables) {
    const entries: string[] = [];
    for (const [id, def] of Object.entries(table)) {
      let name = defined.get(def);
      if (!name) {
        name = `route${defined.size}`;
        defined.set(def, name);
        const meta = Object.fromEntries(
          Object.entries(def).filter(([k, v]) => !DOCUMENT_ONLY.has(k) && !SCHEMA_FIELDS.includes(k as never) && !isSchema(v)),
        );
        const request = loader(exportName, id, def, ['params', 'query', 'body'], false);
        for (const f of ['params', 'query', 'body']) if (def[f] !== undefined) requestFiles.add(where.get(def[f])?.file ?? routeFile);
        const response = loader(exportName, id, def, ['response'], true);
        const json = JSON.stringify(meta).slice(0, -1);
        lines.push(
          `const ${name} = ${json}${request ? `, requestSchemas: ${request}` : ''}${response ? `, responseSchema: ${response}` : ''}};`,
        );
      }
      entries.push(`${JSON.stringify(id)}: ${name}`);
    }
    lines.push(`export const ${exportName} = { ${entries.join(', ')} };`);
  }
  return { contents: `${lines.join('\n')}\n`, requestFiles: [...requestFiles].sort() };
}

/** The esbuild options of every Lambda bundle (the benchmark's floor bundle uses them too, through `buildLambda`). */
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
  // Code that only one path needs (Stripe's library in checkout and the webhook, the Secrets Manager
  // client where a secret is read) is reached through a dynamic `import()`; with splitting esbuild
  // writes it to chunks/ beside index.mjs, loaded when that path first runs instead of at every
  // cold start. Code that both sides use goes to a chunk that index.mjs imports statically.
  splitting: true,
  entryNames: 'index',
  chunkNames: 'chunks/[name]-[hash]',
  outExtension: { '.js': '.mjs' },
  plugins: [lambdaCredentials(), httpWithoutUndici(), lazyRouteSchemas(), oneStartChunk()],
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

/** Builds one entry point into `dir` (`index.mjs`, `chunks/`, source maps) as a Lambda asset. */
export async function buildLambda(entryPoint: string, dir: string, minify = MINIFY): Promise<Metafile> {
  const result = await build({ entryPoints: [entryPoint], outdir: dir, absWorkingDir: ROOT, ...LAMBDA_BUILD_OPTIONS, minify });
  return result.metafile;
}

/**
 * Sizes of the outputs of one bundle: `start` is `index.mjs` with every chunk it imports
 * statically (transitively), what a cold start loads; `lazy` is every other chunk, loaded only
 * by a dynamic `import()` when its path runs.
 */
export function chunkSizes(meta: Metafile): { start: number; lazy: number; startFiles: string[]; lazyFiles: string[] } {
  const outputs = Object.entries(meta.outputs).filter(([path]) => path.endsWith('.mjs'));
  // Dynamic-import targets are entry points too in the metafile: the function's own is index.mjs.
  const entry = outputs.find(([path]) => path.endsWith('/index.mjs') || path === 'index.mjs')?.[0];
  const start = new Set<string>();
  const visit = (path: string) => {
    if (start.has(path)) return;
    start.add(path);
    for (const i of meta.outputs[path]?.imports ?? []) if (i.kind === 'import-statement' && !i.external) visit(i.path);
  };
  if (entry) visit(entry);
  const sum = (files: string[]) => files.reduce((a, f) => a + meta.outputs[f]!.bytes, 0);
  const startFiles = outputs.map(([p]) => p).filter((p) => start.has(p));
  const lazyFiles = outputs.map(([p]) => p).filter((p) => !start.has(p));
  return { start: sum(startFiles), lazy: sum(lazyFiles), startFiles, lazyFiles };
}

async function bundleGroup(group: string, dir: string, minify: boolean): Promise<BundleResult> {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const outfile = join(dir, 'index.mjs');

  const metafile = await buildLambda(join(FUNCTIONS_DIR, group, 'handler.ts'), dir, minify);

  await mkdir(META_DIR, { recursive: true });
  await writeFile(join(META_DIR, `${group}.json`), JSON.stringify(metafile));

  if (group === 'public') await writePublicFiles(dir);

  const { start, lazy } = chunkSizes(metafile);
  return { group, dir, bytes: (await stat(outfile)).size, startBytes: start, lazyBytes: lazy, folderBytes: await folderSize(dir) };
}

/**
 * What the public function serves from its asset folder: the OpenAPI document, generated here so
 * that no cold start spends CPU on it, and the Swagger UI's files (a deployed function has no node_modules).
 */
async function writePublicFiles(dir: string): Promise<void> {
  const { openApiDocument } = await import('../shared/openapi/document.ts');
  await writeFile(join(dir, DOCUMENT_FILE), JSON.stringify(openApiDocument(SERVER_URL_PLACEHOLDER)));
  const dist = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  await mkdir(join(dir, ASSETS_DIR), { recursive: true });
  await Promise.all(SWAGGER_UI_FILES.map((file) => copyFile(join(dist, file), join(dir, ASSETS_DIR, file))));
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
    ['function', 'index.mjs', 'loaded at start', 'lazy chunks', 'asset folder', 'path'],
    ...results.map((r) => [r.group, kb(r.bytes), kb(r.startBytes), kb(r.lazyBytes), kb(r.folderBytes), relative(ROOT, r.dir)]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows
    .map((row) => row.map((cell, i) => (i === 0 || i === 5 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  '))
    .join('\n');
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const started = performance.now();
  const results = await bundleAll();
  console.log(formatTable(results));
  console.log(`\n${results.length} bundles (${MINIFY ? 'minified' : 'not minified'}) in ${Math.round(performance.now() - started)} ms`);
}
