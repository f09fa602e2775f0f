import { randomUUID } from 'node:crypto';
import type { LocalStack } from '../dev/stack.ts';
import { countByName, countDynamoCalls, describeWaves, table, waves } from './harness.ts';

/**
 * DynamoDB round trips per endpoint: requests go over HTTP to the in-process local API; a
 * middleware on the service's DocumentClient records every command (and when it ran, so calls
 * that ran side by side are told from sequential ones), and two catch-all latency-0 faults on the
 * panel simulator count the panel requests (application API and client API) each request made.
 */
export interface DeployedServer {
  id: string;
  identifier: string;
}

interface Observation {
  status: number;
  calls: string[];
  waves: number;
  panelApp: number;
  panelClient: number;
  /** The calls in order, side-by-side ones grouped. */
  sequence: string;
}

export async function benchRoundTrips(stack: LocalStack): Promise<{ report: string; server: DeployedServer }> {
  const sim = stack.panel?.sim;
  if (!sim) throw new Error('the round-trip benchmark needs the panel simulator');
  const counter = countDynamoCalls();
  const appRule = sim.faults.add({ method: '*', path: '/api/application/', effect: { kind: 'latency', ms: 0 } });
  const clientRule = sim.faults.add({ method: '*', path: '/api/client/', effect: { kind: 'latency', ms: 0 } });
  const hits = (id: string) => sim.faults.list().find((f) => f.id === id)?.hits ?? 0;

  const call = async (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
    token: string | null = stack.adminApiKey,
  ) => {
    const res = await fetch(`${stack.baseUrl}${path}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  };

  const observe = async (send: () => Promise<{ status: number }>): Promise<Observation> => {
    counter.reset();
    const app0 = hits(appRule);
    const client0 = hits(clientRule);
    const { status } = await send();
    const records = counter.records();
    return {
      status,
      calls: records.map((r) => r.name),
      waves: waves(records).length,
      panelApp: hits(appRule) - app0,
      panelClient: hits(clientRule) - client0,
      sequence: describeWaves(records),
    };
  };

  const rows: string[][] = [];
  const sequences: string[][] = [];
  const notes: string[] = [];
  /** Warm-up requests first (caches filled), then `runs` measured ones, each on its own. */
  const measure = async (label: string, send: (i: number) => Promise<{ status: number }>, runs = 3, warmup = 2): Promise<Observation[]> => {
    const first = await observe(() => send(0));
    for (let i = 1; i < warmup; i++) await send(i);
    const seen: Observation[] = [];
    for (let i = 0; i < runs; i++) seen.push(await observe(() => send(warmup + i)));
    const shapes = new Set(seen.map((o) => `${[...o.calls].sort().join()}|${o.waves}|${o.panelApp}|${o.panelClient}|${o.status}`));
    const o = seen[0]!;
    const statuses = [...new Set(seen.map((s) => s.status))].join('/');
    const same = shapes.size === 1;
    rows.push([
      label,
      statuses,
      same ? String(o.calls.length) : seen.map((s) => s.calls.length).join('/'),
      same ? String(o.waves) : seen.map((s) => s.waves).join('/'),
      same ? countByName(o.calls) || '—' : seen.map((s) => countByName(s.calls)).join(' / '),
      o.panelApp + o.panelClient === 0 && same
        ? '0'
        : seen
            .map((s) => `${s.panelApp + s.panelClient} (${s.panelApp} + ${s.panelClient})`)
            .filter((v, i, a) => a.indexOf(v) === i)
            .join(' / '),
    ]);
    sequences.push([label, o.sequence]);
    return [first, ...seen];
  };

  // Public and account group.
  await measure('GET /v1/health', () => call('GET', '/v1/health', undefined, {}, null));
  await measure('GET /v1/account', () => call('GET', '/v1/account'));
  await measure('GET /v1/keys', () => call('GET', '/v1/keys'));
  await measure('POST /v1/keys', (i) => call('POST', '/v1/keys', { name: `bench key ${i}`, scopes: ['account:read'] }));
  await measure('POST /v1/keys + Idempotency-Key', (i) =>
    call('POST', '/v1/keys', { name: `bench key idem ${i}`, scopes: ['account:read'] }, { 'idempotency-key': randomUUID() }),
  );

  // Catalog: the first request of the run reads the panels, later ones are served from the cache.
  const [coldRegions] = await measure('GET /v1/regions', () => call('GET', '/v1/regions'));
  notes.push(
    `The first GET /v1/regions of the run (catalog cache empty) made ${coldRegions!.calls.length} DynamoDB calls (${countByName(coldRegions!.calls)}) and ${coldRegions!.panelApp + coldRegions!.panelClient} panel calls; after that the panel reads come from the 30 s catalog cache.`,
  );

  // Servers: deploy (one unmeasured, three measured), list, read with live state, resize.
  const deployed: DeployedServer[] = [];
  const deploy = async (i: number) => {
    const res = await call('POST', '/v1/servers', { name: `bench ${i}`, eggId: 1, ramMb: 256, cpuPercent: 25, diskMb: 512 });
    if (res.status === 201) deployed.push({ id: res.json.id as string, identifier: res.json.identifier as string });
    return res;
  };
  await measure('POST /v1/servers (deploy)', deploy, 3, 1);
  const server = deployed[0];
  if (!server) throw new Error('no server was deployed');
  // Wait until the panel has installed it, so the read includes the live resources call.
  for (const end = Date.now() + 10_000; sim.server(server.identifier)?.status === 'installing' && Date.now() < end; )
    await new Promise((r) => setTimeout(r, 20));
  await measure('GET /v1/servers', () => call('GET', '/v1/servers'));
  await measure('GET /v1/servers/:id (live state)', () => call('GET', `/v1/servers/${server.id}`));
  const resize = (ramMb: number) => () => call('PATCH', `/v1/servers/${server.id}`, { ramMb, cpuPercent: 25, diskMb: 512 });
  // Alternating sizes: grow (runway check and node capacity read) and shrink (neither).
  const grow: Observation[] = [];
  const shrink: Observation[] = [];
  await resize(512)();
  await resize(256)();
  for (let i = 0; i < 3; i++) {
    grow.push(await observe(resize(512)));
    shrink.push(await observe(resize(256)));
  }
  for (const [label, seen] of [
    ['PATCH /v1/servers/:id (grow)', grow],
    ['PATCH /v1/servers/:id (shrink)', shrink],
  ] as const) {
    const o = seen[0]!;
    rows.push([
      label,
      [...new Set(seen.map((s) => s.status))].join('/'),
      String(o.calls.length),
      String(o.waves),
      countByName(o.calls),
      `${o.panelApp + o.panelClient} (${o.panelApp} + ${o.panelClient})`,
    ]);
    sequences.push([label, o.sequence]);
    if (seen.some((s) => s.calls.length !== o.calls.length))
      notes.push(`${label}: the call count varied between runs (${seen.map((s) => s.calls.length).join('/')}).`);
  }

  // Money.
  await measure('GET /v1/invoices', () => call('GET', '/v1/invoices'));
  await measure('GET /v1/account/transactions', () => call('GET', '/v1/account/transactions'));

  sim.faults.remove(appRule);
  sim.faults.remove(clientRule);
  const report = [
    '## 2. DynamoDB round trips per endpoint',
    '',
    'Each request goes over HTTP to the local API running in this process (panel simulator attached); a middleware on the service\'s DynamoDB DocumentClient records every command a request sends and when, and two catch-all latency-0 faults on the simulator count the panel requests. Each endpoint gets warm-up requests first (the admin\'s API key; settings cache, catalog cache, panel client and panel keys warm), then three measured requests; a cell with `/` lists differing runs. "Sequential waits" counts groups of calls that ran one after another (calls in one group ran side by side): the round trips a request waits for. Panel calls are application API + client API.',
    '',
    table(['endpoint', 'status', 'DynamoDB calls', 'sequential waits', 'commands', 'panel calls (app + client)'], rows),
    '',
    'What each request waits for, in order (one measured request; `[a + b]` ran side by side; items by key prefix: KEYHASH is the API key lookup, RATE the rate-limit window, ACCOUNT/PROFILE the account, IDEM an idempotency record, ACCOUNT/LOG an activity entry):',
    '',
    table(['endpoint', 'DynamoDB calls in order'], sequences),
    '',
    [
      ...notes,
      "Not in the counts, because the warm-up absorbed them: the API key's `lastUsedAt` write (two UpdateItems at most once an hour per key), the settings read (GetItem, cached 5 s per process), the panel keys (Secrets Manager, cached 5 minutes per Lambda; primed in this run) and the catalog's panel reads (cached 30 s).",
    ].join(' '),
  ].join('\n');
  return { report, server };
}
