import { metricSettings } from '../config/env.ts';

/**
 * Metrics as CloudWatch Embedded Metric Format lines: one JSON line on stdout per data point, which
 * CloudWatch Logs turns into a metric of the function's log group with no agent and no API call.
 * `METRICS` is the one list of what the code emits: the alarms and the dashboard
 * (infra/constructs/alarms.ts, infra/constructs/ops-dashboard.ts) name metrics only from it, and
 * tests/infra/metrics.test.ts holds that every one has a call site. Values never carry a secret or
 * a customer's data; dimension values are ids and fixed words.
 *
 * Each metric is published under every dimension set listed: `[]` is the whole platform's figure
 * (what an alarm watches), the others split it (what the dashboard graphs). Every set is a custom
 * metric of its own (docs/costs.md).
 */
export const METRICS = {
  /** A request sent to a panel (each attempt), by instance, API (application or client) and budget class. */
  PanelCalls: { unit: 'Count', sets: [[], ['Instance'], ['Instance', 'Api', 'CallClass']] },
  /** A panel answered 429 to its request rate limit (the budget pauses that API). */
  PanelRateLimited: { unit: 'Count', sets: [[], ['Instance']] },
  /** A call refused without asking the panel because its API is paused after a 429. */
  PanelPaused: { unit: 'Count', sets: [[], ['Instance']] },
  /** A call refused because the shared call budget of its class was spent. */
  PanelBudgetExhausted: { unit: 'Count', sets: [[], ['Instance', 'CallClass']] },
  /** Percent of a panel API's per-minute budget in use when a call spent it. */
  PanelBudgetUsed: { unit: 'Percent', sets: [[], ['Instance', 'Api']] },
  /** A panel that did not answer (connection refused, timeout, 5xx from a proxy). */
  PanelUnreachable: { unit: 'Count', sets: [[], ['Instance']] },
  /** A server record and its panel disagreed and the reconciler, repair pass or an admin's confirmation changed one, by kind. */
  ReconcilerRepairs: { unit: 'Count', sets: [[], ['Kind']] },
  /** A panel server that no live record on any instance claims, 10 minutes old, found by the reconciler. */
  ReconcilerOrphans: { unit: 'Count', sets: [[]] },
  /** An orphan held for an admin to confirm its removal (setting `holdOrphansForConfirmation`) instead of removed. */
  ReconcilerOrphansHeld: { unit: 'Count', sets: [[]] },
  /** An instance whose panel's nodes another instance claims: the same panel registered twice. */
  PanelRegisteredTwice: { unit: 'Count', sets: [[], ['Instance']] },
  /** Items due in the pending-repair queue when the repair pass ran. */
  PendingWorkDepth: { unit: 'Count', sets: [[]] },
  /** Age in seconds of the oldest due item of the pending-repair queue. */
  PendingWorkOldestAge: { unit: 'Seconds', sets: [[]] },
  /** Age in seconds of the oldest webhook delivery due and not yet sent. */
  WebhookBacklogOldestAge: { unit: 'Seconds', sets: [[]] },
  /** A webhook delivery attempt, by outcome (delivered, failed, given-up). */
  WebhookDeliveries: { unit: 'Count', sets: [[], ['Outcome']] },
  /** A webhook endpoint disabled after failing for too long. */
  WebhookEndpointsDisabled: { unit: 'Count', sets: [[]] },
  /** A customer message's send attempt, by outcome (sent, failed: retried later, given-up, suppressed: the address bounced or complained). */
  MailMessages: { unit: 'Count', sets: [[], ['Outcome']] },
  /** A customer message's send attempt that failed (retried, or given up): what the MailSendFailures alarm counts. */
  MailSendFailures: { unit: 'Count', sets: [[]] },
  /** An address put on the suppression list after a bounce or a complaint (SES's notification). */
  MailSuppressions: { unit: 'Count', sets: [[], ['Reason']] },
  /** A server suspended, by reason (balance, budget, admin). */
  Suspensions: { unit: 'Count', sets: [[], ['Reason']] },
  /** A server unsuspended, by the reason it had been suspended for. */
  Unsuspensions: { unit: 'Count', sets: [[], ['Reason']] },
  /** Wall time of one billing pass, plan to watermark, in milliseconds. */
  BillingPassDuration: { unit: 'Milliseconds', sets: [[]] },
  /** Server-hours charged by a billing pass (a shard's worth per line). */
  ServerHoursCharged: { unit: 'Count', sets: [[]] },
} as const satisfies Record<string, { unit: string; sets: readonly (readonly string[])[] }>;

export type MetricName = keyof typeof METRICS;

/** The namespace of every metric, the stage's own in AWS (`METRICS_NAMESPACE`, set by the stack). */
export const DEFAULT_METRICS_NAMESPACE = 'ControlPlane';

type Sink = (line: string) => void;
let sink: Sink = (line) => {
  process.stdout.write(`${line}\n`);
};

/** Tests read the lines a journey emits; `METRICS=off` mutes them (the local stack's console). */
export function setMetricSink(next: Sink | undefined): void {
  sink =
    next ??
    ((line) => {
      process.stdout.write(`${line}\n`);
    });
}

/**
 * One data point of `name`. `dimensions` must name every dimension of the metric's sets (a missing
 * one would make CloudWatch drop the line); extra fields are not accepted, so nothing else lands in
 * the log by accident.
 */
export function putMetric(name: MetricName, value: number, dimensions: Record<string, string> = {}): void {
  const settings = metricSettings();
  if (settings.off || !Number.isFinite(value)) return;
  const def = METRICS[name];
  sink(
    JSON.stringify({
      _aws: {
        Timestamp: Date.now(),
        CloudWatchMetrics: [
          {
            Namespace: settings.namespace ?? DEFAULT_METRICS_NAMESPACE,
            Dimensions: def.sets,
            Metrics: [{ Name: name, Unit: def.unit }],
          },
        ],
      },
      ...(settings.service ? { service: settings.service } : {}),
      ...dimensions,
      [name]: value,
    }),
  );
}
