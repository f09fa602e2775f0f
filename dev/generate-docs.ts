import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ERROR_MEANING, ERROR_STATUS } from '../shared/errors.ts';
import { STRIPE_EVENTS } from '../shared/payments/stripe-events.ts';

/**
 * `npm run docs`: rewrites the generated blocks of README.md, docs/*.md and bench/README.md, so
 * facts the code holds are not restated by hand:
 *
 * - `<!-- generated:toc -->`: the file's table of contents, from its `##` and `###` headings;
 * - `<!-- generated:error-codes -->`: every error code with its status and meaning, from shared/errors.ts;
 * - `<!-- generated:stripe-events -->`: the Stripe events the service books, from shared/payments/stripe-events.ts.
 *
 * A block ends at `<!-- /generated -->`. `--check` (part of `npm run check`, through
 * tests/unit/docs.test.ts) fails when a block is stale.
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export const DOC_FILES = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
  'bench/README.md',
];

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
export const anchorOf = (heading: string): string =>
  heading
    .toLowerCase()
    .replace(/[`*_]/g, '')
    .replace(/[^\p{L}\p{N} -]/gu, '')
    .replace(/ /g, '-');

/** The `##`/`###` headings outside code blocks, in order. */
export function headingsOf(markdown: string): { level: number; text: string }[] {
  const found: { level: number; text: string }[] = [];
  let inCode = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) inCode = !inCode;
    const m = !inCode && /^(##|###) (.+)$/.exec(line);
    if (m) found.push({ level: m[1]!.length, text: m[2]! });
  }
  return found;
}

function toc(markdown: string): string {
  return headingsOf(markdown)
    .map(({ level, text }) => `${level === 3 ? '  ' : ''}- [${text}](#${anchorOf(text)})`)
    .join('\n');
}

function errorCodes(): string {
  const rows = Object.entries(ERROR_STATUS).map(
    ([code, status]) => `| \`${code}\` | ${status} | ${ERROR_MEANING[code as keyof typeof ERROR_STATUS]} |`,
  );
  return ['| code | status | meaning |', '| --- | --- | --- |', ...rows].join('\n');
}

function stripeEvents(): string {
  const rows = Object.entries(STRIPE_EVENTS).map(([type, books]) => `| \`${type}\` | ${books} |`);
  return ['| event | books |', '| --- | --- |', ...rows].join('\n');
}

const BLOCKS: Record<string, (markdown: string) => string> = {
  toc,
  'error-codes': () => errorCodes(),
  'stripe-events': () => stripeEvents(),
};

/**
 * Biome's formatting of Markdown files (tables padded), as `biome check` expects it: all of them in
 * one Biome process (a copy of each under a temporary folder, formatted in place with this
 * project's configuration), since a process per file is most of the check's time on a busy machine.
 */
function formatAll(texts: { file: string; text: string }[]): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'generate-docs-'));
  try {
    const paths = texts.map(({ file, text }) => {
      const path = join(dir, file);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, text);
      return path;
    });
    // The copies are outside the repository: Biome's VCS integration (its ignore file) would refuse them.
    execFileSync(
      join(root, 'node_modules/.bin/biome'),
      ['format', '--write', '--vcs-enabled=false', `--config-path=${join(root, 'biome.json')}`, ...paths],
      { cwd: dir, stdio: 'pipe' },
    );
    return paths.map((path) => readFileSync(path, 'utf8'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Each file's text with every generated block rewritten, formatted as Biome formats it (one Biome process for all). */
export function regenerateEach(docs: { file: string; text: string }[]): string[] {
  return formatAll(docs.map(({ file, text }) => ({ file, text: regenerateBlocks(text) })));
}

function regenerateBlocks(markdown: string): string {
  return markdown.replace(/<!-- generated:([a-z-]+) -->\n[\s\S]*?<!-- \/generated -->/g, (_whole, name: string) => {
    const make = BLOCKS[name];
    if (!make) throw new Error(`unknown generated block "${name}"`);
    return `<!-- generated:${name} -->\n${make(markdown)}\n<!-- /generated -->`;
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check');
  const stale: string[] = [];
  const before = DOC_FILES.map((file) => ({ file, text: readFileSync(join(root, file), 'utf8') }));
  const after = regenerateEach(before);
  before.forEach(({ file, text }, i) => {
    if (after[i] === text) return;
    if (check) stale.push(file);
    else writeFileSync(join(root, file), after[i]!);
  });
  if (stale.length) {
    console.error(`Generated blocks are stale in ${stale.join(', ')}: run \`npm run docs\`.`);
    process.exit(1);
  }
}
