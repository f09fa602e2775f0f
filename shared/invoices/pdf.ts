import type { Color, PDFDocument, PDFFont, PDFPage } from 'pdf-lib';
import type { BillingProfileView } from '../accounts/billing-profile.ts';
import type { SettingsValue } from '../api/schemas/settings.ts';
import type { InvoiceView } from './index.ts';
import { loadFontkit, loadPdfLib } from '../packages.ts';
import { loadInvoiceFonts } from './fonts.ts';
import { currencyWithSymbol } from '../currency.ts';
import { formatRate } from './tax.ts';
import type { PrintedBrand } from '../brand/printed.ts';

/**
 * The invoice PDF's layout (pdf-lib and fontkit, pure JavaScript: no browser; both loaded with the
 * first PDF, shared/packages.ts).
 *
 * The text is set in DejaVu Sans (./fonts.ts), embedded as the subset of glyphs the document
 * uses (≈ 15 KB a font): names and addresses in Latin (Ł, ő, ș), Greek and Cyrillic print as
 * written and extract exactly. A character the font lacks (CJK, emoji) prints as its base letter
 * when it has one or as `?`. The invoice's JSON and the stored profile keep the exact text.
 */
export interface InvoiceDocument {
  invoice: InvoiceView;
  seller: SettingsValue['invoiceIssuer'];
  buyer: Omit<BillingProfileView, 'updatedAt' | 'vatCheck'> & { email: string | null };
  /** Absent: a paid invoice copied before brands were kept prints none. */
  brand?: PrintedBrand;
}

type Address = InvoiceDocument['seller']['address'];

const STATUS_LABEL: Record<InvoiceView['status'], string> = {
  open: 'Open (not paid)',
  paid: 'Paid',
  void: 'Void (cancelled)',
  refunded: 'Refunded',
  partially_refunded: 'Partially refunded',
  disputed: 'Disputed',
};

/** Integer cents as `1,234.56`: string arithmetic on the integer, no floating point. */
export function formatCents(cents: number): string {
  const digits = String(Math.abs(cents)).padStart(3, '0');
  const whole = digits.slice(0, -2).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${cents < 0 ? '-' : ''}${whole}.${digits.slice(-2)}`;
}

/** The calendar day (UTC) of a stored timestamp. */
export const day = (iso: string): string => iso.slice(0, 10);

/**
 * What an invoice that is not a paid one says of itself, under its heading: an open one is not yet
 * a tax invoice, a void one keeps its number in the series but charged nothing.
 */
function standing(invoice: InvoiceView): string | null {
  if (invoice.status === 'open') return 'Not yet paid. This is not a tax invoice: it becomes one, dated the day of payment, once paid.';
  if (invoice.status === 'void') {
    const on = invoice.voidedAt ? ` on ${day(invoice.voidedAt)}` : '';
    return `Cancelled${on}: this invoice was never paid and nothing was charged. Its number stays in the series.`;
  }
  return null;
}

function countryName(code: string): string {
  try {
    return new Intl.DisplayNames(['en'], { type: 'region' }).of(code) ?? code;
  } catch {
    return code;
  }
}

/** The address as lines: street lines, postal code and city, region, country; empty fields left out. */
export function addressLines(a: Address): string[] {
  const cityLine = [a.postalCode, a.city].filter(Boolean).join(' ');
  return [a.line1, a.line2, cityLine, a.region, a.country ? countryName(a.country) : null].filter((l): l is string => Boolean(l));
}

export const present = (lines: (string | null | undefined | false)[]): string[] => lines.filter((l): l is string => Boolean(l));

export const PAGE_MARGIN = 50;

type Fontkit = Parameters<PDFDocument['registerFontkit']>[0];
const parsed = new WeakMap<Uint8Array, ReturnType<Fontkit['create']>>();
/**
 * fontkit that parses each font file once per process: pdf-lib asks it for every document, and a
 * parsed font keeps its glyphs and its layout tables read, which each document's text layout needs.
 * A document's subset is its own (pdf-lib makes one per embedding).
 */
const parsedOnce = (fontkit: Fontkit): Fontkit => ({
  create(bytes) {
    const font = parsed.get(bytes) ?? fontkit.create(bytes);
    parsed.set(bytes, font);
    return font;
  },
});

/** The characters both fonts draw, so either weight can set any safe text (the fonts are always the same two files). */
let drawable: Set<number> | undefined;
const bothDraw = (a: PDFFont, b: PDFFont): Set<number> => {
  const inB = new Set(b.getCharacterSet());
  return new Set(a.getCharacterSet().filter((c) => inB.has(c)));
};

/** The page writer both documents use (shared/credit-notes/pdf.ts too). */
export class Writer {
  y: number;
  readonly page: PDFPage;
  readonly regular: PDFFont;
  readonly bold: PDFFont;
  readonly ink: Color;
  readonly muted: Color;
  private readonly charset: Set<number>;

  constructor(page: PDFPage, regular: PDFFont, bold: PDFFont, colors: { ink: Color; muted: Color }) {
    this.page = page;
    this.ink = colors.ink;
    this.muted = colors.muted;
    this.regular = regular;
    this.bold = bold;
    this.y = page.getHeight() - PAGE_MARGIN;
    this.charset = drawable ??= bothDraw(regular, bold);
  }

  /** The document's two fonts, embedded as subsets (see the module comment). */
  static async fonts(pdf: PDFDocument): Promise<[regular: PDFFont, bold: PDFFont]> {
    const [fontkit, files] = await Promise.all([loadFontkit(), loadInvoiceFonts()]);
    pdf.registerFontkit(parsedOnce(fontkit.default));
    return Promise.all([pdf.embedFont(files.regular, { subset: true }), pdf.embedFont(files.bold, { subset: true })]);
  }

  /** Text the fonts can draw (see the module comment); composed first, so `e` + U+0308 is the font's ë. */
  safe(text: string): string {
    let out = '';
    for (const ch of text.normalize('NFC')) {
      if (this.charset.has(ch.codePointAt(0)!)) out += ch;
      else {
        const base = ch.normalize('NFKD').replace(/\p{M}/gu, '');
        out += base && [...base].every((c) => this.charset.has(c.codePointAt(0)!)) ? base : '?';
      }
    }
    return out;
  }

  /** Lines of at most `width` points, broken at spaces (a word longer than the line is broken anywhere). */
  wrap(text: string, size: number, width: number, font = this.regular): string[] {
    const fits = (s: string) => font.widthOfTextAtSize(s, size) <= width;
    const lines: string[] = [];
    let current = '';
    for (const word of this.safe(text).split(/\s+/).filter(Boolean)) {
      const candidate = current ? `${current} ${word}` : word;
      if (fits(candidate)) {
        current = candidate;
        continue;
      }
      if (current) lines.push(current);
      current = '';
      // Cut at the most characters that fit (whole code points), found by halving: each width is a
      // text layout by fontkit, too slow to try every length of a long word.
      let rest = [...word];
      while (!fits(rest.join(''))) {
        let [lo, hi] = [1, rest.length - 1];
        while (lo < hi) {
          const mid = Math.ceil((lo + hi) / 2);
          if (fits(rest.slice(0, mid).join(''))) lo = mid;
          else hi = mid - 1;
        }
        lines.push(rest.slice(0, lo).join(''));
        rest = rest.slice(lo);
      }
      current = rest.join('');
    }
    if (current) lines.push(current);
    return lines;
  }

  /** Draws wrapped text at x from this.y down; returns the y below it (this.y is unchanged). */
  block(lines: string[], x: number, width: number, opts: { size?: number; boldFirst?: boolean; y?: number } = {}): number {
    const size = opts.size ?? 10;
    let y = opts.y ?? this.y;
    lines.forEach((text, i) => {
      const font = opts.boldFirst && i === 0 ? this.bold : this.regular;
      for (const l of this.wrap(text, size, width, font)) {
        this.page.drawText(l, { x, y, size, font, color: this.ink });
        y -= size * 1.35;
      }
    });
    return y;
  }

  label(text: string, x: number, y = this.y): void {
    this.page.drawText(this.safe(text).toUpperCase(), { x, y, size: 8, font: this.bold, color: this.muted });
  }

  /** The operator's name above the heading, when the brand sets one. */
  brandLine(brand: PrintedBrand | undefined): void {
    if (!brand?.name) return;
    for (const l of this.wrap(brand.name, 14, this.page.getWidth() - 2 * PAGE_MARGIN, this.bold).slice(0, 2)) {
      this.page.drawText(l, { x: PAGE_MARGIN, y: this.y - 10, size: 14, font: this.bold, color: this.ink });
      this.y -= 20;
    }
    this.y -= 6;
  }

  /**
   * Paragraphs at the foot of the page (the seller's footer, the brand's legal footer); on a page of
   * their own when the fields above (each within its bounds, all at their longest) leave no room.
   */
  async footer(pdf: PDFDocument, paragraphs: (string | null | undefined)[]): Promise<void> {
    const width = this.page.getWidth() - 2 * PAGE_MARGIN;
    const lines = present(paragraphs).flatMap((p) => this.wrap(p, 8, width));
    if (lines.length === 0) return;
    const top = PAGE_MARGIN + (lines.length - 1) * 11;
    const { PageSizes } = await loadPdfLib();
    const target = top + 8 < this.y - 12 ? this.page : pdf.addPage(PageSizes.A4);
    let y = top;
    for (const l of lines) {
      target.drawText(l, { x: PAGE_MARGIN, y, size: 8, font: this.regular, color: this.muted });
      y -= 11;
    }
  }

  /** Right-aligned at `right`. */
  right(text: string, right: number, y: number, size = 10, font = this.regular): void {
    const t = this.safe(text);
    this.page.drawText(t, { x: right - font.widthOfTextAtSize(t, size), y, size, font, color: this.ink });
  }
}

export async function renderInvoicePdf({ invoice, seller, buyer, brand }: InvoiceDocument): Promise<Uint8Array> {
  const { PageSizes, PDFDocument, rgb } = await loadPdfLib();
  const pdf = await PDFDocument.create();
  const page = pdf.addPage(PageSizes.A4);
  const colors = { ink: rgb(0.1, 0.1, 0.1), muted: rgb(0.4, 0.4, 0.4) };
  const w = new Writer(page, ...(await Writer.fonts(pdf)), colors);
  const left = PAGE_MARGIN;
  const right = page.getWidth() - PAGE_MARGIN;
  const column = (right - left) / 2 - 10;
  const middle = left + column + 20;
  const currency = invoice.currency.toUpperCase();
  const money = (cents: number) => `${currency} ${formatCents(cents)}`;

  pdf.setTitle(`Invoice ${invoice.number}`);
  if (seller.legalName) pdf.setAuthor(w.safe(seller.legalName));
  // Both dates fixed, so the same invoice renders the same document whenever it is asked for.
  const documentDate = new Date(invoice.issuedAt ?? invoice.createdAt);
  pdf.setCreationDate(documentDate);
  pdf.setModificationDate(documentDate);
  const isVoid = invoice.status === 'void';

  // Heading: the operator's name, then the word, the number, the status.
  w.brandLine(brand);
  page.drawText('Invoice', { x: left, y: w.y - 14, size: 22, font: w.bold, color: w.ink });
  w.right(invoice.number, right, w.y - 6, 12, w.bold);
  w.right(STATUS_LABEL[invoice.status], right, w.y - 22, 10, w.bold);
  w.y -= 56;
  const notice = standing(invoice);
  if (notice) w.y = w.block([notice], left, right - left, { boldFirst: true }) - 12;

  // Seller and buyer side by side; the buyer falls back to the account's e-mail address.
  w.label('From', left);
  w.label('Bill to', middle);
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

  // Facts of the invoice.
  const facts: [string, string][] = [
    ['Invoice number', invoice.number],
    ['Status', STATUS_LABEL[invoice.status]],
  ];
  // A paid invoice is dated by its payment (the tax point); its number was taken when the checkout opened.
  if (invoice.issuedAt) facts.push(['Invoice date', day(invoice.issuedAt)]);
  facts.push(['Checkout opened', day(invoice.createdAt)]);
  if (invoice.paidAt) facts.push(['Paid date', day(invoice.paidAt)]);
  if (invoice.voidedAt) facts.push(['Voided date', day(invoice.voidedAt)]);
  facts.push(['Currency', currencyWithSymbol(invoice.currency)]);
  for (const [name, value] of facts) {
    page.drawText(name, { x: left, y: w.y, size: 10, font: w.bold, color: w.ink });
    page.drawText(w.safe(value), { x: left + 110, y: w.y, size: 10, font: w.regular, color: w.ink });
    w.y -= 14;
  }
  w.y -= 16;

  // Lines: what each charged to the card and credited to the balance.
  const chargedRight = right - 110;
  w.label('Description', left);
  w.label('Charged', chargedRight - w.bold.widthOfTextAtSize('CHARGED', 8));
  w.label('Credited', right - w.bold.widthOfTextAtSize('CREDITED', 8));
  w.y -= 6;
  page.drawLine({ start: { x: left, y: w.y }, end: { x: right, y: w.y }, thickness: 0.5, color: w.muted });
  w.y -= 14;
  for (const line of invoice.lineItems) {
    const below = w.block([line.description], left, chargedRight - left - 100);
    w.right(money(isVoid ? 0 : line.chargedCents), chargedRight, w.y);
    w.right(money(line.creditedCents), right, w.y);
    w.y = below - 4;
  }
  page.drawLine({ start: { x: left, y: w.y + 8 }, end: { x: right, y: w.y + 8 }, thickness: 0.5, color: w.muted });
  w.y -= 8;

  // Totals (net, tax at its rate and gross when a tax treatment applies), then what refunds and disputes took back.
  // A void invoice charged nothing (its lines say what the checkout was for); an open one is still due.
  const { tax } = invoice;
  const taxed = tax.treatment !== 'none' || tax.taxCents > 0;
  const charged = invoice.status === 'open' ? 'Total due' : 'Total charged';
  const gross: [string, number][] = taxed
    ? [
        ['Net amount', tax.netCents],
        [`${tax.label} ${formatRate(tax.rateBasisPoints)}${tax.reverseCharge ? ' (reverse charge)' : ''}`, tax.taxCents],
        [`${charged} (gross)`, invoice.totalCents],
      ]
    : [[charged, invoice.totalCents]];
  const totals: [string, number][] = isVoid
    ? [['Total charged', 0]]
    : [...gross, ['Total credited to the balance', invoice.creditedCents], ['Amount paid', invoice.paidCents]];
  if (invoice.refundedCents > 0) totals.push(['Refunded', invoice.refundedCents]);
  if (invoice.disputedCents > 0) totals.push(['Disputed', invoice.disputedCents]);
  if (invoice.refundedCents > 0 || invoice.disputedCents > 0)
    totals.push(['Net paid', invoice.paidCents - invoice.refundedCents - invoice.disputedCents]);
  for (const [name, cents] of totals) {
    w.right(name, chargedRight, w.y, 10, w.bold);
    w.right(money(cents), right, w.y, 10, w.bold);
    w.y -= 15;
  }
  // Why no tax was charged: the reverse-charge statement, or the operator's reason.
  if (tax.reason) {
    w.y -= 6;
    w.y = w.block([tax.reason], left, right - left, { size: 9 });
  }

  // The seller's footer (terms, registration) and the brand's legal footer, at the foot of the page.
  await w.footer(pdf, [seller.footer, brand?.legalFooter]);

  return pdf.save();
}
