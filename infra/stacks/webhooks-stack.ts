import { Duration, Stack, type StackProps } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { TABLE_ACCESS } from '../../shared/db/key-prefixes.ts';
import { Alarms } from '../constructs/alarms.ts';
import { AppFunction, SETTINGS_PARTITION } from '../constructs/app-function.ts';

export interface WebhooksStackProps extends StackProps {
  table: ITable;
  /** Where the dispatcher's alarms notify (the API stack's `ControlPlaneAlarms` topic). */
  alarmTopic: sns.ITopic;
}

/** Bundle of the dispatcher (functions/webhooks/handler.ts): exports `handler`; no route group. */
export const WEBHOOKS_BUNDLE = 'webhooks';
/** Every minute: when no run is on, the first retry (5 s) and a fresh event wait at most this long in AWS. */
export const DISPATCH_SCHEDULE = 'rate(1 minute)';

/**
 * Outbound webhooks (docs/webhooks.md "Webhooks: delivery"): an EventBridge rule invokes the dispatcher
 * every minute; it fans the outbox out into deliveries and makes the due attempts, polling every
 * second while there is work, fairly across accounts (shared/webhooks/dispatch.ts). Every step is idempotent and claimed under a condition, so a
 * missed, late or overlapping run only delays deliveries; the next run does what is left.
 *
 * A stack of its own, like billing: deploying or rolling back the API never stops deliveries, and
 * they can be paused (disable the rule) and resumed without losing an event (the outbox and the
 * retry queue are in the table).
 */
export class WebhooksStack extends Stack {
  readonly dispatcher: AppFunction;
  readonly rule: events.Rule;
  readonly alarms: Alarms;

  constructor(scope: Construct, id: string, props: WebhooksStackProps) {
    super(scope, id, props);

    this.dispatcher = new AppFunction(this, 'WebhookDispatcher', {
      group: WEBHOOKS_BUNDLE,
      handler: 'index.handler',
      description: 'Control plane: webhook dispatcher (outbox fan-out and due delivery attempts, every minute)',
      // A run polls for at most 50 s (RUN_MS), then waits for the attempts in flight (5 s each at
      // most): about a minute when receivers hang, so runs do not pile up; a run with nothing to do
      // ends in well under a second. 2 minutes leaves room for slow table writes.
      timeout: Duration.minutes(2),
      memorySize: 256,
    });
    // Endpoints and events (under the account), deliveries, GSI2 (shared/db/key-prefixes.ts). Settings: never written.
    this.dispatcher.bindTable(props.table, TABLE_ACCESS.webhooks);
    this.dispatcher.denyPartitionWrites(props.table, [SETTINGS_PARTITION]);

    this.rule = new events.Rule(this, 'DispatchRule', {
      description: 'Webhook dispatcher, every minute',
      schedule: events.Schedule.expression(DISPATCH_SCHEDULE),
    });
    this.rule.addTarget(
      new targets.LambdaFunction(this.dispatcher.fn, {
        // No retries and no dead letters: the next run, a minute later, does the same work.
        retryAttempts: 0,
        maxEventAge: Duration.minutes(2),
      }),
    );
    this.dispatcher.fn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(2) });

    this.alarms = new Alarms(this, 'Alarms', { topic: props.alarmTopic });
    this.alarms.forFunction('WebhookDispatcher', this.dispatcher);
    this.alarms.loggedErrors('Webhooks', [this.dispatcher]);
    this.alarms.webhookBacklog();
  }
}
