import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../helpers/stack.ts';

/**
 * The README's curl walk-through, then every shell block of docs/api.md, run by bash as a reader
 * runs them: in order, in one shell, with only the variables the docs themselves define. The one
 * line a reader edits (`export API=… KEY=cp_test_…`, the banner's values) is given this stack's.
 * `curl` is wrapped to fail on any 4xx/5xx (`--fail-with-body`) and the shell stops at the first
 * failure, naming the command: an undefined variable, a placeholder left in a path or a wrong
 * credential fails here, not in a newcomer's terminal.
 *
 * Needs bash, curl and jq (the docs use them); without them the file is skipped and says so.
 */
const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');
const has = (tool: string) => {
  try {
    execFileSync('bash', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};
const missing = ['bash', 'curl', 'jq'].filter((tool) => !has(tool));

/** The ```sh blocks of a Markdown file (list-indented ones too), in order, that talk to the API. */
export function shellBlocks(markdown: string): string[] {
  const blocks: string[] = [];
  const fence = /^( *)```sh\n([\s\S]*?)^\1```$/gm;
  for (const match of markdown.matchAll(fence)) {
    const indent = match[1]!.length;
    const body = match[2]!
      .split('\n')
      .map((line) => line.slice(indent))
      .join('\n');
    if (body.includes('$API')) blocks.push(body);
  }
  return blocks;
}

const READER_LINE = /^export API=http:\/\/127\.0\.0\.1:3000 KEY=cp_test_… .*$/m;

let api: TestApi;
let work: string;

beforeAll(async () => {
  // The simulator's own pace (installs in 3 s, power changes in 1 s), as a reader of the docs meets it.
  api = await startTestApi({ panel: {} });
  work = mkdtempSync(join(tmpdir(), 'docs-examples-'));
});

afterAll(async () => {
  await api?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe.skipIf(missing.length > 0)(`the docs' shell examples${missing.length ? ` (skipped: no ${missing.join(', ')})` : ''}`, () => {
  it('run as written, in order: the README walk-through, then docs/api.md', async () => {
    const readme = shellBlocks(readFileSync(join(root, 'README.md'), 'utf8'));
    const apiGuide = shellBlocks(readFileSync(join(root, 'docs/api.md'), 'utf8'));
    expect(readme).toHaveLength(1);
    expect(readme[0]).toMatch(READER_LINE);
    expect(apiGuide.length).toBeGreaterThanOrEqual(3);

    const script = [
      'set -Eeuo pipefail',
      `trap 'echo "docs example failed: $BASH_COMMAND" >&2' ERR`,
      'curl() { command curl --fail-with-body -sS "$@"; }',
      readme[0]!.replace(READER_LINE, `export API=${api.baseUrl} KEY=${api.adminApiKey}`),
      ...apiGuide,
      // What the walk-through left behind, for the assertions below.
      'echo; echo "TOKEN=$TOKEN"; echo "ID=$ID"',
    ].join('\n');

    const { stdout } = await run('bash', ['-c', script], { cwd: work, maxBuffer: 64 * 1024 * 1024, timeout: 120_000 }).catch(
      (err: { stderr?: string; stdout?: string }) => {
        throw new Error(`the docs' examples stopped:\n${err.stderr}\n(last output: ${err.stdout?.slice(-500)})`);
      },
    );

    // What the examples did, seen through the API: the customer's top-up and the admin's grant are
    // in her ledger, the server she deployed is deleted, and the paid invoice came down as its PDF.
    const token = /^TOKEN=(.+)$/m.exec(stdout)?.[1];
    const serverId = /^ID=(.+)$/m.exec(stdout)?.[1];
    const account = await api.call('GET', '/v1/account', { token });
    expect(account.body.email).toBe('ann@example.com');
    const ledger = await api.call('GET', '/v1/account/transactions?limit=100', { token });
    expect(ledger.body.data.map((entry: { amountCents: number }) => entry.amountCents)).toEqual(expect.arrayContaining([2500, 1000]));
    const server = await api.call('GET', `/v1/servers/${serverId}`, { token });
    expect(server.body.status).toBe('deleted');
    const pdfs = readdirSync(work).filter((name) => /^INV-\d{4}-\d{6}\.pdf$/.test(name));
    expect(pdfs).toHaveLength(1);
    expect(readFileSync(join(work, pdfs[0]!)).subarray(0, 5).toString()).toBe('%PDF-');
  }, 180_000);
});
