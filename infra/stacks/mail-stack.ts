import { ArnFormat, CfnOutput, Duration, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambdaEvents from 'aws-cdk-lib/aws-lambda-event-sources';
import * as ses from 'aws-cdk-lib/aws-ses';
import * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { TABLE_ACCESS } from '../../shared/db/key-prefixes.ts';
import { Alarms } from '../constructs/alarms.ts';
import { AppFunction, SETTINGS_PARTITION } from '../constructs/app-function.ts';
import { stageName } from '../stage.ts';

export interface MailStackProps extends StackProps {
  table: ITable;
  alarmTopic: sns.ITopic;
  /** Context `mailDomain`: the domain the mail is sent from (its DNS gets the DKIM records). */
  mailDomain: string;
  /** Context `mailFrom` (default `billing@<mailDomain>`): the sending address. */
  mailFrom: string;
  /** Where the messages' links point: the dashboard (ends with `/`). */
  dashboardUrl: string;
  /** The API's address (ends with `/`): the unsubscribe links of optional mail point at it. */
  apiUrl: string;
  /** The API stack's cursor key: it signs the unsubscribe tokens (shared/mail/unsubscribe.ts), read at run time. */
  cursorSecret: secretsmanager.ISecret;
}

/** Bundle of the mail functions (functions/mail/handler.ts): `handler` sends, `bounces` keeps the suppression list. */
export const MAIL_BUNDLE = 'mail';
/** Every minute, like the webhook dispatcher that queues the mail. */
export const MAIL_SCHEDULE = 'rate(1 minute)';
/** The SES actions that send; only the sender's role holds them. */
export const SEND_ACTIONS = ['ses:SendEmail', 'ses:SendRawEmail'] as const;

/**
 * Customer mail through Amazon SES (docs/mail.md), only with context `mailDomain`:
 * - the domain identity with Easy DKIM (three CNAME records to publish; output `MailDkimRecords`),
 *   in a configuration set that suppresses bounced and complaining addresses on SES's side and
 *   sends bounces and complaints to an SNS topic;
 * - the `bounces` function on that topic, which puts the addresses on our suppression list;
 * - the sender (`handler`), every minute: the only role allowed to send, from this identity and in
 *   this configuration set.
 * The webhook dispatcher queues the mail (its fan-out); it gets MAIL_FROM from the app (infra/app.ts).
 */
export class MailStack extends Stack {
  readonly identity: ses.EmailIdentity;
  readonly configurationSet: ses.ConfigurationSet;
  readonly notifications: sns.Topic;
  readonly sender: AppFunction;
  readonly bounceHandler: AppFunction;
  readonly rule: events.Rule;
  readonly alarms: Alarms;

  constructor(scope: Construct, id: string, props: MailStackProps) {
    super(scope, id, props);

    this.configurationSet = new ses.ConfigurationSet(this, 'ConfigurationSet', {
      configurationSetName: stageName(this, 'control-plane-mail'),
      // SES drops sends to addresses that bounced or complained before, as our list does.
      suppressionReasons: ses.SuppressionReasons.BOUNCES_AND_COMPLAINTS,
      reputationMetrics: true,
      tlsPolicy: ses.ConfigurationSetTlsPolicy.REQUIRE,
    });
    this.identity = new ses.EmailIdentity(this, 'Identity', {
      identity: ses.Identity.domain(props.mailDomain),
      configurationSet: this.configurationSet,
      dkimSigning: true,
      dkimIdentity: ses.DkimIdentity.easyDkim(ses.EasyDkimSigningKeyLength.RSA_2048_BIT),
    });

    this.notifications = new sns.Topic(this, 'Notifications', {
      displayName: 'Control plane mail: bounces and complaints',
      enforceSSL: true,
    });
    Validations.of(this.notifications).acknowledge({
      id: 'AwsSolutions-SNS2',
      reason:
        "SES publishes bounce and complaint notifications; a topic under the AWS-managed SNS key refuses them and a customer-managed key costs $1 a month. The messages carry the bounced address only, and the topic's subscriber is our own function.",
    });
    this.configurationSet.addEventDestination('BouncesAndComplaints', {
      destination: ses.EventDestination.snsTopic(this.notifications),
      events: [ses.EmailSendingEvent.BOUNCE, ses.EmailSendingEvent.COMPLAINT],
    });

    this.sender = new AppFunction(this, 'MailSender', {
      group: MAIL_BUNDLE,
      handler: 'index.handler',
      description: 'Control plane: mail sender (due messages through SES, every minute)',
      // A run polls for at most 50 s, then finishes the sends in flight (a PDF and an SES call each).
      timeout: Duration.minutes(2),
      memorySize: 512,
      environment: {
        MAIL_FROM: props.mailFrom,
        MAIL_CONFIGURATION_SET: this.configurationSet.configurationSetName,
        DASHBOARD_URL: props.dashboardUrl,
        API_URL: props.apiUrl,
        CURSOR_SECRET_ARN: props.cursorSecret.secretArn,
      },
    });
    props.cursorSecret.grantRead(this.sender.role);
    this.sender.bindTable(props.table, TABLE_ACCESS.mail);
    this.sender.denyPartitionWrites(props.table, [SETTINGS_PARTITION]);
    this.sender.fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: [...SEND_ACTIONS],
        resources: [
          this.formatArn({
            service: 'ses',
            resource: 'identity',
            resourceName: props.mailDomain,
            arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
          }),
          this.formatArn({
            service: 'ses',
            resource: 'configuration-set',
            resourceName: this.configurationSet.configurationSetName,
            arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
          }),
        ],
        conditions: { StringLike: { 'ses:FromAddress': [props.mailFrom] } },
      }),
    );
    this.rule = new events.Rule(this, 'SendRule', {
      description: 'Mail sender, every minute',
      schedule: events.Schedule.expression(MAIL_SCHEDULE),
    });
    this.rule.addTarget(new targets.LambdaFunction(this.sender.fn, { retryAttempts: 0, maxEventAge: Duration.minutes(2) }));
    this.sender.fn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(2) });

    this.bounceHandler = new AppFunction(this, 'MailBounces', {
      group: MAIL_BUNDLE,
      handler: 'index.bounces',
      description: 'Control plane: SES bounces and complaints onto the suppression list',
    });
    this.bounceHandler.bindTable(props.table, TABLE_ACCESS['mail-events']);
    this.bounceHandler.denyPartitionWrites(props.table, [SETTINGS_PARTITION]);
    this.bounceHandler.fn.addEventSource(new lambdaEvents.SnsEventSource(this.notifications));

    this.alarms = new Alarms(this, 'Alarms', { topic: props.alarmTopic });
    this.alarms.forFunction('MailSender', this.sender);
    this.alarms.forFunction('MailBounces', this.bounceHandler);
    this.alarms.loggedErrors('Mail', [this.sender, this.bounceHandler]);
    this.alarms.mailFailures();

    new CfnOutput(this, 'MailDkimRecords', {
      value: this.identity.dkimRecords.map((r) => `${r.name} CNAME ${r.value}`).join(' ; '),
      description: `Publish these three CNAME records in the DNS of ${props.mailDomain} (Easy DKIM), then SES verifies the domain`,
    });
  }
}
