import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../../api.ts';
import { dateTime } from '../../format.ts';
import { Field } from '../../form.tsx';
import { Dialog } from '../../dialog.tsx';
import { Button, ErrorNotice, Loading, Notice, useAction, useLoad } from '../../ui.tsx';
import { DataTable } from '../../table.tsx';
import type { TabProps } from './tab.ts';

type ServerUser = Schema<'ServerUser'>;
type Permission = Schema<'ServerPermission'>;

/** What each permission lets the invited account do (read-only is always held). */
const PERMISSIONS: { id: Exclude<Permission, 'read-only'>; label: string }[] = [
  { id: 'console', label: 'Console (also power)' },
  { id: 'power', label: 'Power: start, stop, restart' },
  { id: 'files', label: 'Files and SFTP' },
  { id: 'backups', label: 'Backups' },
  { id: 'schedules', label: 'Schedules' },
  { id: 'databases', label: 'Databases' },
  { id: 'startup', label: 'Startup settings' },
];

const held = (p: Permission[]) => p.filter((x) => x !== 'read-only');

function PermissionBoxes(props: { idPrefix: string; value: Permission[]; onChange: (next: Permission[]) => void }) {
  return (
    <fieldset class="checks">
      <legend>Permissions (seeing the server, its usage and activity is always included)</legend>
      {PERMISSIONS.map((p) => (
        <label class="check" key={p.id}>
          <input
            id={`${props.idPrefix}-${p.id}`}
            type="checkbox"
            checked={props.value.includes(p.id)}
            onChange={(e) => props.onChange(e.currentTarget.checked ? [...props.value, p.id] : props.value.filter((x) => x !== p.id))}
          />{' '}
          {p.label}
        </label>
      ))}
    </fieldset>
  );
}

/**
 * Who else may use this server (owner only): invite by e-mail with permissions, change them,
 * remove. The invited account sees the server in its list marked as shared.
 */
export default function UsersTab({ server }: TabProps) {
  const id = server.id;
  const list = useLoad(() => ok(api().GET('/v1/servers/{id}/users', { params: { path: { id } } })), [id]);
  const [email, setEmail] = useState('');
  const [permissions, setPermissions] = useState<Permission[]>(['console']);
  const [notice, setNotice] = useState<string | null>(null);
  const [editing, setEditing] = useState<{ user: ServerUser; permissions: Permission[] } | null>(null);
  const [removing, setRemoving] = useState<ServerUser | null>(null);

  const invite = useAction(async () => {
    const user = await ok(
      api().POST('/v1/servers/{id}/users', {
        params: { path: { id } },
        body: { email: email.trim(), permissions: permissionsOrReadOnly(permissions) },
      }),
    );
    setEmail('');
    setNotice(`${user.email} is invited. The share takes effect when they sign in with that (verified) e-mail address.`);
    await list.reload();
  });
  const save = useAction(async (e: NonNullable<typeof editing>) => {
    await ok(
      api().PATCH('/v1/servers/{id}/users/{shareId}', {
        params: { path: { id, shareId: e.user.id } },
        body: { permissions: permissionsOrReadOnly(e.permissions) },
      }),
    );
    setNotice(`The permissions of ${e.user.email} are changed.`);
    setEditing(null);
    await list.reload();
  });
  const remove = useAction(async (user: ServerUser) => {
    await ok(api().DELETE('/v1/servers/{id}/users/{shareId}', { params: { path: { id, shareId: user.id } } }));
    setNotice(`${user.email} no longer has access (SFTP included).`);
    setRemoving(null);
    await list.reload();
  });

  return (
    <section aria-labelledby="users-title">
      <h2 id="users-title">Users</h2>
      <p class="muted">
        Give another account access to this server. You pay for everything done on it; billing, deleting, resizing and who has access stay
        yours.
      </p>
      <form
        class="stack-form"
        onSubmit={(event) => {
          event.preventDefault();
          setNotice(null);
          void invite.run();
        }}
      >
        <Field id="invite-email" label="E-mail address">
          {(control) => (
            <input {...control} type="email" required maxLength={254} value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
          )}
        </Field>
        <PermissionBoxes idPrefix="invite" value={permissions} onChange={setPermissions} />
        <Button type="submit" kind="primary" busy={invite.busy}>
          Invite
        </Button>
      </form>
      <ErrorNotice error={invite.error} onDismiss={invite.clearError} />
      {notice ? <Notice kind="success">{notice}</Notice> : null}
      <Loading state={list} label="Reading who has access…">
        {(page) =>
          page.data.length === 0 ? (
            <p data-testid="users-empty">Only you have access to this server.</p>
          ) : (
            <DataTable
              label="Users table"
              caption="Accounts this server is shared with"
              rows={page.data}
              rowKey={(u) => u.id}
              rowProps={(u) => ({ 'data-testid': 'user-row', 'data-email': u.email })}
              columns={[
                { header: 'E-mail', rowHeader: true, cell: (u) => u.email },
                { header: 'Permissions', cell: (u) => held(u.permissions).join(', ') || 'read-only' },
                { header: 'Joined', cell: (u) => (u.joinedAt ? dateTime(u.joinedAt) : <span class="muted">not yet</span>) },
                {
                  header: 'Actions',
                  cell: (u) => (
                    <span class="row-actions">
                      <Button onClick={() => setEditing({ user: u, permissions: held(u.permissions) })}>Change {u.email}</Button>{' '}
                      <Button kind="danger" onClick={() => setRemoving(u)}>
                        Remove {u.email}
                      </Button>
                    </span>
                  ),
                },
              ]}
            />
          )
        }
      </Loading>

      <Dialog
        id="users-edit-dialog"
        open={editing !== null}
        title={`Permissions of ${editing?.user.email ?? ''}`}
        confirmLabel="Save permissions"
        busy={save.busy}
        error={save.error}
        onConfirm={() => editing && void save.run(editing)}
        onCancel={() => setEditing(null)}
      >
        {editing ? (
          <PermissionBoxes idPrefix="edit" value={editing.permissions} onChange={(p) => setEditing({ ...editing, permissions: p })} />
        ) : null}
      </Dialog>
      <Dialog
        id="users-remove-dialog"
        open={removing !== null}
        title={`Remove ${removing?.email ?? ''}?`}
        confirmLabel="Remove access"
        danger
        busy={remove.busy}
        error={remove.error}
        onConfirm={() => removing && void remove.run(removing)}
        onCancel={() => setRemoving(null)}
      >
        <p>They lose access at once, SFTP included.</p>
      </Dialog>
    </section>
  );
}

/** An empty set of boxes is the read-only share (the API wants at least one). */
const permissionsOrReadOnly = (p: Permission[]): Permission[] => (p.length ? p : ['read-only']);
