import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { getConfig } from '../config/env.ts';
import { escapeCommandInput, unescapeKeys } from './stored-keys.ts';

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
    // Before the converter (serialize step) and after it on the way back: map keys as stored (stored-keys.ts).
    client.middlewareStack.add(
      (next) => async (args) => {
        const result = await next({ ...args, input: escapeCommandInput(args.input) as typeof args.input });
        return { ...result, output: unescapeKeys(result.output) };
      },
      { step: 'initialize', priority: 'high', name: 'storedMapKeys' },
    );
  }
  return client;
}

export const tableName = (): string => getConfig().tableName;

/** For tests that point one process at a fresh table. */
export function resetDbClient(): void {
  client?.destroy();
  client = undefined;
}
