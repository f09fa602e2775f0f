import type { ApiError } from '../errors.ts';

/**
 * The rule for every gate that refuses on a server's state: a refusal is decided on fresh state.
 * Copies of the panel's state (the live-state copy, live.ts; the install watch, install-watch.ts)
 * lag behind the panel by up to their interval, so a copy that says "refuse" (still installing,
 * suspended on the panel) is read again from the panel, one call of the budget, before the caller
 * is refused; a copy that allows is used as it is. A re-read that cannot be made (the panel busy or
 * unreachable) refuses on the copy: the copy is the best we know, and the caller may retry.
 *
 * `refusal` names the error a state is refused with (undefined: allowed); `readFresh` asks the panel.
 * The state acted on is returned: the copy when it allows, else the fresh state that allowed.
 */
export async function refuseOnFreshState<S>(gate: {
  cached: S;
  refusal: (state: S) => ApiError | undefined;
  readFresh: () => Promise<S>;
}): Promise<S> {
  const cachedRefusal = gate.refusal(gate.cached);
  if (!cachedRefusal) return gate.cached;
  let fresh: S;
  try {
    fresh = await gate.readFresh();
  } catch {
    throw cachedRefusal;
  }
  const freshRefusal = gate.refusal(fresh);
  if (freshRefusal) throw freshRefusal;
  return fresh;
}
