import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../api.ts';
import { dateTime } from '../format.ts';
import { PagedList, usePaged } from '../paged.tsx';
import { eventChoice } from '../scopes.tsx';
import { Button, Notice, Page, SecretOnce } from '../ui.tsx';
import { Deliveries } from './webhooks/deliveries.tsx';
import { EndpointTable } from './webhooks/endpoints.tsx';
import { RecentEvents } from './webhooks/events.tsx';
import { CreateEndpoint, type Edit, EditEndpoint, RotateOrDelete } from './webhooks/forms.tsx';

type Endpoint = Schema<'WebhookEndpoint'>;
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
          <EndpointTable
            endpoints={list}
            selected={selected}
            onSelect={(endpoint) => setSelected(endpoint.id === selected ? null : endpoint.id)}
            onChanged={() => void endpoints.reload()}
            onEdit={(endpoint) =>
              setEditing({ endpoint, url: endpoint.url, description: endpoint.description ?? '', events: eventChoice(endpoint.events) })
            }
            onRotate={(endpoint) => setConfirming({ kind: 'rotate', endpoint })}
            onDelete={(endpoint) => setConfirming({ kind: 'delete', endpoint })}
          />
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
