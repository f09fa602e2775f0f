import type { Stack } from 'aws-cdk-lib';

/**
 * How cdk-nag spells a value that holds tokens, for acknowledgement ids such as
 * `AwsSolutions-IAM5[Resource::<value>]`: `{"Ref": "AWS::AccountId"}` reads `<AWS::AccountId>`,
 * and `Fn::Join` is joined.
 */
export function asNagString(stack: Stack, value: string): string {
  const resolved = stack.resolve(value) as unknown;
  const part = (p: unknown): string =>
    typeof p === 'string' ? p : p && typeof p === 'object' && 'Ref' in p ? `<${(p as { Ref: string }).Ref}>` : JSON.stringify(p);
  if (typeof resolved === 'string') return resolved;
  const join = (resolved as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
  return join ? join[1].map(part).join(join[0]) : JSON.stringify(resolved);
}
