import { describe, expect, it } from 'vitest';
import { FairPool } from '../../shared/webhooks/fair-pool.ts';

/** Tasks that end only when the test says: what runs, in which order, while others hang. */
function harness(perKey: number, overall: number) {
  const started: string[] = [];
  const release = new Map<string, () => void>();
  const pool = new FairPool<string>(
    (task) =>
      new Promise<void>((resolve) => {
        started.push(task);
        release.set(task, resolve);
      }),
    perKey,
    overall,
  );
  const end = async (task: string) => {
    release.get(task)!();
    // Let the pool's finally and its next start run.
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { pool, started, end };
}

describe('FairPool (webhook fan-out and attempts)', () => {
  it('an account whose tasks hang holds only its own slots; another account starts at once', () => {
    const { pool, started } = harness(4, 32);
    for (let i = 0; i < 100; i++) pool.push('attacker', `a${i}`);
    expect(started).toHaveLength(4);
    pool.push('victim', 'v0');
    expect(started).toEqual(['a0', 'a1', 'a2', 'a3', 'v0']);
    expect(pool.running('attacker')).toBe(4);
    expect(pool.queued('attacker')).toBe(96);
  });

  it('a freed slot goes to the next account in turn (round-robin), not to the account that queued first', async () => {
    const { pool, started, end } = harness(2, 2);
    for (const t of ['a0', 'a1', 'a2', 'a3']) pool.push('a', t);
    for (const t of ['b0', 'b1']) pool.push('b', t);
    pool.push('c', 'c0');
    expect(started).toEqual(['a0', 'a1']);
    await end('a0');
    await end('a1');
    // b and c had no turn yet: they come before a's third task.
    expect(started).toEqual(['a0', 'a1', 'b0', 'c0']);
    await end('b0');
    await end('c0');
    expect(started).toEqual(['a0', 'a1', 'b0', 'c0', 'a2', 'b1']);
  });

  it('idle() resolves once everything ran; clear() drops what has not started', async () => {
    const { pool, started, end } = harness(1, 1);
    pool.push('a', 'a0');
    pool.push('a', 'a1');
    pool.push('b', 'b0');
    expect(pool.clear()).toEqual(['a1', 'b0']);
    let idle = false;
    const waiting = pool.idle().then(() => {
      idle = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(idle).toBe(false);
    await end('a0');
    await waiting;
    expect(started).toEqual(['a0']);
    expect(pool.busy).toBe(false);
  });
});
