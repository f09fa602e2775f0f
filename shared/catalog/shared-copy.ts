import type { ItemKey } from '../db/keys.ts';
import { writeIfFirst } from '../db/write.ts';
import type { InstanceView } from '../instances/index.ts';
import { errorFields, logger } from '../observability/logger.ts';

/**
 * A panel read shared by every process through the table for a short while: a panel allows 240
 * Application calls a minute for everything the control plane does, so one read a minute serves
 * every deploy and catalog request of every Lambda.
 *
 * - A fresh copy is used as it is.
 * - A stale copy is refreshed by one reader, which takes a short lease with a conditional write;
 *   the others keep using the stale copy until the new one lands. A failed refresh leaves the
 *   stale copy in use and the lease lapses, so the next reader after it tries again.
 * - With no copy at all (or only one of another panel URL), the reader asks the panel itself.
 * - Each process also keeps what it read for MEMO_MS and shares one read in flight.
 */
export interface SharedCopy {
  baseUrl: string;
  freshUntil: number;
}

export interface CopySource<T extends SharedCopy> {
  /** For log lines: `topology`, `eggs`. */
  name: string;
  key: (instanceId: string) => ItemKey;
  stored: (instanceId: string) => Promise<T | undefined>;
  /** Reads the panel and stores a new copy. */
  refresh: (instance: InstanceView) => Promise<T>;
}

/** Long enough to serve one request's reads and a burst of requests from one copy; short enough that another process's change shows soon. */
const MEMO_MS = 2_000;
/** Longer than a panel read with its retries takes; a refresher that died hands over after it. */
const REFRESH_LEASE_MS = 15_000;

interface Memo<T> {
  at: number;
  baseUrl: string;
  copy: Promise<T>;
}

export class SharedCopies<T extends SharedCopy> {
  private readonly memo = new Map<string, Memo<T>>();
  private readonly source: CopySource<T>;

  constructor(source: CopySource<T>) {
    this.source = source;
  }

  get(instance: InstanceView): Promise<T> {
    const hit = this.memo.get(instance.id);
    if (hit && hit.baseUrl === instance.baseUrl && Date.now() - hit.at < MEMO_MS) return hit.copy;
    const copy = this.current(instance);
    this.remember(instance, copy);
    // A failed read is not kept: the next request asks again.
    copy.catch(() => {
      if (this.memo.get(instance.id)?.copy === copy) this.memo.delete(instance.id);
    });
    return copy;
  }

  /** Keeps a copy this process just wrote (a claim's answer), so its next reads start from it. */
  remember(instance: Pick<InstanceView, 'id' | 'baseUrl'>, copy: T | Promise<T>): void {
    this.memo.set(instance.id, { at: Date.now(), baseUrl: instance.baseUrl, copy: Promise.resolve(copy) });
  }

  forget(instanceId?: string): void {
    if (instanceId === undefined) this.memo.clear();
    else this.memo.delete(instanceId);
  }

  /** The panel refused what the copy promised: the next reader refreshes it (under the lease, as for any stale copy). */
  async markStale(instanceId: string): Promise<void> {
    this.forget(instanceId);
    await writeIfFirst({
      Update: {
        Key: this.source.key(instanceId),
        UpdateExpression: 'SET freshUntil = :now',
        ConditionExpression: 'attribute_exists(PK)',
        ExpressionAttributeValues: { ':now': Date.now() },
      },
    });
  }

  private async current(instance: InstanceView): Promise<T> {
    const stored = await this.source.stored(instance.id);
    const copy = stored?.baseUrl === instance.baseUrl ? stored : undefined;
    if (!copy) return this.source.refresh(instance);
    if (copy.freshUntil > Date.now() || !(await this.takeRefreshLease(instance.id))) return copy;
    try {
      return await this.source.refresh(instance);
    } catch (err) {
      logger.warn(`panel ${this.source.name}: refresh failed, the stale copy stays in use`, {
        instanceId: instance.id,
        ...errorFields(err),
      });
      return copy;
    }
  }

  private takeRefreshLease(instanceId: string): Promise<boolean> {
    const now = Date.now();
    return writeIfFirst({
      Update: {
        Key: this.source.key(instanceId),
        UpdateExpression: 'SET refreshingUntil = :until',
        ConditionExpression: 'attribute_exists(PK) AND (attribute_not_exists(refreshingUntil) OR refreshingUntil < :now)',
        ExpressionAttributeValues: { ':until': now + REFRESH_LEASE_MS, ':now': now },
      },
    });
  }
}
