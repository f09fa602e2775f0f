import type { Stack } from 'aws-cdk-lib';

/**
 * How cdk-nag spells a value that holds tokens, for acknowledgement ids such as
 * `AwsSolutions-IAM5[Resource::<value>]`: `{"Ref": "AWS::AccountId"}` reads `<AWS::AccountId>`,
 * `{"Fn::GetAtt": ["Bucket", "Arn"]}` reads `<Bucket.Arn>`, and `Fn::Join` is joined.
 */
export function asNagString(stack: Stack, value: string): string {
  const resolved = stack.resolve(value) as unknown;
  const part = (p: unknown): string => {
    if (typeof p === 'string') return p;
    if (p && typeof p === 'object' && 'Ref' in p) return `<${(p as { Ref: string }).Ref}>`;
    if (p && typeof p === 'object' && 'Fn::GetAtt' in p) return `<${(p as { 'Fn::GetAtt': string[] })['Fn::GetAtt'].join('.')}>`;
    return JSON.stringify(p);
  };
  if (typeof resolved === 'string') return resolved;
  const join = (resolved as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
  return join ? join[1].map(part).join(join[0]) : JSON.stringify(resolved);
}
