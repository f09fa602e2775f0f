import { afterEach, describe, expect, it } from 'vitest';
import { METRICS, putMetric } from '../../shared/observability/metrics.ts';
import { captureMetrics } from '../helpers/metrics.ts';

describe('putMetric: CloudWatch Embedded Metric Format lines', () => {
  let capture: ReturnType<typeof captureMetrics> | undefined;
  afterEach(() => {
    capture?.stop();
    delete process.env.METRICS;
    delete process.env.METRICS_NAMESPACE;
  });

  it('writes one line per data point with the metric, its unit, its dimension sets and their values', () => {
    capture = captureMetrics();
    putMetric('PanelCalls', 1, { Instance: 'inst_1', Api: 'client', CallClass: 'control' });
    expect(capture.metrics).toHaveLength(1);
    const [m] = capture.metrics;
    expect(m).toMatchObject({ name: 'PanelCalls', value: 1, unit: 'Count', namespace: 'ControlPlane' });
    expect(m!.sets).toEqual([[], ['Instance'], ['Instance', 'Api', 'CallClass']]);
    expect(m!.fields).toMatchObject({ Instance: 'inst_1', Api: 'client', CallClass: 'control' });
    expect(JSON.parse(m!.line)._aws.Timestamp).toBeTypeOf('number');
  });

  it("uses the stage's namespace and writes nothing with METRICS=off or a value that is not a number", () => {
    capture = captureMetrics();
    process.env.METRICS_NAMESPACE = 'ControlPlane/staging';
    putMetric('Suspensions', 1, { Reason: 'credit' });
    process.env.METRICS = 'off';
    putMetric('Suspensions', 1, { Reason: 'credit' });
    delete process.env.METRICS;
    putMetric('BillingPassDuration', Number.NaN);
    expect(capture.metrics.map((m) => [m.name, m.namespace])).toEqual([['Suspensions', 'ControlPlane/staging']]);
  });

  it('refuses (in the capture, as CloudWatch would drop it) a line missing a dimension of its sets', () => {
    capture = captureMetrics();
    expect(() => putMetric('PanelRateLimited', 1)).toThrow(/without dimension Instance/);
  });

  it('declares every metric with a CloudWatch unit and the whole-platform set first', () => {
    const units = new Set(['Count', 'Percent', 'Seconds', 'Milliseconds']);
    for (const [name, def] of Object.entries(METRICS)) {
      expect(units.has(def.unit), name).toBe(true);
      expect(def.sets[0], name).toEqual([]);
    }
  });
});
