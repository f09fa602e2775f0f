/**
 * The time the rate limit (shared/http/rate-limit.ts) and the panel call budget
 * (shared/instances/call-budget.ts) count their one-minute windows by, and the date a payment is
 * booked on (an invoice's tax point, shared/payments/credit.ts). Production reads the system
 * clock; the local stack in tests sets its own (tests/helpers/stack.ts), so a test moves to a fresh
 * minute instead of sleeping until one begins.
 */
let source: () => number = Date.now;

/** Milliseconds since the epoch, from the clock in use. */
export const currentTime = (): number => source();

/** Tests: count windows by this clock from now on; `undefined` returns to the system clock. */
export function setClock(clock: (() => number) | undefined): void {
  source = clock ?? Date.now;
}
