import { useState } from 'preact/hooks';
import { api, ok } from '../../api.ts';
import { Button, Loading, Notice, Page, useLoad } from '../../ui.tsx';
import { regionLabel } from '../../regions.tsx';
import { InstanceCard, type RegionsKnown } from './instance-card.tsx';
import { InstanceForm } from './instance-form.tsx';

/**
 * Panels (GET /v1/admin/instances): each with its state, call budget and last test; register a
 * panel (POST), change one (PATCH), test it (POST …/test) and delete it (DELETE). The regions (by
 * name, with their tags) come from the catalogue (GET /v1/regions), which lists enabled panels only.
 */
export default function Instances() {
  const list = useLoad(() => ok(api().GET('/v1/admin/instances')));
  const regions = useLoad(() => ok(api().GET('/v1/regions')).catch(() => undefined));
  const [registering, setRegistering] = useState(false);
  const [message, setMessage] = useState('');
  const changed = (text: string) => {
    setMessage(text);
    void list.reload();
    void regions.reload();
  };
  // Until the catalogue answers, a panel's regions are unknown, not "none".
  const regionsOf = (id: string): RegionsKnown =>
    regions.data
      ? regions.data.data.filter((r) => r.instances.includes(id)).map((r) => regionLabel(r, true))
      : regions.loading
        ? 'loading'
        : 'unavailable';
  return (
    <Page
      title="Panels"
      actions={
        <Button kind="primary" onClick={() => setRegistering(!registering)} aria-expanded={registering ? 'true' : 'false'}>
          Register a panel
        </Button>
      }
    >
      {message ? <Notice kind="success">{message}</Notice> : null}
      {registering ? (
        <>
          <h2>Register a panel</h2>
          <InstanceForm
            onCancel={() => setRegistering(false)}
            onSaved={(saved) => {
              setRegistering(false);
              changed(`Registered ${saved.name}. Run its test to resolve the client key and list its nodes.`);
            }}
          />
        </>
      ) : null}
      <Loading state={list} label="Loading the panels…">
        {(page) => {
          const names = new Map(page.data.map((i) => [i.id, i.name]));
          return page.data.length === 0 ? (
            <p>No panel is registered yet. Register one to start placing servers.</p>
          ) : (
            page.data.map((i) => <InstanceCard key={i.id} instance={i} regions={regionsOf(i.id)} names={names} onChanged={changed} />)
          );
        }}
      </Loading>
    </Page>
  );
}
