import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../../api.ts';
import { dateTime, relative } from '../../format.ts';
import { Confirm } from '../../dialog.tsx';
import { Badge, Button, ErrorNotice, Spinner, useAction } from '../../ui.tsx';
import { CallBudget } from './call-budget.tsx';
import { InstanceForm } from './instance-form.tsx';
import { TestReport } from './test-report.tsx';

type Instance = Schema<'Instance'>;

const CLIENT_KEY_OUTCOME: Record<string, string> = {
  ok: 'client key resolved to a panel user',
  refused: 'client key refused by the panel',
  missing: 'no client key',
  unreachable: 'panel did not answer',
  error: 'client key check failed',
};

/** A panel's regions from the catalogue, or why they are not known yet. */
export type RegionsKnown = string[] | 'loading' | 'unavailable';

/** One registered panel: what the list states, its call budget, and test, change and delete. */
export function InstanceCard(props: {
  instance: Instance;
  regions: RegionsKnown;
  names: Map<string, string>;
  onChanged: (message: string) => void;
}) {
  const i = props.instance;
  const [editing, setEditing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [report, setReport] = useState<Schema<'InstanceTestReport'>>();
  const test = useAction(async () => {
    setReport(await ok(api().POST('/v1/admin/instances/{id}/test', { params: { path: { id: i.id } } })));
    props.onChanged(`Tested ${i.name}.`);
  });
  const remove = useAction(async () => {
    await ok(api().DELETE('/v1/admin/instances/{id}', { params: { path: { id: i.id } } }));
    setDeleting(false);
    props.onChanged(`Deleted ${i.name}.`);
  });
  const headingId = `instance-${i.id}`;
  return (
    <article class="card" data-testid="instance-row" aria-labelledby={headingId}>
      <h2 id={headingId} class="card-title">
        {i.name} {i.enabled ? <Badge tone="ok">enabled</Badge> : <Badge tone="warn">disabled</Badge>}{' '}
        {i.controlAvailable ? <Badge tone="ok">control available</Badge> : <Badge tone="warn">no control</Badge>}
      </h2>
      <dl class="props">
        <dt>Base URL</dt>
        <dd class="mono">{i.baseUrl}</dd>
        <dt>Panel</dt>
        <dd data-testid="instance-panel-kind">{i.panelKind === 'pelican' ? 'Pelican' : 'Pterodactyl'}</dd>
        <dt>Wings origin</dt>
        <dd class="mono">{i.wingsOrigin ?? <span class="muted">the base URL</span>}</dd>
        <dt>Priority</dt>
        <dd>{i.priority} (lower is preferred)</dd>
        <dt>Servers</dt>
        <dd>{i.serverCount}</dd>
        <dt>Regions</dt>
        <dd>
          {props.regions === 'loading' ? (
            <span class="muted">loading…</span>
          ) : props.regions === 'unavailable' ? (
            <span class="muted">the catalogue could not be read</span>
          ) : props.regions.length ? (
            props.regions.join(', ')
          ) : (
            <span class="muted">none in the catalogue{i.enabled ? '' : ' (disabled)'}</span>
          )}
        </dd>
        <dt>Client key</dt>
        <dd>
          {i.hasClientKey ? 'set' : 'not set'}
          {i.serviceUserId ? ` · service user #${i.serviceUserId}` : ''}
        </dd>
        <dt>Panel limits</dt>
        <dd>
          {i.panelRateLimits.applicationPerMinute} Application / {i.panelRateLimits.clientPerMinute} Client calls a minute
        </dd>
        <dt>Database host</dt>
        <dd data-testid="instance-database-host">
          {i.databaseHost ? (
            <>
              <Badge tone={i.databaseHost.available ? 'ok' : 'warn'}>{i.databaseHost.available ? 'yes' : 'none'}</Badge>{' '}
              <span class="muted">
                as the last database create answered · <span title={dateTime(i.databaseHost.at)}>{relative(i.databaseHost.at)}</span>
              </span>
            </>
          ) : (
            <span class="muted">not known yet: the panel tells at the first database a customer creates</span>
          )}
        </dd>
        <dt>Last test</dt>
        <dd data-testid="instance-last-test">
          {i.lastTest ? (
            <>
              <Badge tone={i.lastTest.ok ? 'ok' : 'bad'}>{i.lastTest.ok ? 'passed' : 'failed'}</Badge>{' '}
              {CLIENT_KEY_OUTCOME[i.lastTest.clientKey]} · <span title={dateTime(i.lastTest.at)}>{relative(i.lastTest.at)}</span>
              <br />
              <span class="muted">{i.lastTest.message}</span>
            </>
          ) : (
            <span class="muted">never tested: run a test to enable power, console and files</span>
          )}
        </dd>
      </dl>
      {i.callBudget ? <CallBudget budget={i.callBudget} names={props.names} caption="Call budget" /> : null}
      <div class="actions">
        <Button kind="primary" busy={test.busy} onClick={() => void test.run()}>
          Test {i.name}
        </Button>
        <Button onClick={() => setEditing(!editing)} aria-expanded={editing ? 'true' : 'false'}>
          Edit {i.name}
        </Button>
        <Button kind="danger" onClick={() => setDeleting(true)}>
          Delete {i.name}
        </Button>
      </div>
      {editing ? (
        <InstanceForm
          instance={i}
          onCancel={() => setEditing(false)}
          onSaved={(saved) => {
            setEditing(false);
            setReport(undefined);
            props.onChanged(`Saved ${saved.name}.`);
          }}
        />
      ) : null}
      {test.busy ? <Spinner label={`Testing ${i.name}: reading its nodes and resolving the client key…`} /> : null}
      <ErrorNotice error={test.error} onDismiss={test.clearError} />
      {report ? <TestReport report={report} /> : null}
      {deleting ? (
        <Confirm
          open
          danger
          title={`Delete ${i.name}?`}
          confirmLabel="Delete panel"
          busy={remove.busy}
          error={remove.error}
          onConfirm={() => void remove.run()}
          onCancel={() => {
            setDeleting(false);
            remove.clearError();
          }}
        >
          <p>
            The panel is removed from the control plane and its keys from the secret store. It is refused while it hosts servers (it hosts{' '}
            {i.serverCount}).
          </p>
        </Confirm>
      ) : null}
    </article>
  );
}
