import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ERROR_MEANING, ERROR_STATUS } from '../shared/errors.ts';
import { STRIPE_EVENTS } from '../shared/payments/stripe-events.ts';
import { graphOf, groupGraph, readSources } from '../tests/helpers/import-graph.ts';

/**
 * `npm run docs`: rewrites the generated blocks of README.md, ARCHITECTURE.md, docs/*.md,
 * docs/design/*.md and bench/README.md, so facts the code holds are not restated by hand:
 *
 * - `<!-- generated:toc -->`: the file's table of contents, from its `##` and `###` headings;
 * - `<!-- generated:error-codes -->`: every error code with its status and meaning, from shared/errors.ts;
 * - `<!-- generated:error-statuses -->`: the same codes, one line per status;
 * - `<!-- generated:stripe-events -->`: the Stripe events the service books, from shared/payments/stripe-events.ts;
 * - `<!-- generated:domain-arrows -->`: which shared/ folders each shared/ folder imports (static and
 *   `import()`, as the bundler reads them: tests/helpers/import-graph.ts);
 * - `<!-- generated:shared-modules -->`: every file of shared/ by folder, with its first doc-comment line.
 *
 * A block ends at `<!-- /generated -->`. `--check` (part of `npm run check`, through
 * tests/unit/docs.test.ts) fails when a block is stale.
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

const markdownIn = (dir: string): string[] =>
  readdirSync(join(root, dir))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `${dir}/${f}`);

/** The design notes ARCHITECTURE.md links to, one per subsystem. */
export const DESIGN_FILES = markdownIn('docs/design');

export const DOC_FILES = ['README.md', 'ARCHITECTURE.md', ...markdownIn('docs'), ...DESIGN_FILES, 'bench/README.md'];

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

function errorStatuses(): string {
  const byStatus = new Map<number, string[]>();
  for (const [code, status] of Object.entries(ERROR_STATUS)) byStatus.set(status, [...(byStatus.get(status) ?? []), `\`${code}\``]);
  return [...byStatus]
    .sort(([a], [b]) => a - b)
    .map(([status, codes]) => `- ${status}: ${codes.join(', ')}`)
    .join('\n');
}

/** The shared/ folder (or top-level file, without `.ts`) a path of shared/ belongs to. */
const folderOf = (file: string): string => file.split('/')[1]!.replace(/\.ts$/, '');

/** Words joined by ', ' into lines of at most `width` columns, continued with two spaces. */
function wrap(head: string, words: string[], width = 120): string {
  const lines = [head];
  for (const [i, word] of words.entries()) {
    const piece = i === words.length - 1 ? word : `${word},`;
    if (`${lines.at(-1)} ${piece}`.length > width) lines.push(`  ${piece}`);
    else lines[lines.length - 1] += ` ${piece}`;
  }
  return lines.join('\n');
}

function domainArrows(): string {
  const files = readSources(root, 'shared');
  const folders = groupGraph(graphOf(files), folderOf);
  return [...folders]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([from, edges]) => {
      const to = [...edges]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([name, kind]) => (kind === 'dynamic' ? `${name} (import())` : name));
      return to.length ? wrap(`- \`${from}\` →`, to) : `- \`${from}\` imports no other folder`;
    })
    .join('\n');
}

/** The first line of a file's first doc comment (`/** …`), or '' when it has none. */
export function firstDocLine(text: string): string {
  const comment = /\/\*\*([\s\S]*?)\*\//.exec(text)?.[1] ?? '';
  return (
    comment
      .split('\n')
      .map((line) => line.replace(/^\s*\*\s?/, '').trim())
      .find(Boolean) ?? ''
  );
}

function sharedModules(): string {
  const byFolder = new Map<string, string[]>();
  for (const [file, text] of [...readSources(root, 'shared')].sort(([a], [b]) => a.localeCompare(b))) {
    const inFolder = file.split('/').length > 2;
    const folder = inFolder ? `shared/${folderOf(file)}/` : 'shared/';
    const line = firstDocLine(text);
    const entry = `  - \`${file.slice(folder.length)}\`${line ? `: ${line.replace(/\|/g, '\\|')}` : ''}`;
    byFolder.set(folder, [...(byFolder.get(folder) ?? []), entry]);
  }
  return [...byFolder].map(([folder, entries]) => [`- \`${folder}\``, ...entries].join('\n')).join('\n');
}

const BLOCKS: Record<string, (markdown: string) => string> = {
  toc,
  'error-codes': () => errorCodes(),
  'error-statuses': () => errorStatuses(),
  'stripe-events': () => stripeEvents(),
  'domain-arrows': () => domainArrows(),
  'shared-modules': () => sharedModules(),
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
