import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../api.ts';
import { dateTime, relative } from '../format.ts';
import { PagedList, usePaged } from '../paged.tsx';
import { formatLabels, LabelChips, parseLabelsStrictly } from '../labels.tsx';
import { SCOPES, type Scope, ScopeFieldset } from '../scopes.tsx';
import { useSession } from '../session.ts';
import { Badge, Button, Confirm, Dialog, ErrorNotice, Field, Page, SecretOnce, useAction, TableWrap } from '../ui.tsx';

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

const STATUS_TONE = { active: 'ok', expired: 'warn', revoked: 'bad' } as const;

function KeyTable(props: { keys: ApiKey[]; isAdmin: boolean; onEdit: (key: ApiKey) => void; onRevoke: (key: ApiKey) => void }) {
  const grantable = SCOPES.filter((s) => s !== 'admin' || props.isAdmin);
  const allScopes = (key: ApiKey) => grantable.every((s) => key.scopes.includes(s));
  return (
    <TableWrap label="API keys table">
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Key</th>
            <th scope="col">Status</th>
            <th scope="col">Scopes</th>
            <th scope="col">Labels</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">Expires</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {props.keys.map((key) => (
            <tr key={key.id} data-testid="key-row" data-key-id={key.id}>
              <th scope="row" class="row-head">
                {key.name}
              </th>
              <td>
                <code class="nowrap">
                  {key.prefix}…{key.last4}
                </code>
              </td>
              <td>
                <Badge tone={STATUS_TONE[key.status]}>{key.status}</Badge>
              </td>
              <td>
                {allScopes(key) ? (
                  'All'
                ) : (
                  <ul class="label-list">
                    {key.scopes.map((s) => (
                      <li key={s}>
                        <code>{s}</code>
                      </li>
                    ))}
                  </ul>
                )}
              </td>
              <td>
                <LabelChips labels={key.labels} />
              </td>
              <td>
                <time dateTime={key.createdAt} title={dateTime(key.createdAt)}>
                  {relative(key.createdAt)}
                </time>
              </td>
              <td>
                {key.lastUsedAt ? (
                  <time dateTime={key.lastUsedAt} title={dateTime(key.lastUsedAt)}>
                    {relative(key.lastUsedAt)}
                  </time>
                ) : (
                  'never'
                )}
              </td>
              <td>
                {key.revokedAt ? (
                  <>revoked {relative(key.revokedAt)}</>
                ) : key.expiresAt ? (
                  <time dateTime={key.expiresAt} title={dateTime(key.expiresAt)}>
                    {relative(key.expiresAt)}
                  </time>
                ) : (
                  'never'
                )}
              </td>
              <td>
                {key.status === 'revoked' ? (
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
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}

const EXPIRY_CHOICES = [
  ['', 'Never'],
  ['7', 'In 7 days'],
  ['30', 'In 30 days'],
  ['90', 'In 90 days'],
  ['365', 'In a year'],
] as const;

function CreateKey(props: { isAdmin: boolean; onCreated: (key: Schema<'ApiKeyWithSecret'>) => void }) {
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<Scope[]>(SCOPES.filter((s) => s !== 'admin'));
  const [expiry, setExpiry] = useState('');
  const [labels, setLabels] = useState('');
  const create = useAction(async () => {
    if (scopes.length === 0) throw new Error('Choose at least one scope.');
    const key = await ok(
      api().POST('/v1/keys', {
        body: {
          name: name.trim(),
          scopes,
          labels: parseLabelsStrictly(labels),
          ...(expiry ? { expiresInDays: Number(expiry) } : {}),
        },
      }),
    );
    props.onCreated(key);
    setName('');
    setLabels('');
  });
  return (
    <form
      id="create-key"
      class="card"
      aria-labelledby="create-key-title"
      onSubmit={(e) => {
        e.preventDefault();
        void create.run();
      }}
    >
      <h2 id="create-key-title">Create a key</h2>
      <Field id="key-name" label="Name" hint="To recognise it later, e.g. “deploy script”.">
        {(control) => (
          <input {...control} name="name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        )}
      </Field>
      <ScopeFieldset value={scopes} onChange={setScopes} isAdmin={props.isAdmin} />
      <Field id="key-expiry" label="Expires">
        {(control) => (
          <select {...control} name="expiry" value={expiry} onChange={(e) => setExpiry(e.currentTarget.value)}>
            {EXPIRY_CHOICES.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field id="key-labels" label="Labels (optional)" hint="key=value pairs separated by commas, e.g. env=prod, team=blue.">
        {(control) => <input {...control} name="labels" value={labels} onInput={(e) => setLabels(e.currentTarget.value)} />}
      </Field>
      <ErrorNotice error={create.error} />
      <Button type="submit" kind="primary" busy={create.busy}>
        Create key
      </Button>
    </form>
  );
}

function EditLabels(props: {
  edit: { key: ApiKey; text: string } | null;
  onChange: (text: string) => void;
  onClose: () => void;
  onSaved: () => void;
}) {
  const edit = props.edit;
  const save = useAction(async () => {
    if (!edit) return;
    await ok(api().PATCH('/v1/keys/{id}', { params: { path: { id: edit.key.id } }, body: { labels: parseLabelsStrictly(edit.text) } }));
    props.onSaved();
  });
  return (
    <Dialog
      open={edit !== null}
      id="edit-key-labels"
      title={edit ? `Labels of ${edit.key.name}` : 'Labels'}
      confirmLabel="Save labels"
      busy={save.busy}
      error={save.error}
      onConfirm={() => void save.run()}
      onCancel={() => {
        save.clearError();
        props.onClose();
      }}
    >
      <Field id="edit-key-labels-text" label="Labels" hint="key=value pairs separated by commas; empty removes them all.">
        {(control) => <input {...control} value={edit?.text ?? ''} onInput={(e) => props.onChange(e.currentTarget.value)} />}
      </Field>
    </Dialog>
  );
}

function RevokeKey(props: { keyToRevoke: ApiKey | null; onClose: () => void; onRevoked: () => void }) {
  const key = props.keyToRevoke;
  const revoke = useAction(async () => {
    if (!key) return;
    await ok(api().DELETE('/v1/keys/{id}', { params: { path: { id: key.id } } }));
    props.onRevoked();
  });
  return (
    <Confirm
      open={key !== null}
      title={key ? `Revoke the key ${key.name}?` : 'Revoke the key?'}
      confirmLabel="Revoke key"
      danger
      busy={revoke.busy}
      error={revoke.error}
      onConfirm={() => void revoke.run()}
      onCancel={() => {
        revoke.clearError();
        props.onClose();
      }}
    >
      <p>
        Requests with{' '}
        <code>
          {key?.prefix}…{key?.last4}
        </code>{' '}
        are refused from now on. This cannot be undone.
      </p>
    </Confirm>
  );
}
