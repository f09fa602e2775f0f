import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { anchorOf, DESIGN_FILES, DOC_FILES, headingsOf, regenerateEach } from '../../dev/generate-docs.ts';
import { KEY_SENTINEL } from '../../shared/db/key-prefixes.ts';
import { keys } from '../../shared/db/keys.ts';

/**
 * The docs stay true where the code can tell: generated blocks (tables of contents, the error
 * codes from shared/errors.ts, the arrows between the folders of shared/ and its module list) are
 * fresh, every relative link reaches a file and every `#anchor` a heading, the README stays a page a
 * newcomer reads (≤ 250 lines, the rest in docs/) and ARCHITECTURE.md a guide (≤ 450 lines of
 * ≤ 140 columns, the long explanations in docs/design/).
 */
const ROOT = resolve(import.meta.dirname, '../..');
const FILES = [...DOC_FILES, 'CONTRIBUTING.md'];
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

describe('docs', () => {
  // Every doc regenerated at once: one Biome process formats them all (a process per file was most of
  // this file's time on a busy machine); the hook holds that one process, so it gets the long timeout.
  let regenerated: string[] = [];
  beforeAll(() => {
    regenerated = regenerateEach(DOC_FILES.map((file) => ({ file, text: read(file) })));
  }, 30_000);

  it.each(DOC_FILES)('%s: generated blocks are fresh (npm run docs)', (file) => {
    expect(regenerated[DOC_FILES.indexOf(file)] === read(file), `${file} is stale: run npm run docs`).toBe(true);
  });

  it('README.md is at most 250 lines', () => {
    expect(read('README.md').split('\n').length).toBeLessThanOrEqual(250);
  });

  it('ARCHITECTURE.md is a guide: at most 450 lines, none wider than 140 columns', () => {
    const lines = read('ARCHITECTURE.md').split('\n');
    expect(lines.length).toBeLessThanOrEqual(450);
    expect(lines.map((line, i) => [i + 1, [...line].length] as const).filter(([, width]) => width > 140)).toEqual([]);
  });

  it('the relationships the code holds are generated blocks, and every design note is linked from the guide', () => {
    const guide = read('ARCHITECTURE.md');
    for (const block of ['domain-arrows', 'error-statuses']) expect(guide).toContain(`<!-- generated:${block} -->`);
    expect(read('docs/design/modules.md')).toContain('<!-- generated:shared-modules -->');
    expect(DESIGN_FILES.filter((file) => !guide.includes(`](${file})`))).toEqual([]);
  });

  it.each(FILES)('%s: every relative link reaches a file, every anchor a heading', (file) => {
    const broken: string[] = [];
    const text = read(file).replace(/```[\s\S]*?```/g, '');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue;
      const [path, anchor] = target!.split('#');
      const into = path ? join(dirname(join(ROOT, file)), path) : join(ROOT, file);
      if (!existsSync(into)) {
        broken.push(target!);
        continue;
      }
      if (anchor && into.endsWith('.md')) {
        const anchors = headingsOf(readFileSync(into, 'utf8')).map((h) => anchorOf(h.text));
        if (!anchors.includes(anchor)) broken.push(target!);
      }
    }
    expect(broken).toEqual([]);
  });

  it('the error-code table lists every code of shared/errors.ts', async () => {
    const { ERROR_STATUS } = await import('../../shared/errors.ts');
    const api = read('docs/api.md');
    for (const [code, status] of Object.entries(ERROR_STATUS)) expect(api).toMatch(new RegExp(`\\| \`${code}\` +\\| ${status} +\\|`));
  });

  it('the deploy guide lists the Stripe events from the code list (shared/payments/stripe-events.ts), in its generated block', async () => {
    const { STRIPE_EVENT_TYPES } = await import('../../shared/payments/stripe-events.ts');
    const block = /<!-- generated:stripe-events -->\n([\s\S]*?)<!-- \/generated -->/.exec(read('docs/deploy.md'))?.[1] ?? '';
    expect([...block.matchAll(/^\| `([a-z_.]+)`/gm)].map((m) => m[1])).toEqual(STRIPE_EVENT_TYPES);
  });

  it('docs/design/data-model.md has a row for the key of every item the key builders make', () => {
    const rows = read('docs/design/data-model.md')
      .split('\n')
      .filter((line) => line.startsWith('| `'))
      .map((line) => line.split('|').map((cell) => cell.trim().replace(/`/g, '')));
    // The fixed part of a key: up to its first variable part (a padded number leaves its zeros).
    const fixed = (key: string) => key.slice(0, key.indexOf(KEY_SENTINEL) < 0 ? undefined : key.indexOf(KEY_SENTINEL)).replace(/0+$/, '');
    const missing: string[] = [];
    for (const [name, build] of Object.entries(keys)) {
      const built = (build as (...args: unknown[]) => unknown)(KEY_SENTINEL, KEY_SENTINEL, KEY_SENTINEL, KEY_SENTINEL, KEY_SENTINEL);
      if (typeof built !== 'object' || !built || !('PK' in built) || !('SK' in built)) continue; // index keys, prefixes, shard names
      const { PK, SK } = built as { PK: string; SK: string };
      if (!rows.some(([, pk, sk]) => pk!.startsWith(fixed(PK)) && sk!.startsWith(fixed(SK))))
        missing.push(`${name}: ${fixed(PK)}… / ${fixed(SK)}…`);
    }
    expect(missing).toEqual([]);
  });
});
