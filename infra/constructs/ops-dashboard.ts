import { Duration } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import type { METRICS, MetricName } from '../../shared/observability/metrics.ts';
import { TABLE } from '../../shared/db/table.ts';
import type { AppFunction } from './app-function.ts';
import { metricsNamespace, stageName } from '../stage.ts';

export interface OpsDashboardProps {
  api: HttpApi;
  /** The API's functions (and the admin authorizer), by a readable name: per-function duration and errors. */
  functions: readonly { name: string; fn: AppFunction }[];
  /** The table the functions use (the data stack's, or one imported by name). */
  table: ITable;
}

/** The DynamoDB operations the code makes (infra/constructs/app-function.ts READ/WRITE/BATCH actions). */
const TABLE_OPERATIONS = ['GetItem', 'Query', 'BatchGetItem', 'PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems'] as const;

const MINUTE = Duration.minutes(1);
const FIVE_MINUTES = Duration.minutes(5);
const HOUR = Duration.hours(1);

/** A dimension set of one `METRICS` metric other than `[]` (a typo in a name or a set does not compile). */
type SplitOf<N extends MetricName> = Exclude<(typeof METRICS)[N]['sets'][number], readonly []>;

/**
 * The stage's CloudWatch dashboard (`ControlPlane`, `<stage>-ControlPlane` with a stage), one row
 * each: API, billing, panels, webhooks, DynamoDB, repairs. The code's metrics are read from the
 * stage's namespace (infra/stage.ts `metricsNamespace`), by their names in `METRICS`
 * (shared/observability/metrics.ts): the `[]` set as a plain metric, a split set (by instance, by
 * reason…) as a SEARCH expression, because instances and reasons are not known at synthesis.
 *
 * It lives in the API stack, which holds the API, its functions and the table reference; the
 * billing and webhook rows read only the stage's own metrics, so no stack refers to another's
 * functions (the billing and webhooks stacks depend on the API stack, not the other way).
 */
export class OpsDashboard extends Construct {
  readonly dashboard: cloudwatch.Dashboard;
  readonly namespace: string;

  constructor(scope: Construct, id: string, props: OpsDashboardProps) {
    super(scope, id);
    this.namespace = metricsNamespace(this);
    const { api, table } = props;
    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: stageName(this, 'ControlPlane'),
      defaultInterval: Duration.hours(3),
    });

    const header = (markdown: string) => new cloudwatch.TextWidget({ markdown, width: 24, height: 1 });
    const graph = (title: string, left: cloudwatch.IMetric[], options: { width?: number; stacked?: boolean } = {}) =>
      new cloudwatch.GraphWidget({ title, left, width: options.width ?? 6, height: 6, stacked: options.stacked ?? false });

    // ---- API ----
    const fns = props.functions;
    this.dashboard.addWidgets(header('## API (HTTP API and its functions)'));
    this.dashboard.addWidgets(
      graph('Requests', [api.metricCount({ period: MINUTE, statistic: 'Sum', label: 'requests' })]),
      graph('4xx and 5xx', [
        api.metricClientError({ period: MINUTE, statistic: 'Sum', label: '4xx' }),
        api.metricServerError({ period: MINUTE, statistic: 'Sum', label: '5xx' }),
      ]),
      graph('Latency p50 / p99 (ms)', [
        api.metricLatency({ period: MINUTE, statistic: 'p50', label: 'p50' }),
        api.metricLatency({ period: MINUTE, statistic: 'p99', label: 'p99' }),
      ]),
      graph(
        'Function errors',
        fns.map(({ name, fn }) => fn.fn.metricErrors({ period: MINUTE, statistic: 'Sum', label: name })),
      ),
    );
    this.dashboard.addWidgets(
      graph(
        'Function duration p50 (ms)',
        fns.map(({ name, fn }) => fn.fn.metricDuration({ period: FIVE_MINUTES, statistic: 'p50', label: name })),
        { width: 12 },
      ),
      graph(
        'Function duration p99 (ms)',
        fns.map(({ name, fn }) => fn.fn.metricDuration({ period: FIVE_MINUTES, statistic: 'p99', label: name })),
        { width: 12 },
      ),
    );

    // ---- billing ----
    this.dashboard.addWidgets(header('## Billing (hourly pass, suspensions)'));
    this.dashboard.addWidgets(
      graph('Billing pass duration (ms, max)', [this.metric('BillingPassDuration', 'Maximum', HOUR)]),
      graph('Server-hours charged', [this.metric('ServerHoursCharged', 'Sum', HOUR)]),
      graph('Watermark lag (hours, max)', [
        new cloudwatch.Metric({
          namespace: this.namespace,
          metricName: 'BillingWatermarkLagHours',
          statistic: 'Maximum',
          period: HOUR,
          label: 'lag',
        }),
      ]),
      graph('Suspensions / unsuspensions by reason', [
        this.search('Suspensions', ['Reason'], 'Sum', FIVE_MINUTES),
        this.search('Unsuspensions', ['Reason'], 'Sum', FIVE_MINUTES),
      ]),
    );

    // ---- panels ----
    this.dashboard.addWidgets(header('## Panels (calls, budget, rate limits, reachability)'));
    this.dashboard.addWidgets(
      graph('Calls by instance', [this.search('PanelCalls', ['Instance'], 'Sum', MINUTE)], { width: 8 }),
      graph(
        '429s and pauses by instance',
        [this.search('PanelRateLimited', ['Instance'], 'Sum', MINUTE), this.search('PanelPaused', ['Instance'], 'Sum', MINUTE)],
        { width: 8 },
      ),
      graph('Unreachable by instance', [this.search('PanelUnreachable', ['Instance'], 'Sum', MINUTE)], {
        width: 8,
      }),
    );
    this.dashboard.addWidgets(
      graph('Budget used (% max) by instance and API', [this.search('PanelBudgetUsed', ['Instance', 'Api'], 'Maximum', MINUTE)], {
        width: 12,
      }),
      graph('Budget exhausted by instance and class', [this.search('PanelBudgetExhausted', ['Instance', 'CallClass'], 'Sum', MINUTE)], {
        width: 12,
      }),
    );

    // ---- webhooks ----
    this.dashboard.addWidgets(header('## Webhooks (outbound deliveries) and customer mail'));
    this.dashboard.addWidgets(
      graph('Deliveries by outcome', [this.search('WebhookDeliveries', ['Outcome'], 'Sum', FIVE_MINUTES)], {
        width: 8,
      }),
      graph('Oldest due delivery (s, max)', [this.metric('WebhookBacklogOldestAge', 'Maximum', MINUTE)], { width: 8 }),
      graph('Endpoints disabled', [this.metric('WebhookEndpointsDisabled', 'Sum', HOUR)], { width: 8 }),
    );
    // Customer mail (docs/mail.md): empty without context `mailDomain`.
    this.dashboard.addWidgets(
      graph('Mail by outcome', [this.search('MailMessages', ['Outcome'], 'Sum', FIVE_MINUTES)], { width: 8 }),
      graph('Mail send failures', [this.metric('MailSendFailures', 'Sum', FIVE_MINUTES)], { width: 8 }),
      graph('Addresses suppressed', [this.search('MailSuppressions', ['Reason'], 'Sum', HOUR)], { width: 8 }),
    );

    // ---- DynamoDB ----
    const indexDims = (index: string) => ({ TableName: table.tableName, GlobalSecondaryIndexName: index });
    const dynamo = (metricName: string, statistic: string, dimensionsMap: Record<string, string>, label: string) =>
      new cloudwatch.Metric({ namespace: 'AWS/DynamoDB', metricName, dimensionsMap, statistic, period: FIVE_MINUTES, label });
    this.dashboard.addWidgets(header('## DynamoDB (the table and its indexes)'));
    this.dashboard.addWidgets(
      graph('Consumed capacity (units)', [
        table.metricConsumedReadCapacityUnits({ period: FIVE_MINUTES, statistic: 'Sum', label: 'read' }),
        table.metricConsumedWriteCapacityUnits({ period: FIVE_MINUTES, statistic: 'Sum', label: 'write' }),
      ]),
      graph('Throttle events', [
        dynamo('ReadThrottleEvents', 'Sum', { TableName: table.tableName }, 'table read'),
        dynamo('WriteThrottleEvents', 'Sum', { TableName: table.tableName }, 'table write'),
        ...TABLE.indexes.flatMap((index) => [
          dynamo('ReadThrottleEvents', 'Sum', indexDims(index.name), `${index.name} read`),
          dynamo('WriteThrottleEvents', 'Sum', indexDims(index.name), `${index.name} write`),
        ]),
      ]),
      graph(
        'Request latency (ms, average) by operation',
        TABLE_OPERATIONS.map((operation) =>
          dynamo('SuccessfulRequestLatency', 'Average', { TableName: table.tableName, Operation: operation }, operation),
        ),
        { width: 12 },
      ),
    );

    // ---- repairs ----
    this.dashboard.addWidgets(header('## Repairs (pending-work queue, reconciler)'));
    this.dashboard.addWidgets(
      graph('Pending work: due items (max)', [this.metric('PendingWorkDepth', 'Maximum', MINUTE)]),
      graph('Pending work: oldest due (s, max)', [this.metric('PendingWorkOldestAge', 'Maximum', MINUTE)]),
      graph('Reconciler repairs by kind', [this.search('ReconcilerRepairs', ['Kind'], 'Sum', HOUR)]),
      graph('Reconciler orphans (found, held), panels registered twice', [
        this.metric('ReconcilerOrphans', 'Sum', HOUR),
        this.metric('ReconcilerOrphansHeld', 'Sum', HOUR),
        this.metric('PanelRegisteredTwice', 'Sum', HOUR),
      ]),
    );
  }

  /** The whole-platform (`[]`) figure of a `METRICS` metric. */
  private metric(name: MetricName, statistic: string, period: Duration): cloudwatch.Metric {
    return new cloudwatch.Metric({ namespace: this.namespace, metricName: name, statistic, period, label: name });
  }

  /** One line per value of a split set of a `METRICS` metric: `SEARCH('{"<ns>",Instance} MetricName="PanelCalls"', 'Sum', 60)`. */
  private search<N extends MetricName>(name: N, set: SplitOf<N>, statistic: string, period: Duration): cloudwatch.MathExpression {
    const schema = [`"${this.namespace}"`, ...(set as readonly string[])].join(',');
    return new cloudwatch.MathExpression({
      expression: `SEARCH('{${schema}} MetricName="${name}"', '${statistic}', ${period.toSeconds()})`,
      usingMetrics: {},
      period,
      // A dynamic label per line: the metric and its dimension values (`Suspensions balance`).
      label: [name, ...(set as readonly string[]).map((d) => `\${PROP('Dim.${d}')}`)].join(' '),
    });
  }
}
