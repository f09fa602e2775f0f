import type { Schema } from '../../api.ts';
import { bytes, dateTime } from '../../format.ts';
import { type Column, DataTable } from '../../table.tsx';
import { Badge, Button } from '../../ui.tsx';

type Backup = Schema<'Backup'>;

const STATUS: Record<Backup['status'], { label: string; tone: 'ok' | 'warn' | 'bad' }> = {
  completed: { label: 'Completed', tone: 'ok' },
  in_progress: { label: 'In progress', tone: 'warn' },
  failed: { label: 'Failed', tone: 'bad' },
};

/** The columns before the actions. */
const COLUMNS: Column<Backup>[] = [
  { header: 'Name', cell: (b) => b.name },
  {
    header: 'Status',
    cell: (b) => <Badge tone={STATUS[b.status].tone}>{STATUS[b.status].label}</Badge>,
    cellProps: () => ({ 'data-testid': 'backup-status' }),
  },
  { header: 'Size', class: 'num', cell: (b) => (b.status === 'completed' ? bytes(b.sizeBytes) : '—') },
  { header: 'Created', class: 'when', cell: (b) => dateTime(b.createdAt) },
  { header: 'Completed', class: 'when', cell: (b) => dateTime(b.completedAt) },
  { header: 'Lock', cell: (b) => (b.locked ? <Badge>Locked</Badge> : <span class="muted">Unlocked</span>) },
];

/** The server's backups with their state and, per backup, download, restore, lock and delete. */
export function BackupTable(props: {
  backups: Backup[];
  serverName: string;
  lockBusy: boolean;
  onDownload: (backup: Backup) => void;
  onRestore: (backup: Backup) => void;
  onLock: (backup: Backup) => void;
  onDelete: (backup: Backup) => void;
}) {
  return (
    <DataTable
      label="Backups list"
      caption={`Backups of ${props.serverName}`}
      class="tab-table"
      rows={props.backups}
      rowKey={(b) => b.id}
      rowProps={() => ({ 'data-testid': 'backup-row' })}
      emptyRow="No backups yet."
      columns={[
        ...COLUMNS,
        {
          header: 'Actions',
          cell: (b) => (
            <div class="actions">
              {b.status === 'completed' ? (
                <>
                  <Button onClick={() => props.onDownload(b)} aria-label={`Download ${b.name}`}>
                    Download
                  </Button>
                  <Button onClick={() => props.onRestore(b)} aria-label={`Restore ${b.name}`}>
                    Restore
                  </Button>
                </>
              ) : null}
              <Button busy={props.lockBusy} onClick={() => props.onLock(b)} aria-label={`${b.locked ? 'Unlock' : 'Lock'} ${b.name}`}>
                {b.locked ? 'Unlock' : 'Lock'}
              </Button>
              <Button kind="danger" onClick={() => props.onDelete(b)} aria-label={`Delete ${b.name}`}>
                Delete
              </Button>
            </div>
          ),
        },
      ]}
    />
  );
}
