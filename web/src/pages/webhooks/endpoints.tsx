import { api, ok, type Schema } from '../../api.ts';
import { relative } from '../../format.ts';
import { Ago, DataTable } from '../../table.tsx';
import { Badge, Button, ErrorNotice, useAction } from '../../ui.tsx';

type Endpoint = Schema<'WebhookEndpoint'>;

interface Handlers {
  selected: string | null;
  onSelect: (endpoint: Endpoint) => void;
  onChanged: () => void;
  onEdit: (endpoint: Endpoint) => void;
  onRotate: (endpoint: Endpoint) => void;
  onDelete: (endpoint: Endpoint) => void;
}

/** The account's endpoints: where each sends, which events, whether it is enabled or failing, its actions. */
export function EndpointTable(props: Handlers & { endpoints: Endpoint[] }) {
  return (
    <DataTable
      label="Webhook endpoints table"
      caption="Webhook endpoints"
      rows={props.endpoints}
      rowKey={(e) => e.id}
      rowProps={(e) => ({ 'data-testid': 'endpoint-row', 'data-endpoint-id': e.id })}
      columns={[
        {
          header: 'URL',
          rowHeader: true,
          class: 'row-head wrap-anywhere',
          cell: (e) => (
            <>
              <code>{e.url}</code>
              {e.description ? <div class="muted">{e.description}</div> : null}
            </>
          ),
        },
        { header: 'Events', cell: (e) => <CodeList items={e.events} /> },
        { header: 'Status', cell: (e) => <EndpointStatus endpoint={e} />, cellProps: () => ({ 'data-testid': 'endpoint-status' }) },
        { header: 'Created', cell: (e) => <Ago at={e.createdAt} /> },
        { header: 'Actions', cell: (e) => <EndpointActions endpoint={e} {...props} /> },
      ]}
    />
  );
}

/** Codes as a list, or "All" for none (an endpoint that takes every event). */
function CodeList(props: { items: string[] }) {
  if (props.items.length === 0) return <>All</>;
  return (
    <ul class="label-list">
      {props.items.map((t) => (
        <li key={t}>
          <code>{t}</code>
        </li>
      ))}
    </ul>
  );
}

export function EndpointStatus(props: { endpoint: Endpoint }) {
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

function EndpointActions(props: Handlers & { endpoint: Endpoint }) {
  const e = props.endpoint;
  const toggle = useAction(async () => {
    await ok(api().PATCH('/v1/webhook-endpoints/{id}', { params: { path: { id: e.id } }, body: { enabled: !e.enabled } }));
    props.onChanged();
  });
  return (
    <>
      <div class="actions nowrap">
        <Button aria-pressed={props.selected === e.id} onClick={() => props.onSelect(e)} aria-label={`Deliveries to ${e.url}`}>
          Deliveries
        </Button>
        <Button busy={toggle.busy} onClick={() => void toggle.run()} aria-label={`${e.enabled ? 'Disable' : 'Enable'} ${e.url}`}>
          {e.enabled ? 'Disable' : 'Enable'}
        </Button>
        <Button onClick={() => props.onEdit(e)} aria-label={`Edit ${e.url}`}>
          Edit
        </Button>
        <Button onClick={() => props.onRotate(e)} aria-label={`Rotate secret of ${e.url}`}>
          Rotate secret
        </Button>
        <Button kind="danger" onClick={() => props.onDelete(e)} aria-label={`Delete ${e.url}`}>
          Delete
        </Button>
      </div>
      <ErrorNotice error={toggle.error} onDismiss={toggle.clearError} />
    </>
  );
}
