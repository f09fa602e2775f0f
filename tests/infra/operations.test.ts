import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../infra/app.ts';
import { ROOT } from '../../infra/bundle.ts';
import type { AppFunction } from '../../infra/constructs/app-function.ts';
import { INDEX_PARTITIONS, indexPatterns, KEY_SENTINEL, TABLE_ACCESS, type TableAccess } from '../../shared/db/key-prefixes.ts';
import { keys } from '../../shared/db/keys.ts';
import { type IndexName, TABLE } from '../../shared/db/table.ts';
import {
  functionsOf,
  removeSyntheses,
  type Synth,
  stacksOf,
  synthesize,
  TEST_ACCOUNT as ACCOUNT,
  TEST_REGION as REGION,
  templateOf,
} from '../helpers/synth.ts';
import { bundlesOfThisRun, withBuildLock } from '../helpers/build-lock.ts';
import { ACCOUNTS_PER_ROUTE_THROTTLE, ROUTE_THROTTLES, THROTTLE, throttleFromContext } from '../../infra/stacks/api-stack.ts';
import { DEFAULT_SETTINGS } from '../../shared/settings/index.ts';
import { billingWorkersFromContext, DEFAULT_BILLING_WORKERS } from '../../infra/stacks/billing-stack.ts';
import { BILLING_SHARDS } from '../../shared/db/table.ts';

/**
 * The operator's edges of the CDK app (docs/operations.md, docs/deploy.md): the stack moved onto
 * a restored table by context `tableName`; index queries scoped by partition; the stage and
 * per-route throttles. Synthesizes the app twice, as it is deployed first
 * (owning its table) and moved onto a restored table, each into a temporary directory.
 */
const RESTORED = 'control-plane-restored-2026-11-26';

type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: Record<string, Record<string, unknown>> };

const logicalId = (stack: Stack, construct: { node: { defaultChild?: unknown } }): string =>
  stack.getLogicalId(construct.node.defaultChild as Parameters<Stack['getLogicalId']>[0]);

/** The DynamoDB statements of one function's role policy, in order. */
function tableStatements(synth: Synth, stack: Stack, fn: AppFunction): Statement[] {
  const roleId = logicalId(stack, fn.role);
  const policies = Object.values(templateOf(synth, stack).Resources).filter(
    (r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties.Roles).includes(`"${roleId}"`),
  );
  expect(policies, `policy of ${roleId}`).toHaveLength(1);
  const statements = policies[0]!.Properties.PolicyDocument.Statement as Statement[];
  return statements.filter((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]).some((a) => a.startsWith('dynamodb:')));
}

const resourcesOf = (s: Statement): unknown[] => (Array.isArray(s.Resource) ? s.Resource : [s.Resource]);

let owned: Synth;
let restored: Synth;

beforeAll(async () => {
  await bundlesOfThisRun();
  await withBuildLock(async () => {
    owned = synthesize({});
    // The restored app also takes a stage throttle of its own (docs/deploy.md, "Throttling") and
    // the billing workers of a raised quota, as `-c billingWorkers=16` passes them (a string).
    restored = synthesize({ tableName: RESTORED, throttleRate: '50', throttleBurst: '30', billingWorkers: '16' });
  });
}, 600_000);

afterAll(() => {
  removeSyntheses();
});

describe('restore: the stack moved onto an existing table (context tableName)', () => {
  it('synthesizes, cdk-nag clean, with no table and no data stack', () => {
    expect(restored.error).toBeUndefined();
    expect(restored.built.dataStack).toBeUndefined();
    for (const stack of stacksOf(restored.built)) {
      expect(restored.built.nag.validateScope(stack).violations, stack.stackName).toEqual([]);
    }
    const types = [...restored.templates.values()].flatMap((t) => Object.values(t.Resources).map((r) => r.Type));
    expect(types.length).toBeGreaterThan(50);
    expect(types).not.toContain('AWS::DynamoDB::Table');
    // Nothing refers to a data stack's exports (there is none to import from).
    expect(JSON.stringify([...restored.templates.values()])).not.toContain('Fn::ImportValue":"ControlPlaneData');
    // The owned synth, for contrast, has the table.
    expect(owned.error).toBeUndefined();
    expect(Object.values(templateOf(owned, owned.built.dataStack!).Resources).map((r) => r.Type)).toContain('AWS::DynamoDB::Table');
  });

  it("sets every function's TABLE_NAME to the given table", () => {
    const fns = functionsOf(restored);
    expect(fns.length).toBeGreaterThanOrEqual(12);
    for (const { name, stack, fn } of fns) {
      const props = templateOf(restored, stack).Resources[logicalId(stack, fn.fn)]!.Properties;
      expect(props.Environment.Variables.TABLE_NAME, name).toBe(RESTORED);
    }
  });

  it("grants on the imported table's ARN and its indexes, statements identical in shape to the owned table's", () => {
    const tableArn = `arn:\${AWS::Partition}:dynamodb:${REGION}:${ACCOUNT}:table/${RESTORED}`;
    const asText = (resource: unknown): string => {
      // `arn:${Partition}:…` arrives as a Fn::Join of a Ref and literals.
      const join = (resource as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
      if (!join) return String(resource);
      return join[1].map((part) => (typeof part === 'string' ? part : `\${${(part as { Ref: string }).Ref}}`)).join(join[0]);
    };
    const ownedFns = functionsOf(owned);
    for (const [i, { name, stack, fn }] of functionsOf(restored).entries()) {
      const statements = tableStatements(restored, stack, fn);
      const before = tableStatements(owned, ownedFns[i]!.stack, ownedFns[i]!.fn);
      expect(statements.length, name).toBeGreaterThanOrEqual(1);
      // Same effects, actions and conditions, in the same order; only the table's ARN differs.
      const shape = (s: Statement) => ({ Effect: s.Effect, Action: s.Action, Condition: s.Condition, resources: resourcesOf(s).length });
      expect(statements.map(shape), name).toEqual(before.map(shape));
      for (const s of statements) {
        for (const resource of resourcesOf(s)) {
          const text = asText(resource);
          const onIndex = TABLE.indexes.some((index) => text === `${tableArn}/index/${index.name}`);
          expect(text === tableArn || onIndex, `${name}: ${text}`).toBe(true);
        }
      }
    }
    // The functions that query an index are granted it by name, on the imported table.
    const admin = restored.built.apiStack.functions.get('admin')!;
    const indexed = tableStatements(restored, restored.built.apiStack, admin).flatMap(resourcesOf).map(asText);
    expect(indexed).toContain(`${tableArn}/index/GSI1`);
    const scheduler = tableStatements(restored, restored.built.billingStack, restored.built.billingStack.scheduler);
    expect(scheduler.flatMap(resourcesOf).map(asText)).toEqual(
      expect.arrayContaining([`${tableArn}/index/GSI1`, `${tableArn}/index/GSI2`]),
    );
  });

  it('refuses a tableName that is no DynamoDB table name, before anything is built', () => {
    expect(() => buildApp({ account: ACCOUNT, region: REGION, context: { tableName: 'bad name!' } })).toThrow(
      /Context tableName "bad name!"/,
    );
  });
});

describe('index queries scoped by dynamodb:LeadingKeys (shared/db/key-prefixes.ts INDEX_PARTITIONS)', () => {
  const accessOf = (name: string): TableAccess =>
    name.startsWith('billing-') ? TABLE_ACCESS['billing-pass'] : TABLE_ACCESS[name as keyof typeof TABLE_ACCESS];

  it('derives a pattern for the index partition of every key builder (no index entry without one)', () => {
    const asRegex = (pattern: string) => new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);
    let checked = 0;
    for (const [name, build] of Object.entries(keys)) {
      const built = (build as (...args: unknown[]) => unknown)(KEY_SENTINEL, KEY_SENTINEL, KEY_SENTINEL, KEY_SENTINEL);
      for (const index of TABLE.indexes) {
        const value = typeof built === 'object' && built ? (built as Record<string, unknown>)[index.partitionKey] : undefined;
        if (typeof value !== 'string') continue;
        const patterns = Object.values(INDEX_PARTITIONS).filter((p) => p.index === index.name);
        expect(
          patterns.some((p) => asRegex(p.pattern).test(value)),
          `${name}: ${index.partitionKey} ${value}`,
        ).toBe(true);
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(9);
    expect(INDEX_PARTITIONS.billable).toEqual({ index: 'GSI2', pattern: 'BILLABLE#*' });
    expect(INDEX_PARTITIONS.accountsListing).toEqual({ index: 'GSI1', pattern: 'ACCOUNTS#*' });
  });

  it('gives every function that queries an index one Query statement per index, limited to the partitions it reads there', () => {
    const expected: Record<string, Record<string, string[]>> = {
      // The admin home also counts the pending repairs and the webhook queues (shared/admin/home.ts).
      admin: { GSI1: ['ACCOUNTS#*', 'AUDIT#*', 'SERVERS#*'], GSI2: ['OUTBOX#*', 'REPAIRDUE#*', 'WHDUE#*'] },
      'billing-scheduler': { GSI1: ['SERVERS#*'], GSI2: ['BILLABLE#*', 'INSTALLDUE#*', 'REPAIRDUE#*', 'TOPUPDUE#*'] },
      'billing-worker': { GSI1: ['SERVERS#*'], GSI2: ['BILLABLE#*', 'INSTALLDUE#*', 'REPAIRDUE#*', 'TOPUPDUE#*'] },
      'billing-repairs': { GSI1: ['SERVERS#*'], GSI2: ['BILLABLE#*', 'INSTALLDUE#*', 'REPAIRDUE#*', 'TOPUPDUE#*'] },
      webhooks: { GSI2: ['OUTBOX#*', 'WHDUE#*'] },
      // A server's activity listing (shared/servers/activity.ts).
      'server-history': { GSI2: ['SERVERLOG#*'] },
    };
    for (const { name, stack, fn } of functionsOf(owned)) {
      const onIndexes = tableStatements(owned, stack, fn).filter((s) => JSON.stringify(s.Resource).includes('/index/'));
      const found: Record<string, string[]> = {};
      for (const s of onIndexes) {
        expect(s.Action, name).toEqual('dynamodb:Query');
        const resources = resourcesOf(s);
        expect(resources, name).toHaveLength(1);
        const index = /\/index\/(\w+)"/.exec(JSON.stringify(resources[0]))?.[1];
        expect(index, `${name}: ${JSON.stringify(resources[0])}`).toBeDefined();
        expect(Object.keys(s.Condition ?? {}), name).toEqual(['ForAllValues:StringLike']);
        const patterns = s.Condition!['ForAllValues:StringLike']!['dynamodb:LeadingKeys'] as string[];
        expect(patterns, `${name} ${index}`).toEqual(indexPatterns(accessOf(name), index as IndexName));
        found[index!] = [...patterns].sort();
      }
      expect(found, name).toEqual(expected[name] ?? {});
    }
  });
});

describe('throttling: the stage (context throttleRate, throttleBurst) and the expensive routes', () => {
  const stageOf = (synth: Synth) => {
    const stack = synth.built.apiStack;
    const stages = Object.entries(templateOf(synth, stack).Resources).filter(([, r]) => r.Type === 'AWS::ApiGatewayV2::Stage');
    expect(stages).toHaveLength(1);
    return stages[0]![1] as { Properties: Record<string, any>; DependsOn?: string[] };
  };
  const routeIdOf = (synth: Synth, routeKey: string): string => {
    const found = Object.entries(templateOf(synth, synth.built.apiStack).Resources).find(
      ([, r]) => r.Type === 'AWS::ApiGatewayV2::Route' && r.Properties.RouteKey === routeKey,
    );
    expect(found, routeKey).toBeDefined();
    return found![0];
  };

  it('throttles the stage at 100/s, burst 200 by default, deploy at 30/s (60) and quote at 60/s (120)', () => {
    expect(THROTTLE).toEqual({ rateLimit: 100, burstLimit: 200 });
    const stage = stageOf(owned);
    expect(stage.Properties.DefaultRouteSettings).toMatchObject({ ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 });
    expect(stage.Properties.RouteSettings).toEqual({
      'POST /v1/servers': { ThrottlingRateLimit: 30, ThrottlingBurstLimit: 60 },
      'POST /v1/servers/quote': { ThrottlingRateLimit: 60, ThrottlingBurstLimit: 120 },
    });
    expect(Object.keys(ROUTE_THROTTLES).sort()).toEqual(['POST /v1/servers', 'POST /v1/servers/quote']);
    // Route settings name routes that must exist first: the stage depends on both.
    for (const routeKey of Object.keys(ROUTE_THROTTLES)) expect(stage.DependsOn ?? [], routeKey).toContain(routeIdOf(owned, routeKey));
  });

  // The adversary: one customer sending nothing but deploys (or quotes) at its account's ceiling.
  // API Gateway counts a route's requests before the functions know the caller, so a route limit
  // under that ceiling would hand the customer every slot of the route. The ceiling is counted
  // per minute, so the share is a minute's: what the route lets through in a minute (its rate
  // for 60 s plus a full burst) against the ceiling's 600. Within the minute the customer may
  // front-load (docs/deploy.md, "Throttling").
  it('never lets one account at its request ceiling take more than a third of a throttled route in a minute', () => {
    const ceilingPerMinute = DEFAULT_SETTINGS.accountRequestsPerMinute;
    expect(ACCOUNTS_PER_ROUTE_THROTTLE).toBeGreaterThanOrEqual(3);
    for (const [routeKey, limits] of Object.entries(stageOf(owned).Properties.RouteSettings as Record<string, any>)) {
      const perMinute = (limits.ThrottlingRateLimit as number) * 60 + (limits.ThrottlingBurstLimit as number);
      expect(ceilingPerMinute / perMinute, `${routeKey}: one account's share of a minute`).toBeLessThanOrEqual(
        1 / ACCOUNTS_PER_ROUTE_THROTTLE,
      );
    }
  });

  it('takes the stage limits from context and keeps the route limits under them', () => {
    const stage = stageOf(restored);
    expect(stage.Properties.DefaultRouteSettings).toMatchObject({ ThrottlingRateLimit: 50, ThrottlingBurstLimit: 30 });
    expect(stage.Properties.RouteSettings).toEqual({
      'POST /v1/servers': { ThrottlingRateLimit: 30, ThrottlingBurstLimit: 30 },
      'POST /v1/servers/quote': { ThrottlingRateLimit: 50, ThrottlingBurstLimit: 30 },
    });
  });

  it('refuses a throttle that is not a positive number', () => {
    expect(throttleFromContext(new Stack(new App({ context: { throttleRate: '7.5', throttleBurst: 12 } }), 'S'))).toEqual({
      rateLimit: 7.5,
      burstLimit: 12,
    });
    for (const [key, value] of [
      ['throttleRate', 'fast'],
      ['throttleRate', '0'],
      ['throttleBurst', '-5'],
      ['throttleBurst', '2.5'],
    ] as const) {
      // The check itself, on a bare stack: no bundles needed (another test file may be rebuilding them).
      const stack = new Stack(new App({ context: { [key]: value } }), 'Throttled');
      expect(() => throttleFromContext(stack), `${key}=${value}`).toThrow(
        new RegExp(`Context ${key}=${value.replace('.', '\\.')}: a positive`),
      );
    }
  });
});

describe('billing workers: context billingWorkers, safe on a new account by default', () => {
  const maxConcurrencyOf = (synth: Synth): unknown => {
    const mappings = Object.values(templateOf(synth, synth.built.billingStack).Resources).filter(
      (r) => r.Type === 'AWS::Lambda::EventSourceMapping',
    );
    expect(mappings).toHaveLength(1);
    return mappings[0]!.Properties.ScalingConfig?.MaximumConcurrency;
  };

  it('runs 2 at once by default (cdk.json): with the scheduler, repairs and dispatcher, half of a new account’s 10', () => {
    expect(DEFAULT_BILLING_WORKERS).toBe(2);
    const cdkJson = JSON.parse(readFileSync(join(ROOT, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> };
    expect(cdkJson.context.billingWorkers).toBe(DEFAULT_BILLING_WORKERS);
    expect(maxConcurrencyOf(owned)).toBe(DEFAULT_BILLING_WORKERS);
    expect(owned.built.billingStack.workers).toBe(DEFAULT_BILLING_WORKERS);
    // A new account's quota (10) less the scheduler, BillingRepairs and the webhook dispatcher leaves
    // the API at least 5 while a pass runs.
    expect(10 - 3 - DEFAULT_BILLING_WORKERS).toBeGreaterThanOrEqual(5);
  });

  it('takes -c billingWorkers=16 (one per shard: a pass in one wave)', () => {
    expect(maxConcurrencyOf(restored)).toBe(BILLING_SHARDS);
  });

  it('refuses a worker count SQS or the shards cannot use', () => {
    // Without the context value (an app built without cdk.json): the default.
    expect(billingWorkersFromContext(new Stack(new App(), 'Bare'))).toBe(DEFAULT_BILLING_WORKERS);
    expect(billingWorkersFromContext(new Stack(new App({ context: { billingWorkers: 4 } }), 'Four'))).toBe(4);
    for (const value of ['1', '0', 'many', '2.5', String(BILLING_SHARDS + 1), -3]) {
      const stack = new Stack(new App({ context: { billingWorkers: value } }), 'Workers');
      expect(() => billingWorkersFromContext(stack), String(value)).toThrow(
        /Context billingWorkers=.*: a whole number of workers from 2 to 16/,
      );
    }
  });
});
