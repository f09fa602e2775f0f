import { useEffect, useState } from 'preact/hooks';
import { AddonFields, type AddonKey, type AddonValues, addonValues, parseAddons } from '../../addons.tsx';
import { api, fieldIssues, ok, type Schema } from '../../api.ts';
import { millicents } from '../../format.ts';
import { Button, ErrorNotice, Loading, Notice, useAction, useLoad } from '../../ui.tsx';
import { signedPerHour } from './settings-resize.tsx';

type Server = Schema<'ServerWithLive'>;
const KEYS: AddonKey[] = ['backups', 'databases', 'ports'];

/**
 * Add-ons of a server (PUT /v1/servers/:id/addons): extra backup slots, databases and ports. The
 * price difference is the API's price of one extra (GET /v1/pricing) times the change: add-ons are
 * whole millicents an hour, so that is exactly what the server's price moves by.
 */
export function AddonsForm(props: { server: Server; reload: () => Promise<void> }) {
  const pricing = useLoad(() => ok(api().GET('/v1/pricing')));
  return (
    <Loading state={pricing} label="Loading the add-on prices…">
      {(p) => <AddonsFields server={props.server} reload={props.reload} prices={p.addons} />}
    </Loading>
  );
}

function AddonsFields(props: { server: Server; reload: () => Promise<void>; prices: Schema<'Pricing'>['addons'] }) {
  const { server, prices } = props;
  const [values, setValues] = useState<AddonValues>(addonValues(server.addons));
  const current = `${server.addons.backups}/${server.addons.databases}/${server.addons.ports}`;
  // Add-ons changed elsewhere (another tab, the API) become the form's starting point again.
  useEffect(() => setValues(addonValues(server.addons)), [current]);
  const [done, setDone] = useState<string | null>(null);
  const counts = parseAddons(values);
  const unit = Object.fromEntries(prices.map((p) => [p.addon, p.millicentsPerUnitHour])) as Record<AddonKey, number>;
  const diff = counts ? KEYS.reduce((sum, k) => sum + (counts[k] - server.addons[k]) * (unit[k] ?? 0), 0) : null;
  const same = counts !== null && KEYS.every((k) => counts[k] === server.addons[k]);
  const save = useAction(async () => {
    if (!counts) return;
    const updated = await ok(api().PUT('/v1/servers/{id}/addons', { params: { path: { id: server.id } }, body: counts }));
    setDone(
      `Add-ons saved: ${updated.addons.backups} extra backup slots, ${updated.addons.databases} extra databases, ${updated.addons.ports} extra ports; now ${millicents(updated.priceMillicentsPerHour)}/h.`,
    );
    await props.reload();
  });
  const issues = fieldIssues(save.error);

  return (
    <form
      id="addons-form"
      onSubmit={(event) => {
        event.preventDefault();
        setDone(null);
        void save.run();
      }}
    >
      <p class="muted">
        Now {server.addons.backups} extra backup slots, {server.addons.databases} extra databases and {server.addons.ports} extra ports, in
        the price of {millicents(server.priceMillicentsPerHour)}/h. The panel’s limits change at once; a removed add-on is no longer charged
        after the current hour.
      </p>
      <AddonFields
        idPrefix="addon"
        prices={prices}
        values={values}
        issues={issues}
        onChange={(v) => {
          setDone(null);
          setValues(v);
        }}
      />
      <p aria-live="polite">
        Price difference: <strong data-testid="addons-difference">{diff === null ? '—' : signedPerHour(diff)}</strong>
      </p>
      <ErrorNotice error={save.error} onDismiss={save.clearError} />
      {done ? <Notice kind="success">{done}</Notice> : null}
      <div class="actions">
        <Button type="submit" kind="primary" busy={save.busy} disabled={!counts || same || server.status !== 'active'}>
          Save add-ons
        </Button>
      </div>
    </form>
  );
}
