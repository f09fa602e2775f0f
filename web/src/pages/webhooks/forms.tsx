import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../../api.ts';
import { type EventChoice, EventFieldset, eventsOf } from '../../scopes.tsx';
import { Field } from '../../form.tsx';
import { Confirm, Dialog } from '../../dialog.tsx';
import { Button, ErrorNotice, useAction } from '../../ui.tsx';

type Endpoint = Schema<'WebhookEndpoint'>;

export function CreateEndpoint(props: { onCreated: (endpoint: Schema<'WebhookEndpointWithSecret'>) => void }) {
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

export type Edit = { endpoint: Endpoint; url: string; description: string; events: EventChoice };

export function EditEndpoint(props: { edit: Edit | null; onChange: (edit: Edit | null) => void; onSaved: () => void }) {
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
export function RotateOrDelete(props: {
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
