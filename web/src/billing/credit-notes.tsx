import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../api.ts';
import { cents, dateTime } from '../format.ts';
import { usePaged } from '../paged.tsx';
import { PagedTable } from '../table.tsx';
import { Badge, Button, ErrorNotice, Section, useAction } from '../ui.tsx';

type CreditNote = Schema<'CreditNote'>;

const REASON: Record<CreditNote['reason'], string> = {
  refund: 'Refund',
  dispute_lost: 'Dispute lost',
  admin_deduction: 'Credit deducted',
  dispute_won: 'Dispute won',
  refund_failed: 'Refund failed',
};

/** The row's element id: the invoice's lines link to it. */
export const creditNoteAnchor = (number: string): string => `credit-note-${number}`;

/** As the invoice's PDF: fetched with the session's token, handed over as an object URL (no token in a URL). */
async function downloadPdf(note: CreditNote): Promise<void> {
  const blob = await ok(api().GET('/v1/credit-notes/{id}/pdf', { params: { path: { id: note.id } }, parseAs: 'blob' }));
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = `${note.number}.pdf`;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Credit notes, newest first: what refunds, lost disputes and deductions took back of an invoice, and their reversals. */
export function CreditNotes(props: { version: number }) {
  const list = usePaged((cursor) => ok(api().GET('/v1/credit-notes', { params: { query: { limit: 10, cursor } } })), [props.version]);
  const [pdfFor, setPdfFor] = useState<string>();
  const pdf = useAction(async (note: CreditNote) => {
    setPdfFor(note.id);
    try {
      await downloadPdf(note);
    } finally {
      setPdfFor(undefined);
    }
  });
  return (
    <Section id="credit-notes" class="billing-section" title="Credit notes">
      <ErrorNotice error={pdf.error} onDismiss={pdf.clearError} />
      <PagedTable
        list={list}
        what="credit notes"
        empty={<p class="muted">No credit notes: a refund or a lost dispute of a top-up makes one.</p>}
        label="Credit note list"
        caption="Credit notes, newest first"
        rowKey={(note) => note.id}
        rowProps={(note) => ({ id: creditNoteAnchor(note.number), 'data-testid': 'credit-note-row', 'data-credit-note': note.number })}
        columns={[
          { header: 'Number', rowHeader: true, class: 'mono', cell: (note) => note.number },
          { header: 'Date', cell: (note) => dateTime(note.issuedAt) },
          { header: 'Invoice', class: 'mono', cell: (note) => note.invoice.number },
          {
            header: 'Reason',
            cell: (note) => <Badge tone={note.type === 'reversal' ? 'ok' : 'neutral'}>{REASON[note.reason]}</Badge>,
          },
          { header: 'Net', class: 'num', cell: (note) => cents(note.netCents) },
          { header: 'Tax', class: 'num', cell: (note) => cents(note.taxCents) },
          { header: 'Total', class: 'num', cell: (note) => cents(note.totalCents) },
          { header: 'Credit', class: 'num', cell: (note) => cents(note.type === 'reversal' ? note.debitedCents : -note.debitedCents) },
          {
            header: 'Actions',
            hideHeader: true,
            cell: (note) => (
              <div class="row-actions">
                <Button
                  busy={pdfFor === note.id}
                  disabled={pdf.busy}
                  aria-label={`Download ${note.number} as PDF`}
                  onClick={() => void pdf.run(note)}
                >
                  PDF
                </Button>
              </div>
            ),
          },
        ]}
      />
    </Section>
  );
}
