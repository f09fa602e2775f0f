import { useState } from 'preact/hooks';
import { api, fieldIssues, ok, type Schema } from '../../api.ts';
import { Badge, Button, ErrorNotice, Field, Notice, useAction } from '../../ui.tsx';

type Limits = Schema<'AccountLimits'>;

/** A field's hint, or what the API said is wrong with it (in the error colour, read by the same id). */
const hint = (issue: string | undefined, text: string) => (issue ? <span class="field-error">{issue}</span> : text);

/**
 * One account's limits (as GET /v1/admin/users/:id gives them; saved with PUT …/limits): the
 * overrides an admin set, the limits in force, the keys and servers it holds. An empty field removes
 * the override (null), so the platform setting applies again. The API judges the values (the form
 * does not stop them in the browser): what it refuses is said under its field.
 */
export function LimitsForm(props: { limits: Limits; serverCount: number; onSaved: (limits: Limits) => void }) {
  const { overrides, effective, apiKeyCount } = props.limits;
  const [maxServers, setMaxServers] = useState(overrides.maxServers === null ? '' : String(overrides.maxServers));
  const [maxKeys, setMaxKeys] = useState(overrides.maxApiKeys === null ? '' : String(overrides.maxApiKeys));
  const [rpm, setRpm] = useState(overrides.requestsPerMinute === null ? '' : String(overrides.requestsPerMinute));
  const [saved, setSaved] = useState(false);
  // A number field holding what is not a number reads as empty, which would remove the override.
  const [unreadable, setUnreadable] = useState<Record<string, string>>({});
  const save = useAction(async () => {
    const value = (s: string) => (s.trim() === '' ? null : Number(s));
    const result = await ok(
      api().PUT('/v1/admin/users/{id}/limits', {
        params: { path: { id: props.limits.accountId } },
        body: { maxServers: value(maxServers), maxApiKeys: value(maxKeys), requestsPerMinute: value(rpm) },
      }),
    );
    setSaved(true);
    props.onSaved(result);
  });
  const issues = { ...fieldIssues(save.error), ...unreadable };
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
        for (const name of ['maxServers', 'maxApiKeys', 'requestsPerMinute']) {
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
      <Field
        id="limits-max-servers"
        label="Server limit override"
        hint={hint(issues.maxServers, 'Empty: the platform setting maxServersPerAccount applies. Lowering it deletes nothing.')}
      >
        <input
          id="limits-max-servers"
          name="maxServers"
          type="number"
          min={0}
          max={10000}
          step={1}
          value={maxServers}
          onInput={(e) => setMaxServers(e.currentTarget.value)}
          aria-describedby="limits-max-servers-hint"
          aria-invalid={issues.maxServers ? 'true' : undefined}
        />
      </Field>
      <Field
        id="limits-max-keys"
        label="API key limit override"
        hint={hint(issues.maxApiKeys, 'Empty: the platform setting (or the trial limit) applies. Lowering it revokes nothing.')}
      >
        <input
          id="limits-max-keys"
          name="maxApiKeys"
          type="number"
          min={0}
          max={1000}
          step={1}
          value={maxKeys}
          onInput={(e) => setMaxKeys(e.currentTarget.value)}
          aria-describedby="limits-max-keys-hint"
          aria-invalid={issues.maxApiKeys ? 'true' : undefined}
        />
      </Field>
      <Field
        id="limits-rpm"
        label="Requests a minute override"
        hint={hint(issues.requestsPerMinute, 'Empty: the platform setting accountRequestsPerMinute applies.')}
      >
        <input
          id="limits-rpm"
          name="requestsPerMinute"
          type="number"
          min={1}
          max={1000000}
          step={1}
          value={rpm}
          onInput={(e) => setRpm(e.currentTarget.value)}
          aria-describedby="limits-rpm-hint"
          aria-invalid={issues.requestsPerMinute ? 'true' : undefined}
        />
      </Field>
      <Button type="submit" kind="primary" busy={save.busy}>
        Save limits
      </Button>
    </form>
  );
}
