import { DEFAULT_TIMEOUT_MS, Dispatcher } from '../shared/webhooks/dispatch.ts';
import { errorFields, logger } from '../shared/observability/logger.ts';
import { startPassLoop } from './repair-loop.ts';

/**
 * The local stand-in for the webhook dispatcher function (functions/webhooks, every minute in
 * AWS): poll the outbox and the due attempts every `intervalMs`. A pass starts only after the
 * previous one ended, but it does not wait for the fan-outs and attempts it queued: they run in one
 * Dispatcher (fair across accounts) while later passes add work, so one account's hanging receivers
 * or thousands of events never hold up the next pass. An error is logged and the next pass comes anyway.
 */
export interface WebhookLoopOptions {
  /** Between the end of one pass and the start of the next (default 250 ms; `WEBHOOK_INTERVAL_MS` for npm start). */
  intervalMs?: number;
  /** Per attempt (default 5 s). */
  timeoutMs?: number;
}

export interface WebhookLoop {
  /** Stops the loop and waits for a pass in progress and the attempts in flight to end (those not started stay due). */
  stop(): Promise<void>;
}

export const DEFAULT_WEBHOOK_INTERVAL_MS = 250;

export function startWebhookLoop(options: WebhookLoopOptions = {}): WebhookLoop {
  const intervalMs = options.intervalMs ?? DEFAULT_WEBHOOK_INTERVAL_MS;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const dispatcher = new Dispatcher({ timeoutMs });
  const loop = startPassLoop(async () => {
    // Each poll on its own: a failing outbox read must not stop the due attempts.
    const now = new Date();
    await dispatcher.pollOutbox(now).catch((err: unknown) => logger.error('webhook fan-out pass failed', errorFields(err)));
    await dispatcher.pollDue(now).catch((err: unknown) => logger.error('webhook attempts pass failed', errorFields(err)));
  }, intervalMs);
  return {
    stop: async () => {
      await loop.stop();
      await dispatcher.finish();
    },
  };
}
