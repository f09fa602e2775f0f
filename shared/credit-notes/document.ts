import { getCreditNoteItem } from './index.ts';
import { renderCreditNotePdf } from './pdf.ts';

/** GET /v1/credit-notes/:id/pdf: the caller's credit note (another account's is 404 like an unknown id), as issued. */
export async function creditNotePdf(accountId: string, creditNoteId: string): Promise<{ filename: string; bytes: Uint8Array }> {
  const note = await getCreditNoteItem(accountId, creditNoteId);
  return { filename: `${note.number}.pdf`, bytes: await renderCreditNotePdf(note) };
}
