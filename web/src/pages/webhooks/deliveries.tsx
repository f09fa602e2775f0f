import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ok, type Schema } from '../../api.ts';
import { dateTime } from '../../format.ts';
import { PagedList, usePaged } from '../../paged.tsx';
import { Ago, type Column, DataTable } from '../../table.tsx';
import { Badge, Button, ErrorNotice, useAction } from '../../ui.tsx';

type Endpoint = Schema<'WebhookEndpoint'>;
type Delivery = Schema<'WebhookDelivery'>;

const DELIVERY_TONE = { pending: 'warn', succeeded: 'ok', failed: 'bad' } as const;

const COLUMNS: Column<Delivery>[] = [
  {
    header: 'Event',
    rowHeader: true,
    class: 'row-head',
    cell: (d) => (
      <>
        <code>{d.eventType}</code>
        <div class="muted small">
          event <code>{d.eventId}</code>
        </div>
      </>
    ),
  },
  { header: 'Status', cell: (d) => <Badge tone={DELIVERY_TONE[d.status]}>{d.status}</Badge> },
  { header: 'Attempts', cell: (d) => (d.attempts.length === 0 ? 'none yet' : <Attempts attempts={d.attempts} />) },
  { header: 'Last response', cell: lastResponse, cellProps: () => ({ 'data-testid': 'delivery-response' }) },
  { header: 'Next attempt', cell: (d) => (d.nextAttemptAt ? <Ago at={d.nextAttemptAt} /> : '—') },
  { header: 'Created', cell: (d) => <Ago at={d.createdAt} /> },
];

/** An endpoint's deliveries, newest first, each with its attempts and a redeliver button. */
export function Deliveries(props: { endpoint: Endpoint; onClose: () => void }) {
  const id = props.endpoint.id;
  const deliveries = usePaged(
    (cursor) => ok(api().GET('/v1/webhook-endpoints/{id}/deliveries', { params: { path: { id }, query: { limit: 25, cursor } } })),
    [id],
  );
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  // After a redelivery, read the list again shortly: the attempt runs in the background.
  const later = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(later.current), []);
  const redelivered = () => {
    void deliveries.reload();
    clearTimeout(later.current);
    later.current = setTimeout(() => void deliveries.reload(), 2000);
  };
  return (
    <section aria-labelledby="deliveries-title" data-testid="deliveries">
      <div class="page-head">
        <h2 id="deliveries-title" tabIndex={-1} ref={heading} class="wrap-anywhere">
          Deliveries to {props.endpoint.url}
        </h2>
        <div class="actions">
          <Button busy={deliveries.loading} onClick={() => void deliveries.reload()}>
            Refresh deliveries
          </Button>
          <Button onClick={props.onClose}>Close deliveries</Button>
        </div>
      </div>
      {props.endpoint.enabled ? null : <p class="muted">The endpoint is disabled: enable it to redeliver.</p>}
      <PagedList list={deliveries} what="deliveries" empty={<p>No deliveries in the last 30 days.</p>} moreLabel="Show more deliveries">
        {(items) => (
          <DataTable
            label="Deliveries table"
            caption={`Deliveries to ${props.endpoint.url}, newest first`}
            rows={items}
            rowKey={(d) => d.id}
            rowProps={(d) => ({ 'data-testid': 'delivery-row', 'data-delivery-id': d.id })}
            columns={[
              ...COLUMNS,
              {
                header: 'Actions',
                cell: (d) => <Redeliver endpointId={id} delivery={d} disabled={!props.endpoint.enabled} onRedelivered={redelivered} />,
              },
            ]}
          />
        )}
      </PagedList>
    </section>
  );
}

function lastResponse(d: Delivery): string {
  const last = d.attempts.at(-1);
  if (!last) return '—';
  if (last.status !== null) return `HTTP ${last.status}${last.error && last.error !== `http_${last.status}` ? ` (${last.error})` : ''}`;
  return last.error ?? '—';
}

function Redeliver(props: { endpointId: string; delivery: Delivery; disabled: boolean; onRedelivered: () => void }) {
  const d = props.delivery;
  const [sent, setSent] = useState(false);
  const redeliver = useAction(async () => {
    setSent(false);
    await ok(
      api().POST('/v1/webhook-endpoints/{id}/deliveries/{deliveryId}/redeliver', {
        params: { path: { id: props.endpointId, deliveryId: d.id } },
      }),
    );
    setSent(true);
    props.onRedelivered();
  });
  return (
    <>
      <Button
        busy={redeliver.busy}
        disabled={props.disabled}
        onClick={() => void redeliver.run()}
        aria-label={`Redeliver ${d.eventType} ${d.eventId}`}
      >
        Redeliver
      </Button>
      {redeliver.busy ? (
        <span class="muted small" role="status">
          Sending…
        </span>
      ) : sent ? (
        <span class="muted small" role="status">
          Sent again
        </span>
      ) : null}
      <ErrorNotice error={redeliver.error} onDismiss={redeliver.clearError} />
    </>
  );
}

/** Each attempt: when, the answer, how long it took and the start of the response body. */
function Attempts(props: { attempts: Delivery['attempts'] }) {
  return (
    <details>
      <summary>
        {props.attempts.length} {props.attempts.length === 1 ? 'attempt' : 'attempts'}
      </summary>
      <ol class="attempts">
        {props.attempts.map((a) => (
          <li key={a.at}>
            <time dateTime={a.at}>{dateTime(a.at)}</time>: {a.status !== null ? `HTTP ${a.status}` : (a.error ?? 'no answer')} in{' '}
            {a.durationMs} ms
            {a.error && a.status !== null && a.error !== `http_${a.status}` ? ` (${a.error})` : ''}
            {a.responseExcerpt ? (
              <>
                {' '}
                — <code>{a.responseExcerpt}</code>
              </>
            ) : null}
          </li>
        ))}
      </ol>
    </details>
  );
}
