import { api, ok, type Schema } from '../api.ts';
import { cents, dateTime, signed } from '../format.ts';
import { PagedList, usePaged } from '../paged.tsx';
import { TableWrap, Section } from '../ui.tsx';

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

/** The ledger, newest first: every change of the balance with the balance after it. */
export function Ledger(props: { version: number }) {
  const list = usePaged(
    (cursor) => ok(api().GET('/v1/account/transactions', { params: { query: { limit: 25, cursor } } })),
    [props.version],
  );
  return (
    <Section id="ledger" class="billing-section" title="Ledger">
      <PagedList list={list} what="entries" empty={<p class="muted">No balance changes yet.</p>}>
        {(items) => (
          <TableWrap label="Ledger entries">
            <table>
              <caption class="visually-hidden">Balance changes, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Date</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Description</th>
                  <th scope="col" class="num">
                    Amount
                  </th>
                  <th scope="col" class="num">
                    Balance after
                  </th>
                </tr>
              </thead>
              <tbody>
                {items.map((entry) => (
                  <tr key={entry.seq} data-testid="ledger-row" data-kind={entry.type} data-granted={entry.granted ? 'true' : 'false'}>
                    <td class="nowrap">{dateTime(entry.at)}</td>
                    <td>{KIND[entry.type]}</td>
                    <td>{describe(entry)}</td>
                    <td class={`num ${entry.amountCents < 0 ? 'debit' : 'credit'}`} data-testid="ledger-amount">
                      {signed(entry.amountCents, cents)}
                    </td>
                    <td class="num">{cents(entry.balanceAfterCents)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        )}
      </PagedList>
    </Section>
  );
}
