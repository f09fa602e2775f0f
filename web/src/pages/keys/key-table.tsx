import type { Schema } from '../../api.ts';
import { relative } from '../../format.ts';
import { LabelChips } from '../../labels.tsx';
import { SCOPES } from '../../scopes.tsx';
import { Ago, DataTable } from '../../table.tsx';
import { Badge, Button } from '../../ui.tsx';

type ApiKey = Schema<'ApiKey'>;

const STATUS_TONE = { active: 'ok', expired: 'warn', revoked: 'bad' } as const;

/** The account's keys (never a secret): what each may do, when it was used, and its actions. */
export function KeyTable(props: { keys: ApiKey[]; isAdmin: boolean; onEdit: (key: ApiKey) => void; onRevoke: (key: ApiKey) => void }) {
  const grantable = SCOPES.filter((s) => s !== 'admin' || props.isAdmin);
  const allScopes = (key: ApiKey) => grantable.every((s) => key.scopes.includes(s));
  return (
    <DataTable
      label="API keys table"
      caption="Your API keys"
      rows={props.keys}
      rowKey={(key) => key.id}
      rowProps={(key) => ({ 'data-testid': 'key-row', 'data-key-id': key.id })}
      columns={[
        { header: 'Name', rowHeader: true, class: 'row-head', cell: (key) => key.name },
        {
          header: 'Key',
          cell: (key) => (
            <code class="nowrap">
              {key.prefix}…{key.last4}
            </code>
          ),
        },
        { header: 'Status', cell: (key) => <Badge tone={STATUS_TONE[key.status]}>{key.status}</Badge> },
        {
          header: 'Scopes',
          cell: (key) =>
            allScopes(key) ? (
              'All'
            ) : (
              <ul class="label-list">
                {key.scopes.map((s) => (
                  <li key={s}>
                    <code>{s}</code>
                  </li>
                ))}
              </ul>
            ),
        },
        { header: 'Labels', cell: (key) => <LabelChips labels={key.labels} /> },
        { header: 'Created', cell: (key) => <Ago at={key.createdAt} /> },
        { header: 'Last used', cell: (key) => (key.lastUsedAt ? <Ago at={key.lastUsedAt} /> : 'never') },
        {
          header: 'Expires',
          cell: (key) => (key.revokedAt ? <>revoked {relative(key.revokedAt)}</> : key.expiresAt ? <Ago at={key.expiresAt} /> : 'never'),
        },
        {
          header: 'Actions',
          cell: (key) =>
            key.status === 'revoked' ? (
              <span class="muted">—</span>
            ) : (
              <div class="actions nowrap">
                <Button onClick={() => props.onEdit(key)} aria-label={`Edit labels of ${key.name}`}>
                  Labels
                </Button>
                <Button kind="danger" onClick={() => props.onRevoke(key)} aria-label={`Revoke ${key.name}`}>
                  Revoke
                </Button>
              </div>
            ),
        },
      ]}
    />
  );
}
