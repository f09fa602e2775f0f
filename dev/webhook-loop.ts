import { DEFAULT_TIMEOUT_MS, drainOutbox, runDueDeliveries } from '../shared/webhooks/dispatch.ts';
import { errorFields, logger } from '../shared/observability/logger.ts';

/**
 * The local stand-in for the webhook dispatcher function (functions/webhooks, every minute in
 * AWS): fan out the outbox, then make the due attempts, every `intervalMs`. A pass starts only
 * after the previous one ended, so passes never overlap; an error is logged and the next pass
 * comes anyway.
 */
export interface WebhookLoopOptions {
  /** Between the end of one pass and the start of the next (default 250 ms; `WEBHOOK_INTERVAL_MS` for npm start). */
  intervalMs?: number;
  /** Per attempt (default 5 s). */
  timeoutMs?: number;
}

export interface WebhookLoop {
  /** Stops the loop and waits for a pass in progress to end. */
  stop(): Promise<void>;
}

export const DEFAULT_WEBHOOK_INTERVAL_MS = 250;

export function startWebhookLoop(options: WebhookLoopOptions = {}): WebhookLoop {
  const intervalMs = options.intervalMs ?? DEFAULT_WEBHOOK_INTERVAL_MS;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const pass = async () => {
    // Each step on its own: a failing fan-out must not stop the due attempts.
    await drainOutbox().catch((err: unknown) => logger.error('webhook fan-out pass failed', errorFields(err)));
    await runDueDeliveries(new Date(), { timeoutMs }).catch((err: unknown) =>
      logger.error('webhook attempts pass failed', errorFields(err)),
    );
  };
  const arm = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = pass().then(arm);
    }, intervalMs);
    timer.unref();
  };
  arm();
  return {
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
