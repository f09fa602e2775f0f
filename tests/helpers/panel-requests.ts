import type { PanelSim } from '../../dev/panel-sim/index.ts';

/** The simulator's own request log, by `METHOD /path` (faulted and throttled requests included). */
export const panelRequests = async (sim: PanelSim): Promise<Record<string, number>> =>
  ((await (await fetch(`${sim.url}/__sim/requests`)).json()) as { requests: Record<string, number> }).requests;

/** All the requests a log (or a difference of two) counts. */
export const totalRequests = (r: Record<string, number>): number => Object.values(r).reduce((a, b) => a + b, 0);

/** The panel requests `fn` made, by `METHOD /path` (only those that changed). */
export async function panelCalls<T>(sim: PanelSim, fn: () => Promise<T>): Promise<{ result: T; calls: Record<string, number> }> {
  const before = await panelRequests(sim);
  const result = await fn();
  const after = await panelRequests(sim);
  const calls: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (v !== (before[k] ?? 0)) calls[k] = v - (before[k] ?? 0);
  return { result, calls };
}
