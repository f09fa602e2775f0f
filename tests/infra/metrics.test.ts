import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Stack } from 'aws-cdk-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../infra/app.ts';
import { ROOT } from '../../infra/bundle.ts';
import {
  BUDGET_USED_PERCENT,
  LOG_FILTER_METRICS,
  PENDING_WORK_SECONDS,
  SUSPENSION_SPIKE,
  WEBHOOK_BACKLOG_SECONDS,
} from '../../infra/constructs/alarms.ts';
import { TABLE } from '../../shared/db/table.ts';
import { METRICS, type MetricName } from '../../shared/observability/metrics.ts';
import { removeSyntheses, type Synth, stacksOf, synthesize, templateOf } from '../helpers/synth.ts';
import { bundlesOfThisRun, withBuildLock } from '../helpers/build-lock.ts';

/**
 * The alarms and the CloudWatch dashboard against the metrics the code emits (issue 27): every
 * alarm on the stage's own namespace names a metric of `METRICS` (shared/observability/metrics.ts)
 * or of a log metric filter, every such `METRICS` metric has a `putMetric('<Name>'` call site in
 * shared/ or functions/, the dashboard graphs every `METRICS` metric, and two stages never share a
 * namespace. Synthesizes the app twice (no stage; stage `staging`), as operations.test.ts does.
 */

const resourcesOf = (synth: Synth, type: string): { stack: Stack; id: string; props: Record<string, any> }[] =>
  stacksOf(synth.built).flatMap((stack) =>
    Object.entries(templateOf(synth, stack).Resources)
      .filter(([, r]) => r.Type === type)
      .map(([id, r]) => ({ stack, id, props: r.Properties })),
  );

/** The (namespace, metric name) pairs an alarm watches: its own metric, or each metric of its math. */
function alarmMetrics(alarm: Record<string, any>): { namespace: string; name: string }[] {
  if (alarm.MetricName) return [{ namespace: alarm.Namespace as string, name: alarm.MetricName as string }];
  return ((alarm.Metrics ?? []) as { MetricStat?: { Metric: { Namespace: string; MetricName: string } } }[]).flatMap((m) =>
    m.MetricStat ? [{ namespace: m.MetricStat.Metric.Namespace, name: m.MetricStat.Metric.MetricName }] : [],
  );
}

const alarmById = (synth: Synth, stack: Stack, id: string) => {
  const found = resourcesOf(synth, 'AWS::CloudWatch::Alarm').filter(
    (a) => a.stack === stack && a.props.AlarmName === `${stack.stackName}-${id}`,
  );
  expect(found, id).toHaveLength(1);
  return found[0]!.props;
};

/** Source files of the code (not tests): shared/ and functions/, TypeScript. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(path);
    return /\.tsx?$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name) ? [path] : [];
  });
}

/** `putMetric('<Name>'` call sites of each metric name, as `path:line`. */
function emittingCallSites(files: readonly { path: string; text: string }[]): Map<string, string[]> {
  const sites = new Map<string, string[]>();
  for (const { path, text } of files) {
    text.split('\n').forEach((line, i) => {
      for (const match of line.matchAll(/\bputMetric\(\s*'(\w+)'/g)) {
        const list = sites.get(match[1]!) ?? [];
        list.push(`${path}:${i + 1}`);
        sites.set(match[1]!, list);
      }
    });
  }
  return sites;
}

/** The dashboard body as JSON: the `Fn::Join` parts, tokens (function names, the API id, the table) as a placeholder. */
function dashboardBody(props: Record<string, any>): { widgets: { type: string; properties: Record<string, any> }[] } {
  const body = props.DashboardBody as string | { 'Fn::Join': [string, unknown[]] };
  const text =
    typeof body === 'string' ? body : body['Fn::Join'][1].map((p) => (typeof p === 'string' ? p : 'TOKEN')).join(body['Fn::Join'][0]);
  return JSON.parse(text);
}

/** Every metric a dashboard graphs in `namespace`: plain metrics by name, SEARCH expressions by their MetricName. */
function dashboardMetrics(props: Record<string, any>, namespace: string): Set<string> {
  const names = new Set<string>();
  for (const widget of dashboardBody(props).widgets) {
    for (const entry of (widget.properties.metrics ?? []) as unknown[][]) {
      const first = entry[0];
      if (typeof first === 'object' && first && 'expression' in first) {
        const expression = String((first as { expression: string }).expression);
        const search = /^SEARCH\('\{"([^"]+)",[^}]+\} MetricName="(\w+)"'/.exec(expression);
        if (search?.[1] === namespace) names.add(search[2]!);
      } else if (first === namespace) {
        names.add(String(entry[1]));
      }
    }
  }
  return names;
}

let plain: Synth;
let staged: Synth;

beforeAll(async () => {
  await bundlesOfThisRun();
  await withBuildLock(async () => {
    plain = synthesize({});
    staged = synthesize({ stage: 'staging', suspensionSpikeThreshold: '50' });
  });
}, 600_000);

afterAll(() => {
  removeSyntheses();
});

describe('alarms name metrics the code emits', () => {
  it('every alarm on our namespace names a METRICS metric or a log-filter metric', () => {
    expect(plain.error).toBeUndefined();
    const ours = resourcesOf(plain, 'AWS::CloudWatch::Alarm').flatMap((a) =>
      alarmMetrics(a.props)
        .filter((m) => m.namespace === 'ControlPlane')
        .map((m) => ({ alarm: a.props.AlarmName as string, name: m.name })),
    );
    const known = new Set<string>([...Object.keys(METRICS), ...LOG_FILTER_METRICS]);
    expect(ours.filter((m) => !known.has(m.name))).toEqual([]);
    // The new alarms are all there, each on its `[]` set (no dimensions).
    const names = new Set(ours.map((m) => m.name));
    for (const name of [
      'PanelUnreachable',
      'PanelPaused',
      'PanelBudgetUsed',
      'ReconcilerRepairs',
      'Suspensions',
      'PendingWorkOldestAge',
      'WebhookBacklogOldestAge',
    ]) {
      expect(names, name).toContain(name);
    }
    for (const a of resourcesOf(plain, 'AWS::CloudWatch::Alarm')) {
      if (a.props.Namespace === 'ControlPlane') expect(a.props.Dimensions, a.props.AlarmName).toBeUndefined();
    }
    // And each log-filter metric an alarm names is made by a metric filter of the same namespace.
    const filtered = new Set(
      resourcesOf(plain, 'AWS::Logs::MetricFilter').flatMap((f) =>
        (f.props.MetricTransformations as { MetricNamespace: string; MetricName: string }[])
          .filter((t) => t.MetricNamespace === 'ControlPlane')
          .map((t) => t.MetricName),
      ),
    );
    for (const m of ours.filter((o) => !(o.name in METRICS))) expect(filtered, m.alarm).toContain(m.name);
  });

  it("the call-site scan finds `putMetric('<Name>'` calls and nothing else (control)", () => {
    const sites = emittingCallSites([
      { path: 'a.ts', text: "putMetric('PanelCalls', 1, { Instance: id });\n  putMetric(\n'Suspensions', 1)" },
      { path: 'b.ts', text: "// putMetricX('PanelPaused', 1)\nconst s = 'putMetric(PanelUnreachable'" },
    ]);
    expect([...sites.keys()].sort()).toEqual(['PanelCalls']);
    expect(sites.get('PanelCalls')).toEqual(['a.ts:1']);
  });

  it('every METRICS metric an alarm watches has an emitting call site in shared/ or functions/', () => {
    const files = [join(ROOT, 'shared'), join(ROOT, 'functions')]
      .flatMap(sourceFiles)
      .map((path) => ({ path: relative(ROOT, path), text: readFileSync(path, 'utf8') }));
    const sites = emittingCallSites(files);
    const alarmed = new Set(
      resourcesOf(plain, 'AWS::CloudWatch::Alarm').flatMap((a) =>
        alarmMetrics(a.props)
          .filter((m) => m.namespace === 'ControlPlane' && m.name in METRICS)
          .map((m) => m.name),
      ),
    );
    expect(alarmed.size).toBeGreaterThanOrEqual(7);
    const missing = [...alarmed].filter((name) => !sites.has(name)).sort();
    expect(missing, `alarmed metrics with no putMetric('<Name>' call site: ${missing.join(', ')}`).toEqual([]);
  });
});

describe('the new alarms', () => {
  const topicRef = (synth: Synth) => synth.built.apiStack.getLogicalId(synth.built.apiStack.alarms.topic.node.defaultChild as never);

  it('watch the whole-platform figures with the chosen thresholds, periods and missing-data treatment', () => {
    const { apiStack, billingStack, webhooksStack } = plain.built;
    const minute = { Period: 60, TreatMissingData: 'notBreaching', Namespace: 'ControlPlane' };
    expect(alarmById(plain, apiStack, 'PanelUnreachable')).toMatchObject({
      ...minute,
      MetricName: 'PanelUnreachable',
      Statistic: 'Sum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      EvaluationPeriods: 5,
      DatapointsToAlarm: 3,
    });
    expect(alarmById(plain, apiStack, 'PanelPaused')).toMatchObject({
      ...minute,
      MetricName: 'PanelPaused',
      Statistic: 'Sum',
      EvaluationPeriods: 5,
      DatapointsToAlarm: 3,
    });
    expect(alarmById(plain, apiStack, 'PanelBudgetHigh')).toMatchObject({
      ...minute,
      MetricName: 'PanelBudgetUsed',
      Statistic: 'Maximum',
      Threshold: BUDGET_USED_PERCENT,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 5,
      DatapointsToAlarm: 5,
    });
    expect(alarmById(plain, billingStack, 'ReconcilerRepairs')).toMatchObject({
      MetricName: 'ReconcilerRepairs',
      Statistic: 'Sum',
      Period: 3600,
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
    });
    expect(alarmById(plain, billingStack, 'SuspensionSpike')).toMatchObject({
      MetricName: 'Suspensions',
      Statistic: 'Sum',
      Period: 3600,
      Threshold: SUSPENSION_SPIKE,
      TreatMissingData: 'notBreaching',
    });
    expect(alarmById(plain, billingStack, 'PendingWorkOld')).toMatchObject({
      MetricName: 'PendingWorkOldestAge',
      Statistic: 'Maximum',
      Period: 900,
      Threshold: PENDING_WORK_SECONDS,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
    });
    expect(alarmById(plain, webhooksStack, 'WebhookBacklog')).toMatchObject({
      MetricName: 'WebhookBacklogOldestAge',
      Statistic: 'Maximum',
      Threshold: WEBHOOK_BACKLOG_SECONDS,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
    });
    expect([PENDING_WORK_SECONDS, WEBHOOK_BACKLOG_SECONDS]).toEqual([600, 900]);
  });

  it('alarm on DynamoDB throttle events of the table and of each index', () => {
    const alarm = alarmById(plain, plain.built.apiStack, 'TableThrottles');
    expect(alarm).toMatchObject({ Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold', TreatMissingData: 'notBreaching' });
    const metrics = alarm.Metrics as {
      Id: string;
      Expression?: string;
      MetricStat?: { Metric: Record<string, any>; Stat: string; Period: number };
    }[];
    const stats = metrics.filter((m) => m.MetricStat).map((m) => m.MetricStat!);
    const dims = (s: (typeof stats)[number]) =>
      (s.Metric.Dimensions as { Name: string }[])
        .map((d) => d.Name)
        .sort()
        .join(',');
    const seen = stats.map((s) => `${s.Metric.Namespace} ${s.Metric.MetricName} ${dims(s)}`).sort();
    const expected = [
      'AWS/DynamoDB ReadThrottleEvents TableName',
      'AWS/DynamoDB WriteThrottleEvents TableName',
      ...TABLE.indexes.flatMap(() => [
        'AWS/DynamoDB ReadThrottleEvents GlobalSecondaryIndexName,TableName',
        'AWS/DynamoDB WriteThrottleEvents GlobalSecondaryIndexName,TableName',
      ]),
    ].sort();
    expect(seen).toEqual(expected);
    for (const s of stats) expect(s).toMatchObject({ Stat: 'Sum', Period: 300 });
    // The table's own name: the data stack's table, from that stack's output.
    for (const s of stats) expect(JSON.stringify(s.Metric.Dimensions)).toContain('"StackName":"ControlPlaneData"');
    const expression = metrics.find((m) => m.Expression)!.Expression!;
    for (const m of metrics.filter((x) => x.MetricStat)) expect(expression).toContain(`FILL(${m.Id}, 0)`);
  });

  it('notify the alarm topic on ALARM and on OK', () => {
    const { apiStack, billingStack, webhooksStack } = plain.built;
    const topic = topicRef(plain);
    const ids: [Stack, string][] = [
      [apiStack, 'PanelUnreachable'],
      [apiStack, 'PanelPaused'],
      [apiStack, 'PanelBudgetHigh'],
      [apiStack, 'TableThrottles'],
      [billingStack, 'ReconcilerRepairs'],
      [billingStack, 'SuspensionSpike'],
      [billingStack, 'PendingWorkOld'],
      [webhooksStack, 'WebhookBacklog'],
    ];
    for (const [stack, id] of ids) {
      const alarm = alarmById(plain, stack, id);
      expect(alarm.AlarmActions, id).toHaveLength(1);
      expect(JSON.stringify(alarm.AlarmActions), id).toContain(topic);
      expect(alarm.OKActions, id).toEqual(alarm.AlarmActions);
    }
  });

  it('take the suspension spike threshold from context, and refuse a bad one', () => {
    expect(alarmById(staged, staged.built.billingStack, 'SuspensionSpike').Threshold).toBe(50);
    expect(() => buildApp({ context: { suspensionSpikeThreshold: 'many' } })).toThrow(/suspensionSpikeThreshold/);
    expect(() => buildApp({ context: { suspensionSpikeThreshold: '0' } })).toThrow(/suspensionSpikeThreshold/);
  });
});

describe('the CloudWatch dashboard', () => {
  it('exists, named for the stage, and graphs every METRICS metric of the stage namespace', () => {
    for (const [synth, name, namespace] of [
      [plain, 'ControlPlane', 'ControlPlane'],
      [staged, 'staging-ControlPlane', 'ControlPlane/staging'],
    ] as const) {
      const dashboards = resourcesOf(synth, 'AWS::CloudWatch::Dashboard');
      expect(dashboards).toHaveLength(1);
      expect(dashboards[0]!.stack).toBe(synth.built.apiStack);
      expect(dashboards[0]!.props.DashboardName).toBe(name);
      const graphed = dashboardMetrics(dashboards[0]!.props, namespace);
      const missing = (Object.keys(METRICS) as MetricName[]).filter((m) => !graphed.has(m));
      expect(missing, name).toEqual([]);
      expect(graphed, name).toContain('BillingWatermarkLagHours');
    }
  });

  it('has the rows API, billing, panels, webhooks, DynamoDB, repairs, and the API row graphs every API function', () => {
    const [dashboard] = resourcesOf(plain, 'AWS::CloudWatch::Dashboard');
    const widgets = dashboardBody(dashboard!.props).widgets;
    const headers = widgets.filter((w) => w.type === 'text').map((w) => String(w.properties.markdown).split(' ')[1]);
    expect(headers).toEqual(['API', 'Billing', 'Panels', 'Webhooks', 'DynamoDB', 'Repairs']);
    const raw = JSON.stringify(dashboard!.props.DashboardBody);
    for (const fn of [...plain.built.apiStack.functions.values(), plain.built.apiStack.authorizerFunction]) {
      expect(raw).toContain(plain.built.apiStack.getLogicalId(fn.fn.node.defaultChild as never));
    }
    const graphed = new Set(
      widgets.flatMap((w) =>
        ((w.properties.metrics ?? []) as unknown[][]).filter((m) => typeof m[0] === 'string').map((m) => `${m[0]} ${m[1]}`),
      ),
    );
    for (const metric of [
      'AWS/ApiGateway Count',
      'AWS/ApiGateway 4xx',
      'AWS/ApiGateway 5xx',
      'AWS/ApiGateway Latency',
      'AWS/Lambda Duration',
      'AWS/Lambda Errors',
      'AWS/DynamoDB ConsumedReadCapacityUnits',
      'AWS/DynamoDB ConsumedWriteCapacityUnits',
      'AWS/DynamoDB ReadThrottleEvents',
      'AWS/DynamoDB SuccessfulRequestLatency',
    ]) {
      expect(graphed, metric).toContain(metric);
    }
    // Split sets are SEARCH expressions over the stage's namespace, one per set.
    const expressions = widgets.flatMap((w) =>
      ((w.properties.metrics ?? []) as unknown[][]).map((m) => (m[0] as { expression?: string }).expression),
    );
    expect(expressions).toContain(`SEARCH('{"ControlPlane",Instance} MetricName="PanelCalls"', 'Sum', 60)`);
  });
});

describe('stages', () => {
  it('each stage has its own namespace: functions, log filters, alarms and the dashboard', () => {
    for (const [synth, namespace] of [
      [plain, 'ControlPlane'],
      [staged, 'ControlPlane/staging'],
    ] as const) {
      const fns = resourcesOf(synth, 'AWS::Lambda::Function').filter((f) =>
        f.props.Environment?.Variables?.SERVICE_NAME?.startsWith('control-plane-'),
      );
      expect(fns.length).toBeGreaterThanOrEqual(12);
      for (const f of fns) expect(f.props.Environment.Variables.METRICS_NAMESPACE, f.id).toBe(namespace);
      const filters = resourcesOf(synth, 'AWS::Logs::MetricFilter');
      expect(filters.length).toBeGreaterThan(0);
      for (const f of filters) expect(f.props.MetricTransformations[0].MetricNamespace, f.id).toBe(namespace);
      const custom = resourcesOf(synth, 'AWS::CloudWatch::Alarm')
        .flatMap((a) => alarmMetrics(a.props))
        .filter((m) => m.namespace.startsWith('ControlPlane'));
      expect(custom.length).toBeGreaterThanOrEqual(12);
      for (const m of custom) expect(m.namespace, m.name).toBe(namespace);
    }
  });

  it('stay cdk-nag clean, and synthesize', () => {
    for (const synth of [plain, staged]) {
      expect(synth.error).toBeUndefined();
      for (const stack of stacksOf(synth.built)) {
        const report = synth.built.nag.validateScope(stack);
        expect(
          report.violations.map((v) => `${v.ruleName} @ ${v.violatingResources.map((r) => r.constructPath).join(', ')}`),
          stack.stackName,
        ).toEqual([]);
      }
    }
  });
});
