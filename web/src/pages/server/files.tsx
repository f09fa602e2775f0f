import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../../api.ts';
import { bytes } from '../../format.ts';
import { Field } from '../../form.tsx';
import { Dialog } from '../../dialog.tsx';
import { Button, ErrorNotice, Loading, Notice, useAction, useLoad } from '../../ui.tsx';
import { Crumbs, FileTable, UploadProgress } from './file-browser.tsx';
import { FileEditor } from './files-editor.tsx';
import { uploadFiles } from './files-upload.ts';
import type { TabProps } from './tab.ts';

type Entry = Schema<'FileEntry'>;
type Pending = { kind: 'rename'; entry: Entry } | { kind: 'delete'; entry: Entry } | null;

/** files/contents refuses larger files (the panel's limit). */
const READ_LIMIT = 4 * 1024 * 1024;

/** `/` + `a` → `/a`; `/a` + `b` → `/a/b`. */
const join = (dir: string, name: string): string => (dir === '/' ? `/${name}` : `${dir}/${name}`);

/**
 * The server's files: a directory browser with breadcrumbs, a text editor, new folder, rename,
 * delete, upload (to the signed Wings address, with progress) and download (a signed link).
 */
export default function FilesTab({ server }: TabProps) {
  const id = server.id;
  const [dir, setDir] = useState('/');
  const [editing, setEditing] = useState<string | null>(null);
  const [pending, setPending] = useState<Pending>(null);
  const [newName, setNewName] = useState('');
  const [notice, setNotice] = useState<string | null>(null);
  const [tooLarge, setTooLarge] = useState<string | null>(null);
  const [progress, setProgress] = useState<{ names: string; loaded: number; total: number } | null>(null);
  const [download, setDownload] = useState<{ name: string; url: string } | null>(null);
  const list = useLoad(() => ok(api().GET('/v1/servers/{id}/files', { params: { path: { id }, query: { directory: dir } } })), [id, dir]);

  const done = async (message: string) => {
    setNotice(message);
    await list.reload();
  };
  const mkdir = useAction(async (name: string) => {
    await ok(api().POST('/v1/servers/{id}/files/mkdir', { params: { path: { id } }, body: { root: dir, name } }));
    setNewName('');
    await done(`Folder ${join(dir, name)} created.`);
  });
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
  const [renameTo, setRenameTo] = useState('');
  const change = useAction(async (p: NonNullable<Pending>) => {
    if (p.kind === 'rename') {
      await ok(
        api().POST('/v1/servers/{id}/files/rename', {
          params: { path: { id } },
          body: { root: dir, files: [{ from: p.entry.name, to: renameTo }] },
        }),
      );
      setPending(null);
      await done(`Renamed ${p.entry.name} to ${renameTo}.`);
    } else {
      await ok(api().POST('/v1/servers/{id}/files/delete', { params: { path: { id } }, body: { root: dir, files: [p.entry.name] } }));
      setPending(null);
      await done(`Deleted ${join(dir, p.entry.name)}.`);
    }
  });

  const go = (to: string) => {
    setDir(to);
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
  return (
    <section aria-labelledby="files-title">
      <h2 id="files-title">Files</h2>
      <Crumbs parts={parts} onGo={go} />

      <div class="files-tools">
        <form
          class="inline-form"
          onSubmit={(event) => {
            event.preventDefault();
            if (newName.trim()) void mkdir.run(newName.trim());
          }}
        >
          <Field id="new-folder-name" label="New folder name">
            {(control) => <input {...control} value={newName} onInput={(e) => setNewName(e.currentTarget.value)} />}
          </Field>
          <Button type="submit" busy={mkdir.busy} disabled={!newName.trim()}>
            Create folder
          </Button>
        </form>
        <Field id="upload-input" label="Upload files" hint={`Into ${dir}; up to 100 MB each.`}>
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
      <ErrorNotice error={mkdir.error} onDismiss={mkdir.clearError} />
      <ErrorNotice error={upload.error} onDismiss={upload.clearError} />
      <ErrorNotice error={fetchLink.error} onDismiss={fetchLink.clearError} />
      {progress ? <UploadProgress {...progress} /> : upload.busy ? <p role="status">Preparing the upload…</p> : null}
      {notice ? <Notice kind="success">{notice}</Notice> : null}
      {tooLarge ? <Notice kind="warning">{tooLarge}</Notice> : null}
      {download ? (
        <Notice>
          Downloading {download.name}. If it did not start, <a href={download.url}>download {download.name}</a> (the link works once, for 15
          minutes).
        </Notice>
      ) : null}

      <Loading state={list} label={`Listing ${dir}…`}>
        {(page) => (
          <FileTable
            entries={page.data}
            dir={dir}
            onOpen={(e) => {
              if (!e.isFile) go(join(dir, e.name));
              else if (e.size > READ_LIMIT)
                setTooLarge(`${e.name} is ${bytes(e.size)}: files over 4 MB cannot be opened here; download it or use SFTP.`);
              else setEditing(join(dir, e.name));
            }}
            onDownload={(e) => void fetchLink.run(e)}
            onRename={(e) => {
              setRenameTo(e.name);
              change.clearError();
              setPending({ kind: 'rename', entry: e });
            }}
            onDelete={(e) => {
              change.clearError();
              setPending({ kind: 'delete', entry: e });
            }}
            onUp={parts.length ? () => go(`/${parts.slice(0, -1).join('/')}`) : undefined}
          />
        )}
      </Loading>

      <Dialog
        id="files-dialog"
        open={pending !== null}
        title={pending?.kind === 'rename' ? `Rename ${pending.entry.name}` : `Delete ${pending?.entry.name ?? ''}?`}
        confirmLabel={pending?.kind === 'rename' ? 'Rename' : 'Delete'}
        danger={pending?.kind === 'delete'}
        busy={change.busy}
        disabled={pending?.kind === 'rename' && (!renameTo.trim() || renameTo === pending.entry.name)}
        error={change.error}
        onConfirm={() => pending && void change.run(pending)}
        onCancel={() => setPending(null)}
      >
        {pending?.kind === 'rename' ? (
          <Field id="rename-file-name" label="New name" hint="A name with a folder in it (logs/old.txt) moves the file there.">
            {(control) => <input {...control} value={renameTo} onInput={(e) => setRenameTo(e.currentTarget.value)} />}
          </Field>
        ) : pending ? (
          <p>
            {pending.entry.isFile ? 'The file' : 'The folder and everything in it'} <code>{join(dir, pending.entry.name)}</code> will be
            deleted. This cannot be undone.
          </p>
        ) : null}
      </Dialog>
    </section>
  );
}
