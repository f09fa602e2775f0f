import { RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
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
