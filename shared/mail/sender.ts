import * as accessPatterns from '../db/access-patterns.ts';
import type { MailItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { MAIL_SHARDS } from '../db/table.ts';
import { isConditionFailed, writeItem } from '../db/write.ts';
import { getConfig } from '../config/env.ts';
import { errorFields, logger } from '../observability/logger.ts';
import { putMetric } from '../observability/metrics.ts';
import { FairPool } from '../webhooks/fair-pool.ts';
import { mailBrand } from './brand.ts';
import { buildMime } from './message.ts';
import { renderMail } from './render.ts';
import { getSettings } from '../settings/index.ts';
import { mailTransport } from './transport.ts';
import { isOptionalMessageType } from '../api/mail-classes.ts';
import { isMessageTypeOff } from './preferences.ts';
import { unsubscribeUrl } from './unsubscribe.ts';
import { recipientOf } from './email-confirm.ts';

/**
 * The mail sender (docs/mail.md): every queued message whose attempt is due (sparse GSI2
 * `MAILDUE#<n>`) is claimed by moving its due time a lease ahead under a condition on the due
 * time read, so two senders never send the same attempt; then rendered, checked against the
 * suppression list, handed to the transport and marked sent. A failed attempt is retried with
 * backoff for MAIL_RETRY_WINDOW_MS, then the message is given up. One message's trouble (a mailbox
 * the server refuses) delays only its own retries: attempts run fairly across accounts in a pool of
 * their own, never behind the customers' webhook receivers.
 *
 * At least once in one narrow case: a sender that dies after the transport took the message and
 * before it marked it sent sends it again when its lease ends (with the same Message-ID).
 */

/** Delay after the n-th failed attempt (the last one repeats). */
export const MAIL_RETRY_DELAYS_MS = [60_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000, 6 * 3_600_000] as const;
/** A message is retried for 2 days from its first attempt, then given up. */
export const MAIL_RETRY_WINDOW_MS = 2 * 86_400_000;
/** A claimed attempt is ours this long: longer than rendering a PDF and one send. */
export const MAIL_LEASE_MS = 60_000;
const PAGE = 100;
/** Sends of one account at once, and in all, in one sender. */
const PER_ACCOUNT = 2;
const OVERALL = 8;

export interface MailSummary {
  sent: number;
  suppressed: number;
  /** Closed unsent: the account turned the message type off. */
  optedOut: number;
  /** Failed attempts that will be retried. */
  retrying: number;
  /** Messages given up (retry window over, account gone). */
  failed: number;
}

type Outcome = keyof MailSummary | 'skipped';
/** `MailMessages` by Outcome, one line per attempt. */
const OUTCOME_METRIC = { sent: 'sent', suppressed: 'suppressed', optedOut: 'opted-out', retrying: 'failed', failed: 'given-up' } as const;

/** The mail work of one process: polls of the due index feed a pool fair across accounts. */
export class MailSender {
  readonly summary: MailSummary = { sent: 0, suppressed: 0, optedOut: 0, retrying: 0, failed: 0 };
  private readonly pool = new FairPool<{ item: MailItem; now: Date }>((task) => this.run(task), PER_ACCOUNT, OVERALL);
  private readonly held = new Set<string>();

  get busy(): boolean {
    return this.pool.busy;
  }

  async idle(): Promise<void> {
    await this.pool.idle();
  }

  /** Drops what has not started (it stays due), then waits for what has. */
  async finish(): Promise<void> {
    for (const task of this.pool.clear()) this.held.delete(task.item.mailId);
    await this.pool.idle();
  }

  /** Reads the due messages of every shard and queues those not held here; returns how many were queued. */
  async pollDue(now = new Date()): Promise<number> {
    const nowIso = now.toISOString();
    let queued = 0;
    for (let shard = 0; shard < MAIL_SHARDS; shard++) {
      for (const item of await accessPatterns.dueMailOfShard(shard, nowIso, PAGE)) {
        if (this.held.has(item.mailId)) continue;
        this.held.add(item.mailId);
        this.pool.push(item.accountId, { item, now });
        queued++;
      }
    }
    return queued;
  }

  private async run({ item, now }: { item: MailItem; now: Date }): Promise<void> {
    try {
      const outcome = await attempt(item, now);
      if (outcome === 'skipped') return;
      this.summary[outcome]++;
      putMetric('MailMessages', 1, { Outcome: OUTCOME_METRIC[outcome] });
      if (outcome === 'retrying' || outcome === 'failed') putMetric('MailSendFailures', 1);
    } catch (err) {
      // One message's trouble (a throttled write) must not stop the others; its claim expires and it is tried again.
      logger.error('mail attempt failed', { mailId: item.mailId, ...errorFields(err) });
    } finally {
      this.held.delete(item.mailId);
    }
  }
}

/** One pass as the tests drive it: every due message at `now`, and the outcome once all are done. */
export async function sendDueMail(now = new Date()): Promise<MailSummary> {
  const sender = new MailSender();
  await sender.pollDue(now);
  await sender.idle();
  return sender.summary;
}

/** One AWS run (functions/mail): a poll every `pollMs` while there is work, for up to `runMs`. */
export async function sendMailFor(runMs = 50_000, pollMs = 1_000): Promise<MailSummary> {
  const end = Date.now() + runMs;
  const sender = new MailSender();
  try {
    for (;;) {
      const queued = await sender.pollDue(new Date());
      if ((!queued && !sender.busy) || Date.now() + pollMs >= end) break;
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  } finally {
    await sender.finish();
  }
  return sender.summary;
}

async function attempt(seen: MailItem, now: Date): Promise<Outcome> {
  const transport = mailTransport();
  const { mail } = getConfig();
  if (!transport || !mail.from) return 'skipped'; // mail off here: the message waits for a sender that has it
  const leasedSk = await claim(seen, now);
  if (!leasedSk) return 'skipped';
  const account = await accessPatterns.accountById(seen.accountId);
  if (!account) return finish(seen, leasedSk, now, { outcome: 'failed', error: 'account_deleted' });
  const recipient = await recipientOf(seen, account.email, mail.apiUrl);
  // A confirmation whose request was replaced, confirmed or expired: its link would not work. Closed unsent.
  if (!recipient) return finish(seen, leasedSk, now, { outcome: 'optedOut', error: 'superseded' });
  const { to } = recipient;
  // Read at send time: a type turned off after the message was queued is not sent either.
  if (await isMessageTypeOff(seen.accountId, seen.messageType)) return finish(seen, leasedSk, now, { outcome: 'optedOut', error: null });
  if (await accessPatterns.mailSuppression(to)) return finish(seen, leasedSk, now, { outcome: 'suppressed', error: null, recipient: to });
  try {
    const type = seen.messageType;
    const message = {
      ...(await renderMail(seen, to, mail.dashboardUrl, recipient.confirmUrl)),
      ...(isOptionalMessageType(type) ? { unsubscribeUrl: await unsubscribeUrl(mail.apiUrl, seen.accountId, type) } : {}),
    };
    const raw = await buildMime(message, { name: mailBrand(await getSettings()).name, address: mail.from });
    const messageId = await transport.send(raw, { from: mail.from, to });
    return finish(seen, leasedSk, now, { outcome: 'sent', error: null, recipient: to, messageId });
  } catch (err) {
    const error = err instanceof Error ? err.message.slice(0, 300) : 'send failed';
    logger.warn('mail not sent', { mailId: seen.mailId, messageType: seen.messageType, error });
    return finish(seen, leasedSk, now, { outcome: 'retrying', error });
  }
}

/** The message, claimed for MAIL_LEASE_MS: its due entry moved ahead under a condition on the entry read. */
async function claim(seen: MailItem, now: Date): Promise<string | undefined> {
  if (!seen.GSI2SK) return undefined;
  const leaseUntil = new Date(Math.max(now.getTime(), Date.now()) + MAIL_LEASE_MS).toISOString();
  const due = keys.mailDue(seen.mailId, leaseUntil);
  try {
    await writeItem({
      Update: {
        Key: keys.mail(seen.mailId),
        UpdateExpression: 'SET GSI2SK = :leased, nextAttemptAt = :until',
        ConditionExpression: 'GSI2SK = :seen AND #status = :pending',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':leased': due.GSI2SK, ':until': leaseUntil, ':seen': seen.GSI2SK, ':pending': 'pending' },
      },
    });
    return due.GSI2SK;
  } catch (err) {
    if (isConditionFailed(err)) return undefined; // another sender has it, or it was sent
    throw err;
  }
}

/** When the next attempt is due after this failed one, or null when the retry window is over. */
export function nextMailAttemptAfter(item: Pick<MailItem, 'attempts'>, now: Date, failedCount: number): Date | null {
  const first = item.attempts.length ? Date.parse(item.attempts[0]!.at) : now.getTime();
  const windowEnd = first + MAIL_RETRY_WINDOW_MS;
  if (now.getTime() >= windowEnd) return null;
  const delay = MAIL_RETRY_DELAYS_MS[Math.min(failedCount, MAIL_RETRY_DELAYS_MS.length) - 1]!;
  return new Date(Math.min(now.getTime() + delay, windowEnd));
}

interface Result {
  outcome: 'sent' | 'suppressed' | 'optedOut' | 'retrying' | 'failed';
  error: string | null;
  recipient?: string;
  messageId?: string;
}

/** Records the attempt and the message's next state, if the claim is still ours. */
async function finish(item: MailItem, leasedSk: string, now: Date, result: Result): Promise<Outcome> {
  const at = now.toISOString();
  const attempts = [...item.attempts, { at, error: result.error }].slice(-20);
  const failedCount = attempts.filter((a) => a.error !== null).length;
  const next = result.outcome === 'retrying' ? nextMailAttemptAfter(item, now, failedCount) : null;
  const outcome = result.outcome === 'retrying' && !next ? 'failed' : result.outcome;
  const values: Record<string, unknown> = {
    ':attempts': attempts,
    ':status': outcome === 'retrying' ? 'pending' : outcome === 'optedOut' ? 'skipped' : outcome,
    ':next': next ? next.toISOString() : null,
    ':at': at,
    ':leased': leasedSk,
  };
  let update = 'SET attempts = :attempts, #status = :status, nextAttemptAt = :next, updatedAt = :at';
  if (result.recipient) {
    update += ', recipient = :recipient';
    values[':recipient'] = result.recipient;
  }
  if (result.messageId) {
    update += ', messageId = :messageId';
    values[':messageId'] = result.messageId;
  }
  if (next) {
    update += ', GSI2SK = :due';
    values[':due'] = keys.mailDue(item.mailId, next.toISOString()).GSI2SK;
  } else {
    update += ' REMOVE GSI2PK, GSI2SK';
  }
  try {
    await writeItem({
      Update: {
        Key: keys.mail(item.mailId),
        UpdateExpression: update,
        ConditionExpression: 'GSI2SK = :leased',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: values,
      },
    });
  } catch (err) {
    if (!isConditionFailed(err)) throw err;
    logger.warn('mail claim lost before its attempt was recorded', { mailId: item.mailId });
  }
  return outcome;
}
