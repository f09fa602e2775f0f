import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ok, type Schema } from '../api.ts';
import { dateTime, relative } from '../format.ts';
import { PagedList, usePaged } from '../paged.tsx';
import { type EventChoice, EventFieldset, eventChoice, eventsOf } from '../scopes.tsx';
import { Badge, Button, Confirm, Dialog, ErrorNotice, Field, Notice, Page, SecretOnce, useAction, TableWrap } from '../ui.tsx';

type Endpoint = Schema<'WebhookEndpoint'>;
type Delivery = Schema<'WebhookDelivery'>;
type Secret = { label: string; value: string; note?: string };

/**
 * Webhook endpoints: add one (its signing secret shown once), enable or disable, edit its url, events
 * and description, rotate its secret, delete it; per endpoint its deliveries with their attempts and
 * a redeliver button; and the account's recent events. Routes: GET/POST /v1/webhook-endpoints,
 * PATCH/DELETE /v1/webhook-endpoints/:id, POST …/rotate-secret, GET …/deliveries,
 * POST …/deliveries/:deliveryId/redeliver, GET /v1/events.
 */
export default function Webhooks() {
  const endpoints = usePaged((cursor) => ok(api().GET('/v1/webhook-endpoints', { params: { query: { limit: 25, cursor } } })));
  const [secret, setSecret] = useState<Secret | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  const [editing, setEditing] = useState<Edit | null>(null);
  const [confirming, setConfirming] = useState<{ kind: 'rotate' | 'delete'; endpoint: Endpoint } | null>(null);
  const list = endpoints.items;
  const shown = list?.find((e) => e.id === selected);
  return (
    <Page title="Webhooks">
      <p class="muted">
        Endpoints receive the account's events as signed POST requests (Standard Webhooks headers), retried for up to 3 days until they
        answer 2xx.
      </p>
      {secret ? (
        <div class="created">
          <SecretOnce label={secret.label} value={secret.value} testid="endpoint-secret" />
          {secret.note ? <p>{secret.note}</p> : null}
          <Button onClick={() => setSecret(null)}>I have stored it</Button>
        </div>
      ) : null}
      {message ? <Notice kind="success">{message}</Notice> : null}
      <CreateEndpoint
        onCreated={(endpoint) => {
          // An idempotent replay answers without the secret: it was shown by the first answer.
          setSecret(endpoint.secret ? { label: `Signing secret of ${endpoint.url}`, value: endpoint.secret } : null);
          setMessage(endpoint.secret ? null : `Endpoint ${endpoint.url} added.`);
          void endpoints.reload();
        }}
      />
      <h2>Endpoints</h2>
      <PagedList list={endpoints} what="endpoints" empty={<p>No endpoints yet.</p>} moreLabel="Show more endpoints">
        {(list) => (
          <TableWrap label="Webhook endpoints table">
            <table>
              <thead>
                <tr>
                  <th scope="col">URL</th>
                  <th scope="col">Events</th>
                  <th scope="col">Status</th>
                  <th scope="col">Created</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {list.map((endpoint) => (
                  <EndpointRow
                    key={endpoint.id}
                    endpoint={endpoint}
                    selected={endpoint.id === selected}
                    onSelect={() => setSelected(endpoint.id === selected ? null : endpoint.id)}
                    onChanged={() => void endpoints.reload()}
                    onEdit={() =>
                      setEditing({
                        endpoint,
                        url: endpoint.url,
                        description: endpoint.description ?? '',
                        events: eventChoice(endpoint.events),
                      })
                    }
                    onRotate={() => setConfirming({ kind: 'rotate', endpoint })}
                    onDelete={() => setConfirming({ kind: 'delete', endpoint })}
                  />
                ))}
              </tbody>
            </table>
          </TableWrap>
        )}
      </PagedList>
      {shown ? <Deliveries key={shown.id} endpoint={shown} onClose={() => setSelected(null)} /> : null}
      <RecentEvents />
      <EditEndpoint
        edit={editing}
        onChange={setEditing}
        onSaved={() => {
          setEditing(null);
          void endpoints.reload();
        }}
      />
      <RotateOrDelete
        pending={confirming}
        onClose={() => setConfirming(null)}
        onRotated={(rotation, endpoint) => {
          setConfirming(null);
          setMessage(null);
          setSecret({
            label: `New signing secret of ${endpoint.url}`,
            value: rotation.secret,
            note: `The previous secret also signs until ${dateTime(rotation.previousSecretExpiresAt)}: switch your receiver before then.`,
          });
          void endpoints.reload();
        }}
        onDeleted={(stopped, endpoint) => {
          setConfirming(null);
          setMessage(
            `Endpoint deleted${stopped > 0 ? `; ${stopped} pending ${stopped === 1 ? 'delivery' : 'deliveries'} will not be sent` : ''}.`,
          );
          if (selected === endpoint.id) setSelected(null);
          void endpoints.reload();
        }}
      />
    </Page>
  );
}

function EndpointStatus(props: { endpoint: Endpoint }) {
  const e = props.endpoint;
  if (!e.enabled) {
    return (
      <>
        <Badge tone="bad">disabled</Badge>{' '}
        <span class="muted">{e.disabledReason === 'failing' ? 'by the service: deliveries failed for 3 days' : 'by you'}</span>
      </>
    );
  }
  return (
    <>
      <Badge tone="ok">enabled</Badge>
      {e.failingSince ? (
        <>
          {' '}
          <Badge tone="warn">failing</Badge>{' '}
          <span class="muted">
            since <time dateTime={e.failingSince}>{relative(e.failingSince)}</time>
          </span>
        </>
      ) : null}
    </>
  );
}

function EndpointRow(props: {
  endpoint: Endpoint;
  selected: boolean;
  onSelect: () => void;
  onChanged: () => void;
  onEdit: () => void;
  onRotate: () => void;
  onDelete: () => void;
}) {
  const e = props.endpoint;
  const toggle = useAction(async () => {
    await ok(api().PATCH('/v1/webhook-endpoints/{id}', { params: { path: { id: e.id } }, body: { enabled: !e.enabled } }));
    props.onChanged();
  });
  return (
    <tr data-testid="endpoint-row" data-endpoint-id={e.id}>
      <th scope="row" class="row-head wrap-anywhere">
        <code>{e.url}</code>
        {e.description ? <div class="muted">{e.description}</div> : null}
      </th>
      <td>
        {e.events.length === 0 ? (
          'All'
        ) : (
          <ul class="label-list">
            {e.events.map((t) => (
              <li key={t}>
                <code>{t}</code>
              </li>
            ))}
          </ul>
        )}
      </td>
      <td data-testid="endpoint-status">
        <EndpointStatus endpoint={e} />
      </td>
      <td>
        <time dateTime={e.createdAt} title={dateTime(e.createdAt)}>
          {relative(e.createdAt)}
        </time>
      </td>
      <td>
        <div class="actions nowrap">
          <Button aria-pressed={props.selected} onClick={props.onSelect} aria-label={`Deliveries to ${e.url}`}>
            Deliveries
          </Button>
          <Button busy={toggle.busy} onClick={() => void toggle.run()} aria-label={`${e.enabled ? 'Disable' : 'Enable'} ${e.url}`}>
            {e.enabled ? 'Disable' : 'Enable'}
          </Button>
          <Button onClick={props.onEdit} aria-label={`Edit ${e.url}`}>
            Edit
          </Button>
          <Button onClick={props.onRotate} aria-label={`Rotate secret of ${e.url}`}>
            Rotate secret
          </Button>
          <Button kind="danger" onClick={props.onDelete} aria-label={`Delete ${e.url}`}>
            Delete
          </Button>
        </div>
        <ErrorNotice error={toggle.error} onDismiss={toggle.clearError} />
      </td>
    </tr>
  );
}

function CreateEndpoint(props: { onCreated: (endpoint: Schema<'WebhookEndpointWithSecret'>) => void }) {
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [events, setEvents] = useState<EventChoice>({ all: true, chosen: [] });
  const create = useAction(async () => {
    const body = { url: url.trim(), events: eventsOf(events), ...(description.trim() ? { description: description.trim() } : {}) };
    const endpoint = await ok(api().POST('/v1/webhook-endpoints', { body }));
    props.onCreated(endpoint);
    setUrl('');
    setDescription('');
    setEvents({ all: true, chosen: [] });
  });
  return (
    <form
      id="create-endpoint"
      class="card"
      aria-labelledby="create-endpoint-title"
      onSubmit={(e) => {
        e.preventDefault();
        void create.run();
      }}
    >
      <h2 id="create-endpoint-title">Add an endpoint</h2>
      <Field id="endpoint-url" label="URL" hint="https://… (locally also http on 127.0.0.1).">
        {(control) => (
          <input
            {...control}
            name="url"
            type="url"
            required
            maxLength={2048}
            placeholder="https://example.com/hooks"
            value={url}
            onInput={(e) => setUrl(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field id="endpoint-description" label="Description (optional)">
        {(control) => (
          <input
            {...control}
            name="description"
            maxLength={200}
            value={description}
            onInput={(e) => setDescription(e.currentTarget.value)}
          />
        )}
      </Field>
      <EventFieldset idPrefix="endpoint-events" value={events} onChange={setEvents} />
      <ErrorNotice error={create.error} />
      <Button type="submit" kind="primary" busy={create.busy}>
        Add endpoint
      </Button>
    </form>
  );
}

type Edit = { endpoint: Endpoint; url: string; description: string; events: EventChoice };

function EditEndpoint(props: { edit: Edit | null; onChange: (edit: Edit | null) => void; onSaved: () => void }) {
  const edit = props.edit;
  const save = useAction(async () => {
    if (!edit) return;
    const before = edit.endpoint;
    const events = eventsOf(edit.events);
    const url = edit.url.trim();
    const description = edit.description.trim() || null;
    const sameEvents = events.length === before.events.length && events.every((t) => before.events.includes(t));
    const body: Schema<'UpdateWebhookEndpoint'> = {
      ...(url !== before.url ? { url } : {}),
      ...(sameEvents ? {} : { events }),
      ...(description !== before.description ? { description } : {}),
    };
    if (Object.keys(body).length > 0) {
      await ok(api().PATCH('/v1/webhook-endpoints/{id}', { params: { path: { id: before.id } }, body }));
    }
    props.onSaved();
  });
  const set = (change: Partial<Edit>) => edit && props.onChange({ ...edit, ...change });
  return (
    <Dialog
      open={edit !== null}
      id="edit-endpoint"
      title="Edit the endpoint"
      confirmLabel="Save endpoint"
      busy={save.busy}
      error={save.error}
      onConfirm={() => void save.run()}
      onCancel={() => {
        save.clearError();
        props.onChange(null);
      }}
    >
      <Field id="edit-endpoint-url" label="URL">
        {(control) => (
          <input
            {...control}
            type="url"
            required
            maxLength={2048}
            value={edit?.url ?? ''}
            onInput={(e) => set({ url: e.currentTarget.value })}
          />
        )}
      </Field>
      <Field id="edit-endpoint-description" label="Description (optional)">
        {(control) => (
          <input
            {...control}
            maxLength={200}
            value={edit?.description ?? ''}
            onInput={(e) => set({ description: e.currentTarget.value })}
          />
        )}
      </Field>
      {edit ? <EventFieldset idPrefix="edit-endpoint-events" value={edit.events} onChange={(events) => set({ events })} /> : null}
    </Dialog>
  );
}

/** Rotating the secret or deleting the endpoint, confirmed first (one <dialog> for both). */
function RotateOrDelete(props: {
  pending: { kind: 'rotate' | 'delete'; endpoint: Endpoint } | null;
  onClose: () => void;
  onRotated: (rotation: Schema<'WebhookSecretRotation'>, endpoint: Endpoint) => void;
  onDeleted: (stopped: number, endpoint: Endpoint) => void;
}) {
  const pending = props.pending;
  const run = useAction(async () => {
    if (!pending) return;
    const path = { id: pending.endpoint.id };
    if (pending.kind === 'rotate') {
      props.onRotated(await ok(api().POST('/v1/webhook-endpoints/{id}/rotate-secret', { params: { path } })), pending.endpoint);
    } else {
      const answer = await ok(api().DELETE('/v1/webhook-endpoints/{id}', { params: { path } }));
      props.onDeleted(answer.stoppedDeliveries, pending.endpoint);
    }
  });
  const rotate = pending?.kind !== 'delete';
  const url = <code class="wrap-anywhere">{pending?.endpoint.url}</code>;
  return (
    <Confirm
      open={pending !== null}
      title={rotate ? 'Rotate the signing secret?' : 'Delete the endpoint?'}
      confirmLabel={rotate ? 'Rotate secret' : 'Delete endpoint'}
      danger={!rotate}
      busy={run.busy}
      error={run.error}
      onConfirm={() => void run.run()}
      onCancel={() => {
        run.clearError();
        props.onClose();
      }}
    >
      {rotate ? (
        <p>
          A new secret signs deliveries to {url} from now on; for 24 hours the current one signs too, so your receiver can switch without
          losing a delivery. The new secret is shown once.
        </p>
      ) : (
        <p>{url} receives no more events, and its pending deliveries are not sent. This cannot be undone.</p>
      )}
    </Confirm>
  );
}

const DELIVERY_TONE = { pending: 'warn', succeeded: 'ok', failed: 'bad' } as const;

/** An endpoint's deliveries, newest first, each with its attempts and a redeliver button. */
function Deliveries(props: { endpoint: Endpoint; onClose: () => void }) {
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
  const _items = deliveries.items;
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
          <TableWrap label="Deliveries table">
            <table>
              <thead>
                <tr>
                  <th scope="col">Event</th>
                  <th scope="col">Status</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Last response</th>
                  <th scope="col">Next attempt</th>
                  <th scope="col">Created</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {items.map((d) => (
                  <DeliveryRow key={d.id} endpointId={id} delivery={d} disabled={!props.endpoint.enabled} onRedelivered={redelivered} />
                ))}
              </tbody>
            </table>
          </TableWrap>
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

function DeliveryRow(props: { endpointId: string; delivery: Delivery; disabled: boolean; onRedelivered: () => void }) {
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
    <tr data-testid="delivery-row" data-delivery-id={d.id}>
      <th scope="row" class="row-head">
        <code>{d.eventType}</code>
        <div class="muted small">
          event <code>{d.eventId}</code>
        </div>
      </th>
      <td>
        <Badge tone={DELIVERY_TONE[d.status]}>{d.status}</Badge>
      </td>
      <td>
        {d.attempts.length === 0 ? (
          'none yet'
        ) : (
          <details>
            <summary>
              {d.attempts.length} {d.attempts.length === 1 ? 'attempt' : 'attempts'}
            </summary>
            <ol class="attempts">
              {d.attempts.map((a) => (
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
        )}
      </td>
      <td data-testid="delivery-response">{lastResponse(d)}</td>
      <td>
        {d.nextAttemptAt ? (
          <time dateTime={d.nextAttemptAt} title={dateTime(d.nextAttemptAt)}>
            {relative(d.nextAttemptAt)}
          </time>
        ) : (
          '—'
        )}
      </td>
      <td>
        <time dateTime={d.createdAt} title={dateTime(d.createdAt)}>
          {relative(d.createdAt)}
        </time>
      </td>
      <td>
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
      </td>
    </tr>
  );
}

/** The account's latest events (every event is recorded, whether or not an endpoint takes it). */
function RecentEvents() {
  const events = usePaged((cursor) => ok(api().GET('/v1/events', { params: { query: { limit: 10, cursor } } })));
  const _items = events.items;
  return (
    <section aria-labelledby="events-title">
      <div class="page-head">
        <h2 id="events-title">Recent events</h2>
        <Button busy={events.loading} onClick={() => void events.reload()}>
          Refresh events
        </Button>
      </div>
      <PagedList list={events} what="events" empty={<p>No events in the last 30 days.</p>} moreLabel="Show more events">
        {(items) => (
          <TableWrap label="Recent events table">
            <table>
              <thead>
                <tr>
                  <th scope="col">Type</th>
                  <th scope="col">When</th>
                  <th scope="col">Event id</th>
                </tr>
              </thead>
              <tbody>
                {items.map((e) => (
                  <tr key={e.id} data-testid="event-row">
                    <th scope="row" class="row-head">
                      <code>{e.type}</code>
                    </th>
                    <td>
                      <time dateTime={e.createdAt} title={dateTime(e.createdAt)}>
                        {relative(e.createdAt)}
                      </time>
                    </td>
                    <td>
                      <code>{e.id}</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        )}
      </PagedList>
    </section>
  );
}
