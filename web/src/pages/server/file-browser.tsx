import type { Schema } from '../../api.ts';
import { bytes, dateTime } from '../../format.ts';
import { DataTable } from '../../table.tsx';
import { Button } from '../../ui.tsx';

type Entry = Schema<'FileEntry'>;

export function FileTable(props: {
  entries: Entry[];
  dir: string;
  onOpen: (e: Entry) => void;
  onDownload: (e: Entry) => void;
  onRename: (e: Entry) => void;
  onDelete: (e: Entry) => void;
  onUp?: () => void;
}) {
  // Folders first, then files, each by name.
  const sorted = [...props.entries].sort((a, b) => Number(a.isFile) - Number(b.isFile) || a.name.localeCompare(b.name));
  return (
    <DataTable
      label={`Files in ${props.dir}`}
      caption={`Files in ${props.dir}`}
      class="tab-table"
      rows={sorted}
      rowKey={(e) => e.name}
      rowProps={() => ({ 'data-testid': 'file-row' })}
      firstRow={
        props.onUp ? (
          <button type="button" class="link" onClick={props.onUp}>
            <span aria-hidden="true">↑ </span>Up to the parent folder
          </button>
        ) : null
      }
      emptyRow="This folder is empty."
      columns={[
        {
          header: 'Name',
          cell: (e) => (
            <>
              <span class="file-kind">{e.isFile ? 'File' : 'Folder'}</span>{' '}
              <button type="button" class="link" onClick={() => props.onOpen(e)}>
                {e.name}
              </button>
            </>
          ),
        },
        { header: 'Size', class: 'num', cell: (e) => (e.isFile ? bytes(e.size) : '—') },
        { header: 'Modified', class: 'when', cell: (e) => dateTime(e.modifiedAt) },
        {
          header: 'Actions',
          cell: (e) => (
            <div class="actions">
              {e.isFile ? (
                <Button onClick={() => props.onDownload(e)} aria-label={`Download ${e.name}`}>
                  Download
                </Button>
              ) : null}
              <Button onClick={() => props.onRename(e)} aria-label={`Rename ${e.name}`}>
                Rename
              </Button>
              <Button kind="danger" onClick={() => props.onDelete(e)} aria-label={`Delete ${e.name}`}>
                Delete
              </Button>
            </div>
          ),
        },
      ]}
    />
  );
}

/** The folder's path as links to each folder above it; the current one is marked as the location. */
export function Crumbs(props: { parts: string[]; onGo: (to: string) => void }) {
  const { parts } = props;
  return (
    <nav aria-label="Folder path" class="crumbs">
      <ol>
        <li>
          {parts.length ? (
            <button type="button" class="link" onClick={() => props.onGo('/')}>
              Root folder
            </button>
          ) : (
            <span aria-current="location">Root folder</span>
          )}
        </li>
        {parts.map((part, i) => {
          const to = `/${parts.slice(0, i + 1).join('/')}`;
          return (
            <li key={to}>
              {i === parts.length - 1 ? (
                <span aria-current="location">{part}</span>
              ) : (
                <button type="button" class="link" onClick={() => props.onGo(to)}>
                  {part}
                </button>
              )}
            </li>
          );
        })}
      </ol>
    </nav>
  );
}

/** An upload's progress bar, labelled with the files and the bytes sent so far. */
export function UploadProgress(props: { names: string; loaded: number; total: number }) {
  return (
    <div class="upload-progress" role="status">
      <label for="upload-progress">
        Uploading {props.names}: {bytes(props.loaded)} of {bytes(props.total)}
      </label>
      <progress id="upload-progress" max={props.total || 1} value={props.loaded} />
    </div>
  );
}
