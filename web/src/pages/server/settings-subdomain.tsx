import { useState } from 'preact/hooks';
import { api, fieldIssues, ok, type Schema } from '../../api.ts';
import { Field } from '../../form.tsx';
import { Button, ErrorNotice, Notice, useAction } from '../../ui.tsx';

type Server = Schema<'ServerWithLive'>;

/** The server's name under the platform's DNS zone: set, change or remove (PUT/DELETE /v1/servers/{id}/subdomain). */
export function SubdomainForm({ server, reload }: { server: Server; reload: () => Promise<void> }) {
  const current = server.subdomain;
  const [name, setName] = useState(current?.name ?? '');
  const [done, setDone] = useState<string | null>(null);
  const save = useAction(async () => {
    const updated = await ok(api().PUT('/v1/servers/{id}/subdomain', { params: { path: { id: server.id } }, body: { name: name.trim() } }));
    setDone(`Players can now connect to ${updated.subdomain?.fqdn ?? name}.`);
    await reload();
  });
  const remove = useAction(async () => {
    await ok(api().DELETE('/v1/servers/{id}/subdomain', { params: { path: { id: server.id } } }));
    setName('');
    setDone('The subdomain was removed.');
    await reload();
  });
  const wanted = name.trim().toLowerCase();
  return (
    <>
      <p>
        A name players type instead of the address.
        {current?.srv
          ? ' This game looks the port up by itself, so the name alone is enough.'
          : ' Players add the port, as with the address.'}
      </p>
      {current && current.status !== 'active' ? (
        <Notice kind="warning">
          {current.status === 'failed'
            ? `${current.fqdn} is not published yet: the DNS provider did not take it. It is retried within minutes.`
            : `${current.fqdn} is being published.`}
        </Notice>
      ) : null}
      <form
        class="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          setDone(null);
          void save.run();
        }}
      >
        <Field
          id="subdomain-name"
          label="Subdomain"
          hint="Letters, digits and hyphens, up to 63 characters."
          error={fieldIssues(save.error).name}
        >
          {(control) => (
            <input
              {...control}
              required
              maxLength={63}
              value={name}
              onInput={(e) => setName(e.currentTarget.value)}
              spellcheck={false}
              autoComplete="off"
            />
          )}
        </Field>
        <Button type="submit" busy={save.busy} disabled={!wanted || wanted === current?.name}>
          {current ? 'Change' : 'Set'}
        </Button>
        {current ? (
          <Button
            onClick={() => {
              setDone(null);
              void remove.run();
            }}
            busy={remove.busy}
          >
            Remove
          </Button>
        ) : null}
      </form>
      <ErrorNotice
        error={save.error ?? remove.error}
        onDismiss={() => {
          save.clearError();
          remove.clearError();
        }}
      />
      {done ? <Notice kind="success">{done}</Notice> : null}
    </>
  );
}
