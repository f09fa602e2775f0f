import { type MetricName, setMetricSink } from '../../shared/observability/metrics.ts';

/** One EMF line as CloudWatch would read it: the metric's name, value, unit and dimension values. */
export interface EmittedMetric {
  name: MetricName;
  value: number;
  unit: string;
  namespace: string;
  /** The dimension sets the line declares. */
  sets: string[][];
  /** The line's root members other than `_aws` and the value (dimension values, `service`). */
  fields: Record<string, unknown>;
  line: string;
}

/** Drops every metric line (the default in tests, tests/setup.ts). */
export function muteMetrics(): void {
  setMetricSink(() => {});
}

/**
 * Collects the metric lines emitted from now on, parsed back from their JSON text, until `stop`.
 * Each line is checked against the EMF rules CloudWatch applies: one directive naming the metric,
 * every dimension of every set present as a string member of the line, the value a number.
 */
export function captureMetrics(): { metrics: EmittedMetric[]; named: (name: MetricName) => EmittedMetric[]; stop: () => void } {
  const metrics: EmittedMetric[] = [];
  setMetricSink((line) => {
    const doc = JSON.parse(line) as Record<string, unknown> & {
      _aws: {
        Timestamp: number;
        CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[];
      };
    };
    const [directive] = doc._aws.CloudWatchMetrics;
    if (!directive || doc._aws.CloudWatchMetrics.length !== 1 || directive.Metrics.length !== 1)
      throw new Error(`EMF line with other than one metric: ${line}`);
    const name = directive.Metrics[0]!.Name as MetricName;
    const value = doc[name];
    if (typeof value !== 'number') throw new Error(`EMF line without a numeric ${name}: ${line}`);
    for (const set of directive.Dimensions) {
      for (const dimension of set) {
        if (typeof doc[dimension] !== 'string' || doc[dimension] === '')
          throw new Error(`EMF line without dimension ${dimension}: ${line}`);
      }
    }
    const { _aws, [name]: _value, ...fields } = doc;
    metrics.push({
      name,
      value,
      unit: directive.Metrics[0]!.Unit,
      namespace: directive.Namespace,
      sets: directive.Dimensions,
      fields,
      line,
    });
  });
  return { metrics, named: (name) => metrics.filter((m) => m.name === name), stop: muteMetrics };
}
