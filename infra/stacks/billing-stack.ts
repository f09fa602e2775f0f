import { CfnOutput, Duration, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import { dnsZoneFromContext } from '../dns.ts';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { Alarms, suspensionSpikeFromContext } from '../constructs/alarms.ts';
import { TABLE_ACCESS } from '../../shared/db/key-prefixes.ts';
import { BILLING_SHARDS } from '../../shared/db/table.ts';
import { AppFunction, SETTINGS_PARTITION } from '../constructs/app-function.ts';
import type { FunctionEgress } from '../constructs/egress.ts';
import { panelSecretsPrefix } from '../stage.ts';

export interface BillingStackProps extends StackProps {
  table: ITable;
  /**
   * The cursor key of the API stack. The scheduler signs cursors (the reconciler pages through all
   * servers), so it gets the key's ARN (`CURSOR_SECRET_ARN`, an `Fn::ImportValue` of the API
   * stack's export) and may read that one secret at run time; the worker gets neither.
   */
  cursorSecret: secretsmanager.ISecret;
  /** Where the billing alarms notify (the API stack's `ControlPlaneAlarms` topic). */
  alarmTopic: sns.ITopic;
  /**
   * The Stripe secret's name (as for the API stack; default: context `stripeSecretName`): the
   * every-minute entry charges the due auto top-ups with it. Without one, auto top-up is off.
   */
  stripeSecretName?: string;
  /**
   * The fixed outgoing address (context `fixedEgress`, the network stack): all three functions call
   * panels (reconciling, suspending, repairing), so all three run in its VPC. Default: none.
   */
  egress?: FunctionEgress;
}

/** Bundle of the billing pass (functions/billing-pass/handler.ts): exports `scheduler` and `worker`. */
export const BILLING_PASS_BUNDLE = 'billing-pass';
/** Three minutes past every hour: after the pass's two-minute grace (shared/billing/pass.ts GRACE_MS). */
export const HOURLY_SCHEDULE = 'cron(3 * * * ? *)';
const WORKER_TIMEOUT = Duration.minutes(5);
/**
 * Shard workers at once (the queue's `maxConcurrency`) when context `billingWorkers` is not given.
 * A new AWS account may run 10 Lambda invocations at once, shared by every function. During a pass
 * the scheduler, the every-minute BillingRepairs and the webhook dispatcher take one each; 2
 * workers (the least SQS allows) leave 5 to the API's requests, so neither side is throttled.
 * A throttled shard message waits out its visibility timeout (30 min) and may be dead-lettered.
 * At 2, a pass runs in 8 waves: seconds each for a young fleet (docs/deploy.md, "Billing workers").
 */
export const DEFAULT_BILLING_WORKERS = 2;
/** SQS allows a Lambda consumer 2 to 1,000; more workers than shards (one message each) never run. */
const BILLING_WORKERS_RANGE = { min: 2, max: BILLING_SHARDS } as const;

/**
 * Shard workers at once: context `billingWorkers` (cdk.json, or `cdk deploy -c billingWorkers=16`),
 * read here only. 16, one per shard, makes a pass one wave (docs/costs.md, "Billing 1,000,000
 * servers"); it needs an account concurrency quota well above 16. Refuses a value outside 2–16.
 */
export function billingWorkersFromContext(scope: Construct): number {
  const value: unknown = scope.node.tryGetContext('billingWorkers');
  if (value === undefined || value === '') return DEFAULT_BILLING_WORKERS;
  const n = typeof value === 'number' ? value : Number(String(value).trim());
  if (!Number.isInteger(n) || n < BILLING_WORKERS_RANGE.min || n > BILLING_WORKERS_RANGE.max) {
    throw new Error(
      `Context billingWorkers=${String(value)}: a whole number of workers from ${BILLING_WORKERS_RANGE.min} to ${BILLING_WORKERS_RANGE.max} (one per shard)`,
    );
  }
  return n;
}
/** One full vCPU: the worker's time is its own CPU (the plan's measured 0.68 ms per server-hour). */
export const WORKER_MEMORY_MB = 1769;
/** The every-minute passes (functions/billing-pass `minutePasses`): pending repairs, due auto top-ups, the install watch, missed Stripe events. */
export const REPAIRS_SCHEDULE = 'rate(1 minute)';
/** Deliveries of one shard message before it goes to the dead-letter queue. */
export const MAX_RECEIVE_COUNT = 5;

/**
 * The hourly billing pass (ARCHITECTURE.md, "Money"): an EventBridge rule invokes the scheduler
 * at :03 every hour; the scheduler reports the watermark lag, reconciles the panels, plans the pass
 * and sends one message per shard of the billable-servers index to the work queue; workers charge
 * one shard per message and report failed messages, which are retried and end in the work DLQ.
 * Every step is idempotent (charges are keyed by server and hour) and a missed pass is caught up by
 * the next one from the watermark, so a retried or duplicated event never double-charges.
 *
 * A stack of its own, apart from the API: deploying, rolling back or destroying the API never
 * touches the money path and its in-flight shard messages, and billing can be paused and resumed
 * on its own (it catches up from the watermark). It depends on the data stack (the table) and on
 * the API stack (the cursor key the reconciler signs its pages with, and the alarm topic).
 */
export class BillingStack extends Stack {
  readonly scheduler: AppFunction;
  readonly worker: AppFunction;
  /** `BillingRepairs`, the every-minute function: runs the bundle's `minutePasses` (named as deployed). */
  readonly repairs: AppFunction;
  readonly repairsRule: events.Rule;
  readonly queue: sqs.Queue;
  readonly workDlq: sqs.Queue;
  readonly schedulerDlq: sqs.Queue;
  readonly rule: events.Rule;
  readonly alarms: Alarms;
  /** Shard workers at once (billingWorkersFromContext). */
  readonly workers: number;

  constructor(scope: Construct, id: string, props: BillingStackProps) {
    super(scope, id, props);

    const environment: Record<string, string> = { SECRETS_PREFIX: panelSecretsPrefix(this) };
    const egress = props.egress ? { egress: props.egress } : {};
    const queueDefaults = { encryption: sqs.QueueEncryption.SQS_MANAGED, enforceSSL: true } as const;

    // ---- the work queue (one message per shard) and its dead-letter queue ----
    this.workDlq = new sqs.Queue(this, 'WorkDlq', { ...queueDefaults, retentionPeriod: Duration.days(14) });
    this.queue = new sqs.Queue(this, 'WorkQueue', {
      ...queueDefaults,
      // AWS's rule for Lambda consumers: at least six times the function timeout.
      visibilityTimeout: Duration.seconds(WORKER_TIMEOUT.toSeconds() * 6),
      retentionPeriod: Duration.days(4),
      deadLetterQueue: { queue: this.workDlq, maxReceiveCount: MAX_RECEIVE_COUNT },
    });

    // ---- the dead-letter queue of the scheduler: events EventBridge could not deliver, and
    // invocations that still failed after Lambda's asynchronous retries ----
    this.schedulerDlq = new sqs.Queue(this, 'SchedulerDlq', { ...queueDefaults, retentionPeriod: Duration.days(14) });
    Validations.of(this.schedulerDlq).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        "This queue is itself a dead-letter queue: of the hourly rule's Lambda target and of the scheduler's asynchronous invocations (cdk-nag only recognises queues named as another queue's DLQ).",
    });

    const dnsZone = dnsZoneFromContext(this);
    // ---- the functions: one bundle, two entry points ----
    this.scheduler = new AppFunction(this, 'BillingScheduler', {
      group: BILLING_PASS_BUNDLE,
      handler: 'index.scheduler',
      ...egress,
      description: 'Control plane: hourly billing pass scheduler (reconciles panels, queues one message per shard)',
      // Planning and queuing take seconds, but before queuing the scheduler runs the panel
      // reconciler, one panel after another, each call with a 10 s timeout and retries: a Lambda
      // timeout there would end the run before any shard is queued. The cap costs nothing unused.
      timeout: Duration.minutes(5),
      environment: { ...environment, BILLING_QUEUE_URL: this.queue.queueUrl, CURSOR_SECRET_ARN: props.cursorSecret.secretArn },
    });
    this.worker = new AppFunction(this, 'BillingWorker', {
      group: BILLING_PASS_BUNDLE,
      handler: 'index.worker',
      ...egress,
      description: 'Control plane: hourly billing pass worker (charges one shard per message)',
      timeout: WORKER_TIMEOUT,
      memorySize: WORKER_MEMORY_MB,
      environment,
    });
    this.repairs = new AppFunction(this, 'BillingRepairs', {
      group: BILLING_PASS_BUNDLE,
      handler: 'index.minutePasses',
      ...egress,
      description:
        'Control plane: every minute, pending suspensions and repairs, due auto top-ups, the install watch and missed Stripe events (functions/billing-pass minutePasses)',
      // At most REPAIRS_PER_RUN servers, four at a time, each a bounded lease wait and panel calls with retries.
      timeout: Duration.minutes(5),
      environment,
    });
    for (const fn of [this.scheduler, this.worker, this.repairs]) {
      // Charges, watermark, pass record, suspensions, server counts (shared/db/key-prefixes.ts). Settings: never written.
      fn.bindTable(props.table, TABLE_ACCESS['billing-pass']);
      fn.denyPartitionWrites(props.table, [SETTINGS_PARTITION]);
      // Suspending, unsuspending and reconciling go through the panels.
      fn.grantPanelKeys('read');
      // Deleting (retention, the reconciler's closes) removes a server's subdomain records; the repair pass retries them.
      if (dnsZone) fn.grantDnsZone(dnsZone);
    }
    // Auto top-ups (shared/payments/autotopup.ts): only the every-minute entry calls Stripe.
    const stripeSecretName = props.stripeSecretName ?? this.node.tryGetContext('stripeSecretName');
    if (typeof stripeSecretName === 'string' && stripeSecretName.trim()) {
      const stripeSecret = secretsmanager.Secret.fromSecretNameV2(this, 'StripeSecret', stripeSecretName.trim());
      this.repairs.addEnvironment('STRIPE_SECRET_ARN', stripeSecret.secretArn);
      stripeSecret.grantRead(this.repairs.role);
    }
    this.queue.grantSendMessages(this.scheduler.fn);
    props.cursorSecret.grantRead(this.scheduler.role);

    this.workers = billingWorkersFromContext(this);
    this.worker.fn.addEventSource(
      new SqsEventSource(this.queue, { batchSize: 1, reportBatchItemFailures: true, maxConcurrency: this.workers }),
    );

    // ---- the hourly rule ----
    this.scheduler.fn.configureAsyncInvoke({
      retryAttempts: 2,
      maxEventAge: Duration.hours(1),
      onFailure: new SqsDestination(this.schedulerDlq),
    });
    this.rule = new events.Rule(this, 'HourlyRule', {
      description: 'Hourly billing pass, three minutes past the hour',
      schedule: events.Schedule.expression(HOURLY_SCHEDULE),
    });
    this.rule.addTarget(
      new targets.LambdaFunction(this.scheduler.fn, {
        deadLetterQueue: this.schedulerDlq,
        retryAttempts: 4,
        // A later delivery is pointless: the next hour's pass catches up from the watermark.
        maxEventAge: Duration.hours(1),
      }),
    );

    // ---- the every-minute rule (ids kept from when it ran the repairs alone: a new id replaces the resource) ----
    // A missed run is simply the next minute's work.
    this.repairsRule = new events.Rule(this, 'RepairsRule', {
      description: 'Every minute: pending repairs, due auto top-ups, the install watch, missed Stripe events',
      schedule: events.Schedule.expression(REPAIRS_SCHEDULE),
    });
    this.repairsRule.addTarget(new targets.LambdaFunction(this.repairs.fn, { retryAttempts: 0, maxEventAge: Duration.minutes(1) }));

    // ---- alarms ----
    this.alarms = new Alarms(this, 'Alarms', { topic: props.alarmTopic });
    this.alarms.forFunction('BillingScheduler', this.scheduler);
    this.alarms.forFunction('BillingWorker', this.worker);
    this.alarms.forFunction('BillingRepairs', this.repairs);
    this.alarms.loggedErrors('Billing', [this.scheduler, this.worker, this.repairs]);
    this.alarms.deadLetters(
      'BillingWorkDlq',
      this.workDlq,
      `A billing shard failed ${MAX_RECEIVE_COUNT} times and was dead-lettered. The watermark waits for it and the next pass retries the hour; fix the cause (worker logs), then purge the DLQ or redrive it.`,
    );
    this.alarms.deadLetters(
      'BillingSchedulerDlq',
      this.schedulerDlq,
      'An hourly billing run could not be delivered or failed after its retries. The next run catches up from the watermark; read the message (it carries the error), fix the cause, then purge the DLQ.',
    );
    this.alarms.billingWatermarkLag(this.scheduler.logGroup);
    this.alarms.billing(suspensionSpikeFromContext(this));

    new CfnOutput(this, 'BillingQueueUrl', { value: this.queue.queueUrl });
    new CfnOutput(this, 'BillingWorkDlqUrl', { value: this.workDlq.queueUrl });
    new CfnOutput(this, 'BillingSchedulerDlqUrl', { value: this.schedulerDlq.queueUrl });
  }
}
