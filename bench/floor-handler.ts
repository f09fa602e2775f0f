import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * The floor of the cold-start benchmark (bench/bundles.ts): a Lambda that holds only the DynamoDB
 * document client and does nothing. The client is created on first use, as shared/db/client.ts does,
 * so module load pays for the SDK's code and nothing else.
 */
let client: DynamoDBDocumentClient | undefined;

export const handler = async (): Promise<{ statusCode: number; body: string }> => {
  client ??= DynamoDBDocumentClient.from(new DynamoDBClient({}));
  return { statusCode: 200, body: JSON.stringify({ ok: client !== undefined }) };
};
