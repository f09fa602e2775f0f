import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../../api.ts';
import { parseLabelsStrictly } from '../../labels.tsx';
import { SCOPES, type Scope, ScopeFieldset } from '../../scopes.tsx';
import { Field } from '../../form.tsx';
import { Confirm, Dialog } from '../../dialog.tsx';
import { Button, ErrorNotice, useAction } from '../../ui.tsx';

type ApiKey = Schema<'ApiKey'>;

const EXPIRY_CHOICES = [
  ['', 'Never'],
  ['7', 'In 7 days'],
  ['30', 'In 30 days'],
  ['90', 'In 90 days'],
  ['365', 'In a year'],
] as const;

export function CreateKey(props: { isAdmin: boolean; onCreated: (key: Schema<'ApiKeyWithSecret'>) => void }) {
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

export function EditLabels(props: {
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

export function RevokeKey(props: { keyToRevoke: ApiKey | null; onClose: () => void; onRevoked: () => void }) {
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
