import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Validations } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { AwsSolutionsChecks } from 'cdk-nag';
import { buildDashboard } from '../web/build.ts';
import { bundleAll, ROOT } from './bundle.ts';
import { ApiStack } from './stacks/api-stack.ts';
import { BillingStack } from './stacks/billing-stack.ts';
import { DataStack, importTable } from './stacks/data-stack.ts';
import { fixedEgressFromContext } from './constructs/egress.ts';
import { NetworkStack } from './stacks/network-stack.ts';
import { WebhooksStack } from './stacks/webhooks-stack.ts';
import { MailStack } from './stacks/mail-stack.ts';
import { DASHBOARD_BASE } from './constructs/dashboard.ts';
import { stageName } from './stage.ts';

/**
 * The CDK app: the stateful ControlPlaneData stack (the table) and three stateless stacks,
 * ControlPlaneApi (functions, HTTP API, identity, alarm topic, the dashboard on S3 + CloudFront), ControlPlaneBilling (the hourly
 * billing pass: rule, scheduler, queue, workers) and ControlPlaneWebhooks (the webhook dispatcher
 * and its rule), checked by cdk-nag's AWS Solutions rules. With context `fixedEgress=true` a fifth,
 * ControlPlaneNetwork, holds the VPC and NAT gateway the panel-calling functions of the API and
 * billing stacks go out through (infra/stacks/network-stack.ts).
 *
 * cdk-nag 3 is a policy-validation plugin, not an Aspect: `Validations.of(app).addPlugins(...)`
 * runs it at synthesis and any unacknowledged finding fails `cdk synth`. Findings are acknowledged
 * with `Validations.of(construct).acknowledge({ id, reason })` next to the resources they concern
 * (infra/stacks/*), each with its reason.
 *
 * `npx cdk synth` runs this file (cdk.json), which builds the bundles and the dashboard (web/dist,
 * deployed by ApiStack's Dashboard construct) first, so a fresh clone needs no separate build
 * step. Tests call `bundleAll()` and `buildDashboard()` once and then `buildApp()`.
 */
export interface BuildAppOptions {
  /**
   * Extra CDK context (stage, adminEmails, oidcIssuer + oidcAudience, selfSignUp, stripeSecretName, alarmEmail,
   * domainName + certificateArn, sesFromEmail, cognitoDomainPrefix, dashboardDomainName + dashboardCertificateArn,
   * dashboardOidcClientId, tableName, throttleRate + throttleBurst, fixedEgress), over cdk.json's.
   */
  context?: Record<string, unknown>;
  /** Where the cloud assembly goes (default: the CLI's choice, or a temporary directory). */
  outdir?: string;
  /** Default: CDK_DEFAULT_ACCOUNT (unset: environment-agnostic account). */
  account?: string;
  /** Default: CDK_DEFAULT_REGION, else us-east-1. */
  region?: string;
}

export interface BuiltApp {
  app: App;
  /** The stack that owns the table; absent when context `tableName` names an existing table. */
  dataStack: DataStack | undefined;
  /** The table the functions use: the data stack's, or the one named by context `tableName`. */
  table: ITable;
  apiStack: ApiStack;
  billingStack: BillingStack;
  webhooksStack: WebhooksStack;
  /** Customer mail through SES; present only with context `mailDomain` (docs/mail.md). */
  mailStack: MailStack | undefined;
  /** The VPC, NAT gateway and address of the panel-calling functions; present only with context `fixedEgress=true`. */
  networkStack: NetworkStack | undefined;
  /** The cdk-nag pack registered on the app (tests call `nag.validateScope(stack)`). */
  nag: AwsSolutionsChecks;
}

/**
 * The context of cdk.json (feature flags and defaults). The CLI passes it to the app itself; reading
 * it here too makes an app built in a test behave exactly like `cdk synth` (CLI values still win).
 */
function cdkJsonContext(): Record<string, unknown> {
  const json = JSON.parse(readFileSync(join(ROOT, 'cdk.json'), 'utf8')) as { context?: Record<string, unknown> };
  return json.context ?? {};
}

export function buildApp(options: BuildAppOptions = {}): BuiltApp {
  const app = new App({
    context: cdkJsonContext(),
    ...(options.context ? { postCliContext: options.context } : {}),
    ...(options.outdir ? { outdir: options.outdir } : {}),
  });

  const env = {
    account: options.account ?? process.env.CDK_DEFAULT_ACCOUNT,
    region: options.region ?? process.env.CDK_DEFAULT_REGION ?? 'us-east-1',
  };

  // With context `stage`, every stack name (and so every name derived from it) starts with the
  // stage, so several deployments can share one account and region (infra/stage.ts).
  // Context `tableName` (a restored table, docs/operations.md): the stateless stacks use that
  // table and the data stack is left out of the app, so `cdk deploy` leaves it and its table as they are.
  const tableName = contextString(app.node.tryGetContext('tableName'));
  const dataStack = tableName
    ? undefined
    : new DataStack(app, 'ControlPlaneData', {
        env,
        stackName: stageName(app, 'ControlPlaneData'),
        description: 'Hosting control plane: stateful resources (DynamoDB table)',
      });
  const table = dataStack ? dataStack.table : importTable(tableName!, env);
  // Context `fixedEgress=true`: the functions that call panels go out through one NAT gateway's
  // Elastic IP (infra/constructs/egress.ts), for panel keys limited to allowed IPs.
  const networkStack = fixedEgressFromContext(app)
    ? new NetworkStack(app, 'ControlPlaneNetwork', {
        env,
        stackName: stageName(app, 'ControlPlaneNetwork'),
        description: 'Hosting control plane: the fixed outgoing address of the panel-calling functions (VPC, NAT gateway)',
      })
    : undefined;
  const egress = networkStack ? { egress: networkStack.functionEgress } : {};
  const apiStack = new ApiStack(app, 'ControlPlaneApi', {
    env,
    stackName: stageName(app, 'ControlPlaneApi'),
    description: 'Hosting control plane: HTTP API, functions, identity',
    table,
    ...egress,
  });
  const billingStack = new BillingStack(app, 'ControlPlaneBilling', {
    env,
    stackName: stageName(app, 'ControlPlaneBilling'),
    description: 'Hosting control plane: hourly billing pass (rule, scheduler, queue, workers)',
    table,
    cursorSecret: apiStack.cursorSecret,
    alarmTopic: apiStack.alarms.topic,
    ...egress,
  });
  const webhooksStack = new WebhooksStack(app, 'ControlPlaneWebhooks', {
    env,
    stackName: stageName(app, 'ControlPlaneWebhooks'),
    description: 'Hosting control plane: outbound webhooks (rule, dispatcher)',
    table,
    alarmTopic: apiStack.alarms.topic,
  });

  // Context `mailDomain` (and optionally `mailFrom`): customer mail through SES; without it no mail is queued or sent.
  const mailDomain = contextString(app.node.tryGetContext('mailDomain'));
  const mailFrom = contextString(app.node.tryGetContext('mailFrom')) ?? (mailDomain ? `billing@${mailDomain}` : undefined);
  const mailStack = mailDomain
    ? new MailStack(app, 'ControlPlaneMail', {
        env,
        stackName: stageName(app, 'ControlPlaneMail'),
        description: 'Hosting control plane: customer mail (SES identity, configuration set, sender, bounces)',
        table,
        alarmTopic: apiStack.alarms.topic,
        mailDomain,
        mailFrom: mailFrom!,
        dashboardUrl: apiStack.dashboard ? `${apiStack.dashboard.url}${DASHBOARD_BASE}` : `${apiStack.api.apiEndpoint}/`,
        apiUrl: `${apiStack.api.apiEndpoint}/`,
        cursorSecret: apiStack.cursorSecret,
      })
    : undefined;
  // The dispatcher's fan-out queues the mail only when there is a sender.
  if (mailFrom && mailStack) webhooksStack.dispatcher.addEnvironment('MAIL_FROM', mailFrom);

  const nag = new AwsSolutionsChecks(app, { verbose: true });
  Validations.of(app).addPlugins(nag);
  return { app, dataStack, table, apiStack, billingStack, webhooksStack, mailStack, networkStack, nag };
}

/** A context value that is a non-empty string (cdk.json keeps unset ones as ""), else undefined. */
function contextString(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() ? value.trim() : undefined;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await Promise.all([bundleAll(), buildDashboard()]);
  buildApp().app.synth();
}
