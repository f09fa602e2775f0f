import { useState } from 'preact/hooks';
import { api, ok } from '../../api.ts';
import { dateTime } from '../../format.ts';
import { navigate } from '../../router.ts';
import { Field } from '../../form.tsx';
import { Dialog } from '../../dialog.tsx';
import { Button, ErrorNotice, Notice, useAction, Section } from '../../ui.tsx';
import { ResizeForm } from './settings-resize.tsx';
import { AddonsForm } from './settings-addons.tsx';
import { SubdomainForm } from './settings-subdomain.tsx';
import type { TabProps } from './tab.ts';

/** Rename, subdomain, resize, add-ons, reinstall and delete. */
export default function SettingsTab({ server, reload }: TabProps) {
  const [name, setName] = useState(server.name);
  const [renamed, setRenamed] = useState<string | null>(null);
  const rename = useAction(async () => {
    const updated = await ok(api().PATCH('/v1/servers/{id}', { params: { path: { id: server.id } }, body: { name: name.trim() } }));
    setRenamed(`Renamed to ${updated.name}.`);
    await reload();
  });
  const [pending, setPending] = useState<'reinstall' | 'delete' | null>(null);
  const [typed, setTyped] = useState('');
  const [reinstalled, setReinstalled] = useState<string | null>(null);
  const act = useAction(async (kind: 'reinstall' | 'delete') => {
    if (kind === 'reinstall') {
      const r = await ok(api().POST('/v1/servers/{id}/reinstall', { params: { path: { id: server.id } } }));
      setPending(null);
      setReinstalled(
        `Reinstalling: the install script is running (watched until ${dateTime(r.watchedUntil)}). The overview shows when it ends.`,
      );
      await reload();
    } else {
      await ok(api().DELETE('/v1/servers/{id}', { params: { path: { id: server.id } } }));
      setPending(null);
      navigate('/servers');
    }
  });
  const open = (kind: 'reinstall' | 'delete') => {
    act.clearError();
    setTyped('');
    setPending(kind);
  };

  if (server.status === 'deleted') {
    return <Notice>This server was deleted {dateTime(server.deletedAt)}; nothing about it can change.</Notice>;
  }
  return (
    <div class="settings-tab">
      {server.status === 'suspended' ? (
        <Notice kind="warning">This server is suspended: it cannot be renamed, resized or reinstalled until it is unsuspended.</Notice>
      ) : null}
      <Section id="rename" title="Name">
        <form
          class="inline-form"
          onSubmit={(event) => {
            event.preventDefault();
            setRenamed(null);
            void rename.run();
          }}
        >
          <Field id="rename-name" label="Server name" hint="3 to 60 characters.">
            {(control) => (
              <input {...control} required minLength={3} maxLength={60} value={name} onInput={(e) => setName(e.currentTarget.value)} />
            )}
          </Field>
          <Button type="submit" busy={rename.busy} disabled={name.trim() === server.name || name.trim().length < 3}>
            Rename
          </Button>
        </form>
        <ErrorNotice error={rename.error} onDismiss={rename.clearError} />
        {renamed ? <Notice kind="success">{renamed}</Notice> : null}
      </Section>

      <Section id="subdomain" title="Subdomain">
        <SubdomainForm server={server} reload={reload} />
      </Section>

      <Section id="resize" title="Size">
        <ResizeForm server={server} reload={reload} />
      </Section>

      <Section id="addons" title="Add-ons">
        <AddonsForm server={server} reload={reload} />
      </Section>

      <Section id="reinstall" title="Reinstall">
        <p>
          Runs the egg’s install script again. Your files are kept, but the script may replace the files it installs (for example the
          server’s jar); the server cannot start until the install ends.
        </p>
        {reinstalled ? <Notice kind="success">{reinstalled}</Notice> : null}
        <Button onClick={() => open('reinstall')}>Reinstall</Button>
      </Section>

      <Section id="delete" class="danger-zone" title="Delete">
        <p>
          Removes the server and its files from the panel. Billing stops after the current hour. This cannot be undone: download a backup
          first if you need the files.
        </p>
        <Button kind="danger" onClick={() => open('delete')}>
          Delete this server…
        </Button>
      </Section>

      <Dialog
        id="settings-dialog"
        open={pending !== null}
        title={pending === 'reinstall' ? `Reinstall ${server.name}?` : `Delete ${server.name}?`}
        confirmLabel={pending === 'reinstall' ? 'Run the install script' : 'Delete server'}
        danger
        busy={act.busy}
        disabled={pending === 'delete' && typed !== server.name}
        error={act.error}
        onConfirm={() => pending && void act.run(pending)}
        onCancel={() => setPending(null)}
      >
        {pending === 'reinstall' ? (
          <p>
            The install script runs again and may overwrite the files it installs. Files are not wiped; the server stops while it installs.
          </p>
        ) : (
          <>
            <p>
              <strong>{server.name}</strong> and all its files are removed for good.
            </p>
            <Field id="delete-confirm-name" label={`Type the server’s name, ${server.name}, to confirm`}>
              {(control) => <input {...control} autoComplete="off" value={typed} onInput={(e) => setTyped(e.currentTarget.value)} />}
            </Field>
          </>
        )}
      </Dialog>
    </div>
  );
}
