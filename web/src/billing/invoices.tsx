import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../api.ts';
import { cents, dateTime } from '../format.ts';
import { Badge, Button, ErrorNotice, Section, TableWrap, type Tone, useAction } from '../ui.tsx';
import { PagedList, usePaged } from '../paged.tsx';

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
      <PagedList list={list} what="invoices" empty={<p class="muted">No invoices yet: each top-up makes one.</p>}>
        {(items) => (
          <TableWrap label="Invoice list">
            <table>
              <caption class="visually-hidden">Invoices, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Number</th>
                  <th scope="col">Date</th>
                  <th scope="col">Status</th>
                  <th scope="col" class="num">
                    Amount
                  </th>
                  <th scope="col" class="num">
                    Credited
                  </th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {items.map((invoice) => {
                  const expanded = open.has(invoice.id);
                  return [
                    <tr key={invoice.id} data-testid="invoice-row" data-invoice={invoice.number} data-status={invoice.status}>
                      <th scope="row" class="mono">
                        {invoice.number}
                      </th>
                      <td>{dateTime(invoice.createdAt)}</td>
                      <td>
                        <InvoiceStatus status={invoice.status} />
                      </td>
                      <td class="num">{cents(invoice.totalCents)}</td>
                      <td class="num">{cents(invoice.creditedCents)}</td>
                      <td>
                        <div class="row-actions">
                          <Button
                            aria-expanded={expanded ? 'true' : 'false'}
                            aria-controls={`lines-${invoice.id}`}
                            onClick={() => toggle(invoice.id)}
                          >
                            {expanded ? 'Hide lines' : 'Show lines'}
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
                      </td>
                    </tr>,
                    expanded ? (
                      <tr key={`${invoice.id}-lines`} id={`lines-${invoice.id}`} class="detail-row">
                        <td colSpan={6}>
                          <InvoiceLines invoice={invoice} />
                        </td>
                      </tr>
                    ) : null,
                  ];
                })}
              </tbody>
            </table>
          </TableWrap>
        )}
      </PagedList>
    </Section>
  );
}

function InvoiceLines(props: { invoice: Invoice }) {
  const { invoice } = props;
  return (
    <>
      <table class="lines" data-testid="invoice-lines">
        <caption class="visually-hidden">Lines of {invoice.number}</caption>
        <thead>
          <tr>
            <th scope="col">Line</th>
            <th scope="col" class="num">
              Amount
            </th>
            <th scope="col" class="num">
              Charged
            </th>
            <th scope="col" class="num">
              Credited
            </th>
          </tr>
        </thead>
        <tbody>
          {invoice.lineItems.map((line, i) => (
            <tr key={i}>
              <th scope="row">{line.description}</th>
              <td class="num">{cents(line.amountCents)}</td>
              <td class="num">{cents(line.chargedCents)}</td>
              <td class="num">{cents(line.creditedCents)}</td>
            </tr>
          ))}
        </tbody>
      </table>
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
      </dl>
    </>
  );
}
