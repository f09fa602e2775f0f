import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../../api.ts';
import { Confirm } from '../../dialog.tsx';
import { Button, Notice, useAction } from '../../ui.tsx';

type AdminServer = Schema<'AdminServer'>;
export type ServerAction = 'suspend' | 'unsuspend' | 'reinstall' | 'delete';

/**
 * An operator's actions on any account's server (POST /v1/admin/servers/:id/suspend, /unsuspend,
 * /reinstall; DELETE /v1/admin/servers/:id), each behind a confirmation that says what it does.
 * The answer updates the row at once (a listing read just after may lag behind it); `onChanged`
 * then reads the list again.
 */
const ACTIONS: Record<
  ServerAction,
  { label: string; confirm: string; danger?: boolean; says: string; done: string; run: (id: string) => Promise<unknown> }
> = {
  suspend: {
    label: 'Suspend',
    confirm: 'Suspend server',
    danger: true,
    says: 'The panel stops it and refuses to start it. The reason is “admin”: no top-up or grant lifts it, only Unsuspend does. Billing pauses while it is suspended.',
    done: 'suspended',
    run: (id) => ok(api().POST('/v1/admin/servers/{id}/suspend', { params: { path: { id } } })),
  },
  unsuspend: {
    label: 'Unsuspend',
    confirm: 'Unsuspend server',
    says: 'Lifts the operator’s suspension. If the account’s balance or budget still calls for one, the server stays suspended for that reason; a server the billing alone suspended is refused.',
    done: 'unsuspended',
    run: (id) => ok(api().POST('/v1/admin/servers/{id}/unsuspend', { params: { path: { id } } })),
  },
  reinstall: {
    label: 'Reinstall',
    confirm: 'Reinstall server',
    danger: true,
    says: 'Runs the egg’s install script again on the panel, as the owner’s reinstall does: files the script replaces are lost.',
    done: 'reinstalling',
    run: (id) => ok(api().POST('/v1/admin/servers/{id}/reinstall', { params: { path: { id } } })),
  },
  delete: {
    label: 'Delete',
    confirm: 'Delete server',
    danger: true,
    says: 'Deletes it on the panel with its files and backups, and stops its billing, as the owner’s delete does. This cannot be undone.',
    done: 'deleted',
    run: (id) => ok(api().DELETE('/v1/admin/servers/{id}', { params: { path: { id } } })),
  },
};

/** What an operator can do to a server in its status (the API refuses the rest with 409). */
export function actionsFor(server: AdminServer): ServerAction[] {
  if (server.status === 'active') return ['suspend', 'reinstall', 'delete'];
  if (server.status === 'suspended') return server.suspendedReason === 'admin' ? ['unsuspend', 'delete'] : ['suspend', 'delete'];
  return [];
}

/**
 * The actions of a table of servers: `shown(s)` is the row as the newest answer has it, `buttons(s)`
 * its action buttons, `dialog` the one confirmation of the table and `notice` what was done last.
 */
export function useServerActions(onChanged: () => unknown) {
  const [pending, setPending] = useState<{ server: AdminServer; action: ServerAction } | null>(null);
  const [answered, setAnswered] = useState<Record<string, AdminServer>>({});
  const [last, setLast] = useState('');
  const act = useAction(async (server: AdminServer, action: ServerAction) => {
    const answer = await ACTIONS[action].run(server.id);
    if (action === 'suspend' || action === 'unsuspend') setAnswered((a) => ({ ...a, [server.id]: answer as AdminServer }));
    if (action === 'delete') {
      const { deletedAt } = answer as Schema<'AdminDeletedServer'>;
      setAnswered((a) => ({ ...a, [server.id]: { ...server, status: 'deleted', suspendedReason: null, deletedAt, updatedAt: deletedAt } }));
    }
    setPending(null);
    setLast(`${server.name}: ${ACTIONS[action].done}.`);
    void onChanged();
  });
  const shown = (s: AdminServer): AdminServer => {
    const a = answered[s.id];
    return a && a.updatedAt >= s.updatedAt ? a : s;
  };
  const buttons = (s: AdminServer) => (
    <div class="actions server-actions">
      {actionsFor(s).map((action) => (
        <Button
          key={action}
          kind={action === 'delete' ? 'danger' : 'plain'}
          onClick={() => {
            act.clearError();
            setLast('');
            setPending({ server: s, action });
          }}
        >
          {ACTIONS[action].label}
          <span class="visually-hidden"> {s.name}</span>
        </Button>
      ))}
    </div>
  );
  const spec = pending ? ACTIONS[pending.action] : undefined;
  const dialog = (
    <Confirm
      id="server-action-dialog"
      open={pending !== null}
      title={pending && spec ? `${spec.label} ${pending.server.name}?` : 'Server action'}
      confirmLabel={spec?.confirm ?? 'Confirm'}
      danger={spec?.danger}
      busy={act.busy}
      error={act.error}
      onConfirm={() => pending && void act.run(pending.server, pending.action)}
      onCancel={() => {
        setPending(null);
        act.clearError();
      }}
    >
      {pending && spec ? (
        <>
          <p>{spec.says}</p>
          <p class="muted">
            Server <span class="mono">{pending.server.identifier}</span> of account <span class="mono">{pending.server.accountId}</span>.
          </p>
        </>
      ) : null}
    </Confirm>
  );
  const notice = last ? <Notice kind="success">{last}</Notice> : null;
  return { shown, buttons, dialog, notice };
}
