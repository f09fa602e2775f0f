import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../api.ts';
import { cents, dateTime } from '../format.ts';
import { usePaged } from '../paged.tsx';
import { type Columns, DataTable, PagedTable } from '../table.tsx';
import { Badge, Button, ErrorNotice, Section, type Tone, useAction } from '../ui.tsx';
import { creditNoteAnchor } from './credit-notes.tsx';

type Invoice = Schema<'Invoice'>;

const STATUS: Record<Invoice['status'], { label: string; tone: Tone }> = {
  paid: { label: 'Paid', tone: 'ok' },
  open: { label: 'Open', tone: 'warn' },
  void: { label: 'Void', tone: 'neutral' },
  refunded: { label: 'Refunded', tone: 'neutral' },
  partially_refunded: { label: 'Partially refunded', tone: 'warn' },
  disputed: { label: 'Disputed', tone: 'bad' },
};

export const InvoiceStatus = (props: { status: Invoice['status'] }) => (
  <Badge tone={STATUS[props.status].tone}>{STATUS[props.status].label}</Badge>
);

/**
 * The PDF needs the session's Bearer token, so it is fetched through the typed client and handed to
 * the browser as an object URL behind a programmatic `<a download>` click: no token in any URL.
 */
async function downloadPdf(invoice: Invoice): Promise<void> {
  const blob = await ok(api().GET('/v1/invoices/{id}/pdf', { params: { path: { id: invoice.id } }, parseAs: 'blob' }));
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = `${invoice.number}.pdf`;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Invoices, newest first: number, date, status, amount, what was credited; lines on demand; the PDF. */
export function Invoices(props: { version: number }) {
  const list = usePaged((cursor) => ok(api().GET('/v1/invoices', { params: { query: { limit: 10, cursor } } })), [props.version]);
  const [open, setOpen] = useState<Set<string>>(new Set());
  const [pdfFor, setPdfFor] = useState<string>();
  const pdf = useAction(async (invoice: Invoice) => {
    setPdfFor(invoice.id);
    try {
      await downloadPdf(invoice);
    } finally {
      setPdfFor(undefined);
    }
  });
  const toggle = (id: string) =>
    setOpen((prev) => {
      const next = new Set(prev);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });
  return (
    <Section id="invoices" class="billing-section" title="Invoices">
      <ErrorNotice error={pdf.error} onDismiss={pdf.clearError} />
      <PagedTable
        list={list}
        what="invoices"
        empty={<p class="muted">No invoices yet: each top-up makes one.</p>}
        label="Invoice list"
        caption="Invoices, newest first"
        rowKey={(invoice) => invoice.id}
        rowProps={(invoice) => ({ 'data-testid': 'invoice-row', 'data-invoice': invoice.number, 'data-status': invoice.status })}
        detail={(invoice) => (open.has(invoice.id) ? { id: `lines-${invoice.id}`, content: <InvoiceLines invoice={invoice} /> } : null)}
        columns={[
          { header: 'Number', rowHeader: true, class: 'mono', cell: (invoice) => invoice.number },
          { header: 'Date', cell: (invoice) => dateTime(invoice.createdAt) },
          { header: 'Status', cell: (invoice) => <InvoiceStatus status={invoice.status} /> },
          { header: 'Amount', class: 'num', cell: (invoice) => cents(invoice.totalCents) },
          { header: 'Credited', class: 'num', cell: (invoice) => cents(invoice.creditedCents) },
          {
            header: 'Actions',
            hideHeader: true,
            cell: (invoice) => (
              <div class="row-actions">
                <Button
                  aria-expanded={open.has(invoice.id) ? 'true' : 'false'}
                  aria-controls={`lines-${invoice.id}`}
                  onClick={() => toggle(invoice.id)}
                >
                  {open.has(invoice.id) ? 'Hide lines' : 'Show lines'}
                </Button>
                <Button
                  busy={pdfFor === invoice.id}
                  disabled={pdf.busy}
                  aria-label={`Download ${invoice.number} as PDF`}
                  onClick={() => void pdf.run(invoice)}
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

const LINE_COLUMNS: Columns<Invoice['lineItems'][number]> = [
  { header: 'Line', rowHeader: true, cell: (line) => line.description },
  { header: 'Amount', class: 'num', cell: (line) => cents(line.amountCents) },
  { header: 'Charged', class: 'num', cell: (line) => cents(line.chargedCents) },
  { header: 'Credited', class: 'num', cell: (line) => cents(line.creditedCents) },
];

function InvoiceLines(props: { invoice: Invoice }) {
  const { invoice } = props;
  return (
    <>
      <DataTable
        class="lines"
        testid="invoice-lines"
        caption={`Lines of ${invoice.number}`}
        rows={invoice.lineItems}
        rowKey={(line) => invoice.lineItems.indexOf(line)}
        columns={LINE_COLUMNS}
      />
      <dl class="props">
        <dt>Paid</dt>
        <dd>{invoice.paidAt ? dateTime(invoice.paidAt) : 'Not paid'}</dd>
        {invoice.voidedAt ? (
          <>
            <dt>Voided</dt>
            <dd>{dateTime(invoice.voidedAt)}</dd>
          </>
        ) : null}
        {invoice.refundedCents > 0 ? (
          <>
            <dt>Refunded</dt>
            <dd>{cents(invoice.refundedCents)}</dd>
          </>
        ) : null}
        {invoice.disputedCents > 0 ? (
          <>
            <dt>Disputed</dt>
            <dd>{cents(invoice.disputedCents)}</dd>
          </>
        ) : null}
        {invoice.bonusReversedCents > 0 ? (
          <>
            <dt>Bonus taken back</dt>
            <dd>{cents(invoice.bonusReversedCents)}</dd>
          </>
        ) : null}
        {invoice.creditNotes.length > 0 ? (
          <>
            <dt>Credit notes</dt>
            <dd>
              {invoice.creditNotes.map((note, i) => (
                <>
                  {i > 0 ? ', ' : null}
                  <a key={note.id} href={`#${creditNoteAnchor(note.number)}`} class="mono">
                    {note.number}
                  </a>
                </>
              ))}
            </dd>
          </>
        ) : null}
      </dl>
    </>
  );
}
