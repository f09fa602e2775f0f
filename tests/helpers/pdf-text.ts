import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';

/** pdf.js reads the metrics of the 14 standard fonts from its own package (a PDF that uses them embeds none). */
const standardFontDataUrl = `${join(dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json')), 'standard_fonts')}/`;

/**
 * The text of a PDF as a reader sees it, by Mozilla's pdf.js (its Node build): one string per
 * line, the runs of a line joined by single spaces, top to bottom; and the page count.
 */
export async function pdfText(bytes: Uint8Array): Promise<{ pages: number; lines: string[]; text: string }> {
  const doc = await getDocument({ data: new Uint8Array(bytes), useSystemFonts: false, isEvalSupported: false, standardFontDataUrl })
    .promise;
  const lines: string[] = [];
  for (let n = 1; n <= doc.numPages; n++) {
    const content = await (await doc.getPage(n)).getTextContent();
    const rows = new Map<number, { x: number; str: string }[]>();
    for (const item of content.items) {
      if (!('str' in item) || item.str.trim() === '') continue;
      const y = Math.round(item.transform[5]);
      rows.set(y, [...(rows.get(y) ?? []), { x: item.transform[4], str: item.str }]);
    }
    for (const [, runs] of [...rows].sort(([a], [b]) => b - a)) {
      lines.push(
        runs
          .sort((a, b) => a.x - b.x)
          .map((r) => r.str.trim())
          .join(' '),
      );
    }
  }
  await doc.destroy();
  return { pages: doc.numPages, lines, text: lines.join('\n') };
}
