/**
 * `npm run lint:api`: lints the OpenAPI document with the field's tools — Spectral (its OpenAPI
 * ruleset plus the OWASP API Security ruleset, `.spectral.mjs`) and Redocly (`redocly.yaml`) —
 * and fails on any error. The document is generated here, in process, from the route table, so the
 * check never reads a stale copy. Both tools run offline: the Spectral rulesets are imported from
 * node_modules (a YAML `extends` by name would fetch them from a CDN), and Redocly's telemetry and
 * update check are turned off.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openApiDocument } from '../shared/openapi/document.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// Inside the repository (ignored by git), beside the packages the linters resolve from.
const dir = join(root, 'node_modules', '.cache', 'openapi-lint');
const file = join(dir, 'openapi.json');
mkdirSync(dir, { recursive: true });
writeFileSync(file, `${JSON.stringify(openApiDocument(), null, 2)}\n`);

const bin = (name: string) => join(root, 'node_modules', '.bin', name);
const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };

function run(title: string, command: string, args: string[]): boolean {
  console.log(`\n── ${title}`);
  // Both tools finish in a few seconds; the timeout turns a hang (say, a network call) into a failure.
  const result = spawnSync(command, args, { cwd: root, env, stdio: 'inherit', timeout: 120_000 });
  if (result.error) console.error(`${title}: ${result.error.message}`);
  return result.status === 0;
}

const spectral = run('Spectral (OpenAPI + OWASP rulesets, .spectral.mjs)', bin('spectral'), [
  'lint',
  '--ruleset',
  '.spectral.mjs',
  '--fail-severity=error',
  file,
]);
const redocly = run('Redocly (recommended, redocly.yaml)', bin('redocly'), [
  'lint',
  '--config',
  'redocly.yaml',
  '--format',
  'stylish',
  file,
]);

if (!spectral || !redocly) {
  console.error(`\nlint:api failed: ${[!spectral && 'Spectral', !redocly && 'Redocly'].filter(Boolean).join(' and ')} found errors.`);
  process.exit(1);
}
console.log('\nlint:api: no errors.');
