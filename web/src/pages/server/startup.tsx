import { useState } from 'preact/hooks';
import { api, fieldIssues, ok, type Schema } from '../../api.ts';
import { Field } from '../../form.tsx';
import { Button, ErrorNotice, Loading, Notice, useAction, useLoad } from '../../ui.tsx';
import type { TabProps } from './tab.ts';

/** The startup settings: the read-only command, the docker image and the egg's variables. */
export default function StartupTab({ server }: TabProps) {
  const id = server.id;
  const startup = useLoad(() => ok(api().GET('/v1/servers/{id}/startup', { params: { path: { id } } })), [id]);
  return (
    <section aria-labelledby="startup-title">
      <h2 id="startup-title">Startup</h2>
      <Loading state={startup} label="Reading the startup settings from the panel…">
        {(data) => <StartupForm key={JSON.stringify(data)} serverId={id} data={data} />}
      </Loading>
    </section>
  );
}

function StartupForm(props: { serverId: string; data: Schema<'ServerStartup'> }) {
  const { data } = props;
  const [values, setValues] = useState<Record<string, string>>(() => Object.fromEntries(data.variables.map((v) => [v.env, v.value])));
  const [image, setImage] = useState(data.dockerImage);
  const [result, setResult] = useState<Schema<'StartupUpdated'> | null>(null);
  const save = useAction(async () => {
    const variables: Record<string, string> = {};
    for (const v of data.variables) if (v.editable && values[v.env] !== v.value) variables[v.env] = values[v.env] ?? '';
    const body = { ...(Object.keys(variables).length ? { variables } : {}), ...(image !== data.dockerImage ? { dockerImage: image } : {}) };
    const updated = await ok(api().PUT('/v1/servers/{id}/startup', { params: { path: { id: props.serverId } }, body }));
    setResult(updated);
  });
  const issues = fieldIssues(save.error);
  const issueOf = (env: string) => issues[`variables.${env}`] ?? issues[`environment.${env}`];
  const images = Object.entries(data.dockerImages);
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        setResult(null);
        void save.run();
      }}
    >
      <Field id="startup-command" label="Startup command" hint="Set by the server’s egg; {{VARIABLES}} are filled from the values below.">
        {(control) => <textarea {...control} class="startup-command" readOnly rows={3} value={data.startup} />}
      </Field>
      <Field id="startup-image" label="Docker image" error={issues.dockerImage}>
        {(control) => (
          <select {...control} value={image} onChange={(e) => setImage(e.currentTarget.value)}>
            {images.length === 0 ? <option value={data.dockerImage}>{data.dockerImage}</option> : null}
            {images.map(([label, value]) => (
              <option key={value} value={value}>
                {label} ({value})
              </option>
            ))}
          </select>
        )}
      </Field>
      <h3>Variables</h3>
      {data.variables.length === 0 ? <p class="muted">This egg has no variables you can see.</p> : null}
      <div class="startup-vars">
        {data.variables.map((v) => {
          const fieldId = `startup-var-${v.env}`;
          const issue = issueOf(v.env);
          return (
            <Field
              key={v.env}
              id={fieldId}
              label={v.name}
              hint={
                <>
                  {v.description} <span class="mono">{v.env}</span>
                  {v.editable ? (
                    <>
                      {' '}
                      · Rules: <code>{v.rules || 'none'}</code>
                      {v.default !== null ? (
                        <>
                          {' '}
                          · Default: <code>{v.default || '(empty)'}</code>
                        </>
                      ) : null}
                    </>
                  ) : (
                    ' · Read-only: set by the egg.'
                  )}
                </>
              }
              error={issue}
            >
              {(control) => (
                <input
                  {...control}
                  data-testid="startup-variable"
                  value={values[v.env] ?? ''}
                  readOnly={!v.editable}
                  onInput={(e) => {
                    const value = e.currentTarget.value;
                    setValues((old) => ({ ...old, [v.env]: value }));
                  }}
                />
              )}
            </Field>
          );
        })}
      </div>
      <ErrorNotice error={save.error} onDismiss={save.clearError} />
      {save.busy ? <p role="status">Saving the startup settings to the panel…</p> : null}
      {result ? (
        <Notice kind="success">
          {result.changed.length ? `Saved: ${result.changed.join(', ')} changed.` : 'Nothing changed.'} The new settings apply at the next
          start: restart the server to use them.
        </Notice>
      ) : null}
      <div class="actions">
        <Button type="submit" kind="primary" busy={save.busy}>
          Save
        </Button>
      </div>
    </form>
  );
}
