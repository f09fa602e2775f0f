import type { Schema } from '../../api.ts';
import { bytes, dateTime } from '../../format.ts';
import { DataTable } from '../../table.tsx';
import { Button } from '../../ui.tsx';

type Entry = Schema<'FileEntry'>;

/** Archives Wings can extract (its decompress reads zip, tar and the compressed tars, rar, 7z). */
export const isArchive = (name: string): boolean => /\.(zip|tar|tar\.gz|tgz|tar\.bz2|tbz2?|tar\.xz|txz|gz|bz2|xz|rar|7z)$/i.test(name);

/** `-rwxr-xr-x` → `755` (the panel lists the mode as text; chmod takes octal). */
export function octalOf(mode: string): string {
  const bits = mode.slice(-9);
  if (!/^[r-][w-][xsStT-][r-][w-][xsStT-][r-][w-][xtT-]$/.test(bits)) return '';
  let out = '';
  for (let i = 0; i < 9; i += 3)
    out += String((bits[i] === 'r' ? 4 : 0) + (bits[i + 1] === 'w' ? 2 : 0) + (/[xst]/.test(bits[i + 2] ?? '') ? 1 : 0));
  return out;
}

export function FileTable(props: {
  entries: Entry[];
  dir: string;
  selected: ReadonlySet<string>;
  onSelect: (names: string[], on: boolean) => void;
  onOpen: (e: Entry) => void;
  onDownload: (e: Entry) => void;
  onRename: (e: Entry) => void;
  onUnarchive: (e: Entry) => void;
  onDelete: (e: Entry) => void;
  onUp?: () => void;
}) {
  // Folders first, then files, each by name.
  const sorted = [...props.entries].sort((a, b) => Number(a.isFile) - Number(b.isFile) || a.name.localeCompare(b.name));
  const all = sorted.length > 0 && sorted.every((e) => props.selected.has(e.name));
  const some = !all && sorted.some((e) => props.selected.has(e.name));
  return (
    <DataTable
      label={`Files in ${props.dir}`}
      caption={`Files in ${props.dir}`}
      class="tab-table file-table"
      rows={sorted}
      rowKey={(e) => e.name}
      rowProps={(e) => ({ 'data-testid': 'file-row', class: props.selected.has(e.name) ? 'selected' : undefined })}
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
          key: 'select',
          class: 'select',
          header: (
            <input
              type="checkbox"
              aria-label={`Select everything in ${props.dir}`}
              checked={all}
              indeterminate={some}
              disabled={sorted.length === 0}
              onChange={(event) =>
                props.onSelect(
                  sorted.map((e) => e.name),
                  event.currentTarget.checked,
                )
              }
            />
          ),
          cell: (e) => (
            <input
              type="checkbox"
              aria-label={`Select ${e.name}`}
              checked={props.selected.has(e.name)}
              onChange={(event) => props.onSelect([e.name], event.currentTarget.checked)}
            />
          ),
        },
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
        {
          header: 'Permissions',
          class: 'mode',
          cell: (e) => (
            <code title={octalOf(e.mode) ? `${octalOf(e.mode)} in octal` : undefined} data-testid="file-mode">
              {e.mode}
            </code>
          ),
        },
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
              {e.isFile && isArchive(e.name) ? (
                <Button onClick={() => props.onUnarchive(e)} aria-label={`Unarchive ${e.name}`}>
                  Unarchive
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
