import { existsSync } from 'node:fs';
import type { DnsZone } from '../dns.ts';
import { join } from 'node:path';
import { ArnFormat, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { indexPatterns, leadingKeyPatterns, type TableAccess } from '../../shared/db/key-prefixes.ts';
import { keys } from '../../shared/db/keys.ts';
import { bundleDir } from '../bundle.ts';
import { asNagString } from '../nag.ts';
import { BRAND_PREFIX } from '../../shared/brand/logo.ts';
import type { FunctionEgress } from './egress.ts';
import { currencyOf, metricsNamespace, panelSecretsPrefix } from '../stage.ts';

/**
 * Panel keys live in Secrets Manager, one secret per instance: `<prefix>/instances/<instance id>`.
 * The default prefix; with a stage it is `control-plane-<stage>` (infra/stage.ts `panelSecretsPrefix`).
 */
export const PANEL_SECRETS_PREFIX = 'control-plane';

/**
 * The partition of the platform settings item. Only the admin function may write it: every other
 * function gets `denyPartitionWrites(table, [SETTINGS_PARTITION])`. (The `INSTANCES` partition is
 * not denied: servers and the billing pass keep the per-instance server counts there.)
 */
export const SETTINGS_PARTITION = keys.settings().PK;

/**
 * 256 MB: chosen by cost × duration of a warm authenticated GET (bench/results.md §7): Lambda's CPU
 * share is memory / 1,769 MB, and a request is a few ms of CPU and two DynamoDB round trips, so
 * below one vCPU a smaller function bills the same GB-seconds of CPU and fewer of waiting. 128 MB
 * would be cheaper still but leaves the Node runtime, the SDK and the bundle no measured headroom.
 * arm64 (Graviton) for its price, 20 % below x86's per GB-second; its speed is not measured here.
 */
export const DEFAULT_MEMORY_MB = 256;

export interface AppFunctionProps {
  /** Endpoint group: the code is `dist/functions/<group>` (built by infra/bundle.ts). */
  group: string;
  /** The bundle's export Lambda calls, as `index.<export>`. Default `index.handler`. */
  handler?: string;
  description?: string;
  /** Default `DEFAULT_MEMORY_MB`. */
  memorySize?: number;
  /** Default 10 s. */
  timeout?: Duration;
  /** Added to (and may override) the house environment. */
  environment?: Record<string, string>;
  /**
   * Run in the fixed-egress VPC's private subnets with its egress-only security group (context
   * `fixedEgress`, infra/constructs/egress.ts): for functions that call panels. Default: no VPC.
   */
  egress?: FunctionEgress;
}

/**
 * One Lambda function with the house defaults (modelled on Powertools' `examples/app` construct;
 * logging is the service's own JSON logger, which reads SERVICE_NAME and LOG_LEVEL):
 * Node.js 24 on arm64, the prebuilt ESM bundle of its group (handler `index.handler` unless told
 * otherwise: the billing pass bundle exports `scheduler` and `worker`), source-mapped
 * stack traces, an explicit log group kept one month (and deleted with the stack: logs are not
 * state), X-Ray active tracing, and `bindTable()` to point it at the table with least privilege.
 * The role may write to its own log group only (instead of AWSLambdaBasicExecutionRole, which
 * allows every log group of the account).
 *
 * The function is not bundled here (no NodejsFunction): `infra/bundle.ts` builds exactly these
 * folders, so what the tests measure and what CDK deploys are the same files.
 */
export class AppFunction extends Construct {
  readonly fn: lambda.Function;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;
  readonly group: string;

  constructor(scope: Construct, id: string, props: AppFunctionProps) {
    super(scope, id);
    this.group = props.group;

    const code = bundleDir(props.group);
    if (!existsSync(join(code, 'index.mjs'))) {
      throw new Error(`No bundle for function group "${props.group}" at ${code}: run \`npm run bundle\` first`);
    }

    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Control plane ${props.group} function`,
    });
    this.logGroup.grantWrite(this.role);

    this.fn = new lambda.Function(this, 'Function', {
      description: props.description ?? `Control plane: ${props.group} endpoints`,
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      code: lambda.Code.fromAsset(code),
      handler: props.handler ?? 'index.handler',
      role: this.role,
      memorySize: props.memorySize ?? DEFAULT_MEMORY_MB,
      timeout: props.timeout ?? Duration.seconds(10),
      tracing: lambda.Tracing.ACTIVE,
      logGroup: this.logGroup,
      // Lambda's own START/END/REPORT lines are ≈ 430 bytes of log ingestion per request (docs/costs.md,
      // "What it costs") for figures CloudWatch's Lambda metrics already hold (duration, errors,
      // throttles); at WARN only the platform's warnings and errors (timeouts, crashes) are kept.
      // Set the system level to INFO for a while to see each invocation's REPORT (memory used, init).
      loggingFormat: lambda.LoggingFormat.JSON,
      systemLogLevelV2: lambda.SystemLogLevel.WARN,
      applicationLogLevelV2: lambda.ApplicationLogLevel.INFO,
      environment: {
        NODE_OPTIONS: '--enable-source-maps',
        STAGE: 'aws',
        SERVICE_NAME: `control-plane-${props.group}`,
        LOG_LEVEL: 'info',
        METRICS_NAMESPACE: metricsNamespace(this),
        CURRENCY: currencyOf(this),
        ...props.environment,
      },
      ...(props.egress
        ? {
            vpc: props.egress.vpc,
            vpcSubnets: { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS },
            securityGroups: [props.egress.securityGroup],
          }
        : {}),
    });
    if (props.egress) {
      // The EC2 statement of AWSLambdaVPCAccessExecutionRole without its logs statement (this role
      // writes to its own log group only): Lambda manages the function's network interfaces with it.
      // In the role's own policy, which the function depends on, so it exists before the function.
      this.role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          actions: [...VPC_ENI_ACTIONS],
          resources: ['*'],
        }),
      );
      Validations.of(this).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          'Lambda in a VPC: ec2:CreateNetworkInterface and ec2:Describe* work only on all resources (the EC2 statement of AWSLambdaVPCAccessExecutionRole, without its logs statement).',
      });
    }

    Validations.of(this).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'X-Ray active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords support no resource-level permissions.',
    });
  }

  addEnvironment(key: string, value: string): this {
    this.fn.addEnvironment(key, value);
    return this;
  }

  /**
   * Sets TABLE_NAME and grants the item access of `access` (shared/db/key-prefixes.ts), least
   * privilege twice over: only the actions the code uses (GetItem, Query, ConditionCheckItem to
   * read; PutItem, UpdateItem, DeleteItem to write; TransactWriteItems is authorised per item
   * through these; BatchGetItem only on an access's `batchRead` partitions; no Scan, no batch
   * writes, no stream), and only on the partitions the function's code
   * paths touch, by `dynamodb:LeadingKeys` patterns derived from the key builders.
   *
   * `ForAllValues:StringLike`: every partition key of the request must match one pattern. Index
   * queries get a statement per index on its ARN (no `<table>/index/*`), Query only, with the
   * index partitions the code queries there: for a Query on an index `dynamodb:LeadingKeys` is the
   * index's partition key value (TableAccess, INDEX_PARTITIONS).
   */
  bindTable(table: ITable, access: TableAccess): this {
    this.fn.addEnvironment('TABLE_NAME', table.tableName);
    const patterns = leadingKeyPatterns(access);
    const leadingKeys = (values: string[]) => ({ 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': values } });
    this.fn.addToRolePolicy(
      new iam.PolicyStatement({ actions: [...READ_ACTIONS], resources: [table.tableArn], conditions: leadingKeys(patterns.read) }),
    );
    if (patterns.write.length) {
      this.fn.addToRolePolicy(
        new iam.PolicyStatement({ actions: [...WRITE_ACTIONS], resources: [table.tableArn], conditions: leadingKeys(patterns.write) }),
      );
    }
    if (patterns.batchRead.length) {
      this.fn.addToRolePolicy(
        new iam.PolicyStatement({
          actions: [...BATCH_READ_ACTIONS],
          resources: [table.tableArn],
          conditions: leadingKeys(patterns.batchRead),
        }),
      );
    }
    for (const index of access.indexes) {
      const partitions = indexPatterns(access, index);
      if (!partitions.length)
        throw new Error(`Index ${index} is granted without the partitions queried there (TableAccess.indexPartitions)`);
      this.fn.addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['dynamodb:Query'],
          resources: [`${table.tableArn}/index/${index}`],
          conditions: leadingKeys(partitions),
        }),
      );
    }
    if (table.encryptionKey) {
      if (patterns.write.length) table.encryptionKey.grantEncryptDecrypt(this.fn);
      else table.encryptionKey.grantDecrypt(this.fn);
    }
    return this;
  }

  /**
   * An explicit Deny of item writes to the given partitions of the table, whatever else the role
   * allows (an explicit Deny always wins). `dynamodb:LeadingKeys` holds the partition key of every
   * item a request writes, TransactWriteItems included (it is authorised per item through these
   * actions), so `ForAnyValue` denies a request that touches any of them.
   */
  denyPartitionWrites(table: ITable, partitionKeys: readonly string[]): this {
    this.fn.addToRolePolicy(
      new iam.PolicyStatement({
        effect: iam.Effect.DENY,
        actions: [...WRITE_ACTIONS],
        resources: [table.tableArn],
        conditions: { 'ForAnyValue:StringEquals': { 'dynamodb:LeadingKeys': [...partitionKeys] } },
      }),
    );
    return this;
  }

  /**
   * Panel keys (`control-plane/instances/<id>`): `read` for functions that call panels, `write` for
   * the admin function, which registers, rotates and removes them.
   */
  /**
   * Lets the function put the brand's logo (shared/brand/logo.ts) under `brand/` of the dashboard's
   * bucket, and nothing else of it: no read, no delete, no other prefix. BRAND_BASE_URL: where CloudFront serves it.
   */
  grantBrandAssets(bucket: s3.IBucket, publicUrl: string): this {
    const resource = bucket.arnForObjects(`${BRAND_PREFIX}*`);
    this.fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['s3:PutObject'], resources: [resource] }));
    this.fn.addEnvironment('BRAND_BUCKET', bucket.bucketName);
    this.fn.addEnvironment('BRAND_BASE_URL', publicUrl);
    Validations.of(this).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${asNagString(Stack.of(this), resource)}]`,
      reason:
        "Each logo upload is a new object named by its content hash (cache busting), so the names are not known at deploy time; the grant is PutObject only, under the bucket's brand/ prefix.",
    });
    return this;
  }

  /**
   * Server subdomains (shared/dns/route53.ts): ChangeResourceRecordSets on the one hosted zone the
   * operator named, nothing else of Route 53; and the zone's name and id in the environment.
   */
  grantDnsZone(dns: DnsZone): this {
    this.fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['route53:ChangeResourceRecordSets'],
        resources: [`arn:aws:route53:::hostedzone/${dns.hostedZoneId}`],
      }),
    );
    this.fn.addEnvironment('DNS_ZONE', dns.zone);
    this.fn.addEnvironment('DNS_HOSTED_ZONE_ID', dns.hostedZoneId);
    return this;
  }

  grantPanelKeys(access: 'read' | 'write'): this {
    const stack = Stack.of(this);
    const actions =
      access === 'write'
        ? [
            // What shared/secrets/aws-store.ts calls, no more: RestoreSecret takes back keys set
            // again within a deleted secret's recovery window.
            'secretsmanager:GetSecretValue',
            'secretsmanager:CreateSecret',
            'secretsmanager:PutSecretValue',
            'secretsmanager:RestoreSecret',
            'secretsmanager:DeleteSecret',
          ]
        : ['secretsmanager:GetSecretValue'];
    const resource = stack.formatArn({
      service: 'secretsmanager',
      resource: 'secret',
      resourceName: `${panelSecretsPrefix(this)}/instances/*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    this.fn.addToRolePolicy(new iam.PolicyStatement({ actions, resources: [resource] }));
    Validations.of(this).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${asNagString(stack, resource)}]`,
      reason:
        'Panel keys are one secret per instance, created at run time by the admin API, so their names are not known at deploy time; the grant is limited to the <prefix>/instances/ names of this stage.',
    });
    return this;
  }
}

/** What Lambda needs of a function's role to attach it to a VPC (AWSLambdaVPCAccessExecutionRole's EC2 actions). */
export const VPC_ENI_ACTIONS = [
  'ec2:CreateNetworkInterface',
  'ec2:DescribeNetworkInterfaces',
  'ec2:DescribeSubnets',
  'ec2:DeleteNetworkInterface',
  'ec2:AssignPrivateIpAddresses',
  'ec2:UnassignPrivateIpAddresses',
] as const;

/**
 * Item reads the code makes (shared/db: GetCommand, QueryCommand; transactions need
 * ConditionCheckItem). No Scan (no code path scans), no DescribeTable; batch reads only below.
 */
export const READ_ACTIONS = ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:ConditionCheckItem'] as const;
/** Batch reads (BatchGetCommand), granted only on an access's `batchRead` partitions (the billing pass's profiles). */
export const BATCH_READ_ACTIONS = ['dynamodb:BatchGetItem'] as const;
/** Item writes (PutCommand, UpdateCommand, DeleteCommand; TransactWriteItems is authorised per item through these). */
export const WRITE_ACTIONS = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'] as const;
