import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Stack } from 'aws-cdk-lib';
import { buildApp, type BuiltApp } from '../../infra/app.ts';
import type { AppFunction } from '../../infra/constructs/app-function.ts';

/** The account and region the infra tests synthesize for (any fixed pair: templates name them). */
export const TEST_ACCOUNT = '123456789012';
export const TEST_REGION = 'eu-west-1';

export type Resource = { Type: string; Properties: Record<string, any>; DependsOn?: string[] };
export type Template = { Resources: Record<string, Resource>; Outputs?: Record<string, { Value: unknown; Description?: string }> };

/** One synthesized app: its constructs, the templates as written (by stack name), and a nag error if any. */
export interface Synth {
  built: BuiltApp;
  outdir: string;
  templates: Map<string, Template>;
  error: unknown;
}

const made: Synth[] = [];

/** The app's stacks, the optional ones (network, data, mail) only when built. */
export const stacksOf = (built: BuiltApp): Stack[] =>
  [built.networkStack, built.dataStack, built.apiStack, built.billingStack, built.webhooksStack, built.mailStack].filter(
    (s): s is NonNullable<typeof s> => s !== undefined,
  );

/**
 * Builds and synthesizes the app with this context into a temporary folder, as `cdk synth` would.
 * Synthesis runs cdk-nag; its error is kept (the templates are written before it), not thrown.
 */
export function synthesize(context: Record<string, unknown>): Synth {
  const outdir = mkdtempSync(join(tmpdir(), 'cdk-test-'));
  const built = buildApp({ outdir, account: TEST_ACCOUNT, region: TEST_REGION, context });
  let error: unknown;
  try {
    built.app.synth();
  } catch (err) {
    error = err;
  }
  const templates = new Map<string, Template>();
  for (const stack of stacksOf(built)) {
    templates.set(stack.stackName, JSON.parse(readFileSync(join(outdir, stack.templateFile), 'utf8')) as Template);
  }
  const synth = { built, outdir, templates, error };
  made.push(synth);
  return synth;
}

/** A stack's template in a synthesis. */
export const templateOf = (synth: Synth, stack: Stack): Template => synth.templates.get(stack.stackName)!;

/** Removes the folders of every synthesis this file made (its afterAll). */
export function removeSyntheses(): void {
  for (const synth of made.splice(0)) rmSync(synth.outdir, { recursive: true, force: true });
}

/** Every function of the app with a readable name and its stack. */
export const functionsOf = ({ built }: Synth): { name: string; stack: Stack; fn: AppFunction }[] => [
  ...[...built.apiStack.functions].map(([group, fn]) => ({ name: group as string, stack: built.apiStack as Stack, fn })),
  { name: 'authorizer', stack: built.apiStack, fn: built.apiStack.authorizerFunction },
  { name: 'billing-scheduler', stack: built.billingStack, fn: built.billingStack.scheduler },
  { name: 'billing-worker', stack: built.billingStack, fn: built.billingStack.worker },
  { name: 'billing-repairs', stack: built.billingStack, fn: built.billingStack.repairs },
  { name: 'webhooks', stack: built.webhooksStack, fn: built.webhooksStack.dispatcher },
  // Customer mail, only with context mailDomain: the sender and the bounce handler share the `mail` bundle.
  ...(built.mailStack
    ? [
        { name: 'mail', stack: built.mailStack as Stack, fn: built.mailStack.sender },
        { name: 'mail-bounces', stack: built.mailStack as Stack, fn: built.mailStack.bounceHandler },
      ]
    : []),
];
