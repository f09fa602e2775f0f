/**
 * Waiting for something the system does on its own (an install, a delivery, a refresh). A test
 * asserts the outcome, never how long it took: the deadline is only a backstop that ends a test
 * whose outcome never comes, far beyond any machine's pace, and it is not the assertion. To make a
 * state last while a test looks at it, hold it instead (`sim.holdInstalls()`, CONTRIBUTING.md).
 */
export interface UntilOptions {
  /** The backstop (default 15 s, half the test timeout in vitest.config.ts). */
  ms?: number;
  /** Pause between checks (default 25 ms). */
  every?: number;
  /** Named in the error when the backstop ends the wait. */
  what?: string;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Resolves once `check` holds; throws at the backstop. */
export async function until(check: () => boolean | Promise<boolean>, options: UntilOptions = {}): Promise<void> {
  await waitFor(check, (ok) => ok, options);
}

/** Reads until the value satisfies `done` and returns that value; throws at the backstop with the last value read. */
export async function waitFor<T>(read: () => T | Promise<T>, done: (value: T) => boolean, options: UntilOptions = {}): Promise<T> {
  const end = Date.now() + (options.ms ?? 15_000);
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > end) throw new Error(`${options.what ?? 'condition'} not reached; last value: ${JSON.stringify(value)}`);
    await sleep(options.every ?? 25);
  }
}

/** Like until() but answers whether `check` held by the backstop, for a test that asserts the answer. */
export async function within(check: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!(await check()) && Date.now() < end) await sleep(25);
  return check();
}
