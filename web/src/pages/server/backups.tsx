import { useEffect, useState } from 'preact/hooks';
import { ControlPlaneError, api, ok, type Schema } from '../../api.ts';
import { dateTime } from '../../format.ts';
import { Field } from '../../form.tsx';
import { Dialog } from '../../dialog.tsx';
import { Button, ErrorNotice, Loading, Notice, useAction, useLoad } from '../../ui.tsx';
import { BackupTable } from './backup-table.tsx';
import type { TabProps } from './tab.ts';

type Backup = Schema<'Backup'>;
type Pending = { kind: 'restore' | 'delete'; backup: Backup } | null;

/** How often the list is read again while a backup is being written. */
const POLL_MS = 2000;

/**
 * The server's backups: list, create (then the list is polled until Wings has written it),
 * download (a signed link), restore, lock or unlock, delete.
 */
export default function BackupsTab({ server, reload }: TabProps) {
  const id = server.id;
  const list = useLoad(() => ok(api().GET('/v1/servers/{id}/backups', { params: { path: { id } } })), [id]);
  const [name, setName] = useState('');
  const [locked, setLocked] = useState(false);
  const [limit, setLimit] = useState<number | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [pending, setPending] = useState<Pending>(null);
  const [truncate, setTruncate] = useState(false);
  // The panel's own figure from a refusal wins over the list's (which the record derives).
  const shownLimit = limit ?? list.data?.limit ?? null;
  const running = list.data?.data.filter((b) => b.status === 'in_progress') ?? [];

  // Poll while a backup is in progress (Wings writes it in the background).
  useEffect(() => {
    if (running.length === 0 || list.loading) return;
    const timer = setTimeout(() => void list.reload(), POLL_MS);
    return () => clearTimeout(timer);
  }, [list.data, list.loading]);

  const create = useAction(async () => {
    try {
      const backup = await ok(
        api().POST('/v1/servers/{id}/backups', {
          params: { path: { id } },
          body: { ...(name.trim() ? { name: name.trim() } : {}), locked },
        }),
      );
      setName('');
      setNotice(`Backup ${backup.name} started.`);
    } catch (error) {
      if (error instanceof ControlPlaneError && error.is('limit_exceeded') && typeof error.details?.limit === 'number') {
        setLimit(error.details.limit);
      }
      throw error;
    }
    await list.reload();
  });
  const lock = useAction(async (backup: Backup) => {
    await ok(
      api().POST('/v1/servers/{id}/backups/{backupId}/lock', {
        params: { path: { id, backupId: backup.id } },
        body: { locked: !backup.locked },
      }),
    );
    setNotice(`Backup ${backup.name} ${backup.locked ? 'unlocked' : 'locked'}.`);
    await list.reload();
  });
  const link = useAction(async (backup: Backup) => {
    const l = await ok(api().GET('/v1/servers/{id}/backups/{backupId}/download', { params: { path: { id, backupId: backup.id } } }));
    setNotice(null);
    const a = document.createElement('a');
    a.href = l.url;
    a.rel = 'noopener';
    a.click();
    setDownload({ name: backup.name, url: l.url });
  });
  const [download, setDownload] = useState<{ name: string; url: string } | null>(null);
  const change = useAction(async (p: NonNullable<Pending>) => {
    const path = { id, backupId: p.backup.id };
    if (p.kind === 'restore') {
      await ok(api().POST('/v1/servers/{id}/backups/{backupId}/restore', { params: { path }, body: { truncate } }));
      setNotice(
        `Restoring ${p.backup.name}: the server is stopped while the archive is written back, and other actions are refused until it is done.`,
      );
      setPending(null);
      await reload();
    } else {
      await ok(api().DELETE('/v1/servers/{id}/backups/{backupId}', { params: { path } }));
      setNotice(`Backup ${p.backup.name} deleted.`);
      setPending(null);
      await list.reload();
    }
  });
  const open = (p: NonNullable<Pending>) => {
    change.clearError();
    setTruncate(false);
    setPending(p);
  };

  return (
    <section aria-labelledby="backups-title">
      <h2 id="backups-title">Backups</h2>
      <p class="muted">
        Backups are included in the server’s hourly price.{' '}
        {list.data ? (
          <span data-testid="backup-count">
            {shownLimit !== null ? `${list.data.count} of ${shownLimit} backups` : `${list.data.count} counted against this server’s limit`}{' '}
            (in progress or completed; failed ones do not count; backup add-ons raise the limit).
          </span>
        ) : null}
      </p>
      <form
        class="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          setNotice(null);
          void create.run();
        }}
      >
        <Field id="backup-name" label="Backup name (optional)">
          {(control) => <input {...control} maxLength={191} value={name} onInput={(e) => setName(e.currentTarget.value)} />}
        </Field>
        <label class="check">
          <input id="backup-locked" type="checkbox" checked={locked} onChange={(e) => setLocked(e.currentTarget.checked)} /> Lock it (a
          locked backup cannot be deleted)
        </label>
        <Button type="submit" kind="primary" busy={create.busy}>
          Create backup
        </Button>
      </form>
      <ErrorNotice error={create.error} onDismiss={create.clearError} />
      <ErrorNotice error={lock.error} onDismiss={lock.clearError} />
      <ErrorNotice error={link.error} onDismiss={link.clearError} />
      {notice ? <Notice kind="success">{notice}</Notice> : null}
      {download ? (
        <Notice>
          Downloading {download.name}. If it did not start, <a href={download.url}>download the archive of {download.name}</a> (the link
          works once, for 15 minutes).
        </Notice>
      ) : null}
      {running.length ? (
        <p role="status" class="spinner">
          <span class="spin" aria-hidden="true" /> Writing {running.map((b) => b.name).join(', ')}… the list refreshes until it is done.
        </p>
      ) : null}
      <Loading state={list} label="Reading the backups…">
        {(page) => (
          <BackupTable
            backups={page.data}
            serverName={server.name}
            lockBusy={lock.busy}
            onDownload={(b) => void link.run(b)}
            onLock={(b) => void lock.run(b)}
            onRestore={(b) => open({ kind: 'restore', backup: b })}
            onDelete={(b) => open({ kind: 'delete', backup: b })}
          />
        )}
      </Loading>

      <Dialog
        id="backups-dialog"
        open={pending !== null}
        title={pending?.kind === 'restore' ? `Restore ${pending.backup.name}?` : `Delete ${pending?.backup.name ?? ''}?`}
        confirmLabel={pending?.kind === 'restore' ? 'Restore backup' : 'Delete backup'}
        danger
        busy={change.busy}
        disabled={pending?.kind === 'delete' && pending.backup.locked && pending.backup.status === 'completed'}
        error={change.error}
        onConfirm={() => pending && void change.run(pending)}
        onCancel={() => setPending(null)}
      >
        {pending?.kind === 'restore' ? (
          <>
            <p>
              The server is stopped and the archive from {dateTime(pending.backup.createdAt)} is written over its files: changes since then
              are lost.
            </p>
            <label class="check">
              <input id="restore-truncate" type="checkbox" checked={truncate} onChange={(e) => setTruncate(e.currentTarget.checked)} />{' '}
              Delete all files first (files made after the backup go too)
            </label>
          </>
        ) : pending?.backup.locked && pending.backup.status === 'completed' ? (
          <p>This backup is locked: unlock it first to delete it.</p>
        ) : pending ? (
          <p>The archive is deleted from the node. This cannot be undone.</p>
        ) : null}
      </Dialog>
    </section>
  );
}
