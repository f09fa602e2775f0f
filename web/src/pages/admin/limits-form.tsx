import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../../api.ts';
import { Badge, Button, ErrorNotice, Field, Notice, useAction } from '../../ui.tsx';
import { fieldIssues } from './common.tsx';

type Limits = Schema<'AccountLimits'>;

/**
 * One account's limits (GET/PUT /v1/admin/users/:id/limits): the overrides an admin set, the limits
 * in force and the keys it holds. An empty field removes the override (null), so the platform
 * setting applies again.
 */
export function LimitsForm(props: { limits: Limits; onSaved: (limits: Limits) => void }) {
  const { overrides, effective, apiKeyCount } = props.limits;
  const [maxKeys, setMaxKeys] = useState(overrides.maxApiKeys === null ? '' : String(overrides.maxApiKeys));
  const [rpm, setRpm] = useState(overrides.requestsPerMinute === null ? '' : String(overrides.requestsPerMinute));
  const [saved, setSaved] = useState(false);
  const save = useAction(async () => {
    const value = (s: string) => (s.trim() === '' ? null : Number(s));
    const result = await ok(
      api().PUT('/v1/admin/users/{id}/limits', {
        params: { path: { id: props.limits.accountId } },
        body: { maxApiKeys: value(maxKeys), requestsPerMinute: value(rpm) },
      }),
    );
    setSaved(true);
    props.onSaved(result);
  });
  const issues = fieldIssues(save.error);
  return (
    <form
      id="limits-form"
      class="card"
      aria-labelledby="limits-heading"
      onSubmit={(e) => {
        e.preventDefault();
        setSaved(false);
        void save.run();
      }}
    >
      <h2 id="limits-heading">Limits</h2>
      <dl class="props">
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
        id="limits-max-keys"
        label="API key limit override"
        hint={issues['body.maxApiKeys'] ?? 'Empty: the platform setting (or the trial limit) applies. Lowering it revokes nothing.'}
      >
        <input
          id="limits-max-keys"
          type="number"
          min={0}
          max={1000}
          step={1}
          value={maxKeys}
          onInput={(e) => setMaxKeys(e.currentTarget.value)}
          aria-describedby="limits-max-keys-hint"
          aria-invalid={issues['body.maxApiKeys'] ? 'true' : undefined}
        />
      </Field>
      <Field
        id="limits-rpm"
        label="Requests a minute override"
        hint={issues['body.requestsPerMinute'] ?? 'Empty: the platform setting accountRequestsPerMinute applies.'}
      >
        <input
          id="limits-rpm"
          type="number"
          min={1}
          max={1000000}
          step={1}
          value={rpm}
          onInput={(e) => setRpm(e.currentTarget.value)}
          aria-describedby="limits-rpm-hint"
          aria-invalid={issues['body.requestsPerMinute'] ? 'true' : undefined}
        />
      </Field>
      <Button type="submit" kind="primary" busy={save.busy}>
        Save limits
      </Button>
    </form>
  );
}
