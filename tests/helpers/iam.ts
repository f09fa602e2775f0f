import type { Template } from './synth.ts';

/**
 * Enough of IAM and CloudFormation to ask "does this function's role allow this call?" of the
 * synthesized templates: the role's Allow statements, their actions and resources resolved from
 * Ref, Fn::GetAtt, Fn::Join and cross-stack references to the ARNs the test gives the resources.
 * Conditions (the table's dynamodb:LeadingKeys) and Deny statements are not evaluated here:
 * tests/infra/stacks.test.ts checks those against shared/db/key-prefixes.ts.
 */
export interface Statement {
  Effect: 'Allow' | 'Deny';
  Action: string | string[];
  Resource: unknown;
  Condition?: unknown;
}

/** What a resource of a template stands for in the test: its Ref value, its ARN and any other attribute it is read by (by logical id). */
export type Physical = (
  stack: string,
  logicalId: string,
  type: string,
) => { ref: string; arn: string; attributes?: Record<string, string> } | undefined;

export interface Resolver {
  templates: Map<string, Template>;
  region: string;
  account: string;
  physical: Physical;
}

/** A template value as a string; a reference the test gives no value is named, never guessed. */
export function resolveValue(value: unknown, stack: string, r: Resolver): string {
  if (typeof value === 'string') return value;
  if (typeof value !== 'object' || value === null) return String(value);
  const v = value as Record<string, any>;
  if ('Ref' in v) {
    const pseudo: Record<string, string> = {
      'AWS::Region': r.region,
      'AWS::AccountId': r.account,
      'AWS::Partition': 'aws',
      'AWS::URLSuffix': 'amazonaws.com',
    };
    if (pseudo[v.Ref]) return pseudo[v.Ref]!;
    const type = r.templates.get(stack)?.Resources[v.Ref]?.Type ?? '';
    return r.physical(stack, v.Ref, type)?.ref ?? `unresolved:${stack}/${v.Ref}`;
  }
  if ('Fn::GetAtt' in v) {
    const [id, attr] = v['Fn::GetAtt'] as [string, string];
    const type = r.templates.get(stack)?.Resources[id]?.Type ?? '';
    if (attr === 'Arn') return r.physical(stack, id, type)?.arn ?? `unresolved:${stack}/${id}.Arn`;
    return r.physical(stack, id, type)?.attributes?.[attr] ?? `unresolved:${stack}/${id}.${attr}`;
  }
  if ('Fn::Join' in v) {
    const [sep, parts] = v['Fn::Join'] as [string, unknown[]];
    return parts.map((p) => resolveValue(p, stack, r)).join(sep);
  }
  if ('Fn::GetStackOutput' in v) {
    const { StackName, OutputName } = v['Fn::GetStackOutput'] as { StackName: string; OutputName: string };
    const output = r.templates.get(StackName)?.Outputs?.[OutputName];
    return output ? resolveValue(output.Value, StackName, r) : `unresolved:${StackName}/${OutputName}`;
  }
  if ('Fn::ImportValue' in v) {
    const name = resolveValue(v['Fn::ImportValue'], stack, r);
    for (const [other, t] of r.templates) {
      for (const output of Object.values(t.Outputs ?? {}) as { Value: unknown; Export?: { Name: unknown } }[]) {
        if (output.Export && resolveValue(output.Export.Name, other, r) === name) return resolveValue(output.Value, other, r);
      }
    }
    return `unresolved:import/${name}`;
  }
  return `unresolved:${JSON.stringify(v)}`;
}

/** Every statement of a role's policies: its AWS::IAM::Policy resources and its inline policies. */
export function roleStatements(template: Template, roleId: string): Statement[] {
  const attached = Object.values(template.Resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties.Roles ?? []).includes(`{"Ref":"${roleId}"}`))
    .flatMap((r) => r.Properties.PolicyDocument.Statement as Statement[]);
  const inline = ((template.Resources[roleId]?.Properties.Policies ?? []) as { PolicyDocument: { Statement: Statement[] } }[]).flatMap(
    (p) => p.PolicyDocument.Statement,
  );
  return [...attached, ...inline];
}

/** IAM's wildcards: `*` any run of characters, `?` one. */
const wildcard = (pattern: string, value: string, ignoreCase = false): boolean =>
  new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
    ignoreCase ? 'i' : '',
  ).test(value);

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : [v]);

/** Whether an Allow statement of `statements` (of a role in `stack`) grants `action` on `resource`. */
export function allows(statements: Statement[], action: string, resource: string, stack: string, r: Resolver): boolean {
  return statements.some(
    (s) =>
      s.Effect === 'Allow' &&
      list(s.Action).some((a) => wildcard(String(a), action, true)) &&
      list(s.Resource).some((res) => wildcard(resolveValue(res, stack, r), resource)),
  );
}
