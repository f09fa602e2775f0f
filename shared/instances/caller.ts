import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The account on whose behalf panel calls are made: the HTTP pipeline sets it per request, the
 * panel call budget (call-budget.ts) reads it to give each account its share.
 */
const caller = new AsyncLocalStorage<string>();
/** The platform's own work (billing pass, reconciler, repairs): its own class, never behind a customer. */
export const PLATFORM_CALLER = 'platform';
/** Requests without a credential share one account's share between them. */
export const ANONYMOUS_CALLER = 'anonymous';

export const runAsCaller = <T>(accountId: string, fn: () => Promise<T>): Promise<T> => caller.run(accountId, fn);
export const currentCaller = (): string => caller.getStore() ?? PLATFORM_CALLER;
