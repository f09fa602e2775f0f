import { promises as dns } from 'node:dns';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { updateServerRecords } from '../../shared/servers/subdomain.ts';
import { customer } from '../helpers/customer.ts';
import { getRaw } from '../helpers/db.ts';
import { panelCalls } from '../helpers/panel-requests.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';

/**
 * Server subdomains end to end: the API over real HTTP, DynamoDB Local, the panel simulator, and
 * the local DNS server (dev/local-dns.ts) asked with Node's own resolver, as a player's machine would.
 */
let api: TestApi;
let resolver: dns.Resolver;
const ZONE = 'play.test';

beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 40, resourcesCacheMs: 0 }, dns: { zone: ZONE } });
  resolver = new dns.Resolver({ timeout: 2000, tries: 1 });
  resolver.setServers([`127.0.0.1:${api.dns!.port}`]);
});
afterAll(async () => api?.stop());

interface ServerBody {
  id: string;
  address: { ip: string; port: number };
  subdomain: { name: string; fqdn: string; srv: { name: string; port: number } | null; status: string } | null;
}

const deploy = async (token: string, extra: Record<string, unknown> = {}) =>
  api.call('POST', '/v1/servers', { token, body: { name: 'dns server', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048, ...extra } });

/** The name does not exist for the resolver (NXDOMAIN). */
const expectGone = async (lookup: Promise<unknown>) => expect(lookup).rejects.toMatchObject({ code: 'ENOTFOUND' });

describe('a server with a subdomain', () => {
  let token: string;
  let server: ServerBody;

  it('deployed with `subdomain`: the A and SRV records resolve to its address and port', async () => {
    ({ token } = await customer(api, 'dns@example.com', { grantCents: 50_000 }));
    const res = await deploy(token, { subdomain: 'Survival' });
    expect(res.status, res.text).toBe(201);
    server = res.body;
    expect(server.subdomain).toEqual({
      name: 'survival',
      fqdn: `survival.${ZONE}`,
      srv: { name: `_minecraft._tcp.survival.${ZONE}`, port: server.address.port },
      status: 'active',
    });
    expect(await resolver.resolve4(`survival.${ZONE}`)).toEqual([server.address.ip]);
    expect(await resolver.resolveSrv(`_minecraft._tcp.survival.${ZONE}`)).toEqual([
      { name: `survival.${ZONE}`, port: server.address.port, priority: 0, weight: 5, type: 'SRV' },
    ]);
    expect((await api.call('GET', `/v1/servers/${server.id}`, { token })).body.subdomain).toEqual(server.subdomain);
  });

  it('follows a change of the primary port (updateServerRecords)', async () => {
    const { id: accountId } = (await api.call('GET', '/v1/account', { token })).body;
    const newPort = server.address.port + 1000;
    // What the ports part does when a new primary is set: the stored address changes, then the records follow.
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.server(accountId, server.id),
        UpdateExpression: 'SET address.#port = :p',
        ExpressionAttributeNames: { '#port': 'port' },
        ExpressionAttributeValues: { ':p': newPort },
      }),
    );
    const after = await updateServerRecords({ accountId, serverId: server.id });
    expect(after).toMatchObject({ status: 'active', published: { port: newPort } });
    expect((await resolver.resolveSrv(`_minecraft._tcp.survival.${ZONE}`))[0]!.port).toBe(newPort);
    expect((await api.call('GET', `/v1/servers/${server.id}`, { token })).body.subdomain.srv).toEqual({
      name: `_minecraft._tcp.survival.${ZONE}`,
      port: newPort,
    });
  });

  it('PUT renames: the new name resolves, the old one is gone and free again', async () => {
    const res = await api.call('PUT', `/v1/servers/${server.id}/subdomain`, { token, body: { name: 'creative' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.subdomain).toMatchObject({ name: 'creative', fqdn: `creative.${ZONE}`, status: 'active' });
    expect(await resolver.resolve4(`creative.${ZONE}`)).toEqual([server.address.ip]);
    await expectGone(resolver.resolve4(`survival.${ZONE}`));
    await expectGone(resolver.resolveSrv(`_minecraft._tcp.survival.${ZONE}`));
    expect(await getRaw(keys.subdomainClaim(ZONE, 'survival'))).toBeUndefined();
    expect(await getRaw(keys.subdomainClaim(ZONE, 'creative'))).toMatchObject({ serverId: server.id });
  });

  it('a set costs no panel call (the eggs copy is warm)', async () => {
    const { result, calls } = await panelCalls(api.panel!.sim, () =>
      api.call('PUT', `/v1/servers/${server.id}/subdomain`, { token, body: { name: 'lobby' } }),
    );
    expect(result.status, result.text).toBe(200);
    expect(result.body.subdomain).toMatchObject({ name: 'lobby', status: 'active' });
    expect(calls).toEqual({});
    expect((await api.call('PUT', `/v1/servers/${server.id}/subdomain`, { token, body: { name: 'creative' } })).status).toBe(200);
  });

  it('a name another server holds is refused (409), at deploy and by PUT; nothing is created', async () => {
    const other = await customer(api, 'dns-other@example.com', { grantCents: 50_000 });
    const before = (await api.call('GET', '/v1/servers?limit=100', { token: other.token })).body.data.length;
    expectEnvelope(await deploy(other.token, { subdomain: 'creative' }), 409, 'conflict');
    expect((await api.call('GET', '/v1/servers?limit=100', { token: other.token })).body.data).toHaveLength(before);
    const mine = await deploy(other.token);
    expect(mine.status, mine.text).toBe(201);
    expect(mine.body.subdomain).toBeNull();
    expectEnvelope(
      await api.call('PUT', `/v1/servers/${mine.body.id}/subdomain`, { token: other.token, body: { name: 'creative' } }),
      409,
      'conflict',
    );
    // Another account's server is 404 as ever.
    expectEnvelope(
      await api.call('PUT', `/v1/servers/${server.id}/subdomain`, { token: other.token, body: { name: 'mine' } }),
      404,
      'not_found',
    );
    expect(await resolver.resolve4(`creative.${ZONE}`)).toEqual([server.address.ip]);
  });

  it('names follow the DNS label rules and the reserved list (400, nothing changed)', async () => {
    for (const name of ['bad_name', '-lead', 'trail-', 'a'.repeat(64), '', 'www', 'admin', 'xn--80ak6aa92e', 'two.labels', 'spa ce']) {
      const res = await api.call('PUT', `/v1/servers/${server.id}/subdomain`, { token, body: { name } });
      expectEnvelope(res, 400, 'validation_failed');
    }
    expectEnvelope(await deploy(token, { subdomain: 'www' }), 400, 'validation_failed');
    expect((await api.call('GET', `/v1/servers/${server.id}`, { token })).body.subdomain.name).toBe('creative');
    // 63 characters is the longest label.
    const longest = 'a'.repeat(63);
    const res = await api.call('PUT', `/v1/servers/${server.id}/subdomain`, { token, body: { name: longest } });
    expect(res.status, res.text).toBe(200);
    expect(await resolver.resolve4(`${longest}.${ZONE}`)).toEqual([server.address.ip]);
    await expectGone(resolver.resolve4(`creative.${ZONE}`));
  });

  it('two servers claiming one free name at once: exactly one gets it', async () => {
    const a = (await deploy(token)).body as ServerBody;
    const b = (await deploy(token)).body as ServerBody;
    const answers = await Promise.all(
      [a, b].map((s) => api.call('PUT', `/v1/servers/${s.id}/subdomain`, { token, body: { name: 'contested' } })),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
    const winner = answers[0]!.status === 200 ? a : b;
    expect(await getRaw(keys.subdomainClaim(ZONE, 'contested'))).toMatchObject({ serverId: winner.id });
    const loser = winner === a ? b : a;
    expect((await api.call('GET', `/v1/servers/${loser.id}`, { token })).body.subdomain).toBeNull();
  });

  it('two deploys with one free name at once: exactly one is created', async () => {
    const answers = await Promise.all([deploy(token, { subdomain: 'racing' }), deploy(token, { subdomain: 'racing' })]);
    expect(answers.map((r) => r.status).sort()).toEqual([201, 409]);
    const winner = answers.find((r) => r.status === 201)!.body as ServerBody;
    expect(await getRaw(keys.subdomainClaim(ZONE, 'racing'))).toMatchObject({ serverId: winner.id });
  });

  it('DELETE …/subdomain removes the records and frees the name (twice is the same)', async () => {
    const res = await api.call('DELETE', `/v1/servers/${server.id}/subdomain`, { token });
    expect(res.status, res.text).toBe(200);
    expect(res.body.subdomain).toBeNull();
    await expectGone(resolver.resolve4(`${'a'.repeat(63)}.${ZONE}`));
    expect(await getRaw(keys.subdomainClaim(ZONE, 'a'.repeat(63)))).toBeUndefined();
    expect((await api.call('DELETE', `/v1/servers/${server.id}/subdomain`, { token })).status).toBe(200);
  });

  it('deleting the server removes its records and frees its name', async () => {
    const set = await api.call('PUT', `/v1/servers/${server.id}/subdomain`, { token, body: { name: 'survival' } });
    expect(set.status, set.text).toBe(200);
    expect(await resolver.resolve4(`survival.${ZONE}`)).toEqual([server.address.ip]);
    const del = await api.call('DELETE', `/v1/servers/${server.id}`, { token });
    expect(del.status, del.text).toBe(200);
    await expectGone(resolver.resolve4(`survival.${ZONE}`));
    await expectGone(resolver.resolveSrv(`_minecraft._tcp.survival.${ZONE}`));
    expect(await getRaw(keys.subdomainClaim(ZONE, 'survival'))).toBeUndefined();
    // A deleted server takes no name.
    expectEnvelope(await api.call('PUT', `/v1/servers/${server.id}/subdomain`, { token, body: { name: 'again' } }), 409, 'conflict');
  });

  it('names outside the zone are refused by the local DNS server', async () => {
    await expect(resolver.resolve4('example.com')).rejects.toMatchObject({ code: 'EREFUSED' });
  });
});
