import { setClock } from '../../shared/clock.ts';

/**
 * The clock the local stack hands to the rate limit and the panel call budget (shared/clock.ts): a
 * test moves it to a fresh minute instead of sleeping until one begins. It runs with the system
 * clock until a test stops it, and never steps back, so counts of the minutes it showed stay in
 * theirs.
 */
export interface TestClock {
  /** The time the rate limit and the call budget read. */
  now(): number;
  /**
   * Runs `work` in a minute of its own: the clock stops at the start of the minute after the one it
   * shows, however long the work takes on a busy machine, then runs on from there.
   */
  inFreshMinute<T>(work: () => Promise<T>): Promise<T>;
  /** Moves the clock `ms` forward (a payment booked a day after its checkout opened); it never moves back. */
  advance(ms: number): void;
  /** Back to the system clock (the stack's stop). */
  release(): void;
}

export function installTestClock(): TestClock {
  let offset = 0;
  let frozen: number | undefined;
  const now = () => frozen ?? Date.now() + offset;
  setClock(now);
  return {
    now,
    async inFreshMinute(work) {
      frozen = (Math.floor(now() / 60_000) + 1) * 60_000;
      try {
        return await work();
      } finally {
        offset = frozen - Date.now();
        frozen = undefined;
      }
    },
    advance(ms) {
      if (ms < 0) throw new Error('the test clock never moves back');
      offset += ms;
      if (frozen !== undefined) frozen += ms;
    },
    release() {
      setClock(undefined);
    },
  };
}
