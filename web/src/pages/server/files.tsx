import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../../api.ts';
import { bytes } from '../../format.ts';
import { Field } from '../../form.tsx';
import { Dialog } from '../../dialog.tsx';
import { Button, ErrorNotice, Loading, Notice, useAction, useLoad } from '../../ui.tsx';
import { Crumbs, FileTable, octalOf, UploadProgress } from './file-browser.tsx';
import { FileEditor } from './files-editor.tsx';
import { uploadFiles } from './files-upload.ts';
import type { TabProps } from './tab.ts';

type Entry = Schema<'FileEntry'>;
/** What a dialog is open for: one entry (rename, delete) or the selection (move, permissions, delete), or a new name. */
type Pending =
  | { kind: 'new-file' }
  | { kind: 'new-folder' }
  | { kind: 'rename'; entry: Entry }
  | { kind: 'delete' | 'move' | 'chmod'; names: string[]; folders: number }
  | null;

/** files/contents refuses larger files (the panel's limit). */
const READ_LIMIT = 4 * 1024 * 1024;

/** `/` + `a` → `/a`; `/a` + `b` → `/a/b`. */
const join = (dir: string, name: string): string => (dir === '/' ? `/${name}` : `${dir}/${name}`);
/** `/a/b` → `a/b`: the panel's paths inside a root are relative. */
const inRoot = (path: string): string => path.replace(/^\/+/, '');
const items = (n: number): string => (n === 1 ? '1 item' : `${n} items`);

const TITLES = {
  'new-file': 'New file',
  'new-folder': 'New folder',
  rename: 'Rename',
  delete: 'Delete',
  move: 'Move',
  chmod: 'Permissions',
} as const;

/**
 * The server's files: a directory browser with breadcrumbs; new file and folder; rename, download,
 * unarchive and delete on each entry; a selection to delete, move, archive or change the
 * permissions of at once; uploads (chosen or dropped on the list, to the signed Wings address,
 * with progress); and an editor that highlights config formats (files-editor.tsx).
 */
export default function FilesTab({ server }: TabProps) {
  const id = server.id;
  const [dir, setDir] = useState('/');
  const [editing, setEditing] = useState<string | null>(null);
  const [pending, setPending] = useState<Pending>(null);
  const [name, setName] = useState('');
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [notice, setNotice] = useState<string | null>(null);
  const [tooLarge, setTooLarge] = useState<string | null>(null);
  const [progress, setProgress] = useState<{ names: string; loaded: number; total: number } | null>(null);
  const [download, setDownload] = useState<{ name: string; url: string } | null>(null);
  const [dragging, setDragging] = useState(false);
  const list = useLoad(() => ok(api().GET('/v1/servers/{id}/files', { params: { path: { id }, query: { directory: dir } } })), [id, dir]);
  const entries = list.data?.data ?? [];

  const done = async (message: string) => {
    setNotice(message);
    setSelected(new Set());
    await list.reload();
  };
  const upload = useAction(async (files: File[]) => {
    const link = await ok(api().GET('/v1/servers/{id}/files/upload', { params: { path: { id }, query: { directory: dir } } }));
    const names = files.map((f) => f.name).join(', ');
    setProgress({ names, loaded: 0, total: files.reduce((n, f) => n + f.size, 0) });
    try {
      await uploadFiles(link.url, files, (loaded, total) => setProgress({ names, loaded, total }));
    } finally {
      setProgress(null);
    }
    await done(`Uploaded ${names} to ${dir}.`);
  });
  const fetchLink = useAction(async (entry: Entry) => {
    const link = await ok(
      api().GET('/v1/servers/{id}/files/download', { params: { path: { id }, query: { file: join(dir, entry.name) } } }),
    );
    setDownload({ name: entry.name, url: link.url });
    // The link is single use and served as an attachment by the node: following it downloads.
    const a = document.createElement('a');
    a.href = link.url;
    a.rel = 'noopener';
    a.click();
  });
  // Archive and unarchive need no dialog: Wings names the archive, and extracting adds files beside it.
  const archive = useAction(async (names: string[]) => {
    const made = await ok(api().POST('/v1/servers/{id}/files/compress', { params: { path: { id } }, body: { root: dir, files: names } }));
    await done(`Archived ${items(names.length)} into ${made.name} (${bytes(made.size)}).`);
  });
  const unarchive = useAction(async (entry: Entry) => {
    await ok(api().POST('/v1/servers/{id}/files/decompress', { params: { path: { id } }, body: { root: dir, file: entry.name } }));
    await done(`Extracted ${entry.name} into ${dir}.`);
  });
  const change = useAction(async (p: NonNullable<Pending>) => {
    const value = name.trim();
    const params = { path: { id } };
    if (p.kind === 'new-folder') {
      await ok(api().POST('/v1/servers/{id}/files/mkdir', { params, body: { root: dir, name: value } }));
      setPending(null);
      await done(`Folder ${join(dir, value)} created.`);
    } else if (p.kind === 'new-file') {
      // An empty file, then straight into the editor.
      await ok(api().POST('/v1/servers/{id}/files/write', { params, body: { file: join(dir, value), content: '' } }));
      setPending(null);
      setEditing(join(dir, value));
    } else if (p.kind === 'rename') {
      await ok(api().POST('/v1/servers/{id}/files/rename', { params, body: { root: dir, files: [{ from: p.entry.name, to: value }] } }));
      setPending(null);
      await done(`Renamed ${p.entry.name} to ${value}.`);
    } else if (p.kind === 'move') {
      const target = `/${inRoot(value)}`.replace(/\/+$/, '') || '/';
      const files = p.names.map((n) => ({ from: inRoot(join(dir, n)), to: inRoot(join(target, n)) }));
      await ok(api().POST('/v1/servers/{id}/files/rename', { params, body: { root: '/', files } }));
      setPending(null);
      await done(`Moved ${items(p.names.length)} to ${target}.`);
    } else if (p.kind === 'chmod') {
      const files = p.names.map((file) => ({ file, mode: value }));
      await ok(api().POST('/v1/servers/{id}/files/chmod', { params, body: { root: dir, files } }));
      setPending(null);
      await done(`Permissions of ${items(p.names.length)} set to ${value}.`);
    } else {
      await ok(api().POST('/v1/servers/{id}/files/delete', { params, body: { root: dir, files: p.names } }));
      setPending(null);
      await done(`Deleted ${p.names.length === 1 ? join(dir, p.names[0] ?? '') : items(p.names.length)}.`);
    }
  });
  const open = (p: NonNullable<Pending>, initial = '') => {
    change.clearError();
    setName(initial);
    setPending(p);
  };
  const ofSelection = (kind: 'delete' | 'move' | 'chmod') => {
    const names = entries.filter((e) => selected.has(e.name)).map((e) => e.name);
    const folders = entries.filter((e) => selected.has(e.name) && !e.isFile).length;
    const first = entries.find((e) => e.name === names[0]);
    open({ kind, names, folders }, kind === 'move' ? dir : kind === 'chmod' && names.length === 1 && first ? octalOf(first.mode) : '');
  };

  const go = (to: string) => {
    setDir(to);
    setSelected(new Set());
    setNotice(null);
    setTooLarge(null);
    setDownload(null);
  };
  if (editing)
    return (
      <FileEditor
        serverId={id}
        path={editing}
        onClose={() => {
          setEditing(null);
          void list.reload();
        }}
      />
    );

  const parts = dir.split('/').filter(Boolean);
  const count = entries.filter((e) => selected.has(e.name)).length;
  const busy = archive.busy || unarchive.busy;
  const nameValid = pending?.kind === 'chmod' ? /^[0-7]{3,4}$/.test(name.trim()) : Boolean(name.trim());
  return (
    <section aria-labelledby="files-title">
      <h2 id="files-title">Files</h2>
      <Crumbs parts={parts} onGo={go} />

      <div class="files-tools">
        <div class="actions">
          <Button onClick={() => open({ kind: 'new-file' })}>New file</Button>
          <Button onClick={() => open({ kind: 'new-folder' })}>New folder</Button>
        </div>
        <Field id="upload-input" label="Upload files" hint={`Into ${dir}, or drop files on the list; up to 100 MB each.`}>
          {(control) => (
            <input
              {...control}
              type="file"
              multiple
              disabled={upload.busy}
              onChange={(event) => {
                const input = event.currentTarget;
                const files = [...(input.files ?? [])];
                if (files.length) void upload.run(files).then(() => (input.value = ''));
              }}
            />
          )}
        </Field>
      </div>
      <fieldset class="files-selection">
        <legend class="visually-hidden">With the selected items</legend>
        <span aria-live="polite">{count ? `${items(count)} selected` : 'Select items to act on several at once.'}</span>
        <Button
          disabled={!count}
          busy={archive.busy}
          onClick={() => void archive.run([...selected].filter((n) => entries.some((e) => e.name === n)))}
        >
          Archive
        </Button>
        <Button disabled={!count} onClick={() => ofSelection('move')}>
          Move…
        </Button>
        <Button disabled={!count} onClick={() => ofSelection('chmod')}>
          Permissions…
        </Button>
        <Button kind="danger" disabled={!count} onClick={() => ofSelection('delete')}>
          Delete…
        </Button>
      </fieldset>
      <ErrorNotice error={upload.error} onDismiss={upload.clearError} />
      <ErrorNotice error={fetchLink.error} onDismiss={fetchLink.clearError} />
      <ErrorNotice error={archive.error} onDismiss={archive.clearError} />
      <ErrorNotice error={unarchive.error} onDismiss={unarchive.clearError} />
      {progress ? <UploadProgress {...progress} /> : upload.busy ? <p role="status">Preparing the upload…</p> : null}
      {busy ? <p role="status">{archive.busy ? 'Making the archive…' : 'Extracting the archive…'}</p> : null}
      {notice ? <Notice kind="success">{notice}</Notice> : null}
      {tooLarge ? <Notice kind="warning">{tooLarge}</Notice> : null}
      {download ? (
        <Notice>
          Downloading {download.name}. If it did not start, <a href={download.url}>download {download.name}</a> (the link works once, for 15
          minutes).
        </Notice>
      ) : null}

      {/* Dropping files anywhere on the list uploads them into this folder; the file input above is the keyboard's way. */}
      {/* biome-ignore lint/a11y/noStaticElementInteractions: a drop target for the pointer only; the "Upload files" input does the same from the keyboard. */}
      <div
        class={dragging ? 'file-drop dragging' : 'file-drop'}
        data-testid="file-drop"
        onDragOver={(event) => {
          if (!event.dataTransfer?.types.includes('Files')) return;
          event.preventDefault();
          event.dataTransfer.dropEffect = 'copy';
          setDragging(true);
        }}
        onDragLeave={(event) => {
          if (!event.currentTarget.contains(event.relatedTarget as Node | null)) setDragging(false);
        }}
        onDrop={(event) => {
          event.preventDefault();
          setDragging(false);
          const files = [...(event.dataTransfer?.files ?? [])];
          if (files.length && !upload.busy) void upload.run(files);
        }}
      >
        {dragging ? <p class="drop-hint">Drop to upload into {dir}</p> : null}
        <Loading state={list} label={`Listing ${dir}…`}>
          {(page) => (
            <FileTable
              entries={page.data}
              dir={dir}
              selected={selected}
              onSelect={(names, on) =>
                setSelected((before) => {
                  const next = new Set(before);
                  for (const n of names) on ? next.add(n) : next.delete(n);
                  return next;
                })
              }
              onOpen={(e) => {
                if (!e.isFile) go(join(dir, e.name));
                else if (e.size > READ_LIMIT)
                  setTooLarge(`${e.name} is ${bytes(e.size)}: files over 4 MB cannot be opened here; download it or use SFTP.`);
                else setEditing(join(dir, e.name));
              }}
              onDownload={(e) => void fetchLink.run(e)}
              onUnarchive={(e) => void unarchive.run(e)}
              onRename={(e) => open({ kind: 'rename', entry: e }, e.name)}
              onDelete={(e) => open({ kind: 'delete', names: [e.name], folders: e.isFile ? 0 : 1 })}
              onUp={parts.length ? () => go(`/${parts.slice(0, -1).join('/')}`) : undefined}
            />
          )}
        </Loading>
      </div>

      <Dialog
        id="files-dialog"
        open={pending !== null}
        title={dialogTitle(pending)}
        confirmLabel={pending ? (pending.kind === 'new-file' || pending.kind === 'new-folder' ? 'Create' : TITLES[pending.kind]) : ''}
        danger={pending?.kind === 'delete'}
        busy={change.busy}
        disabled={!nameValid && pending?.kind !== 'delete'}
        error={change.error}
        onConfirm={() => pending && void change.run(pending)}
        onCancel={() => setPending(null)}
      >
        {pending?.kind === 'delete' ? (
          <p>
            {pending.names.length === 1 ? (
              <>
                {pending.folders ? 'The folder and everything in it' : 'The file'} <code>{join(dir, pending.names[0] ?? '')}</code>
              </>
            ) : (
              <>
                {items(pending.names.length)} in <code>{dir}</code>
                {pending.folders ? ` (${pending.folders === 1 ? 'a folder' : `${pending.folders} folders`} with everything in it)` : ''}
              </>
            )}{' '}
            will be deleted. This cannot be undone.
          </p>
        ) : pending ? (
          <Field id="files-dialog-name" {...fieldText(pending, dir)}>
            {(control) => (
              <input
                {...control}
                value={name}
                inputMode={pending.kind === 'chmod' ? 'numeric' : undefined}
                onInput={(e) => setName(e.currentTarget.value)}
              />
            )}
          </Field>
        ) : null}
      </Dialog>
    </section>
  );
}

function dialogTitle(p: Pending): string {
  if (!p) return '';
  if (p.kind === 'rename') return `Rename ${p.entry.name}`;
  if (p.kind === 'new-file' || p.kind === 'new-folder') return TITLES[p.kind];
  const what = p.names.length === 1 ? (p.names[0] ?? '') : items(p.names.length);
  return p.kind === 'delete' ? `Delete ${what}?` : p.kind === 'move' ? `Move ${what}` : `Permissions of ${what}`;
}

function fieldText(p: Exclude<NonNullable<Pending>, { kind: 'delete' }>, dir: string): { label: string; hint?: string } {
  switch (p.kind) {
    case 'new-file':
      return { label: 'File name', hint: `Created empty in ${dir}, then opened in the editor.` };
    case 'new-folder':
      return { label: 'Folder name', hint: `In ${dir}; a name with slashes (a/b) creates each folder.` };
    case 'rename':
      return { label: 'New name', hint: 'A name with a folder in it (logs/old.txt) moves the file there.' };
    case 'move':
      return { label: 'Destination folder', hint: 'From the server’s root, such as /plugins; missing folders are created.' };
    default:
      return { label: 'Mode (octal)', hint: '644 for files anyone may read and only the owner write; 755 to make them executable too.' };
  }
}
