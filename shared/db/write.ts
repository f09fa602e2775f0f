import { setTimeout as sleep } from 'node:timers/promises';
import {
  DeleteCommand,
  type DeleteCommandInput,
  PutCommand,
  type PutCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { unescapeKeys } from './stored-keys.ts';
import { db, tableName } from './client.ts';
import type { Item } from './items.ts';

/**
 * The one way the service writes under a condition (ARCHITECTURE.md, "Conditional writes").
 *
 * - Transaction items carry names, so a cancellation says *which* condition failed
 *   (`err.failed.has('profile')`) instead of an array position.
 * - A failed condition is always a `ConditionFailedError`, for a single write and a transaction
 *   alike; a transaction cancelled only because another one touched the same items at the same
 *   moment is a `WriteConflictError`, which `retrying` always retries.
 * - `retrying` is the one retry-with-backoff policy for optimistic locks: read, decide, write under
 *   a condition on what was read; on a conflict, wait a jittered, growing delay and read again.
 *
 * Nothing outside shared/db handles the SDK's TransactionCanceledException or
 * ConditionalCheckFailedException.
 */

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];
type NoTable<T> = Omit<T, 'TableName'>;

/** One write without its table (every write goes to the one table). */
export type WriteOp =
  | { Put: NoTable<NonNullable<TransactItem['Put']>> }
  | { Update: NoTable<NonNullable<TransactItem['Update']>> }
  | { Delete: NoTable<NonNullable<TransactItem['Delete']>> }
  | { ConditionCheck: NoTable<NonNullable<TransactItem['ConditionCheck']>> };

/** A transaction item with a name that errors report it by. */
export type NamedWrite = WriteOp & { name: string };

/** A condition of the write (or of the named transaction items) did not hold; nothing was written. */
export class ConditionFailedError extends Error {
  /** The names of the items whose condition failed (`item` for a single write). */
  readonly failed: ReadonlySet<string>;
  /** The items as they were, where the write asked for them (ReturnValuesOnConditionCheckFailure: ALL_OLD). */
  readonly current: ReadonlyMap<string, Item>;

  constructor(failed: string[], current: Map<string, Item> = new Map()) {
    super(`Condition failed: ${failed.join(', ')}`);
    this.name = 'ConditionFailedError';
    this.failed = new Set(failed);
    this.current = current;
  }

  has(name: string): boolean {
    return this.failed.has(name);
  }

  /** Whether any failed item's name starts with `prefix` (e.g. every `guard:` of a ledger append). */
  anyStartingWith(prefix: string): string[] {
    return [...this.failed].filter((name) => name.startsWith(prefix));
  }
}

/** Another transaction wrote the same items at the same moment; safe to retry from a fresh read. */
export class WriteConflictError extends Error {
  constructor() {
    super('Transaction conflict');
    this.name = 'WriteConflictError';
  }
}

export const isConditionFailed = (err: unknown, name?: string): err is ConditionFailedError =>
  err instanceof ConditionFailedError && (name === undefined || err.has(name));

const SINGLE = 'item';

function withTable(op: WriteOp): TransactItem {
  const table = tableName();
  if ('Put' in op) return { Put: { ...op.Put, TableName: table } };
  if ('Update' in op) return { Update: { ...op.Update, TableName: table } };
  if ('Delete' in op) return { Delete: { ...op.Delete, TableName: table } };
  return { ConditionCheck: { ...op.ConditionCheck, TableName: table } };
}

/** The document client unmarshalls results, but not the items that errors carry: they come in wire form. */
const fromWire = (item: Item): Item => unescapeKeys(unmarshall(item as Parameters<typeof unmarshall>[0]));

interface CancellationReason {
  Code?: string;
  Item?: Item;
}

/** Writes all items or none. Throws ConditionFailedError naming the items whose conditions failed. */
export async function transact(writes: NamedWrite[], options: { token?: string } = {}): Promise<void> {
  const names = writes.map((w) => w.name);
  if (new Set(names).size !== names.length) throw new Error(`Transaction item names must be unique: ${names.join(', ')}`);
  try {
    await db().send(
      new TransactWriteCommand({
        TransactItems: writes.map(({ name: _name, ...op }) => withTable(op as WriteOp)),
        ...(options.token ? { ClientRequestToken: options.token } : {}),
      }),
    );
  } catch (err) {
    if ((err as Error).name !== 'TransactionCanceledException') throw err;
    const reasons = ((err as { CancellationReasons?: CancellationReason[] }).CancellationReasons ?? []).slice(0, writes.length);
    const failed: string[] = [];
    const current = new Map<string, Item>();
    reasons.forEach((reason, i) => {
      if (reason.Code !== 'ConditionalCheckFailed') return;
      failed.push(names[i]!);
      if (reason.Item) current.set(names[i]!, fromWire(reason.Item));
    });
    if (failed.length) throw new ConditionFailedError(failed, current);
    if (reasons.some((r) => r.Code === 'TransactionConflict')) throw new WriteConflictError();
    throw err;
  }
}

type SingleWrite = { Put: NoTable<PutCommandInput> } | { Update: NoTable<UpdateCommandInput> } | { Delete: NoTable<DeleteCommandInput> };

/**
 * One Put, Update or Delete. Returns the attributes the write asked for (ReturnValues). Throws
 * ConditionFailedError (`failed` = ['item'], `current` the item as it was when asked for) when
 * its condition does not hold.
 */
export async function writeItem(op: SingleWrite): Promise<Item | undefined> {
  const TableName = tableName();
  try {
    if ('Put' in op) return (await db().send(new PutCommand({ ...op.Put, TableName }))).Attributes;
    if ('Update' in op) return (await db().send(new UpdateCommand({ ...op.Update, TableName }))).Attributes;
    return (await db().send(new DeleteCommand({ ...op.Delete, TableName }))).Attributes;
  } catch (err) {
    if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
    const item = (err as { Item?: Item }).Item;
    throw new ConditionFailedError([SINGLE], item ? new Map([[SINGLE, fromWire(item)]]) : new Map());
  }
}

/** A write whose failed condition means "someone else did it first": true when this call wrote. */
export async function writeIfFirst(op: SingleWrite): Promise<boolean> {
  try {
    await writeItem(op);
    return true;
  } catch (err) {
    if (isConditionFailed(err)) return false;
    throw err;
  }
}

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  attempts?: number;
  /** Which failed conditions mean "what I read has changed: read again" (default: none). */
  retryIf?: (err: ConditionFailedError) => boolean;
  /** The error to throw when every attempt conflicted. */
  exhausted: () => Error;
}

/** First retry waits up to BASE_MS, doubling each time up to CAP_MS; full jitter spreads racers apart. */
const BASE_MS = 10;
const CAP_MS = 250;
export const DEFAULT_ATTEMPTS = 8;

export const backoffMs = (attempt: number): number => Math.random() * Math.min(CAP_MS, BASE_MS * 2 ** attempt);

/**
 * Runs `body` (read, decide, write under a condition on what was read) until it succeeds. A write
 * conflict is always retried; a failed condition only when `retryIf` says so; anything else is thrown.
 */
export async function retrying<T>(body: (attempt: number) => Promise<T>, policy: RetryPolicy): Promise<T> {
  const attempts = policy.attempts ?? DEFAULT_ATTEMPTS;
  for (let attempt = 0; attempt < attempts; attempt++) {
    try {
      return await body(attempt);
    } catch (err) {
      const retry = err instanceof WriteConflictError || (err instanceof ConditionFailedError && (policy.retryIf?.(err) ?? false));
      if (!retry) throw err;
      if (attempt + 1 < attempts) await sleep(backoffMs(attempt));
    }
  }
  throw policy.exhausted();
}
