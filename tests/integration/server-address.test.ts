import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { customer } from '../helpers/customer.ts';
import { getRaw } from '../helpers/db.ts';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { waitFor } from '../helpers/until.ts';

/**
 * Where players connect: every server view carries the primary allocation's address, recorded at
 * deploy from the topology copy (no panel call of its own). Over DynamoDB Local and the simulator.
 */
let api: TestApi;
let sim: PanelSim;
let instanceId: string;
/** The alias set on every allocation of the us-east nodes before the copy is first read. */
const ALIAS = 'play.example.net';

beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 40, resourcesCacheMs: 0 } });
  sim = api.panel!.sim;
  instanceId = api.panel!.instanceId;
  const usEast = [...sim.state.locations.values()].find((l) => l.short === 'us-east')!.id;
  for (const allocation of sim.state.allocations.values()) {
    if (sim.state.nodes.get(allocation.node_id)!.location_id === usEast) allocation.ip_alias = ALIAS;
  }
});
afterAll(async () => api?.stop());

const deploy = async (token: string, region: string) => {
  const res = await api.call('POST', '/v1/servers', {
    token,
    body: { name: 'address server', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048, region },
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
};

/** The panel's own allocation for a server: the one the simulator assigned as its default. */
function panelAllocationOf(identifier: string) {
  const allocation = sim.state.allocations.get(sim.server(identifier)!.allocation_id)!;
  return { allocation, node: sim.state.nodes.get(allocation.node_id)! };
}

describe('where to connect', () => {
  let token: string;
  let aliased: { id: string; identifier: string; address: Record<string, unknown> };

  it("an allocation with an alias: host is the alias, ip and port are the panel allocation's", async () => {
    ({ token } = await customer(api, 'address@example.com', { grantCents: 10_000 }));
    aliased = await deploy(token, 'us-east');
    const { allocation } = panelAllocationOf(aliased.identifier);
    expect(allocation.ip_alias).toBe(ALIAS);
    expect(aliased.address).toEqual({ host: ALIAS, ip: allocation.ip, alias: ALIAS, port: allocation.port });
    expect((aliased as unknown as { ports: unknown[] }).ports).toEqual([]);
  });

  it("no alias: host falls back to the node's FQDN, alias null", async () => {
    const server = await deploy(token, 'eu-central');
    const { allocation, node } = panelAllocationOf(server.identifier);
    expect(allocation.ip_alias).toBeNull();
    expect(server.address).toEqual({ host: node.fqdn, ip: allocation.ip, alias: null, port: allocation.port });
  });

  it('the address costs no panel call: a deploy on a warm copy makes only the create', async () => {
    // The copy is fresh (the deploys above read it) and its free sets are not dry.
    const calls = await panelRequestsDuring(async () => {
      const server = await deploy(token, 'us-east');
      expect(server.address).toMatchObject({ host: ALIAS });
    });
    expect(calls).toEqual({ creates: 1, others: 0 });
  });

  it('GET, the list, the admin list and the server.created event carry the same address', async () => {
    const one = await api.call('GET', `/v1/servers/${aliased.id}`, { token });
    expect(one.body.address).toEqual(aliased.address);
    expect(one.body.ports).toEqual([]);
    const list = await api.call('GET', '/v1/servers?limit=100', { token });
    expect(list.body.data.find((s: { id: string }) => s.id === aliased.id).address).toEqual(aliased.address);
    const admin = await api.call('GET', '/v1/admin/servers?limit=100');
    expect(admin.body.data.find((s: { id: string }) => s.id === aliased.id).address).toEqual(aliased.address);
    const created = await waitFor(
      async () => {
        const events = await api.call('GET', '/v1/events?type=server.created&limit=100', { token });
        return events.body.data.find((e: { data: { id: string } }) => e.data.id === aliased.id);
      },
      (event) => event !== undefined,
      { what: 'the server.created event' },
    );
    expect(created.data.address).toEqual(aliased.address);
  });

  it('a server recorded before addresses were kept reads address null, ports empty (no 500)', async () => {
    const server = await deploy(token, 'eu-central');
    const key = keys.server(await accountIdOf(token), server.id);
    expect((await getRaw(key))!.address).toBeDefined();
    await db().send(new UpdateCommand({ TableName: tableName(), Key: key, UpdateExpression: 'REMOVE address' }));
    const res = await api.call('GET', `/v1/servers/${server.id}`, { token });
    expect(res.status).toBe(200);
    expect(res.body.address).toBeNull();
    expect(res.body.ports).toEqual([]);
  });

  it('a copy read before addresses were kept gets them with the next refill of a node', async () => {
    // The copy as an older version wrote it (no addresses), with no free allocation left on the
    // us-east nodes, so the deploy reads a node's free allocations from the panel.
    await dryUp('us-east', { removeAddresses: true });
    const server = await deploy(token, 'us-east');
    const { allocation } = panelAllocationOf(server.identifier);
    expect(server.address).toEqual({ host: ALIAS, ip: allocation.ip, alias: ALIAS, port: allocation.port });
    expect((await getRaw(keys.panelTopology(instanceId)))!.allocationAddresses).toBeDefined();
  });

  it("a later refill replaces that node's addresses in the copy's map", async () => {
    await dryUp('us-east', { forgetNodeAddresses: true });
    const server = await deploy(token, 'us-east');
    const { allocation } = panelAllocationOf(server.identifier);
    expect(server.address).toEqual({ host: ALIAS, ip: allocation.ip, alias: ALIAS, port: allocation.port });
  });
});

/** Takes every free allocation of a region's nodes out of the copy, so the next deploy there refills from the panel. */
async function dryUp(region: string, over: { removeAddresses?: boolean; forgetNodeAddresses?: boolean } = {}) {
  const copy = (await getRaw(keys.panelTopology(instanceId)))!;
  const location = (copy.locations as { id: number; short: string }[]).find((l) => l.short === region)!.id;
  const nodes = (copy.nodes as { id: number; locationId: number }[]).filter((n) => n.locationId === location).map((n) => n.id);
  const removes = [...(over.removeAddresses ? ['allocationAddresses'] : []), ...nodes.map((_, i) => `freeAllocations.#n${i}`)];
  // Emptied, so only the refill's own write can give the deploy an address there.
  const sets = over.forgetNodeAddresses ? ` SET ${nodes.map((_, i) => `allocationAddresses.#n${i} = :none`).join(', ')}` : '';
  await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.panelTopology(instanceId),
      UpdateExpression: `REMOVE ${removes.join(', ')}${sets}`,
      ExpressionAttributeNames: Object.fromEntries(nodes.map((id, i) => [`#n${i}`, String(id)])),
      ...(sets ? { ExpressionAttributeValues: { ':none': {} } } : {}),
    }),
  );
}

/** The panel requests that reached the simulator while `fn` ran: creates and any other, counted by faults that only count (the first match takes a request). */
async function panelRequestsDuring(fn: () => Promise<void>): Promise<{ creates: number; others: number }> {
  const create = sim.faults.add({ method: 'POST', path: /^\/api\/application\/servers$/, effect: { kind: 'latency', ms: 0 } });
  const other = sim.faults.add({ method: '*', path: '/api/', effect: { kind: 'latency', ms: 0 } });
  const hits = (id: string) => sim.faults.list().find((f) => f.id === id)!.hits;
  try {
    await fn();
    return { creates: hits(create), others: hits(other) };
  } finally {
    sim.faults.remove(create);
    sim.faults.remove(other);
  }
}

async function accountIdOf(token: string): Promise<string> {
  return (await api.call('GET', '/v1/account', { token })).body.id;
}
