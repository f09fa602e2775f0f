import { useState } from 'preact/hooks';
import { api, fieldIssues, ok, type Schema } from '../../api.ts';
import { Field } from '../../form.tsx';
import { Badge, Button, ErrorNotice, Notice, useAction } from '../../ui.tsx';

type Limits = Schema<'AccountLimits'>;

type Override = keyof Limits['overrides'];

/** The override fields, in the form's order: each is a whole number, or empty for none. */
const FIELDS: { name: Override; id: string; label: string; min: number; max: number; hint: string }[] = [
  {
    name: 'maxServers',
    id: 'limits-max-servers',
    label: 'Server limit override',
    min: 0,
    max: 10000,
    hint: 'Empty: the platform setting maxServersPerAccount applies. Lowering it deletes nothing.',
  },
  {
    name: 'maxApiKeys',
    id: 'limits-max-keys',
    label: 'API key limit override',
    min: 0,
    max: 1000,
    hint: 'Empty: the platform setting (or the trial limit) applies. Lowering it revokes nothing.',
  },
  {
    name: 'requestsPerMinute',
    id: 'limits-rpm',
    label: 'Requests a minute override',
    min: 1,
    max: 1000000,
    hint: 'Empty: the platform setting accountRequestsPerMinute applies.',
  },
];

/**
 * One account's limits (as GET /v1/admin/users/:id gives them; saved with PUT …/limits): the
 * overrides an admin set, the limits in force, the keys and servers it holds. An empty field removes
 * the override (null), so the platform setting applies again. The API judges the values (the form
 * does not stop them in the browser): what it refuses is said under its field.
 */
export function LimitsForm(props: { limits: Limits; serverCount: number; onSaved: (limits: Limits) => void }) {
  const { overrides, effective, apiKeyCount } = props.limits;
  const [values, setValues] = useState(
    Object.fromEntries(FIELDS.map((f) => [f.name, overrides[f.name] === null ? '' : String(overrides[f.name])])) as Record<
      Override,
      string
    >,
  );
  const [saved, setSaved] = useState(false);
  // A number field holding what is not a number reads as empty, which would remove the override.
  const [unreadable, setUnreadable] = useState<Record<string, string>>({});
  const save = useAction(async () => {
    const value = (s: string) => (s.trim() === '' ? null : Number(s));
    const result = await ok(
      api().PUT('/v1/admin/users/{id}/limits', {
        params: { path: { id: props.limits.accountId } },
        body: {
          maxServers: value(values.maxServers),
          maxApiKeys: value(values.maxApiKeys),
          requestsPerMinute: value(values.requestsPerMinute),
        },
      }),
    );
    setSaved(true);
    props.onSaved(result);
  });
  const issues: Record<string, string | undefined> = { ...fieldIssues(save.error), ...unreadable };
  return (
    <form
      id="limits-form"
      class="card"
      aria-labelledby="limits-heading"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        setSaved(false);
        const wrong: Record<string, string> = {};
        for (const { name } of FIELDS) {
          const input = e.currentTarget.elements.namedItem(name) as HTMLInputElement | null;
          if (input?.validity.badInput) wrong[name] = 'Not a number: enter a whole number, or leave it empty.';
        }
        setUnreadable(wrong);
        save.clearError();
        if (Object.keys(wrong).length === 0) void save.run();
      }}
    >
      <h2 id="limits-heading">Limits</h2>
      <dl class="props">
        <dt>Servers</dt>
        <dd data-testid="limits-servers">
          {props.serverCount} active or suspended of {effective.maxServers} allowed
        </dd>
        <dt>API keys</dt>
        <dd data-testid="limits-keys">
          {apiKeyCount} held of {effective.maxApiKeys} allowed
        </dd>
        <dt>Requests a minute</dt>
        <dd>{effective.requestsPerMinute} (all its credentials together)</dd>
        <dt>Trial account</dt>
        <dd>{effective.trial ? <Badge tone="warn">trial: no top-up or grant yet</Badge> : 'no'}</dd>
      </dl>
      {saved ? <Notice kind="success">Limits saved; every process applies them within a minute.</Notice> : null}
      <ErrorNotice error={save.error} />
      {FIELDS.map((f) => (
        <Field key={f.name} id={f.id} label={f.label} hint={f.hint} error={issues[f.name]}>
          {(control) => (
            <input
              {...control}
              name={f.name}
              type="number"
              min={f.min}
              max={f.max}
              step={1}
              value={values[f.name]}
              onInput={(e) => {
                const value = e.currentTarget.value;
                setValues((v) => ({ ...v, [f.name]: value }));
              }}
            />
          )}
        </Field>
      ))}
      <Button type="submit" kind="primary" busy={save.busy}>
        Save limits
      </Button>
    </form>
  );
}
