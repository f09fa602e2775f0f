import { copyFile, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type BuildOptions, type Metafile, type Plugin } from 'esbuild';
import { ASSETS_DIR, DOCUMENT_FILE, SERVER_URL_PLACEHOLDER, SWAGGER_UI_FILES } from '../shared/openapi/bundle-files.ts';
import { FONT_LICENSE_FILE, FONTS_DIR, fontPackageDir, INVOICE_FONT_FILES } from '../shared/invoices/fonts.ts';

/**
 * Builds exactly the bundles CDK deploys: one ESM bundle per folder that has a
 * `functions/<group>/handler.ts`, written to `dist/functions/<group>/index.mjs` (Lambda handler
 * `index.handler` for endpoint groups; the `billing-pass` bundle, which is no route group, exports
 * `scheduler` and `worker` for the billing stack). The folder `dist/functions/<group>/` is the Lambda asset as it is, so only what
 * runs goes in it: the bundle, the chunks it loads (`chunks/`, see `splitting` below), their source
 * maps, (public group) the OpenAPI document and the Swagger UI assets (shared/openapi/bundle-files.ts)
 * and (groups that render invoice PDFs) the PDF's fonts (shared/invoices/fonts.ts). The
 * esbuild metafiles go to `dist/meta/<group>.json`, outside the assets.
 *
 * `npx cdk synth` runs this first (infra/app.ts), the infra tests once in beforeAll, and
 * `npm run bundle` prints the sizes.
 */

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const FUNCTIONS_DIR = join(ROOT, 'functions');
export const DIST_FUNCTIONS_DIR = join(ROOT, 'dist', 'functions');
const META_DIR = join(ROOT, 'dist', 'meta');
/** The packages built apart (`buildPackages`), copied from here into the asset folders that load them. */
const PACKAGES_DIR = join(ROOT, 'dist', 'packages');

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

  await buildPackages(PACKAGES_DIR, minify);
  return Promise.all(groups.map((group) => bundleGroup(group, join(outRoot, group), minify)));
}

/**
 * Lambda gives every function its credentials in environment variables: the SDK's default chain
 * is aliased to infra/lambda-credentials.ts, which reads them and loads the rest of the chain
 * (≈ 110 KB: SSO, INI, process, web identity, metadata, their STS/SSO clients) only without them.
 */
function lambdaCredentials(): Plugin {
  const shim = join(ROOT, 'infra', 'lambda-credentials.ts');
  const packages = join(ROOT, 'shared', 'packages.ts');
  return {
    name: 'lambda-credentials',
    setup(b) {
      // The loader's import of the package (shared/packages.ts, which the shim calls) and the package
      // built apart (`buildPackages`) resolve as usual.
      b.onResolve({ filter: /^@aws-sdk\/credential-provider-node$/ }, (args) =>
        args.kind === 'entry-point' || args.importer === packages || args.importer === shim ? undefined : { path: shim },
      );
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
 * Request validation without building schemas at load. zod builds a schema when its module is
 * evaluated: a group's route module (shared/api/routes/<group>.ts), with its schemas and ≈ 100 KB
 * of zod, was most of what a function loaded above the DynamoDB-only floor (docs/design/cold-start.md
 * has the options measured). Every route module is replaced, in the bundle only, by one generated
 * from it here (`describeRouteModule` reads it into data, `renderRouteModule` writes that out): the function's own routes as
 * they are defined, their schemas taken out, with `requestSchemas` (and `responseSchema`, used
 * outside AWS only) taking them from the function's schema chunk on the first request that needs
 * them; other groups' routes as method, path and group, all the 404/405 answer reads. The route
 * table stays the one source: this reads it; the OpenAPI document and the tests use it as written.
 */
function lazyRouteSchemas(): Plugin {
  const routesDir = join(ROOT, 'shared', 'api', 'routes');
  return {
    name: 'lazy-route-schemas',
    setup(b) {
      const group = groupOfEntry(b.initialOptions);
      b.onResolve({ filter: /(^|\/)routes\/[a-z-]+\.ts$/ }, (args) => {
        const path = resolve(args.resolveDir, args.path);
        // The schema chunk's import of a route module is of the module as written (inline schemas).
        if (dirname(path) !== routesDir || args.namespace === FUNCTION_SCHEMAS) return undefined;
        return { path, namespace: 'lazy-route-schemas' };
      });
      b.onLoad({ filter: /.*/, namespace: 'lazy-route-schemas' }, async (args) => ({
        contents: (await lazyRouteModule(args.path, group)).contents,
        loader: 'js',
        resolveDir: routesDir,
        watchFiles: [args.path],
      }));
      b.onResolve({ filter: new RegExp(`^${FUNCTION_SCHEMAS}$`) }, () => ({ path: group ?? 'none', namespace: FUNCTION_SCHEMAS }));
      b.onLoad({ filter: /.*/, namespace: FUNCTION_SCHEMAS }, async () => {
        const files = await functionSchemaFiles(group);
        return {
          contents: files.map((f) => `export * as ${schemaModuleName(f)} from ${JSON.stringify(f)};\n`).join(''),
          loader: 'js',
          resolveDir: ROOT,
        };
      });
    },
  };
}

/**
 * The one dynamic-import target holding every schema of a function's routes (and zod): the
 * function's second part, which esbuild writes to one chunk; what it shares with the start (a few
 * constants) goes to one more chunk at start.
 */
const FUNCTION_SCHEMAS = 'function-schemas';

/** The route group a function serves (`functions/<group>/handler.ts`), or undefined for another entry. */
function groupOfEntry(options: BuildOptions): string | undefined {
  const entries = options.entryPoints;
  const entry = Array.isArray(entries) && typeof entries[0] === 'string' ? resolve(ROOT, entries[0]) : undefined;
  return entry && dirname(dirname(entry)) === FUNCTIONS_DIR ? basename(dirname(entry)) : undefined;
}

const schemaModuleName = (file: string): string =>
  relative(ROOT, file)
    .replace(/\.ts$/, '')
    .replace(/[^a-zA-Z0-9]/g, '_');

/** The schema modules the group's routes read (request and response), for its schema chunk. */
async function functionSchemaFiles(group: string | undefined): Promise<string[]> {
  const routesDir = join(ROOT, 'shared', 'api', 'routes');
  const files = new Set<string>();
  for (const file of readdirSync(routesDir).filter((f) => f.endsWith('.ts'))) {
    for (const f of (await lazyRouteModule(join(routesDir, file), group)).schemaFiles) files.add(f);
  }
  return [...files].sort();
}

/**
 * zod's error messages in English only. `import('zod')` (shared/packages.ts) keeps zod's whole
 * namespace, and with it `z.locales`: ≈ 250 KB of messages in other languages, which the API never
 * uses (zod sets English itself). Its `z.locales` holds `en` alone.
 */
function zodEnglishOnly(): Plugin {
  return {
    name: 'zod-english-only',
    setup(b) {
      b.onResolve({ filter: /\/locales\/index\.js$/ }, (args) =>
        /\/node_modules\/zod\/v4\/(classic|core)\//.test(args.importer)
          ? { path: resolve(args.resolveDir, '../locales/en.js'), namespace: 'zod-english-only' }
          : undefined,
      );
      b.onLoad({ filter: /.*/, namespace: 'zod-english-only' }, (args) => ({
        contents: `export { default as en } from ${JSON.stringify(args.path)};\n`,
        loader: 'js',
        resolveDir: dirname(args.path),
      }));
    },
  };
}

/**
 * The OpenAPI document's generator (shared/openapi/document.ts: every schema, zod-to-openapi) left
 * out of the bundle: a function reads the document written beside it (`writePublicFiles`), and
 * builds it only outside Lambda (shared/openapi/docs-page.ts).
 */
function documentFromAssetFolder(): Plugin {
  const document = join(ROOT, 'shared', 'openapi', 'document.ts');
  return {
    name: 'document-from-asset-folder',
    setup(b) {
      b.onResolve({ filter: /\/document\.ts$/ }, (args) =>
        resolve(args.resolveDir, args.path) === document ? { path: document, namespace: 'document-from-asset-folder' } : undefined,
      );
      b.onLoad({ filter: /.*/, namespace: 'document-from-asset-folder' }, () => ({
        contents: `export const openApiDocument = () => { throw new Error('In Lambda the OpenAPI document is read from the asset folder'); };\n`,
        loader: 'js',
      }));
    },
  };
}

/**
 * Fields of a route that only the OpenAPI document reads, and `errors`, which besides it only the
 * contract notes read, outside AWS (shared/api/contract.ts): left out of the bundle.
 */
const DOCUMENT_ONLY = new Set(['summary', 'description', 'tag', 'hidden', 'mediaType', 'errors']);
const SCHEMA_FIELDS = ['params', 'query', 'body', 'response'] as const;

/** Where a route's schema sits in the function's schema chunk: an export of a schema module, or a field of a route. */
type SchemaRef = { module: string; name: string } | { module: string; table: string; id: string; field: string };

/** One route of the generated module: its own group's (document-only fields and schemas left out) or another's. */
type RouteStub =
  | { kind: 'elsewhere'; name: string; method: string; path: string; group: string }
  | { kind: 'own'; name: string; meta: Record<string, unknown>; request: [field: string, at: SchemaRef][]; response?: SchemaRef };

/** The generated stand-in for one route module, as data: its routes and the tables that export them. */
interface RouteModuleDescription {
  routes: RouteStub[];
  tables: { exportName: string; entries: [id: string, route: string][] }[];
  /** The schema modules its own routes read. */
  schemaFiles: string[];
}

/**
 * The generated stand-in for one route module (see `lazyRouteSchemas`) in the bundle of `group`,
 * and the schema modules its routes of that group read.
 */
async function lazyRouteModule(routeFile: string, group: string | undefined): Promise<{ contents: string; schemaFiles: string[] }> {
  const description = await describeRouteModule(routeFile, group);
  return { contents: renderRouteModule(description), schemaFiles: description.schemaFiles };
}

async function describeRouteModule(routeFile: string, group: string | undefined): Promise<RouteModuleDescription> {
  const isSchema = (v: unknown): boolean => typeof v === 'object' && v !== null && '_zod' in v;
  const where = await schemaExports();
  const mod = (await import(pathToFileURL(routeFile).href)) as Record<string, unknown>;
  const tables = Object.entries(mod).filter(
    ([, v]) =>
      typeof v === 'object' &&
      v !== null &&
      Object.values(v).every((r) => typeof r === 'object' && r !== null && 'method' in r && 'path' in r),
  ) as [string, Record<string, Record<string, unknown>>][];

  const named = new Map<unknown, string>();
  const routes: RouteStub[] = [];
  const schemaFiles = new Set<string>();
  const refTo = (table: string, id: string, def: Record<string, unknown>, field: string): SchemaRef => {
    // A schema written inline in the route module (no export of its own): from the route module itself.
    const at = where.get(def[field]) ?? { file: routeFile, name: undefined };
    schemaFiles.add(at.file);
    const module = schemaModuleName(at.file);
    return at.name ? { module, name: at.name } : { module, table, id, field };
  };
  const describedTables = tables.map(([exportName, table]) => ({
    exportName,
    entries: Object.entries(table).map(([id, def]): [string, string] => {
      let name = named.get(def);
      if (!name) {
        name = `route${named.size}`;
        named.set(def, name);
        const [method, path, routeGroup] = [def.method, def.path, def.group] as string[];
        if (routeGroup !== group) {
          // Another group's route: matched only to answer 404 or 405 (shared/http/handler.ts).
          routes.push({ kind: 'elsewhere', name, method: method!, path: path!, group: routeGroup! });
        } else {
          const meta = Object.fromEntries(
            Object.entries(def).filter(([k, v]) => !DOCUMENT_ONLY.has(k) && !SCHEMA_FIELDS.includes(k as never) && !isSchema(v)),
          );
          const request = (['params', 'query', 'body'] as const)
            .filter((f) => def[f] !== undefined)
            .map((f): [string, SchemaRef] => [f, refTo(exportName, id, def, f)]);
          const response = def.response !== undefined ? refTo(exportName, id, def, 'response') : undefined;
          routes.push({ kind: 'own', name, meta, request, ...(response ? { response } : {}) });
        }
      }
      return [id, name];
    }),
  }));
  return { routes, tables: describedTables, schemaFiles: [...schemaFiles].sort() };
}

/** The description as the module esbuild bundles: schemas come from the function's schema chunk on first use. */
function renderRouteModule({ routes, tables }: RouteModuleDescription): string {
  const q = JSON.stringify;
  const schemaAt = (at: SchemaRef): string =>
    'name' in at ? `s.${at.module}[${q(at.name)}]` : `s.${at.module}[${q(at.table)}][${q(at.id)}][${q(at.field)}]`;
  // `other` keeps each of the other groups' routes (most of the table) to one short call in the bundle.
  const lines = [
    `const schemas = () => import(${q(FUNCTION_SCHEMAS)});`,
    'const other = (method, path, group) => ({ method, path, group });',
  ];
  for (const route of routes) {
    if (route.kind === 'elsewhere') {
      lines.push(`const ${route.name} = other(${q(route.method)}, ${q(route.path)}, ${q(route.group)});`);
      continue;
    }
    const fields = Object.entries(route.meta).map(([key, value]) => `${q(key)}: ${q(value)}`);
    if (route.request.length) {
      const request = route.request.map(([field, at]) => `${field}: ${schemaAt(at)}`).join(', ');
      fields.push(`requestSchemas: () => schemas().then((s) => ({ ${request} }))`);
    }
    if (route.response) fields.push(`responseSchema: () => schemas().then((s) => ${schemaAt(route.response)})`);
    lines.push(`const ${route.name} = { ${fields.join(', ')} };`);
  }
  for (const { exportName, entries } of tables) {
    lines.push(`export const ${exportName} = { ${entries.map(([id, route]) => `${q(id)}: ${route}`).join(', ')} };`);
  }
  return `${lines.join('\n')}\n`;
}

/** Where each exported schema of shared/api/schemas/ is defined: the module and the name to take. */
async function schemaExports(): Promise<Map<unknown, { file: string; name: string }>> {
  const isSchema = (v: unknown): boolean => typeof v === 'object' && v !== null && '_zod' in v;
  const schemaDir = join(ROOT, 'shared', 'api', 'schemas');
  const where = new Map<unknown, { file: string; name: string }>();
  for (const file of readdirSync(schemaDir)
    .filter((f) => f.endsWith('.ts'))
    .sort()) {
    const mod = (await import(pathToFileURL(join(schemaDir, file)).href)) as Record<string, unknown>;
    for (const [name, value] of Object.entries(mod))
      if (isSchema(value) && !where.has(value)) where.set(value, { file: join(schemaDir, file), name });
  }
  return where;
}

/**
 * The packages shared/packages.ts loads with `import()`, each built apart into one file of its own
 * (`lazy/<name>.mjs` in the asset folder, found through the folder's package.json `imports`), which
 * the bundle imports as an external: the AWS SDK clients among them share code with the DynamoDB
 * client at start, and inside the bundle that overlap would split the start into a chunk per set
 * of packages reaching it. Apart, a package repeats what it shares (its file is loaded only when
 * its path first runs) and the start stays index.mjs and the chunk it shares with the schemas.
 * (zod's static imports, the route schemas', stay in the bundle, tree-shaken into the schema chunk.)
 */
export const PACKAGES_APART = [
  'zod',
  'stripe',
  'pdf-lib',
  '@pdf-lib/fontkit',
  'jose',
  '@aws-sdk/client-secrets-manager',
  '@aws-sdk/client-sqs',
  '@aws-sdk/client-sesv2',
  'nodemailer',
  '@aws-sdk/client-s3',
  '@aws-sdk/client-route-53',
  '@aws-sdk/credential-provider-node',
] as const;

const LAZY_PREFIX = '#lazy/';
const lazyFileName = (pkg: string): string => pkg.replace(/^@/, '').replace(/\//g, '-');
/** What the asset folder's package.json maps `#lazy/<name>` to. */
const LAZY_DIR = 'lazy';

function packagesApart(): Plugin {
  const names = new Set<string>(PACKAGES_APART);
  return {
    name: 'packages-apart',
    setup(b) {
      // Our code's `import()` of a package (node_modules' own imports resolve as usual).
      b.onResolve({ filter: /^[@a-z]/ }, (args) => {
        if (args.kind !== 'dynamic-import' || args.namespace !== 'file' || args.importer.includes('/node_modules/')) return undefined;
        if (!names.has(args.path)) return { errors: [{ text: `import('${args.path}'): add it to PACKAGES_APART (infra/bundle.ts)` }] };
        return { path: `${LAZY_PREFIX}${lazyFileName(args.path)}`, external: true };
      });
    },
  };
}

/** Builds each package of PACKAGES_APART into `dir/<name>.mjs` (with its source map). */
async function buildPackages(dir: string, minify: boolean): Promise<void> {
  const { splitting: _, entryNames: __, chunkNames: ___, outExtension: ____, plugins: _____, ...options } = LAMBDA_BUILD_OPTIONS;
  await Promise.all(
    PACKAGES_APART.map((pkg) =>
      build({
        ...options,
        entryPoints: [pkg],
        outfile: join(dir, `${lazyFileName(pkg)}.mjs`),
        absWorkingDir: ROOT,
        minify,
        // The SDK clients' credential chain is the Lambda one here too, and itself a package apart.
        plugins: [lambdaCredentials(), httpWithoutUndici(), packagesApart(), zodEnglishOnly()],
        metafile: false,
      }),
    ),
  );
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
  // The packages a cold start does not load (shared/packages.ts) and the route schemas are reached
  // through a dynamic `import()`; with splitting esbuild writes them to chunks/ beside index.mjs,
  // loaded when their path first runs. Code that both sides use goes to a chunk that index.mjs
  // imports statically.
  splitting: true,
  entryNames: 'index',
  chunkNames: 'chunks/[name]-[hash]',
  outExtension: { '.js': '.mjs' },
  plugins: [lambdaCredentials(), httpWithoutUndici(), packagesApart(), lazyRouteSchemas(), documentFromAssetFolder(), zodEnglishOnly()],
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
  if (rendersPdfs(metafile)) await copyFonts(dir);
  const packageBytes = await copyPackages(metafile, dir);

  const { start, lazy } = chunkSizes(metafile);
  return {
    group,
    dir,
    bytes: (await stat(outfile)).size,
    startBytes: start,
    lazyBytes: lazy + packageBytes,
    folderBytes: await folderSize(dir),
  };
}

/**
 * Puts the packages the bundle imports (`#lazy/<name>`, see PACKAGES_APART) into its asset folder,
 * with the package.json that maps those names to them; returns their bytes. A package may only be
 * loaded on first use: a static import of one would load it at start, unseen by `chunkSizes`.
 */
async function copyPackages(meta: Metafile, dir: string): Promise<number> {
  const names = new Set<string>();
  for (const [file, output] of Object.entries(meta.outputs)) {
    for (const i of output.imports) {
      if (!i.path.startsWith(LAZY_PREFIX)) continue;
      if (i.kind !== 'dynamic-import') throw new Error(`${file} imports ${i.path} statically: load it through shared/packages.ts`);
      names.add(i.path.slice(LAZY_PREFIX.length));
    }
  }
  if (!names.size) return 0;
  await mkdir(join(dir, LAZY_DIR), { recursive: true });
  let bytes = 0;
  for (const name of [...names].sort()) {
    for (const file of [`${name}.mjs`, `${name}.mjs.map`]) await copyFile(join(PACKAGES_DIR, file), join(dir, LAZY_DIR, file));
    bytes += (await stat(join(dir, LAZY_DIR, `${name}.mjs`))).size;
  }
  const imports = { [`${LAZY_PREFIX}*`]: `./${LAZY_DIR}/*.mjs` };
  await writeFile(join(dir, 'package.json'), `${JSON.stringify({ private: true, imports }, null, 2)}\n`);
  return bytes;
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

/** Whether the bundle holds the invoice PDF's font loader (shared/invoices/fonts.ts), at start or in a lazy chunk. */
const FONTS_MODULE = 'shared/invoices/fonts.ts';
const rendersPdfs = (meta: Metafile): boolean => FONTS_MODULE in meta.inputs;

/**
 * The invoice PDF's fonts, as files beside the bundle (`fonts/`), read with the first PDF. Measured
 * against embedding them in a lazy chunk with esbuild's `binary` loader: the files are 1.43 MB
 * (0.71 MB zipped) against 1.86 MB of base64 (0.87 MB zipped), and read in 2–25 ms against
 * 55–125 ms to load and decode the chunk.
 */
async function copyFonts(dir: string): Promise<void> {
  const from = fontPackageDir();
  await mkdir(join(dir, FONTS_DIR), { recursive: true });
  await Promise.all([
    ...Object.values(INVOICE_FONT_FILES).map((file) => copyFile(join(from, 'ttf', file), join(dir, FONTS_DIR, file))),
    copyFile(join(from, FONT_LICENSE_FILE), join(dir, FONTS_DIR, FONT_LICENSE_FILE)),
  ]);
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
