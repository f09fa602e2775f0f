import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The package's build (`npm run build` here; `npm pack` runs it as `prepack`): ESM and
 * declarations in dist/, by the repo's TypeScript with this folder's tsconfig.json.
 *
 * The package has no dependency to install: openapi-fetch (MIT, runtime code with no imports of
 * its own) and the declarations of openapi-typescript-helpers are copied into dist/vendor with
 * their licences, and the imports of them rewritten to those copies, so installing the tarball
 * needs no registry. The sources import `.ts` files (the repo runs them unbuilt); the
 * declarations get `.js` like the code tsc emits.
 */
const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, 'dist');
const vendor = join(dist, 'vendor');
const require = createRequire(import.meta.url);

rmSync(dist, { recursive: true, force: true });
execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', join(here, 'tsconfig.json')], { stdio: 'inherit' });

const packageDir = (name: string): string => dirname(require.resolve(`${name}/package.json`));
const fetchDir = packageDir('openapi-fetch');
const helpersDir = packageDir('openapi-typescript-helpers');
const withoutSourceMap = (text: string): string => text.replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n');

mkdirSync(vendor, { recursive: true });
writeFileSync(join(vendor, 'openapi-fetch.js'), withoutSourceMap(readFileSync(join(fetchDir, 'dist/index.mjs'), 'utf8')));
writeFileSync(
  join(vendor, 'openapi-fetch.d.ts'),
  readFileSync(join(fetchDir, 'dist/index.d.mts'), 'utf8').replace(
    /from ['"]openapi-typescript-helpers['"]/g,
    "from './openapi-typescript-helpers.js'",
  ),
);
writeFileSync(join(vendor, 'openapi-typescript-helpers.js'), 'export {};\n');
writeFileSync(join(vendor, 'openapi-typescript-helpers.d.ts'), readFileSync(join(helpersDir, 'dist/index.d.mts'), 'utf8'));
for (const [name, dir] of [
  ['openapi-fetch', fetchDir],
  ['openapi-typescript-helpers', helpersDir],
] as const) {
  const { version } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string };
  writeFileSync(join(vendor, `LICENSE-${name}`), `${name} ${version}\n\n${readFileSync(join(dir, 'LICENSE'), 'utf8')}`);
}

for (const file of readdirSync(dist)) {
  if (!file.endsWith('.js') && !file.endsWith('.d.ts')) continue;
  const path = join(dist, file);
  const text = readFileSync(path, 'utf8')
    .replace(/from ['"]openapi-fetch['"]/g, "from './vendor/openapi-fetch.js'")
    .replace(/(from ['"]\.\/[\w-]+)\.ts(['"])/g, '$1.js$2');
  writeFileSync(path, text);
}
const imports = readdirSync(dist)
  .filter((f) => f.endsWith('.js') || f.endsWith('.d.ts'))
  .flatMap((f) => [...readFileSync(join(dist, f), 'utf8').matchAll(/from ['"]([^'"]+)['"]/g)].map((m) => m[1]!))
  .filter((specifier) => !specifier.startsWith('./'));
if (imports.length) throw new Error(`dist imports outside the package: ${imports.join(', ')}`);
process.stdout.write(`built ${dist}\n`);
