import { describe, expect, it } from 'vitest';
import { creditNoteDraft, formatCreditNoteNumber } from '../../shared/credit-notes/index.ts';

/**
 * The credit note's amounts: the running totals of what was taken back (gross card money) split
 * into net and tax by splitGross, the note the difference, so partial notes add up to the invoice
 * exactly and never round twice.
 */
describe('credit note amounts', () => {
  const taxed = { amountCents: 1000, taxCents: 190 }; // gross 1,190

  it('splits partial refunds on the running totals: the notes add up to the net and the tax of the invoice', () => {
    const totals = [0, 400, 401, 1190];
    const drafts = totals
      .slice(1)
      .map((gross, i) => creditNoteDraft(taxed, { grossCents: totals[i]!, bonusCents: 0 }, { grossCents: gross, bonusCents: 0 })!);
    expect(drafts.map((d) => [d.netCents, d.taxCents])).toEqual([
      [336, 64], // floor(400 × 1000 / 1190) = 336
      [0, 1], // 401: net still 336 (336.97 rounds down), the cent is tax
      [664, 125],
    ]);
    expect(drafts.reduce((s, d) => s + d.netCents, 0)).toBe(1000);
    expect(drafts.reduce((s, d) => s + d.taxCents, 0)).toBe(190);
    expect(drafts.every((d) => d.type === 'credit_note')).toBe(true);
  });

  it('a reversal gives back the same split; nothing moved is no note', () => {
    expect(creditNoteDraft(taxed, { grossCents: 1190, bonusCents: 50 }, { grossCents: 0, bonusCents: 0 })).toEqual({
      type: 'reversal',
      netCents: 1000,
      taxCents: 190,
      bonusCents: 50,
    });
    expect(creditNoteDraft(taxed, { grossCents: 400, bonusCents: 16 }, { grossCents: 400, bonusCents: 16 })).toBeNull();
  });

  it('an invoice without tax returns the whole as net', () => {
    expect(creditNoteDraft({ amountCents: 2000 }, { grossCents: 0, bonusCents: 0 }, { grossCents: 2000, bonusCents: 100 })).toEqual({
      type: 'credit_note',
      netCents: 2000,
      taxCents: 0,
      bonusCents: 100,
    });
  });

  it('numbers CN-<year>-<six digits>', () => {
    expect(formatCreditNoteNumber(2026, 42)).toBe('CN-2026-000042');
  });
});
