import { useEffect, useRef, useState } from 'preact/hooks';
import { api, fieldIssues, ok, type Schema } from '../api.ts';
import { AddonFields, type AddonValues, parseAddons } from '../addons.tsx';
import { DeployProblem, QuotePanel } from '../deploy-quote.tsx';
import { changedEnvironment, EggSettings } from '../egg-variables.tsx';
import { parseLabels } from '../labels.tsx';
import { navigate } from '../router.ts';
import { useSession } from '../session.ts';
import { Field } from '../form.tsx';
import { Button, ErrorNotice, Loading, Notice, Page, Spinner, useAction, useLoad } from '../ui.tsx';
import { EggField, eggKey, RegionField } from './deploy/choices.tsx';
import { useQuote } from './deploy/quote.ts';
import { PlanCards } from './deploy/plans.tsx';
import { PRESETS, presetValues, ResourcesFieldset } from './deploy/resources.tsx';

/**
 * Deploy a server: the catalogue (GET /v1/eggs, /v1/regions, and /v1/pricing for the limits), the
 * egg's settings (GET /v1/eggs/:instanceId/:eggId), a live quote of the very body a deploy would
 * send (POST /v1/servers/quote, 400 ms after the last change), and the deploy itself (POST
 * /v1/servers with one Idempotency-Key per body, so a repeated click or a retry cannot deploy
 * twice), then the new server's page.
 */
type Catalogue = {
  pricing: Schema<'Pricing'>;
  eggs: Schema<'EggList'>;
  regions: Schema<'RegionList'>;
  plans: Schema<'PlanList'>;
};

export default function Deploy() {
  const catalogue = useLoad(async (): Promise<Catalogue> => {
    const [pricing, eggs, regions, plans] = await Promise.all([
      ok(api().GET('/v1/pricing')),
      ok(api().GET('/v1/eggs')),
      ok(api().GET('/v1/regions')),
      ok(api().GET('/v1/plans')),
    ]);
    return { pricing, eggs, regions, plans };
  });
  return (
    <Page title="Deploy a server">
      <Loading state={catalogue} label="Loading the catalogue…">
        {(c) =>
          c.eggs.data.length === 0 ? (
            <Notice kind="warning">
              No game is available to deploy right now{c.eggs.unavailableInstances.length ? ': a panel did not answer' : ''}. Try again
              later.
            </Notice>
          ) : (
            <DeployForm catalogue={c} />
          )
        }
      </Loading>
    </Page>
  );
}

function DeployForm(props: { catalogue: Catalogue }) {
  const { pricing, eggs: allEggs, regions, plans } = props.catalogue;
  const limits = pricing.serverLimits;
  const session = useSession();
  const instances = new Map(allEggs.data.map((e) => [e.instanceId, e.instanceName]));
  const instanceName = (id: string) => instances.get(id) ?? id.slice(0, 8);

  // The storefront: a plan fixes the resources, the eggs and the included add-ons ('' = custom size).
  const [planId, setPlanId] = useState(plans.customSizesAllowed ? '' : (plans.data[0]?.id ?? ''));
  const plan = plans.data.find((p) => p.id === planId);
  const eggs = { ...allEggs, data: allEggs.data.filter((e) => !plan || plan.eggIds.length === 0 || plan.eggIds.includes(e.eggId)) };
  const [egg, setEgg] = useState(eggKey(allEggs.data[0]!));
  const [name, setName] = useState('');
  const [region, setRegion] = useState('');
  const [resources, setResources] = useState(() => presetValues(limits, PRESETS[1]));
  const [env, setEnv] = useState<Record<string, string>>({});
  const [image, setImage] = useState('');
  const [labels, setLabels] = useState('');
  const [addons, setAddons] = useState<AddonValues>({ backups: '0', databases: '0', ports: '0' });
  const [subdomain, setSubdomain] = useState('');

  const summary = eggs.data.find((e) => eggKey(e) === egg) ?? eggs.data[0] ?? allEggs.data[0]!;
  const detail = useLoad(
    () => ok(api().GET('/v1/eggs/{instanceId}/{eggId}', { params: { path: { instanceId: summary.instanceId, eggId: summary.eggId } } })),
    [egg],
  );
  const eggDetail = detail.data && eggKey(detail.data) === egg ? detail.data : undefined;
  const eggRegions = regions.data.filter((r) => r.instances.includes(summary.instanceId));

  // The body a deploy sends; the quote sends the same (a placeholder name until one is typed, so
  // the price shows before the name does).
  const environment = changedEnvironment(eggDetail, env);
  const labelMap = parseLabels(labels);
  const addonCounts = parseAddons(addons);
  const body: Schema<'CreateServer'> = {
    name: name.trim(),
    eggId: summary.eggId,
    instanceId: summary.instanceId,
    region: region || null,
    ...(plan
      ? { ...plan.resources, planId: plan.id }
      : { ramMb: Number(resources.ramMb || 0), cpuPercent: Number(resources.cpuPercent || 0), diskMb: Number(resources.diskMb || 0) }),
    ...(Object.keys(environment).length ? { environment } : {}),
    ...(image && eggDetail && image !== eggDetail.defaultDockerImage ? { dockerImage: image } : {}),
    ...(Object.keys(labelMap).length ? { labels: labelMap } : {}),
    // Sent only when something is bought: the body stays as before otherwise.
    ...(addonCounts && Object.values(addonCounts).some((n) => n > 0) ? { addons: addonCounts } : {}),
    // A plan's included add-ons are part of it: the body must buy at least those.
    ...(plan ? { addons: withIncluded(addonCounts, plan.addons) } : {}),
  };
  const quoteBody = { ...body, name: body.name || 'New server' };
  const quoteKey = JSON.stringify(quoteBody);
  // The subdomain changes no price: only the deploy sends it.
  const deployBody: Schema<'CreateServer'> = { ...body, ...(subdomain.trim() ? { subdomain: subdomain.trim().toLowerCase() } : {}) };

  const quote = useQuote(quoteBody, quoteKey);

  const idempotency = useRef<{ body: string; key: string } | null>(null);
  const deploy = useAction(async () => {
    const sent = JSON.stringify(deployBody);
    if (idempotency.current?.body !== sent) idempotency.current = { body: sent, key: crypto.randomUUID() };
    const server = await ok(
      api().POST('/v1/servers', { body: deployBody, params: { header: { 'Idempotency-Key': idempotency.current.key } } }),
    );
    void session.refresh();
    navigate(`/servers/${server.id}`);
  });
  // A changed form makes the last deploy's complaint stale.
  const bodyKey = JSON.stringify(deployBody);
  useEffect(() => deploy.clearError(), [bodyKey]);

  const issues = { ...fieldIssues(quote.error), ...fieldIssues(deploy.error) };
  const chooseEgg = (value: string) => {
    setEgg(value);
    setEnv({});
    setImage('');
    // Egg ids are per panel: keep the region only where the new egg's panel has nodes.
    const next = eggs.data.find((e) => eggKey(e) === value);
    if (next && region && !regions.data.some((r) => r.region === region && r.instances.includes(next.instanceId))) setRegion('');
  };

  return (
    <div class="deploy">
      <form
        id="deploy-form"
        class="deploy-form"
        onSubmit={(e) => {
          e.preventDefault();
          if (!deploy.busy) void deploy.run();
        }}
      >
        {plans.data.length ? (
          <PlanCards plans={plans.data} customAllowed={plans.customSizesAllowed} value={planId} onChange={setPlanId} />
        ) : null}

        <fieldset>
          <legend>Game</legend>
          <EggField
            eggs={eggs.data}
            value={eggKey(summary)}
            hint={summary.description}
            issue={issues.eggId}
            withPanel={instances.size > 1}
            onChange={chooseEgg}
          />
          <Field id="deploy-name" label="Server name" hint="3 to 60 characters; you can rename it later." error={issues.name}>
            {(control) => (
              <input
                {...control}
                value={name}
                onInput={(e) => setName(e.currentTarget.value)}
                required
                minLength={3}
                maxLength={60}
                autoComplete="off"
              />
            )}
          </Field>
          <RegionField regions={eggRegions} value={region} minRamMb={limits.ramMb.min} issue={issues.region} onChange={setRegion} />
        </fieldset>

        {plan ? null : <ResourcesFieldset limits={limits} values={resources} issues={issues} onChange={setResources} />}

        {pricing.addons.some((a) => a.max > 0) ? (
          <fieldset>
            <legend>Add-ons (optional)</legend>
            <p class="muted">Each is added to the hourly price; change them later in the server’s settings.</p>
            <AddonFields
              idPrefix="deploy-addon"
              prices={pricing.addons}
              values={addons}
              issues={{ backups: issues['addons.backups'], databases: issues['addons.databases'], ports: issues['addons.ports'] }}
              onChange={setAddons}
            />
          </fieldset>
        ) : null}

        <fieldset>
          <legend>Game settings</legend>
          {detail.error && !eggDetail ? <ErrorNotice error={detail.error} /> : null}
          {eggDetail ? (
            <EggSettings
              egg={eggDetail}
              values={env}
              image={image}
              issues={issues}
              onValue={(k, v) => setEnv((old) => ({ ...old, [k]: v }))}
              onImage={setImage}
            />
          ) : detail.loading ? (
            <Spinner label="Loading the game’s settings…" />
          ) : null}
        </fieldset>

        <fieldset>
          <legend>Labels (optional)</legend>
          <Field
            id="deploy-labels"
            label="Labels"
            hint={
              <>
                For your own sorting, e.g. <code>env=prod, team=blue</code>; filter the server list by them.
              </>
            }
            error={Object.entries(issues).find(([k]) => k.startsWith('labels'))?.[1]}
          >
            {(control) => (
              <input {...control} value={labels} onInput={(e) => setLabels(e.currentTarget.value)} spellcheck={false} autoComplete="off" />
            )}
          </Field>
        </fieldset>

        <fieldset>
          <legend>Subdomain (optional)</legend>
          <Field
            id="deploy-subdomain"
            label="Subdomain"
            hint="A name players can type instead of the address: letters, digits and hyphens. You can set or change it later."
            error={issues.subdomain}
          >
            {(control) => (
              <input
                {...control}
                maxLength={63}
                value={subdomain}
                onInput={(e) => setSubdomain(e.currentTarget.value)}
                spellcheck={false}
                autoComplete="off"
              />
            )}
          </Field>
        </fieldset>
      </form>

      <section class="card quote-panel" aria-labelledby="quote-title">
        <h2 id="quote-title">Price</h2>
        <QuotePanel
          status={quote.status}
          quote={quote.quote}
          error={quote.error}
          instanceName={instanceName}
          missing={name.trim().length < 3 ? 'Give the server a name (3 to 60 characters) to deploy it.' : null}
        />
        {deploy.error ? (
          <>
            <ErrorNotice error={deploy.error} />
            <DeployProblem error={deploy.error} />
          </>
        ) : null}
        {deploy.busy ? <Spinner label="Deploying: choosing a node and creating the server on its panel (up to half a minute)…" /> : null}
        <Button type="submit" form="deploy-form" kind="primary" busy={deploy.busy}>
          Deploy
        </Button>
      </section>
    </div>
  );
}

/** The add-ons a plan deploy buys: what the form asks for, at least what the plan includes. */
function withIncluded(asked: Schema<'Addons'> | null | undefined, included: Schema<'Addons'>): Schema<'Addons'> {
  return {
    backups: Math.max(asked?.backups ?? 0, included.backups),
    databases: Math.max(asked?.databases ?? 0, included.databases),
    ports: Math.max(asked?.ports ?? 0, included.ports),
  };
}
