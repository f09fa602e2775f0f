import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../../api.ts';
import { Dialog } from '../../dialog.tsx';
import { Field } from '../../form.tsx';
import { type Column, DataTable } from '../../table.tsx';
import { Button, Loading, Notice, SecretOnce, useAction, useLoad } from '../../ui.tsx';
import type { TabProps } from './tab.ts';

type Database = Schema<'ServerDatabase'>;
type Pending = { kind: 'create' } | { kind: 'rotate' | 'delete'; database: Database } | null;

const address = (d: Database): string => (d.host.address ? `${d.host.address}:${d.host.port ?? 3306}` : '—');

const COLUMNS: Column<Database>[] = [
  { header: 'Database', cell: (d) => <code>{d.name}</code>, rowHeader: true },
  { header: 'Username', cell: (d) => <code>{d.username}</code> },
  { header: 'Address', cell: (d) => <code data-testid="database-address">{address(d)}</code> },
  { header: 'Connections from', cell: (d) => <code>{d.remote}</code> },
];

/**
 * The server's MySQL databases: list (host and port, name, user), create, rotate the password,
 * delete. A password is in the answer to a create or a rotate only: it is shown here once, in
 * this page's memory, and gone after a reload.
 */
export default function DatabasesTab({ server }: TabProps) {
  const id = server.id;
  const list = useLoad(() => ok(api().GET('/v1/servers/{id}/databases', { params: { path: { id } } })), [id]);
  const [pending, setPending] = useState<Pending>(null);
  const [name, setName] = useState('');
  const [remote, setRemote] = useState('%');
  const [secret, setSecret] = useState<{ label: string; value: string } | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  const change = useAction(async (p: NonNullable<Pending>) => {
    if (p.kind === 'create') {
      const created = await ok(
        api().POST('/v1/servers/{id}/databases', { params: { path: { id } }, body: { name: name.trim(), remote: remote.trim() || '%' } }),
      );
      setSecret({ label: `Password of ${created.name} (user ${created.username})`, value: created.password });
      setNotice(null);
      setName('');
      setRemote('%');
    } else if (p.kind === 'rotate') {
      const rotated = await ok(
        api().POST('/v1/servers/{id}/databases/{databaseId}/rotate-password', {
          params: { path: { id, databaseId: p.database.id } },
        }),
      );
      setSecret({ label: `New password of ${rotated.name}`, value: rotated.password });
      setNotice(null);
    } else {
      await ok(api().DELETE('/v1/servers/{id}/databases/{databaseId}', { params: { path: { id, databaseId: p.database.id } } }));
      setSecret(null);
      setNotice(`Database ${p.database.name} deleted.`);
    }
    setPending(null);
    await list.reload();
  });
  const open = (p: NonNullable<Pending>) => {
    change.clearError();
    setPending(p);
  };

  const title =
    pending?.kind === 'create'
      ? 'New database'
      : pending?.kind === 'rotate'
        ? `New password for ${pending.database.name}?`
        : `Delete ${pending?.database.name ?? ''}?`;

  return (
    <section aria-labelledby="databases-title">
      <h2 id="databases-title">Databases</h2>
      <p class="muted">MySQL databases for this server. A password is shown once, when the database is made or its password is changed.</p>
      <div class="actions">
        <Button kind="primary" onClick={() => open({ kind: 'create' })}>
          New database
        </Button>
      </div>
      {secret ? <SecretOnce label={secret.label} value={secret.value} testid="database-password" /> : null}
      {notice ? <Notice kind="success">{notice}</Notice> : null}
      <Loading state={list} label="Reading the databases…">
        {(page) => (
          <DataTable
            label="Databases list"
            caption={`Databases of ${server.name}`}
            class="tab-table"
            rows={page.data}
            rowKey={(d) => d.id}
            rowProps={() => ({ 'data-testid': 'database-row' })}
            emptyRow="No databases yet."
            columns={[
              ...COLUMNS,
              {
                header: 'Actions',
                cell: (d) => (
                  <div class="actions">
                    <Button onClick={() => open({ kind: 'rotate', database: d })} aria-label={`New password for ${d.name}`}>
                      New password
                    </Button>
                    <Button kind="danger" onClick={() => open({ kind: 'delete', database: d })} aria-label={`Delete ${d.name}`}>
                      Delete
                    </Button>
                  </div>
                ),
              },
            ]}
          />
        )}
      </Loading>

      <Dialog
        id="databases-dialog"
        open={pending !== null}
        title={title}
        confirmLabel={
          pending?.kind === 'create' ? 'Create database' : pending?.kind === 'rotate' ? 'Set a new password' : 'Delete database'
        }
        danger={pending?.kind !== 'create'}
        busy={change.busy}
        disabled={pending?.kind === 'create' && name.trim().length < 3}
        error={change.error}
        onConfirm={() => pending && void change.run(pending)}
        onCancel={() => setPending(null)}
      >
        {pending?.kind === 'create' ? (
          <>
            <Field id="database-name" label="Name" hint="Letters, digits, - and _, 3 to 48 characters.">
              {(control) => (
                <input
                  {...control}
                  required
                  minLength={3}
                  maxLength={48}
                  pattern="[A-Za-z0-9_\-]+"
                  value={name}
                  onInput={(e) => setName(e.currentTarget.value)}
                />
              )}
            </Field>
            <Field id="database-remote" label="Connections from" hint="% is anywhere; 10.0.0.% a network; or one address.">
              {(control) => <input {...control} maxLength={191} value={remote} onInput={(e) => setRemote(e.currentTarget.value)} />}
            </Field>
          </>
        ) : pending?.kind === 'rotate' ? (
          <p>The current password stops working at once: whatever connects with it must be given the new one.</p>
        ) : pending ? (
          <p>The database, its data and its user are deleted. This cannot be undone.</p>
        ) : null}
      </Dialog>
    </section>
  );
}
