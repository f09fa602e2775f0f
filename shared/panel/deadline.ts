import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The time a request has left, so panel calls fit into it (ARCHITECTURE.md, "The panel
 * boundary"). API Gateway gives up after 29 s and answers with its own error, not ours; the
 * function may have less. The HTTP pipeline sets a deadline a little before both, and every panel
 * call's timeout, retry and backoff is cut to what is left — a request whose panel never answers
 * still ends with our envelope (504 `panel_timeout` or 503 `panel_unavailable`).
 */
const deadlines = new AsyncLocalStorage<number>();

/** API Gateway's integration limit is 29 s: our answer must be on its way before. */
export const GATEWAY_LIMIT_MS = 29_000;
/** Room for what follows the last panel call: recording, the activity log, the response. */
export const FINISHING_MS = 2_500;

export const withDeadline = <T>(deadlineMs: number, fn: () => Promise<T>): Promise<T> => deadlines.run(deadlineMs, fn);

/** The request's deadline from its start and what the function has left. */
export function requestDeadline(startedMs: number, functionRemainingMs: number | undefined): number {
  const gateway = startedMs + GATEWAY_LIMIT_MS - FINISHING_MS;
  const fn = functionRemainingMs === undefined ? Number.POSITIVE_INFINITY : startedMs + functionRemainingMs - FINISHING_MS;
  return Math.min(gateway, fn);
}

/** Milliseconds left before the current request's deadline; unbounded outside a request (billing pass, reconciler). */
export function timeLeftMs(now = Date.now()): number {
  const deadline = deadlines.getStore();
  return deadline === undefined ? Number.POSITIVE_INFINITY : deadline - now;
}

/** Waits `ms`, but never past the request's deadline: a wait that could only end in a refused call is cut short. */
export const sleepWithin = (ms: number, margin = 250): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.min(ms, timeLeftMs() - margin))));
