import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, fieldIssues, ok, type Schema } from '../api.ts';
import { DeployProblem, QuotePanel, type QuoteStatus } from '../deploy-quote.tsx';
import { changedEnvironment, EggSettings } from '../egg-variables.tsx';
import { mb } from '../format.ts';
import { parseLabels } from '../labels.tsx';
import { navigate } from '../router.ts';
import { useSession } from '../session.ts';
import { Button, ErrorNotice, Field, Loading, Notice, Page, Spinner, useAction, useLoad } from '../ui.tsx';

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
};

export default function Deploy() {
  const catalogue = useLoad(async (): Promise<Catalogue> => {
    const [pricing, eggs, regions] = await Promise.all([
      ok(api().GET('/v1/pricing')),
      ok(api().GET('/v1/eggs')),
      ok(api().GET('/v1/regions')),
    ]);
    return { pricing, eggs, regions };
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

const PRESETS = [
  { name: 'Small', ramMb: 1024, cpuPercent: 50, diskMb: 5120 },
  { name: 'Medium', ramMb: 2048, cpuPercent: 100, diskMb: 10240 },
  { name: 'Large', ramMb: 4096, cpuPercent: 200, diskMb: 20480 },
] as const;

type Limits = Schema<'Pricing'>['serverLimits'];
type Resource = 'ramMb' | 'cpuPercent' | 'diskMb';
const clamp = (limits: Limits, key: Resource, value: number) => Math.min(limits[key].max, Math.max(limits[key].min, value));
const eggKey = (e: { instanceId: string; eggId: number }) => `${e.instanceId}/${e.eggId}`;

function DeployForm(props: { catalogue: Catalogue }) {
  const { pricing, eggs, regions } = props.catalogue;
  const limits = pricing.serverLimits;
  const session = useSession();
  const instances = new Map(eggs.data.map((e) => [e.instanceId, e.instanceName]));
  const instanceName = (id: string) => instances.get(id) ?? id.slice(0, 8);

  const [egg, setEgg] = useState(eggKey(eggs.data[0]!));
  const [name, setName] = useState('');
  const [region, setRegion] = useState('');
  const [resources, setResources] = useState<Record<Resource, string>>(() => ({
    ramMb: String(clamp(limits, 'ramMb', PRESETS[1].ramMb)),
    cpuPercent: String(clamp(limits, 'cpuPercent', PRESETS[1].cpuPercent)),
    diskMb: String(clamp(limits, 'diskMb', PRESETS[1].diskMb)),
  }));
  const [env, setEnv] = useState<Record<string, string>>({});
  const [image, setImage] = useState('');
  const [labels, setLabels] = useState('');

  const summary = eggs.data.find((e) => eggKey(e) === egg) ?? eggs.data[0]!;
  const detail = useLoad(
    () => ok(api().GET('/v1/eggs/{instanceId}/{eggId}', { params: { path: { instanceId: summary.instanceId, eggId: summary.eggId } } })),
    [egg],
  );
  const eggDetail = detail.data && eggKey(detail.data) === egg ? detail.data : undefined;
  const eggRegions = regions.data.filter((r) => r.instances.includes(summary.instanceId));
  const chosenRegion = eggRegions.find((r) => r.region === region);

  // The body a deploy sends; the quote sends the same (a placeholder name until one is typed, so
  // the price shows before the name does).
  const environment = changedEnvironment(eggDetail, env);
  const labelMap = parseLabels(labels);
  const body: Schema<'CreateServer'> = {
    name: name.trim(),
    eggId: summary.eggId,
    instanceId: summary.instanceId,
    region: region || null,
    ramMb: Number(resources.ramMb || 0),
    cpuPercent: Number(resources.cpuPercent || 0),
    diskMb: Number(resources.diskMb || 0),
    ...(Object.keys(environment).length ? { environment } : {}),
    ...(image && eggDetail && image !== eggDetail.defaultDockerImage ? { dockerImage: image } : {}),
    ...(Object.keys(labelMap).length ? { labels: labelMap } : {}),
  };
  const quoteBody = { ...body, name: body.name || 'New server' };
  const quoteKey = JSON.stringify(quoteBody);

  const quote = useQuote(quoteBody, quoteKey);

  const idempotency = useRef<{ body: string; key: string } | null>(null);
  const deploy = useAction(async () => {
    const sent = JSON.stringify(body);
    if (idempotency.current?.body !== sent) idempotency.current = { body: sent, key: crypto.randomUUID() };
    const server = await ok(api().POST('/v1/servers', { body, params: { header: { 'Idempotency-Key': idempotency.current.key } } }));
    void session.refresh();
    navigate(`/servers/${server.id}`);
  });
  // A changed form makes the last deploy's complaint stale.
  const bodyKey = JSON.stringify(body);
  useEffect(() => deploy.clearError(), [bodyKey]);

  const issues = { ...fieldIssues(quote.error), ...fieldIssues(deploy.error) };
  const setResource = (key: Resource) => (e: Event) => {
    const value = (e.currentTarget as HTMLInputElement).value;
    setResources((r) => ({ ...r, [key]: value }));
  };
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
        <fieldset>
          <legend>Game</legend>
          <Field id="deploy-egg" label="Game (egg)" hint={summary.description} error={issues.eggId}>
            {(control) => (
              <select {...control} value={egg} onChange={(e) => chooseEgg(e.currentTarget.value)}>
                {groupByNest(eggs.data, instances.size > 1).map(([group, list]) => (
                  <optgroup key={group} label={group}>
                    {list.map((e) => (
                      <option key={eggKey(e)} value={eggKey(e)}>
                        {e.name}
                      </option>
                    ))}
                  </optgroup>
                ))}
              </select>
            )}
          </Field>
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
          <Field
            id="deploy-region"
            label="Region"
            hint={
              chosenRegion
                ? `${chosenRegion.nodes} node${chosenRegion.nodes === 1 ? '' : 's'}; room for up to ${mb(Math.max(0, chosenRegion.largestFreeMemoryMb))} of RAM on one node, ${mb(Math.max(0, chosenRegion.freeDiskMb))} of disk free.`
                : 'Any region: placed on the node with the most room.'
            }
            error={issues.region}
          >
            {(control) => (
              <select {...control} value={region} onChange={(e) => setRegion(e.currentTarget.value)}>
                <option value="">Any region</option>
                {eggRegions.map((r) => (
                  <option key={r.region} value={r.region}>
                    {r.name ? `${r.region} — ${r.name}` : r.region}
                    {r.nodes === 0 || r.largestFreeMemoryMb < limits.ramMb.min ? ' (full)' : ` (up to ${mb(r.largestFreeMemoryMb)} free)`}
                  </option>
                ))}
              </select>
            )}
          </Field>
        </fieldset>

        <fieldset>
          <legend>Resources</legend>
          <div class="actions presets">
            {PRESETS.map((p) => {
              const values = {
                ramMb: String(clamp(limits, 'ramMb', p.ramMb)),
                cpuPercent: String(clamp(limits, 'cpuPercent', p.cpuPercent)),
                diskMb: String(clamp(limits, 'diskMb', p.diskMb)),
              };
              const pressed =
                values.ramMb === resources.ramMb && values.cpuPercent === resources.cpuPercent && values.diskMb === resources.diskMb;
              return (
                <Button key={p.name} aria-pressed={pressed ? 'true' : 'false'} onClick={() => setResources(values)}>
                  {p.name}: {mb(Number(values.ramMb))}, {Number(values.cpuPercent) / 100} CPU, {mb(Number(values.diskMb))} disk
                </Button>
              );
            })}
          </div>
          <div class="resource-fields">
            <ResourceField
              id="deploy-ram"
              label="RAM (MB)"
              value={resources.ramMb}
              limits={limits.ramMb}
              step={256}
              issue={issues.ramMb}
              onInput={setResource('ramMb')}
            >
              {mb(Number(resources.ramMb || 0))}
            </ResourceField>
            <ResourceField
              id="deploy-cpu"
              label="CPU (%)"
              value={resources.cpuPercent}
              limits={limits.cpuPercent}
              step={25}
              issue={issues.cpuPercent}
              onInput={setResource('cpuPercent')}
            >
              {Number(resources.cpuPercent || 0) / 100} core{resources.cpuPercent === '100' ? '' : 's'}
            </ResourceField>
            <ResourceField
              id="deploy-disk"
              label="Disk (MB)"
              value={resources.diskMb}
              limits={limits.diskMb}
              step={512}
              issue={issues.diskMb}
              onInput={setResource('diskMb')}
            >
              {mb(Number(resources.diskMb || 0))}
            </ResourceField>
          </div>
        </fieldset>

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
      </form>

      <section class="card quote-panel" aria-labelledby="quote-title">
        <h2 id="quote-title">Price</h2>
        <QuotePanel status={quote.status} quote={quote.quote} error={quote.error} instanceName={instanceName} />
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

function ResourceField(props: {
  id: string;
  label: string;
  value: string;
  limits: { min: number; max: number };
  step: number;
  issue: string | undefined;
  onInput: (e: Event) => void;
  children: ComponentChildren;
}) {
  return (
    <Field
      id={props.id}
      label={props.label}
      hint={
        <>
          {props.children} · {props.limits.min} to {props.limits.max}
        </>
      }
      error={props.issue}
    >
      {(control) => (
        <input
          {...control}
          type="number"
          inputMode="numeric"
          min={props.limits.min}
          max={props.limits.max}
          step={props.step}
          value={props.value}
          onInput={props.onInput}
          required
        />
      )}
    </Field>
  );
}

/** Eggs grouped by nest (and panel, when there are several), in the catalogue's order. */
function groupByNest(eggs: Schema<'EggSummary'>[], withPanel: boolean): [string, Schema<'EggSummary'>[]][] {
  const groups = new Map<string, Schema<'EggSummary'>[]>();
  for (const e of eggs) {
    const group = withPanel ? `${e.nestName} · ${e.instanceName}` : e.nestName;
    groups.set(group, [...(groups.get(group) ?? []), e]);
  }
  return [...groups];
}

/**
 * The quote of a body, asked 400 ms after its last change; an answer to an older body is dropped.
 * `ready` only while the shown price is the current body's. (The egg's settings need not be loaded
 * first: until one is changed the body sends none, which is what the egg's defaults give.)
 */
function useQuote(body: Schema<'CreateServer'>, key: string) {
  const [state, setState] = useState<{ status: QuoteStatus; quote?: Schema<'Quote'>; error?: unknown }>({ status: 'waiting' });
  const latest = useRef(0);
  useEffect(() => {
    const run = ++latest.current;
    setState((s) => ({ ...s, status: 'updating' }));
    const timer = setTimeout(() => {
      ok(api().POST('/v1/servers/quote', { body })).then(
        (quote) => {
          if (run === latest.current) setState({ status: 'ready', quote });
        },
        (error) => {
          if (run === latest.current) setState((s) => ({ ...s, status: 'error', error }));
        },
      );
    }, 400);
    return () => clearTimeout(timer);
  }, [key]);
  return state;
}
