import type { Schema } from '../../api.ts';
import { mb } from '../../format.ts';
import { type Columns, DataTable } from '../../table.tsx';
import { Badge, Notice } from '../../ui.tsx';

const CHECK_NAMES: Record<string, string> = { application_api: 'Application API', client_api: 'Client API (service user)' };

const NODE_COLUMNS: Columns<Schema<'InstanceTestReport'>['nodes'][number]> = [
  {
    header: 'Node',
    cell: (n) => (
      <>
        {n.name} <span class="muted">#{n.id}</span>
      </>
    ),
  },
  { header: 'Region tag', cell: (n) => n.region ?? <span class="muted">none</span> },
  { header: 'FQDN', class: 'mono', cell: (n) => n.fqdn },
  { header: 'State', cell: (n) => (n.maintenance ? <Badge tone="warn">maintenance</Badge> : <Badge tone="ok">available</Badge>) },
  { header: 'Memory used / total', class: 'num', cell: (n) => `${mb(n.allocatedMemoryMb)} / ${mb(n.memoryMb)}` },
  { header: 'Disk used / total', class: 'num', cell: (n) => `${mb(n.allocatedDiskMb)} / ${mb(n.diskMb)}` },
];

/** An instance test's report: each check, the nodes with their region tags, the service user, warnings. */
export function TestReport(props: { report: Schema<'InstanceTestReport'> }) {
  const r = props.report;
  return (
    <div class="test-report" data-testid="instance-test-report">
      <h3>
        Test result: <Badge tone={r.ok ? 'ok' : 'bad'}>{r.ok ? 'all checks passed' : 'a check failed'}</Badge>{' '}
        <span class="muted">({r.latencyMs} ms)</span>
      </h3>
      {r.warnings.map((w) => (
        <Notice key={w.code} kind="warning">
          <strong>Warning ({w.code}):</strong> {w.message}
        </Notice>
      ))}
      <ul class="test-checks">
        {r.checks.map((c) => (
          <li key={c.name}>
            <Badge tone={c.ok ? 'ok' : 'bad'}>{c.ok ? 'passed' : 'failed'}</Badge> <strong>{CHECK_NAMES[c.name] ?? c.name}</strong>:{' '}
            {c.message}
          </li>
        ))}
      </ul>
      <dl class="props">
        <dt>Service user</dt>
        <dd>
          {r.serviceUser ? (
            <>
              {r.serviceUser.username} ({r.serviceUser.email}, panel user #{r.serviceUser.id}){' '}
              {r.serviceUser.admin ? <Badge tone="bad">root admin</Badge> : <Badge tone="ok">not an admin</Badge>}
            </>
          ) : (
            'not resolved'
          )}
        </dd>
        <dt>Result kept</dt>
        <dd>{r.lastTest ? 'yes, as the last test' : 'no: the keys or URL changed while the test ran'}</dd>
      </dl>
      {r.nodes.length > 0 ? (
        <DataTable label="Nodes of the panel" caption="Nodes" showCaption rows={r.nodes} rowKey={(n) => n.id} columns={NODE_COLUMNS} />
      ) : (
        <p class="muted">The panel listed no nodes.</p>
      )}
    </div>
  );
}
