import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../../api.ts';
import { Dialog } from '../../dialog.tsx';
import { Field } from '../../form.tsx';
import { DataTable } from '../../table.tsx';
import { Badge, Button, ErrorNotice, Loading, Notice, useAction, useLoad } from '../../ui.tsx';
import { CopyButton } from './parts.tsx';
import type { TabProps } from './tab.ts';

type Allocation = Schema<'ServerAllocation'>;
type Pending = { kind: 'note' | 'remove'; allocation: Allocation } | null;

const addressOf = (a: Allocation) => `${a.host}:${a.port}`;

/**
 * The server's ports (GET /v1/servers/:id/allocations): every address, the primary first; add one
 * (from the node's free ones, within the server's limit), make one primary, set a note, remove one.
 * Every change reads the server again so the page's header and the overview follow.
 */
export default function NetworkTab({ server, reload }: TabProps) {
  const id = server.id;
  const list = useLoad(() => ok(api().GET('/v1/servers/{id}/allocations', { params: { path: { id } } })), [id]);
  const [notice, setNotice] = useState<string | null>(null);
  const [pending, setPending] = useState<Pending>(null);
  const [note, setNote] = useState('');
  const full = list.data ? list.data.data.length >= list.data.limit : false;

  const refresh = async () => {
    await Promise.all([list.reload(), reload()]);
  };
  const add = useAction(async () => {
    const added = await ok(api().POST('/v1/servers/{id}/allocations', { params: { path: { id } }, body: {} }));
    await refresh();
    setNotice(`Port ${addressOf(added)} added. Players reach it after the server's next start.`);
  });
  const primary = useAction(async (a: Allocation) => {
    await ok(
      api().PATCH('/v1/servers/{id}/allocations/{allocationId}', { params: { path: { id, allocationId: a.id } }, body: { primary: true } }),
    );
    await refresh();
    setNotice(`${addressOf(a)} is now the primary address (from the server's next start).`);
  });
  const change = useAction(async (p: NonNullable<Pending>) => {
    const path = { id, allocationId: p.allocation.id };
    if (p.kind === 'note') {
      await ok(api().PATCH('/v1/servers/{id}/allocations/{allocationId}', { params: { path }, body: { notes: note.trim() || null } }));
    } else {
      await ok(api().DELETE('/v1/servers/{id}/allocations/{allocationId}', { params: { path } }));
    }
    setPending(null);
    await refresh();
    setNotice(p.kind === 'note' ? `Note of ${addressOf(p.allocation)} saved.` : `Port ${addressOf(p.allocation)} removed.`);
  });
  const open = (p: NonNullable<Pending>) => {
    change.clearError();
    setNote(p.allocation.notes ?? '');
    setPending(p);
  };

  return (
    <section aria-labelledby="network-title">
      <h2 id="network-title">Network</h2>
      <p class="muted">
        The addresses players connect to. The primary one is the server's address; a new or changed port is open after the server's next
        start. SFTP does not change (it is the node's).{' '}
        {list.data ? (
          <span data-testid="port-limit">
            {list.data.data.length} of {list.data.limit} port{list.data.limit === 1 ? '' : 's'} in use.
          </span>
        ) : null}
      </p>
      <div class="inline-form">
        <Button kind="primary" busy={add.busy} disabled={!list.data || full} onClick={() => void add.run()}>
          Add port
        </Button>
        {full ? <span class="muted">This server holds all the ports its plan allows.</span> : null}
      </div>
      <ErrorNotice error={add.error} onDismiss={add.clearError} />
      <ErrorNotice error={primary.error} onDismiss={primary.clearError} />
      {notice ? <Notice kind="success">{notice}</Notice> : null}
      <Loading state={list} label="Reading the ports…">
        {(page) => (
          <DataTable
            label="Ports list"
            caption={`Ports of ${server.name}`}
            class="tab-table"
            rows={page.data}
            rowKey={(a) => String(a.id)}
            rowProps={() => ({ 'data-testid': 'port-row' })}
            emptyRow="No ports."
            columns={[
              {
                header: 'Address',
                cell: (a) => (
                  <span class="copy-row">
                    <code data-testid="port-address">{addressOf(a)}</code>{' '}
                    <CopyButton value={addressOf(a)} label={`Copy ${addressOf(a)}`} />
                  </span>
                ),
              },
              { header: 'IP', cell: (a) => <code>{a.ip}</code> },
              { header: 'Note', cell: (a) => a.notes ?? <span class="muted">—</span> },
              { header: 'Primary', cell: (a) => (a.primary ? <Badge tone="ok">Primary</Badge> : <span class="muted">No</span>) },
              {
                header: 'Actions',
                cell: (a) => (
                  <div class="actions">
                    {a.primary ? null : (
                      <Button busy={primary.busy} onClick={() => void primary.run(a)} aria-label={`Make primary: ${addressOf(a)}`}>
                        Make primary
                      </Button>
                    )}
                    <Button onClick={() => open({ kind: 'note', allocation: a })} aria-label={`Edit the note of ${addressOf(a)}`}>
                      Note
                    </Button>
                    {a.primary ? null : (
                      <Button kind="danger" onClick={() => open({ kind: 'remove', allocation: a })} aria-label={`Remove ${addressOf(a)}`}>
                        Remove
                      </Button>
                    )}
                  </div>
                ),
              },
            ]}
          />
        )}
      </Loading>

      <Dialog
        id="network-dialog"
        open={pending !== null}
        title={
          pending?.kind === 'note'
            ? `Note of ${pending ? addressOf(pending.allocation) : ''}`
            : `Remove ${pending ? addressOf(pending.allocation) : ''}?`
        }
        confirmLabel={pending?.kind === 'note' ? 'Save note' : 'Remove port'}
        danger={pending?.kind === 'remove'}
        busy={change.busy}
        error={change.error}
        onConfirm={() => pending && void change.run(pending)}
        onCancel={() => setPending(null)}
      >
        {pending?.kind === 'note' ? (
          <Field id="port-note" label="Note (empty clears it)">
            {(control) => <input {...control} maxLength={255} value={note} onInput={(e) => setNote(e.currentTarget.value)} />}
          </Field>
        ) : pending ? (
          <p>The port goes back to the node; players using it can no longer connect.</p>
        ) : null}
      </Dialog>
    </section>
  );
}
