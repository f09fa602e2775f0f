import { panelRequests as panelRequestLog, totalRequests } from '../helpers/panel-requests.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { clearCatalogCache } from '../../shared/catalog/index.ts';
import { keys } from '../../shared/db/keys.ts';
import { customer } from '../helpers/customer.ts';
import { setAttributes } from '../helpers/db.ts';
import { startTestApi, type TestApi } from '../helpers/stack.ts';

/**
 * The public price list, GET /v1/pricing: no credential, the platform's settings and the regions'
 * availability from the topology copy (no panel call per request), cacheable with an ETag. Over
 * DynamoDB Local and the simulator.
 */
let api: TestApi;
let sim: PanelSim;
let instanceId: string;

beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 40 } });
  sim = api.panel!.sim;
  instanceId = api.panel!.instanceId;
});
afterAll(async () => api?.stop());

const pricing = (headers: Record<string, string> = {}) => api.call('GET', '/v1/pricing', { token: null, headers });
const panelRequests = async () => totalRequests(await panelRequestLog(sim));

describe('GET /v1/pricing', () => {
  it('answers without a credential: the settings, per hour and per 730-hour month', async () => {
    const res = await pricing();
    expect(res.status, res.text).toBe(200);
    const settings = (await api.call('GET', '/v1/admin/settings')).body;
    const ram = res.body.resources.find((r: { resource: string }) => r.resource === 'ram');
    expect(ram).toEqual({
      resource: 'ram',
      unit: 'GiB',
      millicentsPerUnitHour: settings.prices.ramMillicentsPerGbHour,
      millicentsPerUnitMonth: settings.prices.ramMillicentsPerGbHour * 730,
    });
    expect(res.body.resources.map((r: { resource: string }) => r.resource)).toEqual(['ram', 'cpu', 'disk']);
    expect(res.body.serverLimits.ramMb).toEqual({ min: 256, max: settings.serverCaps.maxRamMb });
    expect(res.body.topUp).toEqual({
      minimumCents: settings.minimumTopUpCents,
      maximumCents: settings.maximumTopUpCents,
      bonusPercent: settings.topUpBonusPercent,
    });
    expect(res.body.runwayHours).toBe(24);
    // Every location with a public node is listed, and the fresh simulator has room in each.
    const shorts = new Set([...sim.state.nodes.values()].filter((n) => n.public).map((n) => sim.state.locations.get(n.location_id)!.short));
    expect(res.body.regions.map((r: { region: string }) => r.region).sort()).toEqual([...shorts].sort());
    expect(res.body.regions.every((r: { available: boolean }) => r.available)).toBe(true);
  });

  it("the smallest server's price is what a deploy of that size is charged", async () => {
    const { token } = await customer(api, 'pricing@example.com', { grantCents: 10_000 });
    const { smallestServer } = (await pricing()).body;
    const created = await api.call('POST', '/v1/servers', {
      token,
      body: {
        name: 'smallest',
        eggId: 1,
        ramMb: smallestServer.ramMb,
        cpuPercent: smallestServer.cpuPercent,
        diskMb: smallestServer.diskMb,
      },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.priceMillicentsPerHour).toBe(smallestServer.priceMillicentsPerHour);
    expect(created.body.priceCentsPerHour).toBe(smallestServer.priceCentsPerHour);
    expect(smallestServer.monthlyCents).toBe(Math.ceil((smallestServer.priceMillicentsPerHour * 730) / 1000));
  });

  it('is cacheable: Cache-Control and an ETag; If-None-Match gets 304 with no body until the prices change', async () => {
    const first = await pricing();
    expect(first.headers.get('cache-control')).toBe('public, max-age=60');
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect((await pricing()).headers.get('etag')).toBe(etag); // the same answer, the same tag

    for (const tag of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const cached = await pricing({ 'if-none-match': tag });
      expect(cached.status, tag).toBe(304);
      expect(cached.text).toBe('');
      expect(cached.headers.get('etag')).toBe(etag);
    }
    expect((await pricing({ 'if-none-match': '"stale"' })).status).toBe(200);

    const settings = (await api.call('GET', '/v1/admin/settings')).body;
    const changed = await api.call('PUT', '/v1/admin/settings', {
      body: { prices: { ramMillicentsPerGbHour: settings.prices.ramMillicentsPerGbHour + 1 } },
    });
    expect(changed.status, changed.text).toBe(200);
    try {
      const fresh = await pricing({ 'if-none-match': etag });
      expect(fresh.status).toBe(200);
      expect(fresh.headers.get('etag')).not.toBe(etag);
      expect(fresh.body.resources[0].millicentsPerUnitHour).toBe(settings.prices.ramMillicentsPerGbHour + 1);
    } finally {
      await api.call('PUT', '/v1/admin/settings', { body: { prices: settings.prices } });
    }
  });

  it('costs no panel call per request once the topology copy is warm', async () => {
    await pricing();
    const before = await panelRequests();
    for (let i = 0; i < 30; i++) expect((await pricing()).status).toBe(200);
    expect(await panelRequests()).toBe(before);
  });

  it('a region whose nodes are all in maintenance is listed as unavailable (after the copy refreshes)', async () => {
    const region = (await pricing()).body.regions[0].region as string;
    const location = [...sim.state.locations.values()].find((l) => l.short === region)!;
    const nodes = [...sim.state.nodes.values()].filter((n) => n.location_id === location.id);
    for (const n of nodes) n.maintenance_mode = true;
    try {
      await setAttributes(keys.panelTopology(instanceId), { freshUntil: 0 });
      clearCatalogCache();
      const res = await pricing();
      expect(res.body.regions.find((r: { region: string }) => r.region === region)).toMatchObject({ available: false });
      expect(
        res.body.regions.filter((r: { region: string }) => r.region !== region).every((r: { available: boolean }) => r.available),
      ).toBe(true);
    } finally {
      for (const n of nodes) n.maintenance_mode = false;
      await setAttributes(keys.panelTopology(instanceId), { freshUntil: 0 });
      clearCatalogCache();
    }
  });
});
