import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { getConfig } from '../config/env.ts';

let client: DynamoDBDocumentClient | undefined;

/** The document client, created once per process (Lambda reuses it across invocations). */
export function db(): DynamoDBDocumentClient {
  if (!client) {
    const { region, dynamodbEndpoint } = getConfig();
    const base = new DynamoDBClient({
      region,
      ...(dynamodbEndpoint ? { endpoint: dynamodbEndpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
    });
    client = DynamoDBDocumentClient.from(base, { marshallOptions: { removeUndefinedValues: true } });
  }
  return client;
}

export const tableName = (): string => getConfig().tableName;

/** For tests that point one process at a fresh table. */
export function resetDbClient(): void {
  client?.destroy();
  client = undefined;
}
