import { connect, createServer, type AddressInfo } from 'node:net';
import ssh2 from 'ssh2';
import type { SFTPWrapper } from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityOf } from '../../dev/panel-sim/activity.ts';
import { startPanelSim, type PanelSim } from '../../dev/panel-sim/index.ts';
import { setUserPassword } from '../../dev/panel-sim/subusers.ts';
import { customer } from '../helpers/customer.ts';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * SFTP on the local stack, end to end with a real SSH client (ssh2): the simulator runs Wings' SFTP
 * server on each node (dev/panel-sim/sftp.ts), which asks the panel's `sftp/auth` rules, and the
 * server view names the address a client types. Nothing is mocked.
 */
const { Client } = ssh2;

let api: TestApi;
let sim: PanelSim;

let alice: { token: string; id: string };
let bob: { token: string; id: string };
let a1: Server;
let b1: Server;

beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 40, resourcesCacheMs: 0, sftp: {} }, repairs: false });
  sim = api.panel!.sim;
  alice = await customer(api, 'sftp-local-alice@example.com', { grantCents: 20_000 });
  bob = await customer(api, 'sftp-local-bob@example.com', { grantCents: 20_000 });
  a1 = await deploy(alice.token);
  b1 = await deploy(bob.token);
});
afterAll(async () => {
  await api?.stop();
});

interface Server {
  id: string;
  identifier: string;
  sftp: { host: string; port: number; username: string; enabled: boolean };
}

const deploy = async (token: string): Promise<Server> => {
  const res = await api.call('POST', '/v1/servers', {
    token,
    body: { name: 'sftp local', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
  });
  expect(res.status, res.text).toBe(201);
  await until(() => sim.server(res.body.identifier)?.status === null);
  return res.body;
};

interface Session {
  client: InstanceType<typeof Client>;
  sftp: SFTPWrapper;
  closed: Promise<void>;
}

/** An SFTP session as any client opens one: host, port, username and password from the API. */
function login(at: { host: string; port: number }, username: string, password: string): Promise<Session> {
  return new Promise((resolve, reject) => {
    const client = new Client();
    const closed = new Promise<void>((done) => client.on('close', () => done()));
    client.on('error', reject);
    client.on('ready', () => client.sftp((err, sftp) => (err ? reject(err) : resolve({ client, sftp, closed }))));
    client.connect({ host: at.host, port: at.port, username, password, readyTimeout: 15_000 });
  });
}

const refusal = (at: { host: string; port: number }, username: string, password: string) =>
  login(at, username, password).then(
    (s) => {
      s.client.end();
      return 'accepted';
    },
    (err: Error) => err.message,
  );

const names = (sftp: SFTPWrapper, path: string) =>
  new Promise<string[]>((resolve, reject) =>
    sftp.readdir(path, (err, list) => (err ? reject(err) : resolve(list.map((e) => e.filename).sort()))),
  );
const write = (sftp: SFTPWrapper, path: string, data: string) =>
  new Promise<void>((resolve, reject) => sftp.writeFile(path, data, (err) => (err ? reject(err) : resolve())));
const read = (sftp: SFTPWrapper, path: string) =>
  new Promise<string>((resolve, reject) => sftp.readFile(path, (err, data) => (err ? reject(err) : resolve(data.toString('utf8')))));
const step = (fn: (cb: (err?: Error | null) => void) => void) =>
  new Promise<void>((resolve, reject) => fn((err) => (err ? reject(err) : resolve())));

/** The SFTP status code of a refused request (3: permission denied). */
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (err: { code?: number }) => err.code,
  );
const PERMISSION_DENIED = 3;
const AUTH_FAILED = 'All configured authentication methods failed';

describe('SFTP on the local stack: a real client logs in with the password from the API', () => {
  let password: string;

  it("the server view names the address a client types: 127.0.0.1 and the node's real SFTP port", async () => {
    for (const s of [a1, b1]) {
      expect(s.sftp).toMatchObject({ host: '127.0.0.1', port: sim.sftpPorts!.get(sim.server(s.identifier)!.node_id), enabled: false });
    }
    const set = await api.call('POST', '/v1/account/sftp-password', { token: alice.token, body: {} });
    expect(set.status, set.text).toBe(200);
    password = set.body.password;
    expect(set.body.servers).toContainEqual({ serverId: a1.id, ...a1.sftp, enabled: true });
  });

  it('lists, uploads (read back through the API), reads, makes a folder, renames and removes', async () => {
    const { client, sftp } = await login(a1.sftp, a1.sftp.username, password);
    try {
      const listed = await api.call('GET', `/v1/servers/${a1.id}/files`, { token: alice.token });
      expect(listed.status, listed.text).toBe(200);
      const root = await names(sftp, '/');
      expect(root.length).toBeGreaterThan(0);
      expect(root).toEqual(listed.body.data.map((f: { name: string }) => f.name).sort());

      await write(sftp, '/uploaded.txt', 'over sftp\n');
      const contents = await api.call('GET', `/v1/servers/${a1.id}/files/contents?file=/uploaded.txt`, { token: alice.token });
      expect(contents.status, contents.text).toBe(200);
      expect(contents.body.content).toBe('over sftp\n');

      const viaApi = await api.call('POST', `/v1/servers/${a1.id}/files/write`, {
        token: alice.token,
        body: { file: 'from-api.txt', content: 'written by the API' },
      });
      expect(viaApi.status, viaApi.text).toBe(200);
      expect(await read(sftp, '/from-api.txt')).toBe('written by the API');

      await step((cb) => sftp.mkdir('/plugins-new', cb));
      await step((cb) => sftp.rename('/uploaded.txt', '/plugins-new/moved.txt', cb));
      expect(await names(sftp, '/plugins-new')).toEqual(['moved.txt']);
      await step((cb) => sftp.unlink('/plugins-new/moved.txt', cb));
      await step((cb) => sftp.rmdir('/plugins-new', cb));
      expect(sim.files(a1.identifier)).not.toHaveProperty('plugins-new/');
      expect(sim.readFile(a1.identifier, '/plugins-new/moved.txt')).toBeUndefined();
      // Wings reports each change to the panel's activity log, as SFTP.
      const logged = activityOf(sim.state)
        .filter((e) => e.event.startsWith('server:sftp.'))
        .map((e) => [e.event, e.properties.files, e.properties.using_sftp]);
      expect(logged).toEqual([
        ['server:sftp.create', ['/uploaded.txt'], true],
        ['server:sftp.create-directory', ['/plugins-new'], true],
        ['server:sftp.rename', [{ from: '/uploaded.txt', to: '/plugins-new/moved.txt' }], true],
        ['server:sftp.delete', ['/plugins-new/moved.txt'], true],
        ['server:sftp.delete', ['/plugins-new'], true],
      ]);
    } finally {
      client.end();
    }
  });

  it("a wrong password, another account's server and a server of another node are refused", async () => {
    expect(await refusal(a1.sftp, a1.sftp.username, `${password}x`)).toBe(AUTH_FAILED);
    const aliceUser = a1.sftp.username.split('.')[0];
    expect(await refusal(b1.sftp, `${aliceUser}.${b1.identifier}`, password)).toBe(AUTH_FAILED);
    const otherNode = [...sim.sftpPorts!].find(([nodeId]) => nodeId !== sim.server(a1.identifier)!.node_id)!;
    expect(await refusal({ host: '127.0.0.1', port: otherNode[1] }, a1.sftp.username, password)).toBe(AUTH_FAILED);
  });

  it('a subuser with read permissions only lists and reads, and may not write, make or delete', async () => {
    const viewer = sim.createUser({ email: 'sftp-viewer@example.com', username: 'sftpviewer' });
    setUserPassword(sim.state, viewer, 'viewer-password-1');
    const added = await fetch(`${sim.url}/api/client/servers/${a1.identifier}/users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sim.clientKey}`, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ email: viewer.email, permissions: ['file.sftp', 'file.read', 'file.read-content'] }),
    });
    expect(added.status).toBe(200);
    const { client, sftp } = await login(a1.sftp, `sftpviewer.${a1.identifier}`, 'viewer-password-1');
    try {
      expect(await names(sftp, '/')).toContain('from-api.txt');
      expect(await read(sftp, '/from-api.txt')).toBe('written by the API');
      expect(await codeOf(write(sftp, '/from-api.txt', 'changed'))).toBe(PERMISSION_DENIED);
      expect(await codeOf(write(sftp, '/new.txt', 'new'))).toBe(PERMISSION_DENIED);
      expect(await codeOf(step((cb) => sftp.mkdir('/dir', cb)))).toBe(PERMISSION_DENIED);
      expect(await codeOf(step((cb) => sftp.unlink('/from-api.txt', cb)))).toBe(PERMISSION_DENIED);
      expect(await codeOf(step((cb) => sftp.rename('/from-api.txt', '/x.txt', cb)))).toBe(PERMISSION_DENIED);
      expect(sim.readFile(a1.identifier, '/from-api.txt')).toBe('written by the API');
      expect(sim.readFile(a1.identifier, '/new.txt')).toBeUndefined();
    } finally {
      client.end();
    }
  });

  it('a share removed: the open session ends and the next login is refused', async () => {
    const share = await api.call('POST', `/v1/servers/${a1.id}/users`, {
      token: alice.token,
      body: { email: 'sftp-local-bob@example.com', permissions: ['files'] },
    });
    expect(share.status, share.text).toBe(201);
    // The invitee takes the share by using it once.
    expect((await api.call('GET', `/v1/servers/${a1.id}`, { token: bob.token })).status).toBe(200);
    const set = await api.call('POST', '/v1/account/sftp-password', { token: bob.token, body: {} });
    expect(set.status, set.text).toBe(200);
    const entry = set.body.servers.find((s: { serverId: string }) => s.serverId === a1.id);
    expect(entry).toMatchObject({ host: '127.0.0.1', port: a1.sftp.port, enabled: true });
    const session = await login(entry, entry.username, set.body.password);
    expect(await names(session.sftp, '/')).toContain('from-api.txt');

    const removed = await api.call('DELETE', `/v1/servers/${a1.id}/users/${share.body.id}`, { token: alice.token });
    expect(removed.status, removed.text).toBe(200);
    await session.closed;
    expect(await refusal(entry, entry.username, set.body.password)).toBe(AUTH_FAILED);
    // Bob's own server still opens with the same password.
    const own = await login(b1.sftp, b1.sftp.username, set.body.password);
    expect((await names(own.sftp, '/')).length).toBeGreaterThan(0);
    own.client.end();
  });
});

describe('a node whose SFTP port another program holds', () => {
  it('listens on a free port instead, and the node says so (npm start does not fail on a busy port)', async () => {
    // Another program on the port the first node would take (as the sandbox's agent holds 2024 here).
    const holder = createServer(() => {});
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const held = (holder.address() as AddressInfo).port;
    const busy = await startPanelSim({ sftp: { port: held } });
    try {
      const ports = [...busy.sftpPorts!.values()];
      expect(ports.length).toBeGreaterThan(1);
      expect(ports).not.toContain(held);
      expect(new Set(ports).size).toBe(ports.length);
      for (const node of busy.state.nodes.values()) expect(node.daemon_sftp).toBe(busy.sftpPorts!.get(node.id));
      // What listens there is an SSH server: its banner comes first.
      const banner = await new Promise<string>((resolve, reject) => {
        const socket = connect(ports[0]!, '127.0.0.1');
        socket.once('data', (data) => {
          socket.destroy();
          resolve(data.toString('utf8'));
        });
        socket.once('error', reject);
      });
      expect(banner).toMatch(/^SSH-2\.0-/);
    } finally {
      await busy.close();
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  });
});
