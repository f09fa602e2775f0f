// A server's network allocations (Client API `/api/client/servers/{server}/network/allocations`,
// pterodactyl/panel:routes/api-client.php, NetworkAllocationController):
// - index: every allocation of the server, `is_default` on the primary (Client AllocationTransformer).
// - store: `client_features.allocations.enabled` (PTERODACTYL_CLIENT_ALLOCATIONS_ENABLED, off by
//   default) is checked after the limit: the server's allocations counted against its
//   `allocation_limit` (null counts as 0) first (400 DisplayException), then 400
//   AutoAllocationNotEnabledException; then a random free allocation of the node on the primary's
//   IP, else a new one from the configured port range (FindAssignableAllocationService), else 400
//   NoAutoAllocationSpaceAvailableException.
// - update (POST …/{allocation}): `notes` present, nullable string, max 256 (Allocation::$validationRules).
// - primary (POST …/{allocation}/primary): no rules; sets the server's allocation_id.
// - delete: 400 when the server has no allocation limit (empty(): null or 0), 400 for the primary;
//   else the allocation is freed (server_id and notes null), 204.
// The {allocation} binding: an unknown id or one of another server is 404 (ResourceBelongsToServer).
import { PanelError, ValidationError, item, list, notFound } from './http.ts';
import type { Ctx, Reply, RouteDef, SimContext } from './http.ts';
import { validate } from './rules.ts';
import type { Allocation, PanelState, Server } from './state.ts';

/** config/pterodactyl.php `client_features.allocations` (the panel's defaults: off, no range). */
export interface ClientAllocationsFeature {
  enabled: boolean;
  rangeStart: number | null;
  rangeEnd: number | null;
}

const features = new WeakMap<PanelState, ClientAllocationsFeature>();

/** The simulated panel's `client_features.allocations` (a test turns it on as an operator would in .env). */
export function clientAllocationsOf(state: PanelState): ClientAllocationsFeature {
  let f = features.get(state);
  if (!f) {
    f = { enabled: false, rangeStart: null, rangeEnd: null };
    features.set(state, f);
  }
  return f;
}

const displayException = (detail: string, code = 'DisplayException') => new PanelError(400, code, detail, {}, 'back');

export function clientAllocation(s: Server, a: Allocation) {
  return item('allocation', {
    id: a.id,
    ip: a.ip,
    ip_alias: a.ip_alias,
    port: a.port,
    notes: a.notes,
    is_default: s.allocation_id === a.id,
  });
}

export function networkRoutes(sim: SimContext, bind: (ctx: Ctx) => Server): RouteDef[] {
  const { state } = sim;
  const N = '/api/client/servers/{server}/network/allocations';
  const ok = (body: unknown, status = 200): Reply => ({ status, body });

  const allocationOf = (ctx: Ctx, s: Server): Allocation => {
    const raw = ctx.params.allocation ?? '';
    const a = /^\d+$/.test(raw) ? state.allocations.get(Number(raw)) : undefined;
    if (!a || a.server_id !== s.id) throw notFound('The requested resource was not found for this server.');
    return a;
  };

  const findAssignable = (s: Server): Allocation => {
    const feature = clientAllocationsOf(state);
    if (!feature.enabled)
      throw displayException('Server auto-allocation is not enabled for this instance.', 'AutoAllocationNotEnabledException');
    const primary = state.allocations.get(s.allocation_id);
    const onIp = state.allocationsOfNode(s.node_id).filter((a) => a.ip === primary?.ip);
    const free = onIp.filter((a) => a.server_id === null);
    let chosen = free[Math.floor(Math.random() * free.length)];
    if (!chosen) {
      const noSpace = () =>
        displayException(
          'Cannot assign additional allocation: no more space available on node.',
          'NoAutoAllocationSpaceAvailableException',
        );
      if (!feature.rangeStart || !feature.rangeEnd || !primary) throw noSpace();
      const taken = new Set(onIp.map((a) => a.port));
      const available: number[] = [];
      for (let p = feature.rangeStart; p <= feature.rangeEnd; p++) if (!taken.has(p)) available.push(p);
      const port = available[Math.floor(Math.random() * available.length)];
      if (port === undefined) throw noSpace();
      chosen = { id: state.nextId('allocations'), node_id: s.node_id, ip: primary.ip, ip_alias: null, port, server_id: null, notes: null };
      state.allocations.set(chosen.id, chosen);
    }
    chosen.server_id = s.id;
    return chosen;
  };

  return [
    {
      method: 'GET',
      path: N,
      name: 'api:client:server.network.allocations',
      handler: (ctx) => {
        const s = bind(ctx);
        return ok(list(state.allocationsOfServer(s.id).map((a) => clientAllocation(s, a))));
      },
    },
    {
      method: 'POST',
      path: N,
      name: 'api:client:server.network.allocations.store',
      handler: (ctx) => {
        const s = bind(ctx);
        if (state.allocationsOfServer(s.id).length >= (s.allocation_limit ?? 0)) {
          throw displayException('Cannot assign additional allocations to this server: limit has been reached.');
        }
        return ok(clientAllocation(s, findAssignable(s)));
      },
    },
    {
      method: 'POST',
      path: `${N}/{allocation}`,
      name: 'api:client:server.network.allocations.update',
      handler: (ctx) => {
        const s = bind(ctx);
        const a = allocationOf(ctx, s);
        const failures = validate(ctx.input, { notes: 'nullable|string|max:256|present' });
        if (failures.length > 0) throw new ValidationError(failures);
        const notes = ctx.input.notes;
        a.notes = notes === null || notes === undefined ? null : String(notes);
        return ok(clientAllocation(s, a));
      },
    },
    {
      method: 'POST',
      path: `${N}/{allocation}/primary`,
      name: 'api:client:server.network.allocations.primary',
      handler: (ctx) => {
        const s = bind(ctx);
        const a = allocationOf(ctx, s);
        s.allocation_id = a.id;
        s.updated_at = new Date();
        return ok(clientAllocation(s, a));
      },
    },
    {
      method: 'DELETE',
      path: `${N}/{allocation}`,
      name: 'api:client:server.network.allocations.delete',
      handler: (ctx) => {
        const s = bind(ctx);
        const a = allocationOf(ctx, s);
        if (!s.allocation_limit) throw displayException('You cannot delete allocations for this server: no allocation limit is set.');
        if (a.id === s.allocation_id) throw displayException('You cannot delete the primary allocation for this server.');
        a.notes = null;
        a.server_id = null;
        return { status: 204 };
      },
    },
  ];
}
