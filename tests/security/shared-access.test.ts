import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { customer, type Customer } from '../helpers/customer.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';
import { panelCalls } from '../helpers/panel-requests.ts';

/**
 * Shared access tried as an adversary would, over DynamoDB Local and the panel simulator: an
 * invitee reaches what it was granted on the one server shared with it and nothing else (not the
 * owner's other servers, not deletion, resize, reinstall or who has access), cannot escalate, is
 * refused at once when removed (the API and the panel's SFTP check as Wings asks it), and a share of
 * a deleted server does nothing. An invitation answers the same whether or not the e-mail has an account.
 */
let api: TestApi;
let sim: PanelSim;

beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 40, resourcesCacheMs: 0 }, repairs: false });
  sim = api.panel!.sim;
});
afterAll(async () => {
  await api?.stop();
});

interface Server {
  id: string;
  identifier: string;
  sftp: { username: string };
}

const deploy = async (token: string, name: string): Promise<Server> => {
  const res = await api.call('POST', '/v1/servers', { token, body: { name, eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 } });
  expect(res.status, res.text).toBe(201);
  await until(() => sim.server(res.body.identifier)?.status === null);
  return res.body;
};

/** What Wings sends when an SFTP client logs in (sftp.test.ts has the same). */
async function sftpLogin(identifier: string, username: string, password: string) {
  const node = sim.state.nodes.get(sim.server(identifier)!.node_id)!;
  const res = await fetch(`${sim.url}/api/remote/sftp/auth`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${node.daemon_token_id}.${node.daemon_token}`,
      'content-type': 'application/json',
      accept: 'application/json',
    },
    body: JSON.stringify({ type: 'password', username, password, ip: '203.0.113.9' }),
  });
  return { status: res.status, body: (await res.json()) as { permissions?: string[] } };
}

describe('shared access, as an adversary tries it', () => {
  let alice: Customer;
  let bob: Customer;
  let carol: Customer;
  let shared: Server;
  let other: Server;
  let bobs: Server;
  let carolShareId: string;

  it('an invitation answers the same for an e-mail with and without an account', async () => {
    alice = await customer(api, 'share-alice@example.com', { grantCents: 50_000 });
    bob = await customer(api, 'share-bob@example.com', { grantCents: 20_000 });
    shared = await deploy(alice.token, 'shared one');
    other = await deploy(alice.token, 'not shared');
    bobs = await deploy(bob.token, 'bobs');
    // Bob has an account; carol has none yet.
    const withAccount = await api.call('POST', `/v1/servers/${shared.id}/users`, {
      token: alice.token,
      body: { email: 'share-bob@example.com', permissions: ['backups'] },
    });
    const { result: without, calls: inviteCalls } = await panelCalls(sim, () =>
      api.call('POST', `/v1/servers/${shared.id}/users`, {
        token: alice.token,
        body: { email: 'Share-Carol@example.com', permissions: ['console', 'files'] },
      }),
    );
    // An invitation asks nothing of the panel (the subuser comes with the invitee's SFTP password).
    expect(inviteCalls).toEqual({});
    expect(withAccount.status, withAccount.text).toBe(201);
    expect(without.status, without.text).toBe(201);
    const shape = (b: Record<string, unknown>) => ({ ...b, id: 'x', email: 'x', permissions: 'x', createdAt: 'x', updatedAt: 'x' });
    expect(shape(withAccount.body)).toEqual(shape(without.body));
    expect(withAccount.body.joinedAt).toBeNull();
    // console brings power (the console socket can send power signals); read-only always.
    expect(without.body).toMatchObject({ email: 'share-carol@example.com', permissions: ['console', 'power', 'files', 'read-only'] });
    carolShareId = without.body.id;
  });

  it('the invitee signs up later: the share takes effect, marked shared, the owner named, its labels not shown', async () => {
    carol = await customer(api, 'share-carol@example.com');
    const list = await api.call('GET', '/v1/servers', { token: carol.token });
    expect(list.status).toBe(200);
    expect(list.body.data).toHaveLength(1);
    expect(list.body.data[0]).toMatchObject({
      id: shared.id,
      shared: true,
      sharedBy: 'share-alice@example.com',
      permissions: ['console', 'power', 'files', 'read-only'],
      labels: {},
    });
    // The SFTP login named is carol's own, not alice's.
    expect(list.body.data[0].sftp.username).not.toBe(shared.sftp.username);
    // The owner's list is unchanged: no shared mark.
    const own = await api.call('GET', '/v1/servers', { token: alice.token });
    expect(own.body.data.map((s: { id: string }) => s.id).sort()).toEqual([shared.id, other.id].sort());
    expect(own.body.data.every((s: Record<string, unknown>) => !('shared' in s))).toBe(true);
    const one = await api.call('GET', `/v1/servers/${shared.id}`, { token: carol.token });
    expect(one.status, one.text).toBe(200);
    expect(one.body).toMatchObject({
      id: shared.id,
      shared: true,
      sharedBy: 'share-alice@example.com',
      labels: {},
      live: expect.any(Object),
    });
    expect(one.body.sftp).toMatchObject({ username: list.body.data[0].sftp.username, enabled: false });
  });

  it('reaches what was granted, acting on the owner server; the activity keeps the real actor', async () => {
    const write = await api.call('POST', `/v1/servers/${shared.id}/files/write`, {
      token: carol.token,
      body: { file: 'from-carol.txt', content: 'hi' },
    });
    expect(write.status, write.text).toBe(200);
    expect(sim.readFile(shared.identifier, '/from-carol.txt')).toBe('hi');
    const power = await api.call('POST', `/v1/servers/${shared.id}/power`, { token: carol.token, body: { signal: 'start' } });
    expect(power.status, power.text).toBe(200);
    const logs = await api.call('GET', '/v1/account/logs', { token: alice.token });
    const entry = logs.body.data.find((e: { action: string }) => e.action === 'servers.power');
    expect(entry).toMatchObject({ actorEmail: 'share-carol@example.com', target: `server:${shared.id}` });
    expect(entry.credential.id).toMatch(/^session:/);
  });

  it('never reaches a permission not granted, deletion, resize, rename, reinstall or who has access', async () => {
    const refused: [string, string, unknown?][] = [
      ['GET', `/v1/servers/${shared.id}/backups`],
      ['GET', `/v1/servers/${shared.id}/startup`],
      ['DELETE', `/v1/servers/${shared.id}`],
      ['PATCH', `/v1/servers/${shared.id}`, { ramMb: 2048, cpuPercent: 200, diskMb: 4096 }],
      ['PATCH', `/v1/servers/${shared.id}`, { name: 'taken over' }],
      ['POST', `/v1/servers/${shared.id}/reinstall`],
      ['GET', `/v1/servers/${shared.id}/users`],
      // No escalation: an invitee cannot invite, not even itself with more.
      ['POST', `/v1/servers/${shared.id}/users`, { email: 'share-mallory@example.com', permissions: ['files'] }],
      ['PATCH', `/v1/servers/${shared.id}/users/${carolShareId}`, { permissions: ['backups'] }],
      ['DELETE', `/v1/servers/${shared.id}/users/${carolShareId}`],
    ];
    for (const [method, path, body] of refused) {
      const res = await api.call(method, path, { token: carol.token, ...(body ? { body } : {}) });
      expectEnvelope(res, 403, 'forbidden');
    }
    const server = await api.call('GET', `/v1/servers/${shared.id}`, { token: alice.token });
    expect(server.body).toMatchObject({ status: 'active', name: 'shared one', resources: { ramMb: 1024 } });
    const users = await api.call('GET', `/v1/servers/${shared.id}/users`, { token: alice.token });
    expect(users.body.data.map((u: { email: string; permissions: string[] }) => [u.email, u.permissions])).toEqual([
      ['share-bob@example.com', ['backups', 'read-only']],
      ['share-carol@example.com', ['console', 'power', 'files', 'read-only']],
    ]);
  });

  it("never reaches the owner's other server nor another account's: 404 exactly as an unknown id", async () => {
    for (const id of [other.id, bobs.id, '00000000-0000-4000-8000-000000000000']) {
      expectEnvelope(await api.call('GET', `/v1/servers/${id}`, { token: carol.token }), 404, 'not_found');
      expectEnvelope(await api.call('POST', `/v1/servers/${id}/power`, { token: carol.token, body: { signal: 'stop' } }), 404, 'not_found');
    }
  });

  it("the owner pays: the invitee's own balance is untouched by what it does on the server", async () => {
    const before = (await api.call('GET', '/v1/account', { token: carol.token })).body.balanceCents;
    await api.call('POST', `/v1/servers/${shared.id}/command`, { token: carol.token, body: { command: 'say hi' } });
    expect((await api.call('GET', '/v1/account', { token: carol.token })).body.balanceCents).toBe(before);
  });

  it('SFTP: the invitee becomes a subuser with only its permissions; removed, refused at once (API and SFTP)', async () => {
    const set = await api.call('POST', '/v1/account/sftp-password', { token: carol.token, body: {} });
    expect(set.status, set.text).toBe(200);
    const entry = set.body.servers.find((s: { serverId: string }) => s.serverId === shared.id);
    expect(entry).toMatchObject({ enabled: true });
    const login = await sftpLogin(shared.identifier, entry.username, set.body.password);
    expect(login.status, JSON.stringify(login.body)).toBe(200);
    expect(login.body.permissions).toContain('file.sftp');
    expect(login.body.permissions).toContain('control.console');
    expect(login.body.permissions).not.toContain('backup.read');
    expect(login.body.permissions).not.toContain('user.create');
    // Not the owner's other server.
    expect((await sftpLogin(other.identifier, `${entry.username.split('.')[0]}.${other.identifier}`, set.body.password)).status).toBe(403);

    // Narrowed to power only: no file.sftp left, SFTP refused; files refused by the API.
    const { result: narrowed, calls: narrowCalls } = await panelCalls(sim, () =>
      api.call('PATCH', `/v1/servers/${shared.id}/users/${carolShareId}`, { token: alice.token, body: { permissions: ['power'] } }),
    );
    expect(narrowed.status, narrowed.text).toBe(200);
    // One panel call: the subuser's permissions (shares.ts).
    expect(Object.keys(narrowCalls)).toEqual([expect.stringMatching(/^POST \/api\/client\/servers\/\w+\/users\/[\w-]+$/)]);
    expect(Object.values(narrowCalls)).toEqual([1]);
    expect((await sftpLogin(shared.identifier, entry.username, set.body.password)).status).toBe(403);
    expectEnvelope(await api.call('GET', `/v1/servers/${shared.id}/files`, { token: carol.token }), 403, 'forbidden');
    await api.call('PATCH', `/v1/servers/${shared.id}/users/${carolShareId}`, { token: alice.token, body: { permissions: ['files'] } });
    expect((await sftpLogin(shared.identifier, entry.username, set.body.password)).status).toBe(200);

    const { result: removed, calls: removeCalls } = await panelCalls(sim, () =>
      api.call('DELETE', `/v1/servers/${shared.id}/users/${carolShareId}`, { token: alice.token }),
    );
    expect(removed.status, removed.text).toBe(200);
    // One panel call: the subuser deleted.
    expect(Object.keys(removeCalls)).toEqual([expect.stringMatching(/^DELETE \/api\/client\/servers\/\w+\/users\/[\w-]+$/)]);
    expect(Object.values(removeCalls)).toEqual([1]);
    expect((await sftpLogin(shared.identifier, entry.username, set.body.password)).status).toBe(403);
    expectEnvelope(await api.call('GET', `/v1/servers/${shared.id}`, { token: carol.token }), 404, 'not_found');
    expectEnvelope(await api.call('GET', `/v1/servers/${shared.id}/files`, { token: carol.token }), 404, 'not_found');
    expect((await api.call('GET', '/v1/servers', { token: carol.token })).body.data).toEqual([]);
  });

  it('an invitee may leave; the owner cannot; a stranger gets 404', async () => {
    expect((await api.call('GET', `/v1/servers/${shared.id}/backups`, { token: bob.token })).status).toBe(200);
    expectEnvelope(await api.call('POST', `/v1/servers/${shared.id}/leave`, { token: alice.token }), 409, 'conflict');
    expectEnvelope(await api.call('POST', `/v1/servers/${shared.id}/leave`, { token: carol.token }), 404, 'not_found');
    const left = await api.call('POST', `/v1/servers/${shared.id}/leave`, { token: bob.token });
    expect(left.status, left.text).toBe(200);
    expectEnvelope(await api.call('GET', `/v1/servers/${shared.id}/backups`, { token: bob.token }), 404, 'not_found');
    expect((await api.call('GET', `/v1/servers/${shared.id}/users`, { token: alice.token })).body.data).toEqual([]);
  });

  it('at most 10 shares a server; the same e-mail twice is a conflict; your own address is refused', async () => {
    for (let i = 0; i < 10; i++) {
      const res = await api.call('POST', `/v1/servers/${other.id}/users`, {
        token: alice.token,
        body: { email: `share-many-${i}@example.com`, permissions: ['read-only'] },
      });
      expect(res.status, res.text).toBe(201);
    }
    const over = await api.call('POST', `/v1/servers/${other.id}/users`, {
      token: alice.token,
      body: { email: 'share-many-x@example.com', permissions: ['read-only'] },
    });
    expectEnvelope(over, 422, 'limit_exceeded');
    const again = await api.call('POST', `/v1/servers/${shared.id}/users`, {
      token: alice.token,
      body: { email: 'share-dup@example.com', permissions: ['files'] },
    });
    expect(again.status).toBe(201);
    expectEnvelope(
      await api.call('POST', `/v1/servers/${shared.id}/users`, {
        token: alice.token,
        body: { email: 'SHARE-DUP@example.com', permissions: ['power'] },
      }),
      409,
      'conflict',
    );
    expectEnvelope(
      await api.call('POST', `/v1/servers/${shared.id}/users`, {
        token: alice.token,
        body: { email: 'share-alice@example.com', permissions: ['power'] },
      }),
      400,
      'validation_failed',
    );
  });

  it('a share of a deleted server does nothing', async () => {
    const eve = await customer(api, 'share-eve@example.com');
    const doomed = await deploy(alice.token, 'doomed');
    await api.call('POST', `/v1/servers/${doomed.id}/users`, {
      token: alice.token,
      body: { email: 'share-eve@example.com', permissions: ['power'] },
    });
    expect((await api.call('GET', `/v1/servers/${doomed.id}`, { token: eve.token })).status).toBe(200);
    const deleted = await api.call('DELETE', `/v1/servers/${doomed.id}`, { token: alice.token });
    expect(deleted.status, deleted.text).toBe(200);
    expectEnvelope(await api.call('GET', `/v1/servers/${doomed.id}`, { token: eve.token }), 404, 'not_found');
    expectEnvelope(
      await api.call('POST', `/v1/servers/${doomed.id}/power`, { token: eve.token, body: { signal: 'start' } }),
      404,
      'not_found',
    );
    expect((await api.call('GET', '/v1/servers', { token: eve.token })).body.data).toEqual([]);
  });
});
