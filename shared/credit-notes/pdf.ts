import type { CreditNoteItem } from '../db/items.ts';
import { addressLines, day, formatCents, PAGE_MARGIN, present, Writer } from '../invoices/pdf.ts';
import { loadPdfLib } from '../packages.ts';

/**
 * The credit note PDF: the invoice's layout (shared/invoices/pdf.ts, its Writer and helpers) with
 * the credit note's facts, rendered from the note alone (seller and buyer copied when it was
 * issued), so it reads the same whenever it is fetched.
 */
const TITLE: Record<CreditNoteItem['type'], string> = { credit_note: 'Credit note', reversal: 'Credit note reversal' };

const REASON: Record<CreditNoteItem['reason'], string> = {
  refund: 'Refund to the card',
  dispute_lost: 'Card dispute lost (chargeback)',
  admin_deduction: 'Paid credit deducted',
  dispute_won: 'Card dispute won: the money came back',
  refund_failed: 'Refund failed: the money came back',
};

export async function renderCreditNotePdf(note: CreditNoteItem): Promise<Uint8Array> {
  const { PageSizes, PDFDocument, rgb } = await loadPdfLib();
  const pdf = await PDFDocument.create();
  const page = pdf.addPage(PageSizes.A4);
  const colors = { ink: rgb(0.1, 0.1, 0.1), muted: rgb(0.4, 0.4, 0.4) };
  const w = new Writer(page, ...(await Writer.fonts(pdf)), colors);
  const left = PAGE_MARGIN;
  const right = page.getWidth() - PAGE_MARGIN;
  const column = (right - left) / 2 - 10;
  const middle = left + column + 20;
  const currency = note.currency.toUpperCase();
  const money = (cents: number) => `${currency} ${formatCents(cents)}`;
  const reversal = note.type === 'reversal';
  const { seller, buyer } = note;

  pdf.setTitle(`${TITLE[note.type]} ${note.number}`);
  if (seller.legalName) pdf.setAuthor(w.safe(seller.legalName));
  pdf.setCreationDate(new Date(note.issuedAt));

  w.brandLine(note.brand);
  page.drawText(TITLE[note.type], { x: left, y: w.y - 14, size: 22, font: w.bold, color: w.ink });
  w.right(note.number, right, w.y - 6, 12, w.bold);
  w.right(`For invoice ${note.invoiceNumber}`, right, w.y - 22, 10, w.bold);
  w.y -= 56;

  w.label('From', left);
  w.label('Credit to', middle);
  w.y -= 14;
  const sellerLines = present([seller.legalName, ...addressLines(seller.address), seller.taxId && `Tax ID: ${seller.taxId}`, seller.email]);
  const buyerLines = present([
    buyer.company,
    buyer.name,
    ...addressLines(buyer.address),
    buyer.vatId && `VAT ID: ${buyer.vatId}`,
    buyer.email,
  ]);
  const belowSeller = w.block(sellerLines, left, column, { boldFirst: true });
  const belowBuyer = w.block(buyerLines, middle, column, { boldFirst: true });
  w.y = Math.min(belowSeller, belowBuyer) - 18;

  const facts: [string, string][] = [
    ['Credit note number', note.number],
    ['Issue date', day(note.issuedAt)],
    ['Invoice corrected', note.invoiceNumber],
  ];
  if (note.reverses) facts.push(['Reverses', note.reverses.number]);
  facts.push(['Reason', REASON[note.reason]], ['Currency', currency]);
  for (const [name, value] of facts) {
    page.drawText(name, { x: left, y: w.y, size: 10, font: w.bold, color: w.ink });
    page.drawText(w.safe(value), { x: left + 120, y: w.y, size: 10, font: w.regular, color: w.ink });
    w.y -= 14;
  }
  w.y -= 16;

  // Lines: the money each returns (a reversal: charges again) and the credit it takes off the balance (gives back).
  const moneyHeading = reversal ? 'Charged again' : 'Returned';
  const creditHeading = reversal ? 'Credit given back' : 'Credit taken back';
  const moneyRight = right - 120;
  w.label('Description', left);
  w.label(moneyHeading, moneyRight - w.bold.widthOfTextAtSize(moneyHeading.toUpperCase(), 8));
  w.label(creditHeading, right - w.bold.widthOfTextAtSize(creditHeading.toUpperCase(), 8));
  w.y -= 6;
  page.drawLine({ start: { x: left, y: w.y }, end: { x: right, y: w.y }, thickness: 0.5, color: w.muted });
  w.y -= 14;
  for (const line of note.lineItems) {
    const below = w.block([line.description], left, moneyRight - left - 100);
    w.right(money(line.returnedCents), moneyRight, w.y);
    w.right(money(line.debitedCents), right, w.y);
    w.y = below - 4;
  }
  page.drawLine({ start: { x: left, y: w.y + 8 }, end: { x: right, y: w.y + 8 }, thickness: 0.5, color: w.muted });
  w.y -= 8;

  const totals: [string, number][] = [
    ['Net', note.netCents],
    ['Tax', note.taxCents],
    [reversal ? 'Total charged again' : 'Total returned', note.totalCents],
    [reversal ? 'Credit given back to the balance' : 'Credit taken off the balance', note.debitedCents],
  ];
  for (const [name, cents] of totals) {
    w.right(name, moneyRight, w.y, 10, w.bold);
    w.right(money(cents), right, w.y, 10, w.bold);
    w.y -= 15;
  }

  await w.footer(pdf, [seller.footer, note.brand?.legalFooter]);

  return pdf.save();
}
