import { api, ok, type Schema } from '../api.ts';
import { cents, dateTime, signed } from '../format.ts';
import { usePaged } from '../paged.tsx';
import { type Columns, PagedTable } from '../table.tsx';
import { Section } from '../ui.tsx';

type Entry = Schema<'LedgerEntry'>;

const KIND: Record<Entry['type'], string> = {
  trial: 'Trial credit',
  topup: 'Top-up',
  bonus: 'Bonus',
  grant: 'Grant',
  deduction: 'Deduction',
  charge: 'Charge',
  refund: 'Refund',
  dispute: 'Dispute',
};

/** What an entry is about, from its reference (the API's words where it has them). */
function describe(entry: Entry): string {
  const { invoiceNumber, note, hour, lines } = entry.reference;
  switch (entry.type) {
    case 'trial':
      return 'Welcome credit for a new account';
    case 'topup':
      return invoiceNumber ? `Card payment, invoice ${invoiceNumber}` : 'Card payment';
    case 'bonus':
      return invoiceNumber ? `Top-up bonus, invoice ${invoiceNumber}` : 'Top-up bonus';
    case 'grant':
    case 'deduction':
      return note ?? (entry.type === 'grant' ? 'Credit from the operator' : 'Taken by the operator');
    case 'charge': {
      const servers = lines.length === 1 ? '1 server' : `${lines.length} servers`;
      return hour ? `${servers}, hour from ${dateTime(hour)}` : servers;
    }
    case 'refund':
      return invoiceNumber ? `Refund of invoice ${invoiceNumber}` : 'Refund';
    case 'dispute':
      return invoiceNumber ? `Dispute of invoice ${invoiceNumber}` : 'Dispute';
  }
}

/** A credit that landed on a negative balance says how much of it paid the debt off. */
function describeWithDebt(entry: Entry): string {
  const settled = entry.reference.settlesDebtCents;
  return settled ? `${describe(entry)} — ${cents(settled)} of it paid off the debt` : describe(entry);
}

const COLUMNS: Columns<Entry> = [
  { header: 'Date', class: 'nowrap', cell: (entry) => dateTime(entry.at) },
  { header: 'Kind', cell: (entry) => KIND[entry.type] },
  { header: 'Description', cell: describeWithDebt },
  {
    header: 'Amount',
    class: 'num',
    cell: (entry) => signed(entry.amountCents, cents),
    cellProps: (entry) => ({ class: entry.amountCents < 0 ? 'debit' : 'credit', 'data-testid': 'ledger-amount' }),
  },
  { header: 'Balance after', class: 'num', cell: (entry) => cents(entry.balanceAfterCents) },
];

/** The ledger, newest first: every change of the balance with the balance after it. */
export function Ledger(props: { version: number }) {
  const list = usePaged(
    (cursor) => ok(api().GET('/v1/account/transactions', { params: { query: { limit: 25, cursor } } })),
    [props.version],
  );
  return (
    <Section id="ledger" class="billing-section" title="Ledger">
      <PagedTable
        list={list}
        what="entries"
        empty={<p class="muted">No balance changes yet.</p>}
        label="Ledger entries"
        caption="Balance changes, newest first"
        columns={COLUMNS}
        rowKey={(entry) => entry.seq}
        rowProps={(entry) => ({ 'data-testid': 'ledger-row', 'data-kind': entry.type, 'data-granted': entry.granted ? 'true' : 'false' })}
      />
    </Section>
  );
}
