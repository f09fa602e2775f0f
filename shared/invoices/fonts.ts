import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { getConfig } from '../config/env.ts';

/**
 * The invoice PDF's fonts: DejaVu Sans and DejaVu Sans Bold (the dejavu-fonts-ttf package), which
 * cover Latin-1, Latin Extended-A and -B, Greek and Cyrillic; the PDF embeds the subset it uses.
 * In Lambda they are read from `fonts/` in the function's asset folder, where infra/bundle.ts
 * copies them for every bundle that renders PDFs (a deployed function has no node_modules);
 * elsewhere from the package. Read with the first PDF, never at start.
 */

/** The fonts' folder in the asset folder. */
export const FONTS_DIR = 'fonts';
/** The font files, the same names in the package's `ttf/` and in the asset folder's `fonts/`. */
export const INVOICE_FONT_FILES = { regular: 'DejaVuSans.ttf', bold: 'DejaVuSans-Bold.ttf' } as const;
/** The fonts' licence (Bitstream Vera's terms: it travels with copies of the font files). */
export const FONT_LICENSE_FILE = 'LICENSE';

/** The package's folder (its `ttf/` holds the fonts, its root the licence). */
export const fontPackageDir = (): string => dirname(createRequire(import.meta.url).resolve('dejavu-fonts-ttf/package.json'));

function fontDir(): string {
  const folder = getConfig().bundleFolder;
  return folder ? join(folder, FONTS_DIR) : join(fontPackageDir(), 'ttf');
}

export type InvoiceFonts = Record<keyof typeof INVOICE_FONT_FILES, Uint8Array>;

let loaded: Promise<InvoiceFonts> | undefined;

/** The font files' bytes, read once (≈ 1.4 MB together); a failed read is not kept. */
export function loadInvoiceFonts(): Promise<InvoiceFonts> {
  loaded ??= (async () => {
    const dir = fontDir();
    const [regular, bold] = await Promise.all([
      readFile(join(dir, INVOICE_FONT_FILES.regular)),
      readFile(join(dir, INVOICE_FONT_FILES.bold)),
    ]);
    return { regular, bold };
  })();
  return loaded.catch((err: unknown) => {
    loaded = undefined;
    throw err;
  });
}
