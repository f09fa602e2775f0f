import { startLocalStack } from '../dev/stack.ts';
import { appendLedger } from '../shared/ledger/index.ts';
import { table } from './harness.ts';

/**
 * One panel under customer load, with the panel's real limits (240 Application and 720 Client
 * requests a minute per key owner, enforced by the simulator as the panel does): what a deploy
 * costs in panel calls once the shared topology copy is warm, what reading one server costs per
 * refresh interval however often it is read, and how many customer requests a minute one panel
 * sustains with no error while the panel never answers 429.
 */
const CUSTOMERS = 20;
const CONNECTIONS = 16;
const LOAD_SECONDS = Number(process.env.BENCH_PANEL_SECONDS ?? 60);

interface SimCounts {
  requests: Record<string, number>;
  throttled: number;
}

export async function benchPanel(): Promise<string> {
  const stack = await startLocalStack({ tableName: 'bench-panel', panel: { installMs: 50, transitionMs: 20 } });
  try {
    const sim = stack.panel!.sim;
    const counts = async (): Promise<SimCounts> => (await (await fetch(`${sim.url}/__sim/requests`)).json()) as SimCounts;
    const sum = (c: SimCounts, api: 'application' | 'client') =>
      Object.entries(c.requests)
        .filter(([route]) => route.includes(`/api/${api}/`))
        .reduce((n, [, v]) => n + v, 0);
    const call = async (method: string, path: string, token: string, body?: unknown) => {
      const res = await fetch(`${stack.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
    };

    // Customers, each with one server. The first deploys warm the shared copies (topology, eggs).
    const customers: { token: string; serverId: string }[] = [];
    const deployCalls: number[] = [];
    for (let i = 0; i < CUSTOMERS; i++) {
      const session = await fetch(`${stack.baseUrl}/dev/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: `bench-panel-${i}@example.com` }),
      });
      const token = ((await session.json()) as { token: string }).token;
      const account = await call('GET', '/v1/account', token);
      await appendLedger(String(account.json.id), [{ type: 'grant', amountCents: 100_000, idempotencyKey: `bench-panel:${i}` }]);
      const before = await counts();
      const created = await call('POST', '/v1/servers', token, { name: `bench ${i}`, eggId: 1, ramMb: 256, cpuPercent: 25, diskMb: 512 });
      if (created.status !== 201) throw new Error(`bench deploy failed: ${created.status} ${JSON.stringify(created.json)}`);
      deployCalls.push(sum(await counts(), 'application') - sum(before, 'application'));
      customers.push({ token, serverId: String(created.json.id) });
    }
    const steady = deployCalls.slice(2);

    // The load: each connection is a customer reading their server (and now and then their list).
    const before = await counts();
    const statuses = new Map<string, number>();
    const end = Date.now() + LOAD_SECONDS * 1000;
    let sent = 0;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async (_, c) => {
        for (let n = 0; Date.now() < end; n++) {
          const customer = customers[(c + n * CONNECTIONS) % customers.length]!;
          const res =
            n % 5 === 4
              ? await call('GET', '/v1/servers', customer.token)
              : await call('GET', `/v1/servers/${customer.serverId}`, customer.token);
          sent++;
          const key = res.status === 200 ? '200' : `${res.status} ${(res.json.error as { code?: string } | undefined)?.code ?? ''}`.trim();
          statuses.set(key, (statuses.get(key) ?? 0) + 1);
        }
      }),
    );
    const after = await counts();
    const perMinute = (n: number) => Math.round((n * 60) / LOAD_SECONDS);
    const errors = [...statuses].filter(([k]) => k !== '200').reduce((n, [, v]) => n + v, 0);
    const app = sum(after, 'application') - sum(before, 'application');
    const client = sum(after, 'client') - sum(before, 'client');
    const perServer = (app / customers.length).toFixed(2);
    const refreshBound = Math.ceil(LOAD_SECONDS / 20) + 1;

    return [
      '## 6. One panel under customer load (the panel’s real limits)',
      '',
      `The simulator enforces the panel's real per-key-owner limits (240 Application, 720 Client requests a minute; 429 with the seconds to the window's end). ${CUSTOMERS} customers each deploy one server (sequentially), then ${CONNECTIONS} connections read for ${LOAD_SECONDS} s: each request is one customer's \`GET /v1/servers/:id\` (live state cached in DynamoDB, refreshed at most once per 20 s per server) or, every fifth, their \`GET /v1/servers\`. Panel calls are counted by the simulator.`,
      '',
      table(
        ['measure', 'value', 'panel limit'],
        [
          ['deploy: Application calls, first two (cold copies)', deployCalls.slice(0, 2).join(', '), ''],
          [
            'deploy: Application calls, steady state (max / mean)',
            `${Math.max(...steady)} / ${(steady.reduce((a, b) => a + b, 0) / steady.length).toFixed(2)}`,
            '',
          ],
          ['customer requests answered', `${sent} (${perMinute(sent)} a minute)`, ''],
          [
            'responses other than 200',
            errors === 0 ? '0' : JSON.stringify(Object.fromEntries([...statuses].filter(([k]) => k !== '200'))),
            '',
          ],
          ['panel Application calls', `${app} (${perMinute(app)} a minute)`, '240 a minute'],
          ['panel Client calls', `${client} (${perMinute(client)} a minute)`, '720 a minute'],
          [`Application calls per server in ${LOAD_SECONDS} s (one refresh per 20 s interval)`, perServer, `≤ ${refreshBound}`],
          ['panel 429 answers', String(after.throttled - before.throttled), '0'],
        ],
      ),
      '',
      `Without the shared live-state copy each \`GET /v1/servers/:id\` cost one Application and one Client call, so one panel sustained at most 240 such reads a minute for every customer together; here ${perMinute(sent)} customer requests a minute cost ${perMinute(app)} Application and ${perMinute(client)} Client calls. The rate here is bounded by this machine (local API, DynamoDB Local and the load share 2 cores), not by the panel.`,
    ].join('\n');
  } finally {
    await stack.stop();
  }
}
