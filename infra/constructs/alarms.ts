import { ArnFormat, CfnOutput, Duration, Stack } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { MetricName } from '../../shared/observability/metrics.ts';
import { TABLE } from '../../shared/db/table.ts';
import type { AppFunction } from './app-function.ts';
import { metricsNamespace, stageName } from '../stage.ts';

/** Metrics the log metric filters below make out of log lines (not in `METRICS`: no `putMetric` writes them). */
/** Failed mail send attempts in 15 minutes that raise the MailSendFailures alarm. */
export const MAIL_FAILURES_PER_15_MINUTES = 5;

export const LOG_FILTER_METRICS = [
  'ApiLoggedErrors',
  'BillingLoggedErrors',
  'WebhooksLoggedErrors',
  'BillingWatermarkLagHours',
  'StripeWebhookRejected',
] as const;

/**
 * A panel unreachable, or paused after a 429, in at least this many of the last PANEL_WINDOW_MINUTES
 * one-minute periods. One failed call (a timeout that the retry absorbed, one 429) is noise; a panel
 * that is down or keeps rate-limiting fails in most minutes that have calls. 3 of 5 fires three to
 * five minutes into an outage even when calls are sparse (a few customers, the every-minute repairs).
 */
export const PANEL_ALARM_MINUTES = 3;
export const PANEL_WINDOW_MINUTES = 5;
/** Percent of a panel API's per-minute call budget (PanelBudgetUsed, Maximum) held for BUDGET_MINUTES minutes. */
export const BUDGET_USED_PERCENT = 90;
export const BUDGET_MINUTES = 5;
/** Seconds the oldest due webhook delivery may wait (WebhookBacklogOldestAge). */
export const WEBHOOK_BACKLOG_SECONDS = 900;
/** Seconds the oldest due item of the pending-repair queue may wait (PendingWorkOldestAge). */
export const PENDING_WORK_SECONDS = 600;
/**
 * Suspensions in one hour that count as a spike (context `suspensionSpikeThreshold` overrides it).
 * Credit suspensions come in a batch after each hourly billing pass, so an hour is the natural
 * window; a healthy fleet of a few hundred accounts sees a handful an hour at most. Twenty in an hour
 * is a wrong price, a charge counted twice or an admin script gone wrong. It grows with the fleet,
 * hence the knob.
 */
export const SUSPENSION_SPIKE = 20;

/** The 5xx-rate alarm stays quiet below this many requests in its 5 minutes (idle hours, a single 500). */
export const API_5XX_MIN_REQUESTS = 100;
/** Percent of requests answered 5xx, over 5 minutes. */
export const API_5XX_PERCENT = 1;
/** The billing watermark may trail by this many hours before the alarm fires. */
export const WATERMARK_LAG_HOURS = 2;
/** Rejected webhook signatures in 5 minutes: a few are noise (a replay, a stale retry), more is an attack or a rotated secret. */
export const WEBHOOK_REJECTIONS = 5;

/** SUSPENSION_SPIKE, or context `suspensionSpikeThreshold` (a positive whole number). */
export function suspensionSpikeFromContext(scope: Construct): number {
  const value: unknown = scope.node.tryGetContext('suspensionSpikeThreshold');
  if (value === undefined || value === null || value === '') return SUSPENSION_SPIKE;
  const n = typeof value === 'number' ? value : Number(String(value).trim());
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`Context suspensionSpikeThreshold=${String(value)}: a positive whole number of suspensions an hour`);
  return n;
}

export interface AlarmsProps {
  /** Publish to this topic; default: create the `ControlPlaneAlarms` topic here. */
  topic?: sns.ITopic;
  /** Subscribe this address to the topic it creates (ignored with `topic`). */
  email?: string;
}

const FIVE_MINUTES = Duration.minutes(5);

/**
 * Every alarm of the control plane, defined here and nowhere else. Each stack makes one `Alarms`
 * and hands it what it owns (functions, the API, queues, log groups); all alarms notify one SNS
 * topic (`ControlPlaneAlarms`, made by the API stack) on ALARM and again on OK.
 *
 * The log-based metrics come from the JSON lines the code writes (shared/observability/logger.ts,
 * field `message`). The metric filters have no default value, so they publish only when a line
 * matches: a custom metric costs nothing in the hours it receives no data.
 */
export class Alarms extends Construct {
  readonly topic: sns.ITopic;
  readonly alarms: cloudwatch.Alarm[] = [];
  /**
   * The stage's namespace (infra/stage.ts `metricsNamespace`: `ControlPlane`, `ControlPlane/<stage>`
   * with a stage) of the code's EMF metrics and of the log filters' metrics, so two stages in one
   * account never feed each other's alarms.
   */
  readonly namespace: string;
  private readonly action: SnsAction;

  constructor(scope: Construct, id: string, props: AlarmsProps = {}) {
    super(scope, id);
    if (props.topic) {
      this.topic = props.topic;
    } else {
      const stack = Stack.of(this);
      // Not KMS-encrypted: notifications carry alarm names and metric values, no customer data, and
      // CloudWatch cannot publish to a topic under the AWS-managed SNS key (it would take a
      // customer-managed key at $1 a month). Publishing requires TLS (cdk-nag AwsSolutions-SNS3).
      const topic = new sns.Topic(this, 'Topic', {
        // A fixed name (subscribers find it), prefixed with the stage when there is one (infra/stage.ts).
        topicName: stageName(this, 'ControlPlaneAlarms'),
        displayName: 'Control plane alarms',
        enforceSSL: true,
      });
      // CloudWatch publishes alarm notifications as its service principal; say so explicitly, and
      // only for this account's alarms (confused-deputy guard).
      topic.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: 'AllowCloudWatchAlarms',
          principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
          actions: ['sns:Publish'],
          resources: [topic.topicArn],
          conditions: {
            ArnLike: {
              'aws:SourceArn': stack.formatArn({
                service: 'cloudwatch',
                resource: 'alarm',
                resourceName: '*',
                arnFormat: ArnFormat.COLON_RESOURCE_NAME,
              }),
            },
            StringEquals: { 'aws:SourceAccount': stack.account },
          },
        }),
      );
      if (props.email) topic.addSubscription(new subscriptions.EmailSubscription(props.email));
      new CfnOutput(stack, 'AlarmTopicArn', {
        value: topic.topicArn,
        description: 'SNS topic every alarm notifies (subscribe more endpoints here)',
      });
      this.topic = topic;
    }
    this.action = new SnsAction(this.topic);
    this.namespace = metricsNamespace(this);
  }

  /**
   * A metric of `METRICS` (shared/observability/metrics.ts) on its `[]` set, the whole platform's
   * figure: the name is a `MetricName`, so a name the code does not emit does not compile.
   */
  metric(name: MetricName, statistic: 'Sum' | 'Maximum', period: Duration): cloudwatch.Metric {
    return new cloudwatch.Metric({ namespace: this.namespace, metricName: name, statistic, period });
  }

  /**
   * Panels (the API stack: its functions make most panel calls; all publish to the same `[]` set):
   * unreachable, paused after a 429, and the call budget held above BUDGET_USED_PERCENT.
   * Missing data is not breaching: the metrics publish only when a call is made, and a minute
   * without calls is a minute without evidence of trouble.
   */
  panels(): void {
    const minute = Duration.minutes(1);
    const window = { evaluationPeriods: PANEL_WINDOW_MINUTES, datapointsToAlarm: PANEL_ALARM_MINUTES } as const;
    this.add('PanelUnreachable', {
      metric: this.metric('PanelUnreachable', 'Sum', minute),
      threshold: 1,
      ...window,
      description: `A panel did not answer (refused, timed out, 5xx from its proxy) in ${PANEL_ALARM_MINUTES} of the last ${PANEL_WINDOW_MINUTES} minutes. Dashboard row "Panels" (unreachable by instance); runbook: docs/operations.md, "Runbook".`,
    });
    this.add('PanelPaused', {
      metric: this.metric('PanelPaused', 'Sum', minute),
      threshold: 1,
      ...window,
      description: `Calls to a panel were refused because its API is paused after a 429, in ${PANEL_ALARM_MINUTES} of the last ${PANEL_WINDOW_MINUTES} minutes. Dashboard row "Panels" (429s, pauses by instance); runbook: docs/operations.md, "Runbook".`,
    });
    this.add('PanelBudgetHigh', {
      metric: this.metric('PanelBudgetUsed', 'Maximum', minute),
      threshold: BUDGET_USED_PERCENT,
      comparison: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: BUDGET_MINUTES,
      description: `A panel API's per-minute call budget was above ${BUDGET_USED_PERCENT} % in each of the last ${BUDGET_MINUTES} minutes. Dashboard row "Panels" (budget used by instance and API); runbook: docs/operations.md, "Runbook".`,
    });
  }

  /**
   * DynamoDB throttling of the table and its indexes (AWS/DynamoDB Read/WriteThrottleEvents), ≥ 1 in
   * 5 minutes. Wired by the API stack with the table it uses (the data stack's, or one imported by
   * name: the dimensions are the table's name either way). Missing data is not breaching: DynamoDB
   * publishes throttle events only when there are some.
   */
  tableThrottles(table: ITable): void {
    const usingMetrics: Record<string, cloudwatch.IMetric> = {};
    const sum = { statistic: 'Sum', period: FIVE_MINUTES } as const;
    usingMetrics.tr = table.metric('ReadThrottleEvents', sum);
    usingMetrics.tw = table.metric('WriteThrottleEvents', sum);
    TABLE.indexes.forEach((index, i) => {
      const dimensionsMap = { TableName: table.tableName, GlobalSecondaryIndexName: index.name };
      usingMetrics[`ir${i}`] = new cloudwatch.Metric({
        namespace: 'AWS/DynamoDB',
        metricName: 'ReadThrottleEvents',
        dimensionsMap,
        ...sum,
      });
      usingMetrics[`iw${i}`] = new cloudwatch.Metric({
        namespace: 'AWS/DynamoDB',
        metricName: 'WriteThrottleEvents',
        dimensionsMap,
        ...sum,
      });
    });
    this.add('TableThrottles', {
      metric: new cloudwatch.MathExpression({
        expression: Object.keys(usingMetrics)
          .map((id) => `FILL(${id}, 0)`)
          .join(' + '),
        usingMetrics,
        period: FIVE_MINUTES,
        label: 'DynamoDB throttle events (table and indexes)',
      }),
      threshold: 1,
      description:
        'DynamoDB throttled reads or writes of the table or an index in 5 minutes. Dashboard row "DynamoDB"; runbook: docs/operations.md, "Runbook".',
    });
  }

  /**
   * The billing stack's: a reconciler or repair pass changed a record or a panel (drift) in the last
   * hour; a spike of suspensions in an hour; the pending-repair queue's oldest due item older than
   * PENDING_WORK_SECONDS. Missing data is not breaching for all three: repairs and suspensions publish
   * only when they happen, and the queue's age only when the repair pass runs (a pass that stops
   * running is the BillingRepairs Errors alarm's, or a rule disabled on purpose).
   */
  billing(suspensionSpike: number): void {
    this.add('ReconcilerRepairs', {
      metric: this.metric('ReconcilerRepairs', 'Sum', Duration.hours(1)),
      threshold: 1,
      description:
        'The reconciler or the repair pass found a server record and its panel disagreeing and changed one (drift) in the last hour. Dashboard row "Repairs"; runbook: docs/operations.md, "Runbook".',
    });
    this.add('SuspensionSpike', {
      metric: this.metric('Suspensions', 'Sum', Duration.hours(1)),
      threshold: suspensionSpike,
      description: `At least ${suspensionSpike} servers were suspended in one hour. Dashboard row "Billing" (suspensions by reason); runbook: docs/operations.md, "Runbook".`,
    });
    // Fifteen minutes: an item that keeps failing is read again only when its backoff ends (at most
    // 10 minutes), so in the minutes between, the pass reports a younger queue (or 0).
    this.add('PendingWorkOld', {
      metric: this.metric('PendingWorkOldestAge', 'Maximum', Duration.minutes(15)),
      threshold: PENDING_WORK_SECONDS,
      comparison: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      description: `The oldest due item of the pending-repair queue (suspensions, repairs) has waited more than ${PENDING_WORK_SECONDS / 60} minutes. Dashboard row "Repairs"; runbook: docs/operations.md, "Runbook".`,
    });
  }

  /**
   * The webhooks stack's: the oldest due delivery older than WEBHOOK_BACKLOG_SECONDS. Missing data is
   * not breaching: the dispatcher publishes the age when it runs (a dispatcher that fails is the
   * WebhookDispatcher Errors alarm's).
   */
  webhookBacklog(): void {
    this.add('WebhookBacklog', {
      metric: this.metric('WebhookBacklogOldestAge', 'Maximum', FIVE_MINUTES),
      threshold: WEBHOOK_BACKLOG_SECONDS,
      comparison: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      description: `The oldest due webhook delivery has waited more than ${WEBHOOK_BACKLOG_SECONDS / 60} minutes. Dashboard row "Webhooks"; runbook: docs/operations.md, "Runbook".`,
    });
  }

  /**
   * Customer mail: MAIL_FAILURES_PER_15_MINUTES failed send attempts (SES refused, SMTP down) in 15
   * minutes; each is retried, so one flaky attempt does not page. Missing data (no sends) is not breaching.
   */
  mailFailures(): void {
    this.add('MailSendFailures', {
      metric: this.metric('MailSendFailures', 'Sum', Duration.minutes(15)),
      threshold: MAIL_FAILURES_PER_15_MINUTES,
      description: `At least ${MAIL_FAILURES_PER_15_MINUTES} customer messages failed to send in 15 minutes (they are retried). The MailSender log group says why; runbook: docs/mail.md.`,
    });
  }

  /** Invocation errors (crashes, timeouts, out of memory) and throttles of one function, each ≥ 1 in 5 minutes. */
  forFunction(name: string, fn: AppFunction): void {
    this.add(`${name}Errors`, {
      metric: fn.fn.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' }),
      threshold: 1,
      description: `${name}: at least one invocation failed (an exception out of the handler, a timeout or out of memory). See the function's log group.`,
    });
    this.add(`${name}Throttles`, {
      metric: fn.fn.metricThrottles({ period: FIVE_MINUTES, statistic: 'Sum' }),
      threshold: 1,
      description: `${name}: at least one invocation was throttled (account concurrency exhausted).`,
    });
  }

  /**
   * Error log lines (`"level":"error"`) of these functions, ≥ 1 in 5 minutes. The HTTP functions
   * turn an unhandled error into a 500 and log it instead of failing the invocation, so Lambda's
   * Errors metric never sees those; this alarm does. All the functions given feed one metric.
   */
  loggedErrors(name: string, fns: readonly AppFunction[]): void {
    const metricName = `${name}LoggedErrors`;
    for (const fn of fns) {
      new logs.MetricFilter(this, `${metricName}${fn.node.id}`, {
        logGroup: fn.logGroup,
        filterPattern: logs.FilterPattern.stringValue('$.level', '=', 'error'),
        metricNamespace: this.namespace,
        metricName,
        metricValue: '1',
      });
    }
    this.add(metricName, {
      metric: new cloudwatch.Metric({ namespace: this.namespace, metricName, period: FIVE_MINUTES, statistic: 'Sum' }),
      threshold: 1,
      description: `${name}: a function logged an error ("level":"error"). Logs Insights over the functions' log groups: filter level = "error".`,
    });
  }

  /**
   * 5xx answers as a share of all requests over 5 minutes, above 1 %, counted only from
   * API_5XX_MIN_REQUESTS requests on (below that the expression is 0).
   */
  apiServerErrorRate(api: HttpApi): void {
    const rate = new cloudwatch.MathExpression({
      expression: `IF(requests >= ${API_5XX_MIN_REQUESTS}, 100 * errors / requests, 0)`,
      usingMetrics: {
        errors: api.metricServerError({ period: FIVE_MINUTES, statistic: 'Sum' }),
        requests: api.metricCount({ period: FIVE_MINUTES, statistic: 'Sum' }),
      },
      period: FIVE_MINUTES,
      label: 'API 5xx (% of requests)',
    });
    this.add('Api5xxRate', {
      metric: rate,
      threshold: API_5XX_PERCENT,
      comparison: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      description: `More than ${API_5XX_PERCENT} % of API requests answered 5xx over 5 minutes (counted from ${API_5XX_MIN_REQUESTS} requests on).`,
    });
  }

  /** Messages waiting in a dead-letter queue: ≥ 1. */
  deadLetters(name: string, queue: sqs.IQueue, description: string): void {
    this.add(`${name}Depth`, {
      metric: queue.metricApproximateNumberOfMessagesVisible({ period: FIVE_MINUTES, statistic: 'Maximum' }),
      threshold: 1,
      description,
    });
  }

  /**
   * Billing watermark lag: the scheduler logs `{"message":"billing watermark","lagHours":n}` on every
   * run. Alarm when a run in the last three hours reported more than two hours of lag, and also
   * when no run reported at all in three hours (missing data is breaching: a scheduler that stopped
   * running, or whose rule is gone, alarms too). With 1 of 3 datapoints to alarm, missing hours
   * only count when all three are missing.
   */
  billingWatermarkLag(schedulerLogs: logs.ILogGroup): void {
    const metricName = 'BillingWatermarkLagHours';
    new logs.MetricFilter(this, 'BillingWatermarkFilter', {
      logGroup: schedulerLogs,
      filterPattern: logs.FilterPattern.stringValue('$.message', '=', 'billing watermark'),
      metricNamespace: this.namespace,
      metricName,
      metricValue: '$.lagHours',
    });
    this.add('BillingWatermarkLag', {
      metric: new cloudwatch.Metric({ namespace: this.namespace, metricName, period: Duration.hours(1), statistic: 'Maximum' }),
      threshold: WATERMARK_LAG_HOURS,
      comparison: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 3,
      datapointsToAlarm: 1,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
      description: `The hourly billing pass is more than ${WATERMARK_LAG_HOURS} hours behind, or the scheduler has not reported for 3 hours. Check the BillingScheduler logs, the billing DLQs and the hourly rule; passes catch up by themselves once the cause is gone.`,
    });
  }

  /** Stripe webhooks rejected for their signature: ≥ WEBHOOK_REJECTIONS in 5 minutes. */
  webhookRejections(paymentsLogs: logs.ILogGroup): void {
    const metricName = 'StripeWebhookRejected';
    new logs.MetricFilter(this, 'WebhookRejectedFilter', {
      logGroup: paymentsLogs,
      filterPattern: logs.FilterPattern.stringValue('$.message', '=', 'stripe webhook rejected'),
      metricNamespace: this.namespace,
      metricName,
      metricValue: '1',
    });
    this.add('StripeWebhookRejections', {
      metric: new cloudwatch.Metric({ namespace: this.namespace, metricName, period: FIVE_MINUTES, statistic: 'Sum' }),
      threshold: WEBHOOK_REJECTIONS,
      description: `At least ${WEBHOOK_REJECTIONS} Stripe webhooks were rejected for their signature in 5 minutes: the webhook secret in the Stripe secret no longer matches the endpoint's, or someone is probing the endpoint.`,
    });
  }

  private add(
    id: string,
    options: {
      metric: cloudwatch.IMetric;
      threshold: number;
      description: string;
      comparison?: cloudwatch.ComparisonOperator;
      evaluationPeriods?: number;
      datapointsToAlarm?: number;
      treatMissingData?: cloudwatch.TreatMissingData;
    },
  ): cloudwatch.Alarm {
    const alarm = new cloudwatch.Alarm(this, id, {
      alarmName: `${Stack.of(this).stackName}-${id}`,
      alarmDescription: options.description,
      metric: options.metric,
      threshold: options.threshold,
      comparisonOperator: options.comparison ?? cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: options.evaluationPeriods ?? 1,
      datapointsToAlarm: options.datapointsToAlarm ?? options.evaluationPeriods ?? 1,
      // Errors, throttles, 5xx, dead letters and webhook rejections publish nothing when all is well.
      treatMissingData: options.treatMissingData ?? cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    alarm.addAlarmAction(this.action);
    alarm.addOkAction(this.action);
    this.alarms.push(alarm);
    return alarm;
  }
}
