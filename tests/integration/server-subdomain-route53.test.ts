import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { runRepairs } from '../../shared/servers/repairs.ts';
import { updateServerRecords } from '../../shared/servers/subdomain.ts';
import { customer } from '../helpers/customer.ts';
import { getRaw, setAttributes } from '../helpers/db.ts';
import { type FakeRoute53, startFakeRoute53 } from '../helpers/fake-route53.ts';
import { startTestApi, type TestApi } from '../helpers/stack.ts';

/**
 * The Route 53 provider (shared/dns/route53.ts) as the functions use it in AWS: the SDK's client
 * over real HTTP to a fake Route 53 (tests/helpers/fake-route53.ts, which applies batches all or
 * nothing as Route 53 does). Checks the zone and record sets each change names, and that a Route 53
 * failure leaves the server `failed` and the pending-repair pass puts it right.
 */
let api: TestApi;
let route53: FakeRoute53;
const ZONE = 'play.example.com';
const ZONE_ID = 'Z0TESTZONE123';

beforeAll(async () => {
  route53 = await startFakeRoute53();
  Object.assign(process.env, {
    DNS_ZONE: ZONE,
    DNS_HOSTED_ZONE_ID: ZONE_ID,
    AWS_ENDPOINT_URL_ROUTE_53: route53.url,
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'AKIDTEST',
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'secret',
  });
  // No local DNS server, and the repair pass only when this file runs it.
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 40, resourcesCacheMs: 0 }, dns: false, repairs: false });
});
afterAll(async () => {
  await api?.stop();
  await route53?.close();
});

const recordsOf = () => Object.fromEntries([...(route53.zones.get(ZONE_ID) ?? new Map()).entries()].map(([k, v]) => [k, v.values]));

describe('subdomains in Route 53', () => {
  let token: string;
  let accountId: string;
  let server: { id: string; address: { ip: string; port: number } };

  it('a deploy with a subdomain upserts the A and SRV record sets in the configured zone, in one batch', async () => {
    ({ token, id: accountId } = await customer(api, 'r53@example.com', { grantCents: 50_000 }));
    const res = await api.call('POST', '/v1/servers', {
      token,
      body: { name: 'r53', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048, subdomain: 'survival' },
    });
    expect(res.status, res.text).toBe(201);
    server = res.body;
    expect(res.body.subdomain).toMatchObject({ fqdn: `survival.${ZONE}`, status: 'active' });
    expect(route53.requests).toEqual([
      {
        zoneId: ZONE_ID,
        changes: [
          { action: 'UPSERT', set: { name: `survival.${ZONE}.`, type: 'A', ttl: 60, values: [server.address.ip] } },
          {
            action: 'UPSERT',
            set: {
              name: `_minecraft._tcp.survival.${ZONE}.`,
              type: 'SRV',
              ttl: 60,
              values: [`0 5 ${server.address.port} survival.${ZONE}.`],
            },
          },
        ],
      },
    ]);
  });

  it('a new primary port moves the SRV record', async () => {
    const port = server.address.port + 7;
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.server(accountId, server.id),
        UpdateExpression: 'SET address.#port = :p',
        ExpressionAttributeNames: { '#port': 'port' },
        ExpressionAttributeValues: { ':p': port },
      }),
    );
    expect(await updateServerRecords({ accountId, serverId: server.id })).toMatchObject({ status: 'active' });
    expect(recordsOf()).toEqual({
      [`survival.${ZONE}. A`]: [server.address.ip],
      [`_minecraft._tcp.survival.${ZONE}. SRV`]: [`0 5 ${port} survival.${ZONE}.`],
    });
    server.address.port = port;
  });

  it('Route 53 failing when the port moves: status failed and a repair queued; the pass publishes the new port', async () => {
    route53.failing = true;
    const port = server.address.port + 1;
    await setAttributes(keys.server(accountId, server.id), { address: { ...server.address, host: server.address.ip, alias: null, port } });
    expect(await updateServerRecords({ accountId, serverId: server.id })).toMatchObject({ status: 'failed' });
    expect((await getRaw(keys.serverRepair(server.id)))?.reasons).toEqual(new Set(['dns']));
    route53.failing = false;
    expect(await runRepairs(new Date(), 10)).toMatchObject({ due: 1, repaired: 1 });
    expect(recordsOf()[`_minecraft._tcp.survival.${ZONE}. SRV`]).toEqual([`0 5 ${port} survival.${ZONE}.`]);
    expect((await api.call('GET', `/v1/servers/${server.id}`, { token })).body.subdomain).toMatchObject({
      status: 'active',
      srv: { port },
    });
    expect(await getRaw(keys.serverRepair(server.id))).toBeUndefined();
    server.address.port = port;
  });

  it('Route 53 failing: the rename is answered (status failed), the old name stays held; the repair pass completes both', async () => {
    route53.failing = true;
    const res = await api.call('PUT', `/v1/servers/${server.id}/subdomain`, { token, body: { name: 'creative' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.subdomain).toMatchObject({ name: 'creative', status: 'failed' });
    const repair = await getRaw(keys.serverRepair(server.id));
    expect(repair?.reasons).toEqual(new Set(['dns']));
    expect(repair?.dnsRetire).toEqual([{ zone: ZONE, name: 'survival', values: expect.objectContaining({ port: server.address.port }) }]);
    // Its records may still be out there: nobody else may take the old name yet.
    expect(await getRaw(keys.subdomainClaim(ZONE, 'survival'))).toMatchObject({ serverId: server.id });

    // Still failing: the pass backs off, nothing lost.
    expect(await runRepairs(new Date(), 10)).toMatchObject({ due: 1, failed: 1 });
    route53.failing = false;
    // Due now rather than after its backoff.
    await setAttributes(keys.serverRepair(server.id), { GSI2SK: keys.repairDue(server.id, '2000-01-01T00:00:00.000Z').GSI2SK });
    expect(await runRepairs(new Date(), 10)).toMatchObject({ due: 1, repaired: 1 });
    expect(recordsOf()).toEqual({
      [`creative.${ZONE}. A`]: [server.address.ip],
      [`_minecraft._tcp.creative.${ZONE}. SRV`]: [`0 5 ${server.address.port} creative.${ZONE}.`],
    });
    expect((await api.call('GET', `/v1/servers/${server.id}`, { token })).body.subdomain).toMatchObject({ status: 'active' });
    expect(await getRaw(keys.subdomainClaim(ZONE, 'survival'))).toBeUndefined();
    expect(await getRaw(keys.serverRepair(server.id))).toBeUndefined();
  });

  it('deleting the server deletes its record sets, naming exactly what was published', async () => {
    const before = route53.requests.length;
    const del = await api.call('DELETE', `/v1/servers/${server.id}`, { token });
    expect(del.status, del.text).toBe(200);
    expect(route53.requests.slice(before)).toEqual([
      {
        zoneId: ZONE_ID,
        changes: [
          { action: 'DELETE', set: { name: `creative.${ZONE}.`, type: 'A', ttl: 60, values: [server.address.ip] } },
          {
            action: 'DELETE',
            set: {
              name: `_minecraft._tcp.creative.${ZONE}.`,
              type: 'SRV',
              ttl: 60,
              values: [`0 5 ${server.address.port} creative.${ZONE}.`],
            },
          },
        ],
      },
    ]);
    expect(recordsOf()).toEqual({});
    expect(await getRaw(keys.subdomainClaim(ZONE, 'creative'))).toBeUndefined();
  });
});
