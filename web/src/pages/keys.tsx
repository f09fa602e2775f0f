import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../api.ts';
import { formatLabels } from '../labels.tsx';
import { PagedList, usePaged } from '../paged.tsx';
import { useSession } from '../session.ts';
import { Button, Page, SecretOnce } from '../ui.tsx';
import { CreateKey, EditLabels, RevokeKey } from './keys/forms.tsx';
import { KeyTable } from './keys/key-table.tsx';

type ApiKey = Schema<'ApiKey'>;

/**
 * API keys: the list (never a secret), a form that creates one and shows its secret once, the labels
 * of a key (the only thing that changes after creation), and revocation behind a confirmation.
 * Routes: GET/POST /v1/keys, PATCH/DELETE /v1/keys/:id.
 */
export default function Keys() {
  const { account } = useSession();
  const keys = usePaged((cursor) => ok(api().GET('/v1/keys', { params: { query: { limit: 50, cursor } } })));
  const [created, setCreated] = useState<{ name: string; secret: string } | null>(null);
  const [editing, setEditing] = useState<{ key: ApiKey; text: string } | null>(null);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  return (
    <Page title="API keys">
      <p class="muted">
        A key is a bearer token for scripts and tools: send it as <code>Authorization: Bearer cp_…</code>. Only its hash is kept, so its
        secret is shown once, when it is made.
      </p>
      {created ? (
        <div class="created">
          <SecretOnce label={`Secret of the key "${created.name}"`} value={created.secret} testid="key-secret" />
          <Button onClick={() => setCreated(null)}>I have stored it</Button>
        </div>
      ) : null}
      <CreateKey
        isAdmin={account.isAdmin}
        onCreated={(key) => {
          setCreated(key.secret ? { name: key.name, secret: key.secret } : null);
          void keys.reload();
        }}
      />
      <h2>Your keys</h2>
      <PagedList list={keys} what="keys" empty={<p>No keys yet.</p>} moreLabel="Show more keys">
        {(items) => (
          <KeyTable
            keys={items}
            isAdmin={account.isAdmin}
            onEdit={(key) => setEditing({ key, text: formatLabels(key.labels) })}
            onRevoke={setRevoking}
          />
        )}
      </PagedList>
      <EditLabels
        edit={editing}
        onChange={(text) => setEditing((e) => (e ? { ...e, text } : e))}
        onClose={() => setEditing(null)}
        onSaved={() => {
          setEditing(null);
          void keys.reload();
        }}
      />
      <RevokeKey
        keyToRevoke={revoking}
        onClose={() => setRevoking(null)}
        onRevoked={() => {
          setRevoking(null);
          void keys.reload();
        }}
      />
    </Page>
  );
}
