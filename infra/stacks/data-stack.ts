import { App, RemovalPolicy, Stack, type Environment, type StackProps } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import { TABLE } from '../../shared/db/table.ts';

/**
 * The stateful stack: the one table (shared/db/table.ts is its only description, the local stack
 * reads the same one). Everything here survives `cdk destroy`: the table is retained, has deletion
 * protection and point-in-time recovery, and the stack itself has termination protection.
 * Stateless parts (functions, API, identity) live in ApiStack and may be replaced freely.
 */
export class DataStack extends Stack {
  readonly table: dynamodb.Table;

  constructor(scope: Construct, id: string, props: StackProps = {}) {
    super(scope, id, { terminationProtection: true, ...props });

    const string = (name: string): dynamodb.Attribute => ({ name, type: dynamodb.AttributeType.STRING });

    this.table = new dynamodb.Table(this, 'Table', {
      partitionKey: string(TABLE.partitionKey),
      sortKey: string(TABLE.sortKey),
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: TABLE.ttlAttribute,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });

    for (const index of TABLE.indexes) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: string(index.partitionKey),
        sortKey: string(index.sortKey),
        projectionType: dynamodb.ProjectionType.ALL,
      });
    }
  }
}

/** DynamoDB's rule for table names: 3 to 255 of letters, digits, `_`, `-` and `.`. */
const TABLE_NAME = /^[A-Za-z0-9_.-]{3,255}$/;

/**
 * An existing table (context `tableName`: a point-in-time restore, docs/operations.md) for the
 * stateless stacks to use instead of the data stack's own. It has the same key schema and indexes
 * (a restore copies them), so the functions' grants name the same index ARNs, `<table>/index/GSI1`
 * and `GSI2`, and are identical in shape to the owned table's.
 *
 * The reference belongs to no stack of the app: its ARN is built from the table's name and the
 * environment (literal account and region, or the `AWS::AccountId`/`AWS::Region` pseudo
 * parameters), which every template can state itself, so no stack exports anything for it. With
 * it the app has no data stack at all (infra/app.ts): a data stack without its table would have no
 * resources, and `cdk deploy` deletes an existing stack that has none; left out, the data stack
 * keeps the original table, untouched, and dropping the context moves the app back onto it.
 */
export function importTable(tableName: string, env: Environment): dynamodb.ITable {
  if (!TABLE_NAME.test(tableName)) {
    throw new Error(`Context tableName "${tableName}": a DynamoDB table name (3 to 255 letters, digits, _ - .)`);
  }
  const holder = new Stack(new App(), 'ImportedTable', { env });
  return dynamodb.Table.fromTableAttributes(holder, 'Table', {
    tableName,
    globalIndexes: TABLE.indexes.map((index) => index.name),
  });
}
