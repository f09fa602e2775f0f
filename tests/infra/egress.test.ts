import { App, type CfnElement, Stack } from 'aws-cdk-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../infra/app.ts';
import { type AppFunction, VPC_ENI_ACTIONS } from '../../infra/constructs/app-function.ts';
import { fixedEgressFromContext } from '../../infra/constructs/egress.ts';
import { PANEL_KEY_ACCESS } from '../../infra/stacks/api-stack.ts';
import {
  functionsOf,
  removeSyntheses,
  type Resource,
  type Synth,
  stacksOf,
  synthesize,
  TEST_ACCOUNT as ACCOUNT,
  TEST_REGION as REGION,
  type Template,
  templateOf,
} from '../helpers/synth.ts';
import { bundlesOfThisRun, withBuildLock } from '../helpers/build-lock.ts';

/**
 * The optional fixed outgoing address (context `fixedEgress`, docs/deploy.md "Fixed outgoing
 * address"): off by default, nothing of it in the templates; on, a network stack with one NAT
 * gateway and its Elastic IP, and the functions that call panels, only those, in its private
 * subnets; the same on a restored table (context `tableName`, where the data stack is left out).
 * Synthesizes the app three times into temporary directories, as tests/infra/operations.test.ts does.
 */
const RESTORED = 'control-plane-restored-2026-11-26';

/**
 * The functions that call panels, by what their code does: the API groups that read panel keys
 * (the servers, server-tools, server-history, catalog and admin endpoints; account and payments lift suspensions) and all three
 * billing-pass entries (the scheduler reconciles panels, the worker suspends and unsuspends, the
 * repairs pass retries both). Not public, billing (checkout), the authorizer, the webhook dispatcher.
 */
const PANEL_CALLERS = [
  'account',
  'admin',
  'admin-panels',
  'billing-repairs',
  'billing-scheduler',
  'billing-worker',
  'catalog',
  'payments',
  'server-history',
  'server-tools',
  'servers',
];

const logicalId = (stack: Stack, construct: { node: { defaultChild?: unknown } }): string =>
  stack.getLogicalId(construct.node.defaultChild as CfnElement);
const resourcesOf = (template: Template, type: string): [string, Resource][] =>
  Object.entries(template.Resources).filter(([, r]) => r.Type === type);
const allResources = (synth: Synth): Resource[] => [...synth.templates.values()].flatMap((t) => Object.values(t.Resources));

/** The network stack's value behind a cross-stack reference (`Fn::GetStackOutput`, or `Fn::ImportValue` of an export). */
function fromNetwork(synth: Synth, value: unknown): unknown {
  const network = templateOf(synth, synth.built.networkStack!);
  const weak = (value as { 'Fn::GetStackOutput'?: { StackName: string; OutputName: string } })['Fn::GetStackOutput'];
  if (weak) {
    expect(weak.StackName).toBe(synth.built.networkStack!.stackName);
    return network.Outputs?.[weak.OutputName]?.Value;
  }
  const imported = (value as { 'Fn::ImportValue'?: string })['Fn::ImportValue'];
  if (imported) {
    const out = Object.values(network.Outputs ?? {}).find((o) => (o as { Export?: { Name: string } }).Export?.Name === imported);
    return out?.Value;
  }
  return value;
}
const refOf = (value: unknown): string | undefined =>
  (value as { Ref?: string } | undefined)?.Ref ?? (value as { 'Fn::GetAtt'?: [string, string] } | undefined)?.['Fn::GetAtt']?.[0];

/** The statements of one function's role policy. */
function statementsOf(synth: Synth, stack: Stack, fn: AppFunction): { Effect: string; Action: string | string[]; Resource: unknown }[] {
  const roleId = logicalId(stack, fn.role);
  const policies = resourcesOf(templateOf(synth, stack), 'AWS::IAM::Policy').filter(([, p]) =>
    JSON.stringify(p.Properties.Roles).includes(`"${roleId}"`),
  );
  expect(policies, `policy of ${roleId}`).toHaveLength(1);
  return policies[0]![1].Properties.PolicyDocument.Statement;
}
const actionsOf = (s: { Action: string | string[] }): string[] => (Array.isArray(s.Action) ? s.Action : [s.Action]);

function expectNagClean(synth: Synth): void {
  for (const stack of stacksOf(synth.built)) {
    const report = synth.built.nag.validateScope(stack);
    expect(
      report.violations.map((v) => `${v.ruleName} @ ${v.violatingResources.map((r) => r.constructPath).join(', ')}`),
      stack.stackName,
    ).toEqual([]);
  }
  expect(synth.error).toBeUndefined();
}

let off: Synth;
let on: Synth;
let restored: Synth;

beforeAll(async () => {
  await bundlesOfThisRun();
  await withBuildLock(async () => {
    off = synthesize({});
    // As cdk.json would hold it (a boolean) and as `-c fixedEgress=true` passes it (a string).
    on = synthesize({ fixedEgress: true });
    restored = synthesize({ fixedEgress: 'true', tableName: RESTORED });
  });
}, 600_000);

afterAll(() => {
  removeSyntheses();
});

describe('fixed egress off (the default)', () => {
  it('adds no network stack, no VPC, no NAT, no address, and no function has a VpcConfig', () => {
    expect(off.built.networkStack).toBeUndefined();
    const types = allResources(off).map((r) => r.Type);
    expect(types.length).toBeGreaterThan(50);
    expect(types.filter((t) => t.startsWith('AWS::EC2::'))).toEqual([]);
    const fns = functionsOf(off);
    expect(fns.length).toBeGreaterThanOrEqual(12);
    for (const { name, stack, fn } of fns) {
      expect(templateOf(off, stack).Resources[logicalId(stack, fn.fn)]!.Properties.VpcConfig, name).toBeUndefined();
      const ec2 = statementsOf(off, stack, fn)
        .flatMap(actionsOf)
        .filter((a) => a.startsWith('ec2:'));
      expect(ec2, name).toEqual([]);
    }
  });

  it('is cdk-nag clean', () => {
    expectNagClean(off);
  });
});

describe.each([
  ['on (context fixedEgress)', () => on],
  ['on, moved onto a restored table (context tableName)', () => restored],
])('fixed egress %s', (_, current) => {
  it('makes one VPC over two zones with one NAT gateway, its own Elastic IP, and outputs that address', () => {
    const synth = current();
    const network = synth.built.networkStack!;
    expect(network).toBeDefined();
    expect(network.terminationProtection).toBe(true);
    const template = templateOf(synth, network);
    expect(resourcesOf(template, 'AWS::EC2::VPC')).toHaveLength(1);
    // Only the network stack holds network resources (the functions refer to it).
    for (const [name, t] of synth.templates) {
      if (name === network.stackName) continue;
      expect(
        Object.values(t.Resources).filter((r) => ['AWS::EC2::VPC', 'AWS::EC2::NatGateway', 'AWS::EC2::EIP'].includes(r.Type)),
        name,
      ).toEqual([]);
    }
    const nats = resourcesOf(template, 'AWS::EC2::NatGateway');
    const eips = resourcesOf(template, 'AWS::EC2::EIP');
    expect(nats).toHaveLength(1);
    expect(eips).toHaveLength(1);
    const [eipId, eip] = eips[0]!;
    expect(eip.Properties.Domain).toBe('vpc');
    expect(nats[0]![1].Properties.AllocationId).toEqual({ 'Fn::GetAtt': [eipId, 'AllocationId'] });
    expect(template.Outputs?.EgressAddress?.Value).toEqual({ 'Fn::GetAtt': [eipId, 'PublicIp'] });
    // Two zones, each with a public and a private subnet, resolved by CloudFormation (no lookup).
    const subnets = resourcesOf(template, 'AWS::EC2::Subnet');
    expect(subnets).toHaveLength(4);
    const zones = new Set(subnets.map(([, s]) => JSON.stringify(s.Properties.AvailabilityZone)));
    expect([...zones].sort()).toEqual([
      JSON.stringify({ 'Fn::Select': [0, { 'Fn::GetAZs': '' }] }),
      JSON.stringify({ 'Fn::Select': [1, { 'Fn::GetAZs': '' }] }),
    ]);
  });

  it('routes the private subnets through the NAT, with a DynamoDB gateway endpoint on their route tables', () => {
    const synth = current();
    const template = templateOf(synth, synth.built.networkStack!);
    const natId = resourcesOf(template, 'AWS::EC2::NatGateway')[0]![0];
    const viaNat = resourcesOf(template, 'AWS::EC2::Route')
      .filter(([, r]) => r.Properties.DestinationCidrBlock === '0.0.0.0/0' && refOf(r.Properties.NatGatewayId) === natId)
      .map(([, r]) => refOf(r.Properties.RouteTableId)!);
    expect(viaNat).toHaveLength(2);
    const endpoints = resourcesOf(template, 'AWS::EC2::VPCEndpoint');
    expect(endpoints).toHaveLength(1);
    const endpoint = endpoints[0]![1].Properties;
    expect(endpoint.VpcEndpointType ?? 'Gateway').toBe('Gateway');
    expect(JSON.stringify(endpoint.ServiceName)).toMatch(/\.dynamodb"/);
    expect(endpoint.RouteTableIds.map(refOf).sort()).toEqual([...viaNat].sort());
  });

  it('logs the VPC flows (accepted and rejected) to a log group kept a month', () => {
    const synth = current();
    const template = templateOf(synth, synth.built.networkStack!);
    const vpcId = resourcesOf(template, 'AWS::EC2::VPC')[0]![0];
    const flowLogs = resourcesOf(template, 'AWS::EC2::FlowLog');
    expect(flowLogs).toHaveLength(1);
    const flow = flowLogs[0]![1].Properties;
    expect(flow).toMatchObject({ ResourceType: 'VPC', TrafficType: 'ALL', ResourceId: { Ref: vpcId } });
    const group = template.Resources[refOf(flow.LogGroupName)!]!;
    expect(group.Type).toBe('AWS::Logs::LogGroup');
    expect(group.Properties.RetentionInDays).toBe(30);
  });

  it('places the functions that call panels, and only those, in the private subnets with the egress-only group', () => {
    const synth = current();
    const template = templateOf(synth, synth.built.networkStack!);
    const natId = resourcesOf(template, 'AWS::EC2::NatGateway')[0]![0];
    const privateTables = new Set(
      resourcesOf(template, 'AWS::EC2::Route')
        .filter(([, r]) => refOf(r.Properties.NatGatewayId) === natId)
        .map(([, r]) => refOf(r.Properties.RouteTableId)),
    );
    const privateSubnets = resourcesOf(template, 'AWS::EC2::SubnetRouteTableAssociation')
      .filter(([, a]) => privateTables.has(refOf(a.Properties.RouteTableId)))
      .map(([, a]) => refOf(a.Properties.SubnetId)!)
      .sort();
    expect(privateSubnets).toHaveLength(2);
    const groups = resourcesOf(template, 'AWS::EC2::SecurityGroup');
    expect(groups).toHaveLength(1);
    const [groupId, group] = groups[0]!;
    // No inbound rule anywhere; outbound TCP only.
    expect(group.Properties.SecurityGroupIngress).toBeUndefined();
    expect(resourcesOf(template, 'AWS::EC2::SecurityGroupIngress')).toEqual([]);
    expect(group.Properties.SecurityGroupEgress).toEqual([
      expect.objectContaining({ CidrIp: '0.0.0.0/0', IpProtocol: 'tcp', FromPort: 0, ToPort: 65535 }),
    ]);

    const inVpc: string[] = [];
    for (const { name, stack, fn } of functionsOf(synth)) {
      const config = templateOf(synth, stack).Resources[logicalId(stack, fn.fn)]!.Properties.VpcConfig;
      const eni = statementsOf(synth, stack, fn).filter((s) => actionsOf(s).some((a) => a.startsWith('ec2:')));
      if (!config) {
        expect(eni, name).toEqual([]);
        continue;
      }
      inVpc.push(name);
      const subnets = (config.SubnetIds as unknown[]).map((s) => refOf(fromNetwork(synth, s))!).sort();
      expect(subnets, name).toEqual(privateSubnets);
      expect(
        (config.SecurityGroupIds as unknown[]).map((g) => refOf(fromNetwork(synth, g))),
        name,
      ).toEqual([groupId]);
      // Lambda attaches the function with its role: the EC2 actions of AWSLambdaVPCAccessExecutionRole, in the role's own policy.
      // (IAM merges them with X-Ray's, the other actions on "*".)
      expect(
        eni
          .flatMap(actionsOf)
          .filter((a) => a.startsWith('ec2:'))
          .sort(),
        name,
      ).toEqual([...VPC_ENI_ACTIONS].sort());
      for (const s of eni) expect(s, name).toMatchObject({ Effect: 'Allow', Resource: '*' });
      const policyId = logicalId(stack, fn.role.node.findChild('DefaultPolicy') as unknown as { node: { defaultChild?: unknown } });
      expect(templateOf(synth, stack).Resources[logicalId(stack, fn.fn)]!.DependsOn ?? [], name).toContain(policyId);
    }
    expect(inVpc.sort()).toEqual(PANEL_CALLERS);
    // The API's share is exactly the groups that may read panel keys.
    expect(inVpc.filter((n) => !n.startsWith('billing-')).sort()).toEqual(Object.keys(PANEL_KEY_ACCESS).sort());
  });

  it('is cdk-nag clean', () => {
    const synth = current();
    expectNagClean(synth);
  });
});

describe('fixed egress on a restored table', () => {
  it('has no data stack and the same network as the owned one', () => {
    expect(restored.built.dataStack).toBeUndefined();
    const types = (synth: Synth) =>
      Object.values(templateOf(synth, synth.built.networkStack!).Resources)
        .map((r) => r.Type)
        .sort();
    expect(types(restored)).toEqual(types(on));
  });
});

describe('context fixedEgress', () => {
  const read = (value: unknown) => fixedEgressFromContext(new Stack(new App({ context: { fixedEgress: value } }), 'S'));

  it('takes true and false, as booleans (cdk.json) and strings (-c); unset or empty is false', () => {
    expect(read(true)).toBe(true);
    expect(read('true')).toBe(true);
    expect(read(false)).toBe(false);
    expect(read('false')).toBe(false);
    expect(read('')).toBe(false);
    expect(fixedEgressFromContext(new Stack(new App(), 'S'))).toBe(false);
  });

  it('refuses anything else with a clear error, before any stack is built', () => {
    for (const value of ['yes', 'True', '1', 1, 'on', ' true']) {
      expect(() => read(value), String(value)).toThrow(/Context fixedEgress must be true or false: got /);
      // The app refuses it too: synthesis never starts (no bundles needed for this).
      expect(() => buildApp({ account: ACCOUNT, region: REGION, context: { fixedEgress: value, tableName: RESTORED } })).toThrow(
        /Context fixedEgress must be true or false/,
      );
    }
  });
});
