import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { build, type Metafile } from 'esbuild';
import { buildLambda, bundleAll, chunkSizes, LAMBDA_BUILD_OPTIONS, ROOT } from '../infra/bundle.ts';
import { kb, median, table } from './harness.ts';

/**
 * Bundles and cold start: every function bundle exactly as `bundleAll()` builds it for deployment,
 * its size and its module-load time in a fresh Node process, next to a floor bundle that holds only
 * the DynamoDB document client (bench/floor-handler.ts) built with the same esbuild options, and the
 * same floor built as every bundle was before chunks and the credential alias (one file, the SDK's
 * whole default credential chain), for comparison with earlier runs.
 * `npm run bench -- bundles` runs this section alone (bench/run.ts).
 */
const run = promisify(execFile);

/** Fresh-process runs per bundle and flag (the median is reported), after one unrecorded run. */
const RUNS = 25;
const FLOOR = 'floor (DynamoDB client only)';
const FLOOR_BEFORE = 'floor as built before (one file, whole credential chain)';
/** The goals of issue 28, item 1: load within 1.3× the floor built the same way, at most 350 KB at start. */
const GOAL_RATIO = 1.3;
const GOAL_START_BYTES = 350 * 1024;

interface Measured {
  name: string;
  file: string;
  bytes: number;
  /** index.mjs plus the chunks it imports statically: what a cold start loads. */
  startBytes: number;
  /** Chunks loaded only by a dynamic import(), when their path runs. */
  lazyBytes: number;
  /** How many files a cold start loads (index.mjs and its static chunks). */
  startFiles: number;
  plainMs: number;
  sourceMapsMs: number;
  plainMinMs: number;
  /** CPU time (user + system) of the import, median: less moved by other work on a shared machine than wall time. */
  cpuMs: number;
  sourceMapsMinMs: number;
  /** The same import followed by every chunk its routes' first requests may load (schemas, lazily loaded route code), median. */
  firstRequestMs: number | undefined;
  firstRequestMinMs: number | undefined;
}

export async function benchBundles(): Promise<string> {
  const outDir = await mkdtemp(join(tmpdir(), 'bench-bundles-'));
  try {
    // The deploy build (same options, same code), into a scratch folder so the dist/ assets other
    // work may be reading are left alone; the metafiles go to dist/meta/ as always.
    const built = await bundleAll({ outDir });
    const floorFile = join(outDir, 'floor', 'index.mjs');
    const floorMeta = await buildLambda(join(ROOT, 'bench', 'floor-handler.ts'), join(outDir, 'floor'));
    const floorSizes = chunkSizes(floorMeta);
    const floorBeforeFile = join(outDir, 'floor-before', 'index.mjs');
    await buildFloorBefore(floorBeforeFile);
    const floorBeforeBytes = (await stat(floorBeforeFile)).size;
    const targets = [
      ...(await Promise.all(
        built.map(async (b) => ({
          name: b.group,
          file: join(b.dir, 'index.mjs'),
          bytes: b.bytes,
          startBytes: b.startBytes,
          lazyBytes: b.lazyBytes,
          startFiles: startFileCount(await metaOf(b.group)),
          schemaChunks: await firstRequestChunks(b.group, b.dir),
        })),
      )),
      {
        name: FLOOR,
        file: floorFile,
        bytes: (await stat(floorFile)).size,
        startBytes: floorSizes.start,
        lazyBytes: floorSizes.lazy,
        startFiles: floorSizes.startFiles.length,
        schemaChunks: [],
      },
      {
        name: FLOOR_BEFORE,
        file: floorBeforeFile,
        bytes: floorBeforeBytes,
        startBytes: floorBeforeBytes,
        lazyBytes: 0,
        startFiles: 1,
        schemaChunks: [],
      },
    ];

    // Interleaved (round-robin over bundles and flags), so drift on the machine hits all alike.
    const samples = new Map<string, number[]>();
    for (let round = 0; round <= RUNS; round++) {
      for (const target of targets) {
        for (const flags of [[], ['--enable-source-maps']]) {
          const { ms, cpuMs } = await loadTime(target.file, flags);
          if (round === 0) continue; // warms the file cache
          const key = `${target.name}|${flags.join(' ')}`;
          samples.set(key, [...(samples.get(key) ?? []), ms]);
          samples.set(`cpu:${key}`, [...(samples.get(`cpu:${key}`) ?? []), cpuMs]);
        }
        if (target.schemaChunks.length) {
          // What first requests add: their schemas' chunks (zod with them) and lazily loaded route code.
          const { ms } = await loadTime(target.file, [], target.schemaChunks);
          if (round > 0) samples.set(`first:${target.name}`, [...(samples.get(`first:${target.name}`) ?? []), ms]);
        }
      }
    }
    const measured: Measured[] = targets.map((t) => ({
      ...t,
      plainMs: median(samples.get(`${t.name}|`)!),
      sourceMapsMs: median(samples.get(`${t.name}|--enable-source-maps`)!),
      plainMinMs: Math.min(...samples.get(`${t.name}|`)!),
      cpuMs: median(samples.get(`cpu:${t.name}|`)!),
      sourceMapsMinMs: Math.min(...samples.get(`${t.name}|--enable-source-maps`)!),
      firstRequestMs: samples.has(`first:${t.name}`) ? median(samples.get(`first:${t.name}`)!) : undefined,
      firstRequestMinMs: samples.has(`first:${t.name}`) ? Math.min(...samples.get(`first:${t.name}`)!) : undefined,
    }));
    const floor = measured.find((m) => m.name === FLOOR)!;
    const before = measured.find((m) => m.name === FLOOR_BEFORE)!;
    const x = (v: number, f: number) => `${(v / f).toFixed(2)}×`;
    const ms = (v: number) => `${v.toFixed(1)} ms`;
    const ours = measured.filter((m) => m.name !== FLOOR && m.name !== FLOOR_BEFORE);
    const met = (ok: boolean) => (ok ? '' : ' ✗');
    const rows = measured.map((m) => [
      m.name,
      kb(m.bytes),
      `${kb(m.startBytes)}${met(m.startBytes <= GOAL_START_BYTES)}`,
      String(m.startFiles),
      m.lazyBytes ? kb(m.lazyBytes) : '—',
      x(m.startBytes, floor.startBytes),
      ms(m.plainMs),
      ms(m.plainMinMs),
      `${x(m.plainMs, floor.plainMs)} / ${x(m.plainMinMs, floor.plainMinMs)}${met(m.plainMs <= GOAL_RATIO * floor.plainMs && m.plainMinMs <= GOAL_RATIO * floor.plainMinMs)}`,
      m.firstRequestMs === undefined
        ? '—'
        : `${ms(m.firstRequestMs)} / ${ms(m.firstRequestMinMs!)} (${x(m.firstRequestMs, floor.plainMs)} / ${x(m.firstRequestMinMs!, floor.plainMinMs)})`,
      `${x(m.plainMs, before.plainMs)} / ${x(m.plainMinMs, before.plainMinMs)}`,
      `${ms(m.cpuMs)} (${x(m.cpuMs, floor.cpuMs)} / ${x(m.cpuMs, before.cpuMs)})`,
      ms(m.sourceMapsMs),
      ms(m.sourceMapsMinMs),
      `${x(m.sourceMapsMs, floor.sourceMapsMs)} / ${x(m.sourceMapsMinMs, floor.sourceMapsMinMs)}`,
    ]);

    // Where the weight is: the heaviest bundle's inputs by package, next to the floor's.
    const worst = (f: (m: Measured) => number) => [...ours].sort((a, b) => f(b) - f(a))[0]!;
    const worstMedian = worst((m) => m.plainMs / floor.plainMs);
    const worstMin = worst((m) => m.plainMinMs / floor.plainMinMs);
    const worstStart = worst((m) => m.startBytes);
    const goals = `**Goals** (issue 28, item 1): every function loads within ${GOAL_RATIO}× the floor built the same way, median and minimum, and loads at most ${kb(GOAL_START_BYTES)} at start (✗ marks a miss). This run: at most ${x(worstMedian.plainMs, floor.plainMs)} median (${worstMedian.name}) and ${x(worstMin.plainMinMs, floor.plainMinMs)} minimum (${worstMin.name}), at most ${kb(worstStart.startBytes)} at start (${worstStart.name}): ${ours.every((m) => m.plainMs <= GOAL_RATIO * floor.plainMs && m.plainMinMs <= GOAL_RATIO * floor.plainMinMs) ? 'load goal met' : 'load goal **not** met'}, ${ours.every((m) => m.startBytes <= GOAL_START_BYTES) ? 'size goal met' : 'size goal **not** met'}.`;
    const heaviest = [...ours].sort((a, b) => b.startBytes - a.startBytes)[0]!;
    const meta = await metaOf(heaviest.name);
    const byPackage = packageBytes(meta);
    const floorByPackage = packageBytes(floorMeta);
    const lazyByPackage = packageBytes(meta, 'lazy');
    const lazyTop = [...lazyByPackage].sort((a, b) => b[1] - a[1]).slice(0, 4);
    const total = [...byPackage.values()].reduce((a, b) => a + b, 0);
    const top = [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 8);
    const topRows = top.map(([pkg, bytes]) => [
      pkg,
      kb(bytes),
      `${((bytes / total) * 100).toFixed(1)} %`,
      floorByPackage.has(pkg) ? kb(floorByPackage.get(pkg)!) : '—',
    ]);
    // The largest package of every bundle, from each metafile.
    const largest = await Promise.all(
      ours.map(async (m) => {
        const bytes = packageBytes(await metaOf(m.name));
        const [pkg, size] = [...bytes].sort((a, b) => b[1] - a[1])[0]!;
        return { pkg, size };
      }),
    );
    const sameLargest = largest.every((l) => l.pkg === largest[0]!.pkg);
    const sizes = largest.map((l) => l.size);
    const largestNote = sameLargest
      ? `The largest package loaded at start is **${largest[0]!.pkg}** in every bundle (${kb(Math.min(...sizes))} to ${kb(Math.max(...sizes))} of each).`
      : `Largest package loaded at start, per bundle: ${ours
          .map((m, i) => `${m.name} ${largest[i]!.pkg} ${kb(largest[i]!.size)}`)
          .join(', ')}.`;
    const zodLocales = Object.values(meta.outputs)
      .flatMap((o) => Object.entries(o.inputs))
      // Every locale but English (zod's default error messages) and the index that lists them.
      .filter(([path]) => path.includes('node_modules/zod/') && path.includes('/locales/') && !/\/locales\/(en|index)\.js$/.test(path))
      .reduce((a, [, v]) => a + v.bytesInOutput, 0);
    const localesNote = zodLocales
      ? ` Of zod's ${kb(byPackage.get('zod') ?? 0)} here, ${kb(zodLocales)} are its error messages in languages other than English (\`zod/v4/locales/*\`), which the API never uses: they come in with the \`z\` namespace object (\`import { z } from 'zod'\`), which holds \`z.locales\` and which esbuild keeps whole.`
      : " No bundle holds zod's messages in other languages (`zod/v4/locales/*`): every module imports zod as `import * as z from 'zod'` (or types only), which esbuild tree-shakes.";
    const sdkShare = [...byPackage]
      .filter(([p]) => p.startsWith('@aws-sdk/') || p.startsWith('@smithy/') || p.startsWith('@aws-crypto/'))
      .reduce((a, [, b]) => a + b, 0);

    return [
      '## 1. Bundles and cold start',
      '',
      `Every function bundle as \`bundleAll()\` builds it for deployment (esbuild, minified ESM with chunks, linked source maps, the SDK's credential chain aliased to the environment variables Lambda sets, infra/bundle.ts), next to a floor bundle holding only \`@aws-sdk/client-dynamodb\` + \`@aws-sdk/lib-dynamodb\` and a handler that does nothing, built with the same options, and that floor built as every bundle was before (one file, the SDK's whole credential chain). \`index.mjs\` is the entry file; "at start" adds the chunks it imports statically (what a cold start loads); "lazy" is what loads when its path first runs: the schema chunk and the packages of shared/packages.ts (Stripe's library, the Secrets Manager client, the rest of the credential chain, …). Load time is \`await import()\` of \`index.mjs\` timed inside a fresh \`node\` process (STAGE=aws, TABLE_NAME, CURSOR_SECRET, AWS_REGION set), ${RUNS} runs per bundle and flag after one unrecorded run, interleaved across bundles; with and without \`--enable-source-maps\` (deployed with it). Node's own start-up is not included; the CPU column is the process's CPU time (user + system) over the same \`import()\`, which other work on a shared machine moves far less than wall time. The median is the headline figure; the minimum is shown too because on a busy machine noise only ever adds time, so the minimum is the steadier estimate of the load cost itself.`,
      '',
      `"Files at start" counts \`index.mjs\` and the chunks it imports: what it shares with the function's schema chunk and with the SDK's own \`import()\`s; the packages of shared/packages.ts are files of their own, loaded on first use (infra/bundle.ts, \`PACKAGES_APART\`); each file costs the ESM loader ≈ 0.4 ms (bench/README.md, "Measured once"). "Load + every first request's code" is the same \`import()\` followed, in the same process, by the function's schema chunk (zod and every request and response schema of its routes), which a route's first validated request loads; our own code is all at start. A package a route needs (Stripe for a checkout or the webhook, zod for the webhook's events, pdf-lib for an invoice PDF) is not counted: it loads with that route's first request. GET /v1/account loads no zod at all.`,
      '',
      goals,
      '',
      table(
        [
          'function',
          'index.mjs',
          `at start (goal ≤ ${kb(GOAL_START_BYTES)})`,
          'files at start',
          'lazy',
          'at start × floor',
          'load (median)',
          'load (min)',
          `load × floor, median / min (goal ≤ ${GOAL_RATIO}×)`,
          'load + every first request’s code, median / min (× floor)',
          '× floor as before',
          'CPU (median; × floor / as before)',
          '--enable-source-maps (median)',
          '(min)',
          '× floor (median / min)',
        ],
        rows,
      ),
      '',
      `Largest inputs loaded at start by the heaviest bundle, **${heaviest.name}** (${kb(heaviest.startBytes)} at start), by package (our own code by folder), from its esbuild metafile \`dist/meta/${heaviest.name}.json\`; bytes are what each input contributes to the minified output. AWS SDK packages (@aws-sdk, @smithy, @aws-crypto) make ${kb(sdkShare)} of it (${((sdkShare / total) * 100).toFixed(0)} %). Its lazy chunks (${kb(heaviest.lazyBytes)}) hold most of all ${lazyTop.map(([pkg, bytes]) => `${pkg} ${kb(bytes)}`).join(', ')}.`,
      '',
      table(['input', 'bytes in bundle', 'share', 'in the floor'], topRows),
      '',
      `${largestNote}${localesNote}`,
    ].join('\n');
  } finally {
    await rm(outDir, { recursive: true, force: true });
  }
}

/** The floor bundle as every bundle was built before chunks and the credential alias: one file. */
async function buildFloorBefore(outfile: string): Promise<void> {
  const { splitting: _, entryNames: __, chunkNames: ___, outExtension: ____, plugins: _____, ...options } = LAMBDA_BUILD_OPTIONS;
  await build({ entryPoints: [join(ROOT, 'bench', 'floor-handler.ts')], outfile, absWorkingDir: ROOT, ...options, minify: true });
}

/**
 * Milliseconds `import()` of the bundle takes in a fresh Node process: wall time, and the process's
 * CPU time in it; with `then`, those chunks are imported after it and counted in.
 */
async function loadTime(file: string, flags: string[], then: string[] = []): Promise<{ ms: number; cpuMs: number }> {
  const more = then.length ? ` await Promise.all(${JSON.stringify(then.map((f) => pathToFileURL(f).href))}.map((f) => import(f)));` : '';
  const script = `const c = process.cpuUsage(); const t = performance.now(); await import(${JSON.stringify(pathToFileURL(file).href)});${more} const ms = performance.now() - t; const u = process.cpuUsage(c); console.log(ms, (u.user + u.system) / 1000);`;
  const { stdout } = await run(process.execPath, [...flags, '--input-type=module', '-e', script], {
    env: {
      PATH: process.env.PATH ?? '',
      STAGE: 'aws',
      TABLE_NAME: 'bench',
      CURSOR_SECRET: 'bench-cursor-secret',
      AWS_REGION: 'us-east-1',
      LOG_LEVEL: 'silent',
    },
    timeout: 60_000,
  });
  const [ms, cpuMs] = (stdout.trim().split('\n').at(-1) ?? '').split(' ').map(Number);
  if (!Number.isFinite(ms) || !Number.isFinite(cpuMs)) throw new Error(`could not load ${file}: ${stdout}`);
  return { ms: ms!, cpuMs: cpuMs! };
}

const metaOf = async (group: string): Promise<Metafile> =>
  JSON.parse(await readFile(join(ROOT, 'dist', 'meta', `${group}.json`), 'utf8')) as Metafile;

const startFileCount = (meta: Metafile): number => chunkSizes(meta).startFiles.length;

/**
 * The chunks a function's first requests may load: its schema chunk (every request and response
 * schema of its routes, with zod; infra/bundle.ts), which a route's first validated request loads.
 * None for a function without routes.
 */
async function firstRequestChunks(group: string, dir: string): Promise<string[]> {
  const meta = await metaOf(group);
  return Object.entries(meta.outputs)
    .filter(([path, o]) => path.endsWith('.mjs') && o.entryPoint === `function-schemas:${group}`)
    .map(([path]) => join(dir, path.slice(path.indexOf('/chunks/') + 1)));
}

/** Bytes per npm package (node_modules/<pkg>/…), or per folder of our own code, in the files loaded at start (or lazily). */
function packageBytes(meta: Metafile, which: 'start' | 'lazy' = 'start'): Map<string, number> {
  const sizes = chunkSizes(meta);
  const inputs = (which === 'start' ? sizes.startFiles : sizes.lazyFiles).flatMap((file) => Object.entries(meta.outputs[file]!.inputs));
  const out = new Map<string, number>();
  for (const [path, { bytesInOutput }] of inputs) {
    const nm = path.lastIndexOf('node_modules/');
    let key: string;
    if (path.startsWith('lazy-route-schemas:')) {
      // The route module infra/bundle.ts generates without its schemas.
      key = 'our code: route table (schemas left out)';
    } else if (nm >= 0) {
      const parts = path.slice(nm + 'node_modules/'.length).split('/');
      key = parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
    } else {
      const parts = path.split('/');
      key = `our code: ${parts.slice(0, Math.min(2, parts.length - 1)).join('/') || path}/`;
    }
    out.set(key, (out.get(key) ?? 0) + bytesInOutput);
  }
  return out;
}
