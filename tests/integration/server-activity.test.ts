process.env.PANEL_TIMEOUT_MS = '800';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityOf, logActivity } from '../../dev/panel-sim/activity.ts';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { customer } from '../helpers/customer.ts';
import { panelCalls as panelCallsOf } from '../helpers/panel-requests.ts';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * A server's activity (shared/servers/activity.ts): our entries and the panel simulator's activity
 * log (dev/panel-sim/activity.ts, the panel's ActivityLogController), merged newest first, paged
 * with a cursor holding both positions. Events the simulator has no path to make itself (SFTP,
 * another panel user's console) are written into its log with its own recorder, as Wings' SFTP
 * server and the panel's web UI would log them.
 */
let api: TestApi;
let sim: PanelSim;
let owner: { token: string; id: string };
let keyToken: string;
let keyId: string;
let server: { id: string; identifier: string };

interface Entry {
  id: string;
  at: string;
  source: 'api' | 'panel';
  action: string;
  summary: string;
  actor: { kind: string; name: string | null; email: string | null };
  credential: { kind: string; id: string | null; name: string | null };
  result: string;
  details: Record<string, unknown>;
}
interface Page {
  data: Entry[];
  nextCursor: string | null;
  panel: { status: string; code: string | null; message: string | null };
}

const activityPath = (id: string, limit: number, cursor?: string | null) =>
  `/v1/servers/${id}/activity?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
const activityCall = (identifier: string) => `GET /api/client/servers/${identifier}/activity`;

async function page(limit: number, cursor?: string | null, token = owner.token): Promise<{ body: Page; calls: Record<string, number> }> {
  const { result, calls } = await panelCallsOf(sim, () => api.call('GET', activityPath(server.id, limit, cursor), { token }));
  expect(result.status, result.text).toBe(200);
  return { body: result.body as Page, calls };
}

/** Every page, with the panel calls each made. */
async function walk(limit: number, between?: (pageNo: number) => Promise<void>): Promise<{ entries: Entry[]; callsPerPage: number[] }> {
  const entries: Entry[] = [];
  const callsPerPage: number[] = [];
  let cursor: string | null = null;
  for (let n = 0; n < 200; n++) {
    const { body, calls } = await page(limit, cursor);
    expect(body.panel.status).toBe('ok');
    expect(body.data.length).toBeLessThanOrEqual(limit);
    entries.push(...body.data);
    callsPerPage.push(calls[activityCall(server.identifier)] ?? 0);
    cursor = body.nextCursor;
    if (!cursor) return { entries, callsPerPage };
    await between?.(n);
  }
  throw new Error('the walk did not end');
}

const simServer = () => sim.state.serverByIdentifier(server.identifier)!;
/** A panel user other than the service user (a customer's SFTP user), as the panel keeps them. */
const sftpUser = () => [...sim.state.users.values()].find((u) => u.username === 'sftp-friend')!;

beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 200, transitionMs: 20, resourcesCacheMs: 0 } });
  sim = api.panel!.sim;
  owner = await customer(api, 'server-activity@example.com', { grantCents: 10_000 });
  const key = await api.call('POST', '/v1/keys', { token: owner.token, body: { name: 'deploy bot' } });
  expect(key.status, key.text).toBe(201);
  keyToken = key.body.secret;
  keyId = key.body.id;
  const created = await api.call('POST', '/v1/servers', {
    token: keyToken,
    body: { name: 'activity', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
  });
  expect(created.status, created.text).toBe(201);
  server = { id: created.body.id, identifier: created.body.identifier };
  await until(
    async () => (await api.call('GET', `/v1/servers/${server.id}`, { token: owner.token })).body.live?.installStatus === 'installed',
  );
  const now = new Date();
  sim.state.users.set(9001, {
    id: 9001,
    external_id: null,
    uuid: '00000000-0000-4000-8000-000000009001',
    username: 'sftp-friend',
    email: 'friend@panel.example',
    first_name: 'S',
    last_name: 'F',
    language: 'en',
    root_admin: false,
    use_totp: false,
    created_at: now,
    updated_at: now,
  });
});
afterAll(async () => {
  sim?.faults.clear();
  await api?.stop();
});

describe('one listing of both sources', () => {
  it('merges ours and the panel’s newest first; our own calls once; reads and SFTP from the panel; one panel call', async () => {
    expect((await api.call('POST', `/v1/servers/${server.id}/power`, { token: keyToken, body: { signal: 'start' } })).status).toBe(200);
    const write = await api.call('POST', `/v1/servers/${server.id}/files/write`, {
      token: owner.token,
      body: { file: 'server.properties', content: 'motd=hi' },
    });
    expect(write.status, write.text).toBe(200);
    // A read: the panel logs it (server:file.read by our service user), we do not.
    expect((await api.call('GET', `/v1/servers/${server.id}/files/contents?file=server.properties`, { token: owner.token })).status).toBe(
      200,
    );
    logActivity(
      sim.state,
      simServer(),
      'server:sftp.write',
      { user: sftpUser(), apiKey: null, ip: '198.51.100.7' },
      {
        files: ['plugins/a.yml'],
        using_sftp: true,
      },
    );
    // A command typed in the panel by another panel user: its text may hold a password.
    logActivity(
      sim.state,
      simServer(),
      'server:console.command',
      { user: sftpUser(), apiKey: null, ip: null },
      { command: 'login hunter2' },
    );

    const { body, calls } = await page(100);
    expect(calls).toEqual({ [activityCall(server.identifier)]: 1 });
    expect(body.panel).toEqual({ status: 'ok', code: null, message: null });
    const times = body.data.map((e) => Date.parse(e.at));
    expect(times).toEqual([...times].sort((a, b) => b - a));

    const power = body.data.filter((e) => e.action === 'servers.power');
    expect(power).toHaveLength(1);
    expect(power[0]).toMatchObject({
      source: 'api',
      actor: { kind: 'account', email: 'server-activity@example.com' },
      credential: { kind: 'api_key', id: keyId, name: 'deploy bot' },
      summary: 'Sent the power signal start',
      details: { signal: 'start' },
    });
    expect(body.data.find((e) => e.action === 'servers.files.write')).toMatchObject({ credential: { kind: 'session', name: null } });
    expect(body.data.find((e) => e.action === 'servers.create')).toBeDefined();
    // The panel's copies of our calls (made with our API key) are not listed a second time.
    expect(body.data.filter((e) => e.action === 'server:power.start' || e.action === 'server:file.write')).toEqual([]);
    expect(activityOf(sim.state).some((e) => e.event === 'server:power.start' && e.apiKey !== null)).toBe(true);
    expect(body.data.find((e) => e.action === 'server:file.read')).toMatchObject({
      source: 'panel',
      actor: { kind: 'platform' },
      credential: { kind: 'panel_api_key' },
      summary: 'Viewed the contents of /server.properties',
    });
    expect(body.data.find((e) => e.action === 'server:sftp.write')).toMatchObject({
      source: 'panel',
      actor: { kind: 'panel_user', name: 'sftp-friend', email: null },
      credential: { kind: 'sftp' },
      details: { files: ['plugins/a.yml'] },
    });
    const command = body.data.find((e) => e.action === 'server:console.command')!;
    expect(command.details).toEqual({ length: 'login hunter2'.length });
    expect(JSON.stringify(body)).not.toContain('hunter2');
    expect(body.nextCursor).toBeNull();
  });

  it('names the actor of each entry: an admin acting on the server is named, not the owner', async () => {
    expect((await api.call('POST', `/v1/admin/servers/${server.id}/suspend`)).status).toBe(200);
    const { body, calls } = await page(100);
    // Suspended: the panel refuses the server's routes, so it is not asked.
    expect(calls).toEqual({});
    expect(body.panel).toMatchObject({ status: 'not_read', code: 'conflict' });
    expect(body.data[0]).toMatchObject({ action: 'servers.admin_suspend', actor: { kind: 'account', email: 'admin@localhost' } });
    expect(body.data.every((e) => e.source === 'api')).toBe(true);
    expect((await api.call('POST', `/v1/admin/servers/${server.id}/unsuspend`)).status).toBe(200);
  });
});

describe('a panel in trouble', () => {
  it('does not answer: our entries, marked `unavailable` with `panel_timeout`; its events follow once it answers', async () => {
    sim.faults.add({ method: 'GET', path: `/api/client/servers/${server.identifier}/activity`, effect: { kind: 'timeout' } });
    const first = await page(5);
    expect(first.body.panel).toMatchObject({ status: 'unavailable', code: 'panel_timeout' });
    expect(first.body.panel.message).toMatch(/did not answer/);
    expect(first.body.data.length).toBe(5);
    expect(first.body.data.every((e) => e.source === 'api')).toBe(true);
    sim.faults.clear();
    const second = await page(100, first.body.nextCursor);
    expect(second.body.panel.status).toBe('ok');
    expect(second.body.data.some((e) => e.source === 'panel')).toBe(true);
  });

  it('answers 503: the same, with `panel_unavailable`', async () => {
    sim.faults.add({ method: 'GET', path: `/api/client/servers/${server.identifier}/activity`, effect: { kind: 'status', status: 503 } });
    const { body } = await page(3);
    sim.faults.clear();
    expect(body.panel.status).toBe('unavailable');
    expect(body.panel.code).toMatch(/^panel_/);
    expect(body.data.length).toBe(3);
  });
});

describe('access', () => {
  it('another account’s server is 404, and the panel is not asked', async () => {
    const other = await customer(api, 'server-activity-stranger@example.com');
    const { result, calls } = await panelCallsOf(sim, () => api.call('GET', activityPath(server.id, 10), { token: other.token }));
    expect(result.status).toBe(404);
    expect(result.body.error.code).toBe('not_found');
    expect(calls).toEqual({});
  });
});

describe('paging the merge', () => {
  it('walks every entry once, in order, with at most one panel call a page, though new entries arrive between pages', async () => {
    // Some of ours first.
    for (let k = 0; k < 4; k++) {
      const res = await api.call('POST', `/v1/servers/${server.id}/files/write`, {
        token: keyToken,
        body: { file: `n${k}.txt`, content: 'x' },
      });
      expect(res.status).toBe(200);
    }
    // Panel events above all of ours: 120 stamped in the next second (more than the panel's page of
    // 100, several to a second), and 30 below all of ours; so ours sit between the panel's pages.
    const next = Math.ceil(Date.now() / 1000) * 1000 + 1000;
    const sftp = (files: string[], at: number) => {
      const e = logActivity(
        sim.state,
        simServer(),
        'server:sftp.delete',
        { user: sftpUser(), apiKey: null, ip: null },
        { files, using_sftp: true },
      );
      e.timestamp = new Date(at);
    };
    for (let k = 0; k < 30; k++) sftp([`old-${k}.log`], next - 300_000 - k * 1000);
    for (let k = 0; k < 120; k++) sftp([`new-${k}.log`], next);
    const snapshot = (await walk(100)).entries;
    expect(snapshot.length).toBeGreaterThan(150);
    const times = snapshot.map((e) => Date.parse(e.at));
    expect(times).toEqual([...times].sort((a, b) => b - a));

    // The same walk in pages of 15 (each page's panel call counts against the account's share of the
    // panel's budget) while both sources grow above it between pages: ours by a call, the panel's
    // by 40 events stamped after everything (they shift its pages down).
    let late = next + 1000;
    const { entries, callsPerPage } = await walk(15, async (n) => {
      if (n % 3 !== 0) return;
      await api.call('POST', `/v1/servers/${server.id}/files/write`, { token: keyToken, body: { file: `late-${n}.txt`, content: 'y' } });
      for (let k = 0; k < 40; k++) sftp([`late-${n}-${k}`], late);
      late += 1000;
    });
    // No entry twice, none skipped, none of the late ones: the same walk, in order.
    const ids = entries.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(snapshot.map((e) => e.id));
    expect(Math.max(...callsPerPage)).toBe(1);
  });

  it('refuses a cursor of another listing', async () => {
    const logs = await api.call('GET', '/v1/account/logs?limit=1', { token: owner.token });
    expect(logs.body.nextCursor).toBeTruthy();
    const res = await api.call('GET', activityPath(server.id, 2, logs.body.nextCursor), { token: owner.token });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_cursor');
  });
});

describe('the simulator’s activity route, as the panel answers it', () => {
  const get = (query: string) =>
    fetch(`${sim.url}/api/client/servers/${server.identifier}/activity?${query}`, {
      headers: { authorization: `Bearer ${sim.clientKey}`, accept: 'application/json' },
    });

  it('sorts by timestamp only, filters by event (partial), pages by at most 100 and hides file.upload', async () => {
    expect((await get('sort=-id')).status).toBe(400);
    expect((await get('filter[actor]=x')).status).toBe(400);
    logActivity(sim.state, simServer(), 'server:file.upload', { user: null, apiKey: null, ip: null });
    const big = (await (await get('sort=-timestamp&per_page=500')).json()) as {
      data: Array<{ attributes: { event: string; timestamp: string } }>;
      meta: { pagination: { per_page: number } };
    };
    expect(big.meta.pagination.per_page).toBe(100);
    expect(big.data.some((d) => d.attributes.event === 'server:file.upload')).toBe(false);
    const filtered = (await (await get('filter[event]=power')).json()) as { data: Array<{ attributes: { event: string } }> };
    expect(filtered.data.length).toBeGreaterThan(0);
    expect(filtered.data.every((d) => d.attributes.event.includes('power'))).toBe(true);
    const withActor = (await (await get('include=actor&sort=-timestamp&per_page=1')).json()) as {
      data: Array<{ attributes: { relationships?: { actor: { object: string } } } }>;
    };
    expect(withActor.data[0]!.attributes.relationships?.actor.object).toMatch(/^(user|null_resource)$/);
  });
});
