import type { InputHTMLAttributes } from 'preact';
import { api, fieldIssues, ok, type Schema } from '../../api.ts';
import { Field } from '../../form.tsx';
import { Button, ErrorNotice, useAction } from '../../ui.tsx';
import { text } from './common.tsx';

type Instance = Schema<'Instance'>;

/**
 * Registering a panel (POST) and changing one (PATCH) with the same fields. The forms are
 * uncontrolled: the keys are read from the password inputs at submit and the inputs are emptied
 * at once, so a key is never held in the page's state nor shown again (the API never returns it).
 */
export function InstanceForm(props: { instance?: Instance; onSaved: (instance: Instance) => void; onCancel: () => void }) {
  const current = props.instance;
  const prefix = current ? `edit-${current.id.slice(0, 8)}` : 'panel';
  const save = useAction(async (form: HTMLFormElement) => {
    const data = new FormData(form);
    for (const key of form.querySelectorAll<HTMLInputElement>('input[type=password]')) key.value = '';
    const saved = current
      ? await ok(api().PATCH('/v1/admin/instances/{id}', { params: { path: { id: current.id } }, body: changes(data, current) }))
      : await ok(api().POST('/v1/admin/instances', { body: creation(data) }));
    props.onSaved(saved);
  });
  const issues = fieldIssues(save.error);
  const field = (f: InputField) => {
    const id = `${prefix}-${f.name}`;
    return (
      <Field key={f.name} id={id} label={f.label} hint={f.hint} error={issues[f.name] ?? issues[`panelRateLimits.${f.name}`]}>
        {(control) => <input {...control} name={f.name} {...f.input} />}
      </Field>
    );
  };
  const fields = inputFields(current);
  return (
    <form
      id={`${prefix}-form`}
      class="card form-grid"
      aria-label={current ? `Change ${current.name}` : 'Register a panel'}
      onSubmit={(e) => {
        e.preventDefault();
        void save.run(e.currentTarget);
      }}
    >
      <ErrorNotice error={save.error} />
      {fields.slice(0, 5).map(field)}
      {current?.hasClientKey ? (
        <div class="field check-field">
          <label>
            <input type="checkbox" name="removeClientKey" /> Remove the stored client key
          </label>
        </div>
      ) : null}
      {fields.slice(5).map(field)}
      <div class="field check-field">
        <label>
          <input type="checkbox" name="enabled" defaultChecked={current?.enabled ?? true} /> Enabled (new servers may be placed here)
        </label>
      </div>
      <div class="actions">
        <Button type="submit" kind="primary" busy={save.busy}>
          {current ? 'Save changes' : 'Register panel'}
        </Button>
        <Button onClick={props.onCancel}>Cancel</Button>
      </div>
    </form>
  );
}

interface InputField {
  name: string;
  label: string;
  hint?: string;
  input: InputHTMLAttributes<HTMLInputElement>;
}

/** The form's inputs in order (the remove-client-key checkbox goes after the fifth). */
function inputFields(current: Instance | undefined): InputField[] {
  const key = { type: 'password', autoComplete: 'new-password', minLength: 8, maxLength: 512 } as const;
  const count = (min: number, max: number, value: number): InputField['input'] => ({
    type: 'number',
    min,
    max,
    step: 1,
    required: true,
    defaultValue: String(value),
  });
  return [
    { name: 'name', label: 'Name', input: { required: true, maxLength: 100, defaultValue: current?.name } },
    {
      name: 'baseUrl',
      label: 'Base URL',
      hint: 'The panel as the control plane reaches it.',
      input: { type: 'url', required: true, maxLength: 500, defaultValue: current?.baseUrl, placeholder: 'https://panel.example.com' },
    },
    {
      name: 'wingsOrigin',
      label: 'Wings origin (optional)',
      hint: "Wings' remote, when customers' browsers reach the panel at another address; empty: the base URL.",
      input: { maxLength: 500, defaultValue: current?.wingsOrigin ?? '' },
    },
    {
      name: 'appApiKey',
      label: current ? 'New application key (optional)' : 'Application key',
      hint: current
        ? 'Empty keeps the stored key. Keys are never shown again.'
        : 'ptla_… with read/write on users, nodes, allocations, servers and eggs. Never shown again.',
      input: { ...key, required: !current },
    },
    {
      name: 'clientApiKey',
      label: current ? 'New client key (optional)' : 'Client key (optional)',
      hint: current
        ? `${current.hasClientKey ? 'A client key is stored; empty keeps it.' : 'No client key is stored.'} Power, console and files need one.`
        : 'ptlc_… of a dedicated, non-admin service user. Power, console and files need it.',
      input: key,
    },
    { name: 'priority', label: 'Priority', hint: 'Lower is preferred by placement.', input: count(0, 10000, current?.priority ?? 100) },
    {
      name: 'applicationPerMinute',
      label: 'Application API limit a minute',
      hint: "The panel's APP_API_APPLICATION_RATELIMIT (240 by default).",
      input: count(1, 100000, current?.panelRateLimits.applicationPerMinute ?? 240),
    },
    {
      name: 'clientPerMinute',
      label: 'Client API limit a minute',
      hint: "The panel's APP_API_CLIENT_RATELIMIT (720 by default).",
      input: count(1, 100000, current?.panelRateLimits.clientPerMinute ?? 720),
    },
  ];
}

const int = (data: FormData, name: string) => Number(text(data, name));

function creation(data: FormData): Schema<'CreateInstance'> {
  const clientKey = text(data, 'clientApiKey');
  const wingsOrigin = text(data, 'wingsOrigin');
  return {
    name: text(data, 'name'),
    baseUrl: text(data, 'baseUrl'),
    appApiKey: text(data, 'appApiKey'),
    ...(clientKey ? { clientApiKey: clientKey } : {}),
    ...(wingsOrigin ? { wingsOrigin } : {}),
    priority: int(data, 'priority'),
    enabled: data.get('enabled') === 'on',
    panelRateLimits: { applicationPerMinute: int(data, 'applicationPerMinute'), clientPerMinute: int(data, 'clientPerMinute') },
  };
}

/** Only what changed: a PATCH of the URL or a key clears the last test, so nothing else is sent. */
function changes(data: FormData, current: Instance): Schema<'UpdateInstance'> {
  const body: Schema<'UpdateInstance'> = {};
  const name = text(data, 'name');
  if (name !== current.name) body.name = name;
  const baseUrl = text(data, 'baseUrl');
  if (baseUrl !== current.baseUrl) body.baseUrl = baseUrl;
  const wingsOrigin = text(data, 'wingsOrigin') || null;
  if (wingsOrigin !== current.wingsOrigin) body.wingsOrigin = wingsOrigin;
  const appKey = text(data, 'appApiKey');
  if (appKey) body.appApiKey = appKey;
  const clientKey = text(data, 'clientApiKey');
  if (clientKey) body.clientApiKey = clientKey;
  else if (data.get('removeClientKey') === 'on') body.clientApiKey = null;
  const priority = int(data, 'priority');
  if (priority !== current.priority) body.priority = priority;
  const enabled = data.get('enabled') === 'on';
  if (enabled !== current.enabled) body.enabled = enabled;
  const limits = { applicationPerMinute: int(data, 'applicationPerMinute'), clientPerMinute: int(data, 'clientPerMinute') };
  if (
    limits.applicationPerMinute !== current.panelRateLimits.applicationPerMinute ||
    limits.clientPerMinute !== current.panelRateLimits.clientPerMinute
  ) {
    body.panelRateLimits = limits;
  }
  return body;
}
