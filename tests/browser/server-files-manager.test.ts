import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import {
  browserPath,
  CHROMIUM_ARGS,
  customerWithServer,
  describeViolations,
  NO_BROWSER_REASON,
  runAxe,
  settled,
  signedInPage,
  startDashboardStack,
  type Customer,
  type DashboardStack,
} from '../helpers/dashboard.ts';

/**
 * The server page's Files tab as a file manager (web/src/pages/server/files.tsx) in headless
 * Chromium against the local stack and its panel simulator: a file and a folder are created, two
 * files are uploaded by dropping them on the list (a real multipart POST to the simulated Wings),
 * moved together into the folder, the folder is archived, deleted with another item in one go and
 * unarchived back, a mode is changed, and server.properties is edited in the lazily loaded
 * CodeMirror editor and saved. Every step is checked on the simulated Wings' filesystem; axe finds
 * nothing serious on the list, the selection, the dialogs or the editor. Skipped, saying why, when
 * no Chromium is installed.
 */
if (!browserPath) console.warn(`tests/browser/server-files-manager.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

let stack: DashboardStack;
let browser: Browser;
let customer: Customer;
let identifier: string;

beforeAll(async () => {
  if (!browserPath) return;
  [stack, browser] = await Promise.all([startDashboardStack(), chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS })]);
  customer = await customerWithServer(stack, 'files.manager@example.com', { creditCents: 5000, serverName: 'Files server' });
  identifier = (await stack.must('GET', `/v1/servers/${customer.serverId}`, undefined, customer.token)).identifier as string;
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

const onWings = (path: string) => stack.panel!.sim.readFile(identifier, path);
const pathsOnWings = () => Object.keys(stack.panel!.sim.files(identifier));
const row = (page: Page, name: string) => page.getByRole('button', { name, exact: true });

async function expectNoBlocking(page: Page, where: string) {
  const axe = await runAxe(page);
  expect(describeViolations(axe.blocking), `axe on ${where}`).toBe('');
}

/** Opens the page's dialog named `title`, fills its one field and confirms with `confirm`. */
async function inDialog(page: Page, title: string, field: string | null, value: string, confirm: string, axeWhere?: string) {
  const dialog = page.getByRole('dialog', { name: title });
  await dialog.waitFor();
  if (field) await dialog.getByLabel(field).fill(value);
  if (axeWhere) await expectNoBlocking(page, axeWhere);
  await dialog.getByRole('button', { name: confirm, exact: true }).click();
  await dialog.waitFor({ state: 'hidden', timeout: 15_000 }).catch(async (err: Error) => {
    // Still open: say what it shows (its error) rather than only that it stayed.
    throw new Error(`the ${title} dialog stayed open: ${await dialog.textContent()}`, { cause: err });
  });
}

describe.skipIf(!browserPath)('the Files tab', () => {
  it('creates, uploads by drop, moves, archives, bulk deletes, unarchives, changes a mode and edits a config file', async () => {
    const { page, context, problems } = await signedInPage(browser, stack, customer.email, `/servers/${customer.serverId}?tab=files`);
    try {
      await page.getByRole('heading', { name: 'Files', level: 2 }).waitFor();
      await settled(page);
      await row(page, 'server.properties').waitFor();
      await expectNoBlocking(page, 'the list');

      // A folder, then a file (created empty and opened in the editor: a .txt is plain text).
      await page.getByRole('button', { name: 'New folder' }).click();
      await inDialog(page, 'New folder', 'Folder name', 'extras', 'Create', 'the new folder dialog');
      await row(page, 'extras').waitFor();
      expect(pathsOnWings()).toContain('extras/');
      await page.getByRole('button', { name: 'New file' }).click();
      await inDialog(page, 'New file', 'File name', 'notes.txt', 'Create');
      await page.getByRole('heading', { name: 'Editing /notes.txt' }).waitFor();
      expect(onWings('notes.txt')).toBe('');
      await page.getByRole('button', { name: 'Back to the folder' }).click();
      await row(page, 'notes.txt').waitFor();

      // Two files dropped on the list: one upload to the Wings address, both land in /.
      const dataTransfer = await page.evaluateHandle(() => {
        // In the page: the browser's DataTransfer (the project's types are Node's, without the DOM's).
        const { DataTransfer } = globalThis as unknown as { DataTransfer: new () => { items: { add(file: File): void } } };
        const dt = new DataTransfer();
        dt.items.add(new File(['alpha=1\n'], 'alpha.yml', { type: 'text/yaml' }));
        dt.items.add(new File(['beta=2\n'], 'beta.txt', { type: 'text/plain' }));
        return dt;
      });
      const drop = page.getByTestId('file-drop');
      await drop.dispatchEvent('dragenter', { dataTransfer });
      await drop.dispatchEvent('dragover', { dataTransfer });
      await page.getByText('Drop to upload into /').waitFor();
      await drop.dispatchEvent('drop', { dataTransfer });
      await page.getByText('Uploaded alpha.yml, beta.txt to /.').waitFor();
      expect(onWings('alpha.yml')).toBe('alpha=1\n');
      expect(onWings('beta.txt')).toBe('beta=2\n');

      // Both selected and moved into the folder together.
      await page.getByLabel('Select alpha.yml').check();
      await page.getByLabel('Select beta.txt').check();
      await page.getByText('2 items selected').waitFor();
      await expectNoBlocking(page, 'the list with a selection');
      await page.getByRole('button', { name: 'Move…' }).click();
      await inDialog(page, 'Move 2 items', 'Destination folder', '/extras', 'Move', 'the move dialog');
      await page.getByText('Moved 2 items to /extras.').waitFor();
      expect(onWings('extras/alpha.yml')).toBe('alpha=1\n');
      expect(onWings('extras/beta.txt')).toBe('beta=2\n');
      expect(onWings('alpha.yml')).toBeUndefined();

      // The folder archived: a tar.gz beside it.
      await page.getByLabel('Select extras').check();
      await page.getByRole('button', { name: 'Archive', exact: true }).click();
      await page.getByText(/^Archived 1 item into archive-.*\.tar\.gz/).waitFor();
      const archive = pathsOnWings().find((p) => /^archive-[^/]*\.tar\.gz$/.test(p));
      expect(archive).toBeDefined();

      // The folder and the file deleted in one go, after the confirmation.
      await page.getByLabel('Select extras').check();
      await page.getByLabel('Select notes.txt').check();
      await page.getByRole('button', { name: 'Delete…' }).click();
      await inDialog(page, 'Delete 2 items?', null, '', 'Delete', 'the bulk delete dialog');
      await page.getByText('Deleted 2 items.').waitFor();
      expect(pathsOnWings().filter((p) => p.startsWith('extras') || p === 'notes.txt')).toEqual([]);

      // Unarchived: the folder and its files are back.
      await page.getByRole('button', { name: `Unarchive ${archive}` }).click();
      await page.getByText(`Extracted ${archive} into /.`).waitFor();
      expect(onWings('extras/alpha.yml')).toBe('alpha=1\n');
      expect(onWings('extras/beta.txt')).toBe('beta=2\n');
      await row(page, 'extras').waitFor();

      // Permissions: the listing's mode before and after.
      const propertiesRow = page.getByTestId('file-row').filter({ has: row(page, 'server.properties') });
      expect(await propertiesRow.getByTestId('file-mode').textContent()).toBe('-rw-r--r--');
      await page.getByLabel('Select server.properties').check();
      await page.getByRole('button', { name: 'Permissions…' }).click();
      const chmod = page.getByRole('dialog', { name: 'Permissions of server.properties' });
      expect(await chmod.getByLabel('Mode (octal)').inputValue()).toBe('644');
      await inDialog(page, 'Permissions of server.properties', 'Mode (octal)', '600', 'Permissions', 'the permissions dialog');
      await expect.poll(() => propertiesRow.getByTestId('file-mode').textContent()).toBe('-rw-------');

      // server.properties in CodeMirror: highlighted, edited, saved.
      await row(page, 'server.properties').click();
      await page.getByRole('heading', { name: 'Editing /server.properties' }).waitFor();
      const editor = page.locator('#file-editor');
      await editor.waitFor();
      expect(await editor.evaluate((e) => e.getAttribute('contenteditable'))).toBe('true');
      await expect.poll(() => page.locator('.cm-line span').count()).toBeGreaterThan(0);
      await expectNoBlocking(page, 'the editor');
      await editor.click();
      await page.keyboard.press('Control+End');
      await page.keyboard.type('\nmotd=Edited in CodeMirror');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText(/^Saved .* to \/server\.properties/).waitFor();
      expect(onWings('server.properties')).toMatch(/\nmotd=Edited in CodeMirror$/);
      expect(problems.errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 180_000);
});
