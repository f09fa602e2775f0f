import { startLocalStack } from '../dev/stack.ts';
import { appendLedger } from '../shared/ledger/index.ts';
import { runInstallWatch } from '../shared/servers/install-watch.ts';
import { table } from './harness.ts';

/**
 * Panel calls per day-two operation (issue: after the deploy): each operation is run once on a
 * warm stack (the topology and eggs copies read) against the simulator, and the panel requests it
 * caused are counted from the simulator's own log, by API. A refused request must cost nothing,
 * so one of those is measured too. The figures are what the docs state per operation.
 */
interface SimCounts {
  requests: Record<string, number>;
}

export async function benchDay2(): Promise<string> {
  const stack = await startLocalStack({
    tableName: 'bench-day2',
    panel: { installMs: 50, transitionMs: 20 },
    repairs: false,
    webhooks: false,
  });
  try {
    const sim = stack.panel!.sim;
    const counts = async (): Promise<SimCounts> => (await (await fetch(`${sim.url}/__sim/requests`)).json()) as SimCounts;
    const byApi = (before: SimCounts, after: SimCounts) => {
      const out = { application: 0, client: 0, routes: [] as string[] };
      for (const [route, n] of Object.entries(after.requests)) {
        const d = n - (before.requests[route] ?? 0);
        if (d <= 0) continue;
        if (route.includes('/api/application/')) out.application += d;
        else if (route.includes('/api/client/')) out.client += d;
        out.routes.push(`${route.replace(/^(\w+) \/api\/(application|client)/, '$1 ')}${d > 1 ? ` ×${d}` : ''}`);
      }
      return out;
    };
    const session = await fetch(`${stack.baseUrl}/dev/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'bench-day2@example.com' }),
    });
    const token = ((await session.json()) as { token: string }).token;
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${stack.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, json: text ? (JSON.parse(text) as Record<string, any>) : {} };
    };
    const account = await call('GET', '/v1/account');
    await appendLedger(String(account.json.id), [{ type: 'grant', amountCents: 100_000, idempotencyKey: 'bench-day2' }]);
    const deployBody = { name: 'bench day2', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 4096 };

    const installed = async (identifier: string) => {
      for (let i = 0; i < 400; i++) {
        const s = sim.server(identifier) as { status?: string | null } | undefined;
        if (s && s.status !== 'installing' && s.status !== 'install_failed') return;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error(`bench: ${identifier} did not finish installing`);
    };
    // Warm the shared copies with a first deploy, as any running platform has them.
    const warm = await call('POST', '/v1/servers', { ...deployBody, name: 'bench warm' });
    if (warm.status !== 201) throw new Error(`bench deploy failed: ${warm.status} ${JSON.stringify(warm.json)}`);

    const rows: (string | number)[][] = [];
    let serverId = '';
    let identifier = '';
    const measure = async (label: string, method: string, path: () => string, body?: unknown, expect = [200, 201, 202, 204]) => {
      const before = await counts();
      const res = await call(method, path(), body);
      const d = byApi(before, await counts());
      if (!expect.includes(res.status)) throw new Error(`bench ${label}: ${res.status} ${JSON.stringify(res.json)}`);
      rows.push([label, d.application, d.client, d.routes.join(', ') || '—']);
      return res.json;
    };
    const created = await measure('deploy (warm copies)', 'POST', () => '/v1/servers', deployBody);
    serverId = String(created.id);
    identifier = String(created.identifier);
    await installed(identifier);
    const s = (p = '') => `/v1/servers/${serverId}${p}`;

    await measure('quote', 'POST', () => '/v1/servers/quote', deployBody);
    await measure('rename', 'PATCH', () => s(), { name: 'bench renamed' });
    await measure('startup: read', 'GET', () => s('/startup'));
    await measure('startup: change a variable', 'PUT', () => s('/startup'), { variables: { MINECRAFT_VERSION: '1.21.1' } });
    await measure('startup: refused (not an image of the egg)', 'PUT', () => s('/startup'), { dockerImage: 'example/not-offered' }, [400]);
    await measure('SFTP password, first set', 'POST', () => '/v1/account/sftp-password', {});
    await measure('SFTP password, again', 'POST', () => '/v1/account/sftp-password', {});
    await measure('files: mkdir', 'POST', () => s('/files/mkdir'), { name: 'bench-dir' });
    await measure('files: write', 'POST', () => s('/files/write'), { file: 'bench-dir/a.txt', content: 'hello' });
    await measure('files: rename', 'POST', () => s('/files/rename'), { files: [{ from: 'bench-dir/a.txt', to: 'bench-dir/b.txt' }] });
    await measure('files: upload address', 'GET', () => s('/files/upload?directory=%2Fbench-dir'));
    const archive = await measure('files: compress', 'POST', () => s('/files/compress'), { files: ['bench-dir'] });
    await measure('files: decompress', 'POST', () => s('/files/decompress'), { file: String(archive.name ?? archive.file?.name ?? '') });
    const backup = await measure('backups: create', 'POST', () => s('/backups'), { name: 'bench' });
    const backupId = String(backup.id ?? backup.uuid);
    for (let i = 0; i < 400; i++) {
      const list = await call('GET', s('/backups'));
      if ((list.json.data as { id: string; completedAt: string | null }[] | undefined)?.find((b) => b.id === backupId)?.completedAt) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    await measure('backups: list', 'GET', () => s('/backups'));
    await measure('backups: download address', 'GET', () => s(`/backups/${backupId}/download`));
    await measure('backups: restore', 'POST', () => s(`/backups/${backupId}/restore`), {});
    await installed(identifier);
    for (let i = 0; i < 400 && (sim.server(identifier) as { status?: string | null }).status === 'restoring_backup'; i++)
      await new Promise((r) => setTimeout(r, 25));
    await measure('backups: delete', 'DELETE', () => s(`/backups/${backupId}`));
    // The install watch: one pass closes every watch that is due on the panel (the deploys' here),
    // with one listing call; a reinstall is refused while its server's watch runs, so it comes after.
    for (let i = 0; i < 3; i++) {
      const more = await call('POST', '/v1/servers', { ...deployBody, name: `bench watched ${i}` });
      await installed(String(more.json.identifier));
    }
    const pass = async (label: string, minutesAhead: number) => {
      const before = await counts();
      const summary = await runInstallWatch(new Date(Date.now() + minutesAhead * 60_000));
      const d = byApi(before, await counts());
      rows.push([`${label} (${summary.ended} ended)`, d.application, d.client, d.routes.join(', ') || '—']);
    };
    await pass('install watch: a pass over 5 installed servers', 10);
    await measure('reinstall', 'POST', () => s('/reinstall'));
    await installed(identifier);
    await pass('install watch: the pass that ends the reinstall', 20);
    await pass('install watch: a pass with nothing due', 30);

    return [
      '## 10. Panel calls per day-two operation',
      '',
      "Each operation once, on a warm stack (the topology and eggs copies read by an earlier deploy), counted from the simulator's request log (`bench/day2.ts`). Application calls spend the instance's 240-a-minute key, client calls the service user's 720. A request refused by our own checks costs 0.",
      '',
      table(['operation', 'application', 'client', 'panel routes'], rows),
    ].join('\n');
  } finally {
    await stack.stop();
  }
}
