import { runRepairs } from '../shared/servers/repairs.ts';
import { runAutoTopUps } from '../shared/payments/autotopup.ts';
import { runInstallWatch } from '../shared/servers/install-watch.ts';
import { reconcileStripeEvents } from '../shared/payments/reconcile-events.ts';
import { errorFields, logger } from '../shared/observability/logger.ts';

/**
 * The local stand-in for the every-minute pending-repair function (functions/billing-pass
 * `minutePasses` in AWS): redoes the suspensions and repairs that did not complete (shared/servers/
 * repairs.ts), the due auto top-ups (shared/payments/autotopup.ts), the Stripe event reconciliation
 * (shared/payments/reconcile-events.ts, itself at most every five minutes) and the install watch
 * (shared/servers/install-watch.ts) every `intervalMs`. A pass starts only after the previous one ended, so passes never
 * overlap; an error is logged and the next pass comes anyway.
 */
export interface RepairLoopOptions {
  /** Between the end of one pass and the start of the next (default a minute, as in AWS; `REPAIR_INTERVAL_MS` for npm start). */
  intervalMs?: number;
  /** The install watch's interval per server (default INSTALL_CHECK_INTERVAL_MS); tests with a short loop shorten it too. */
  installCheckIntervalMs?: number;
  /** `false`: no install watch (test files whose exact event lists its events would join; npm start runs it). */
  installWatch?: boolean;
  /** `false`: no Stripe event reconciliation (test files run it themselves; npm start runs it, a no-op in the sandbox). */
  stripeEvents?: boolean;
}

export interface PassLoop {
  /** Stops the loop and waits for a pass in progress to end. */
  stop(): Promise<void>;
}

export const DEFAULT_REPAIR_INTERVAL_MS = 60_000;

export function startRepairLoop(options: RepairLoopOptions = {}): PassLoop {
  return startPassLoop(async () => {
    await runRepairs().catch((err: unknown) => logger.error('pending-repair pass failed', errorFields(err)));
    await runAutoTopUps().catch((err: unknown) => logger.error('auto top-up pass failed', errorFields(err)));
    if (options.stripeEvents !== false) {
      await reconcileStripeEvents(new Date()).catch((err: unknown) => logger.error('stripe event reconciliation failed', errorFields(err)));
    }
    if (options.installWatch === false) return;
    await runInstallWatch(new Date(), { ...(options.installCheckIntervalMs ? { intervalMs: options.installCheckIntervalMs } : {}) }).catch(
      (err: unknown) => logger.error('install watch pass failed', errorFields(err)),
    );
  }, options.intervalMs ?? DEFAULT_REPAIR_INTERVAL_MS);
}

/** Runs `pass` again `intervalMs` after each run ends, until stopped. */
export function startPassLoop(pass: () => Promise<void>, intervalMs: number): PassLoop {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
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
