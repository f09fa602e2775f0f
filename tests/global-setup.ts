import { startDynamoLocal, type LocalDynamo } from '../dev/dynamodb.ts';

/** Starts one DynamoDB Local (in memory) for the whole test run, unless DYNAMODB_ENDPOINT names one. */
let dynamo: LocalDynamo | undefined;

export async function setup(): Promise<void> {
  if (!process.env.DYNAMODB_ENDPOINT) {
    dynamo = await startDynamoLocal();
    process.env.DYNAMODB_ENDPOINT = dynamo.endpoint;
  }
}

export async function teardown(): Promise<void> {
  await dynamo?.stop();
}
