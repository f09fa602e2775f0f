import type { Construct } from 'constructs';
import { DEFAULT_METRICS_NAMESPACE } from '../shared/observability/metrics.ts';
import { type CurrencyCode, DEFAULT_CURRENCY, parseCurrency } from '../shared/currency.ts';

/**
 * The deployment stage (context `stage`, e.g. `-c stage=staging`): several deployments can share
 * one account and region when every fixed name differs. With a stage, the stack names, the alarm
 * topic, the HTTP API's name and the panel-key secrets prefix carry it; without one (the default)
 * every name stays as it was, so an existing deployment is not renamed.
 */
const STAGE_PATTERN = /^[a-z][a-z0-9-]{0,19}$/;

export function stageOf(scope: Construct): string | undefined {
  const value: unknown = scope.node.tryGetContext('stage');
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string' || !STAGE_PATTERN.test(value)) {
    throw new Error(
      `Context stage must be lower-case letters, digits and dashes (at most 20, starting with a letter): got ${String(value)}`,
    );
  }
  return value;
}

/** `name` prefixed with the stage (`staging-name`), or `name` without a stage. */
export function stageName(scope: Construct, name: string, separator = '-'): string {
  const stage = stageOf(scope);
  return stage ? `${stage}${separator}${name}` : name;
}

/**
 * Panel keys live in Secrets Manager under `<prefix>/instances/<instance id>`: `control-plane`, or
 * `control-plane-<stage>`, so one stage's functions can never read another stage's panel keys.
 */
export function panelSecretsPrefix(scope: Construct): string {
  const stage = stageOf(scope);
  return stage ? `control-plane-${stage}` : 'control-plane';
}

/**
 * The CloudWatch namespace of the stage's own metrics (the code's EMF metrics, `METRICS_NAMESPACE`
 * of every function, and the log metric filters): `ControlPlane`, or `ControlPlane/<stage>`, so two
 * stages in one account never feed each other's alarms or dashboards.
 */
export function metricsNamespace(scope: Construct): string {
  const stage = stageOf(scope);
  return stage ? `${DEFAULT_METRICS_NAMESPACE}/${stage}` : DEFAULT_METRICS_NAMESPACE;
}

/**
 * The deployment's currency (context `currency`, e.g. `-c currency=eur`; docs/deploy.md): every
 * function's `CURRENCY`, which the settings use until an admin saves them. Refused at synth when
 * Stripe does not charge it with two decimals (shared/currency.ts); usd without it.
 */
export function currencyOf(scope: Construct): CurrencyCode {
  const value: unknown = scope.node.tryGetContext('currency');
  if (value === undefined || value === null || value === '') return DEFAULT_CURRENCY;
  return parseCurrency(String(value), 'Context currency');
}
