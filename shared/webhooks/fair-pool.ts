/**
 * Tasks keyed by account, run round-robin across accounts with at most `perKey` of one account and
 * `overall` in all at once. A slot freed by a finished task goes to the next account in turn that
 * has work and a free slot of its own, so an account whose tasks hang (a receiver that never
 * answers) holds only its own `perKey` slots, never another account's.
 *
 * In memory, for one process: shared/webhooks/dispatch.ts uses it for the fan-out and the attempts.
 */
export class FairPool<T> {
  /** Accounts with queued tasks. */
  private readonly queues = new Map<string, T[]>();
  /** When each account last started a task (a counter): the next slot goes to the one served least recently. */
  private readonly servedAt = new Map<string, number>();
  private served = 0;
  private readonly runningOf = new Map<string, number>();
  private active = 0;
  private waiters: (() => void)[] = [];

  private readonly run: (task: T) => Promise<unknown>;
  private readonly perKey: number;
  private readonly overall: number;

  constructor(run: (task: T) => Promise<unknown>, perKey: number, overall: number) {
    this.run = run;
    this.perKey = perKey;
    this.overall = overall;
  }

  push(key: string, task: T): void {
    const queue = this.queues.get(key);
    if (queue) queue.push(task);
    else this.queues.set(key, [task]);
    this.pump();
  }

  /** Tasks of `key` waiting for a slot. */
  queued(key: string): number {
    return this.queues.get(key)?.length ?? 0;
  }

  /** Tasks of `key` running now. */
  running(key: string): number {
    return this.runningOf.get(key) ?? 0;
  }

  get busy(): boolean {
    return this.active > 0 || this.queues.size > 0;
  }

  /** Takes every queued task out (running ones go on) and returns them. */
  clear(): T[] {
    const dropped = [...this.queues.values()].flat();
    this.queues.clear();
    if (!this.busy) for (const wake of this.waiters.splice(0)) wake();
    return dropped;
  }

  /** Resolves once nothing is queued or running. */
  idle(): Promise<void> {
    if (!this.busy) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private pump(): void {
    while (this.active < this.overall) {
      // Round-robin: of the accounts with work and a free slot of their own, the one served least recently.
      let key: string | undefined;
      for (const [k] of this.queues)
        if (this.running(k) < this.perKey && (key === undefined || (this.servedAt.get(k) ?? -1) < (this.servedAt.get(key) ?? -1))) key = k;
      if (key === undefined) return;
      const queue = this.queues.get(key)!;
      const task = queue.shift()!;
      if (!queue.length) this.queues.delete(key);
      this.servedAt.set(key, this.served++);
      this.active++;
      this.runningOf.set(key, this.running(key) + 1);
      // `run` handles its own errors; a rejection here must still free the slot.
      void this.run(task)
        .catch(() => undefined)
        .finally(() => {
          this.active--;
          const left = this.running(key) - 1;
          if (left) this.runningOf.set(key, left);
          else this.runningOf.delete(key);
          // An account with nothing left here is forgotten (a long-lived dispatcher sees many).
          if (!left && !this.queues.has(key)) this.servedAt.delete(key);
          this.pump();
          if (!this.busy) for (const wake of this.waiters.splice(0)) wake();
        });
    }
  }
}
