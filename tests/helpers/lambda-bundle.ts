import { type ChildProcess, fork } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { cpSync, existsSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import { dirname, join, parse } from 'node:path';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { s3Address, s3Operation, signedForS3 } from './fake-s3.ts';
import { sesCalls, signedForSes } from './fake-ses.ts';
import { route53Calls, signedForRoute53 } from './fake-route53.ts';
import { closeServer, listenLocal } from './local-server.ts';

/**
 * A built function bundle run as Lambda runs it: its asset folder copied where no node_modules is
 * above it, the handler file imported by path in a Node process of its own (LAMBDA_TASK_ROOT set,
 * the environment of the synthesized function), invoked with the events API Gateway, SQS and
 * EventBridge send. The AWS services it calls are reached through a recorder (`startAwsRecorder`).
 */

/** The folders above `dir` that hold a node_modules (none may, for a bundle to be tested as deployed). */
export function nodeModulesAbove(dir: string): string[] {
  const found: string[] = [];
  for (let at = dir; ; at = dirname(at)) {
    if (existsSync(join(at, 'node_modules'))) found.push(join(at, 'node_modules'));
    if (at === parse(at).root) return found;
  }
}

/** Copies a bundle's asset folder (dist/functions/<group>) to `to`, which is then the task root. */
export function copyBundle(from: string, to: string): string {
  cpSync(from, to, { recursive: true });
  return to;
}

/**
 * Lambda's runtime in short: import the handler file by its path, call the named export with each
 * event and a context, send back the result or the error. It lives beside the task roots, not in one.
 */
const RUNTIME = `import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
const [taskRoot, exportName] = process.argv.slice(2);
const mod = await import(pathToFileURL(join(taskRoot, 'index.mjs')).href);
const fn = mod[exportName];
if (typeof fn !== 'function') throw new Error('index.' + exportName + ' is not a function');
process.on('message', async ({ id, event }) => {
  const deadline = Date.now() + 30_000;
  const context = { awsRequestId: id, functionName: process.env.AWS_LAMBDA_FUNCTION_NAME, getRemainingTimeInMillis: () => deadline - Date.now(), callbackWaitsForEmptyEventLoop: false };
  try {
    process.send({ id, result: (await fn(event, context)) ?? null });
  } catch (err) {
    process.send({ id, error: String(err && err.stack ? err.stack : err) });
  }
});
process.send({ ready: true });
`;

export interface LambdaProcess {
  invoke<T = unknown>(event: unknown): Promise<T>;
  /** What the process wrote (its log lines), for failure messages. */
  log(): string;
  stop(): Promise<void>;
}

/** Starts a function: `taskRoot` holds index.mjs, `exportName` is the part of the handler setting after `index.`. */
export async function startLambda(taskRoot: string, exportName: string, env: Record<string, string>): Promise<LambdaProcess> {
  const runtime = join(dirname(taskRoot), 'runtime.mjs');
  if (!existsSync(runtime)) writeFileSync(runtime, RUNTIME);
  const child: ChildProcess = fork(runtime, [taskRoot, exportName], {
    cwd: taskRoot,
    env: { PATH: process.env.PATH ?? '', LAMBDA_TASK_ROOT: taskRoot, ...env },
    // As the function's NODE_OPTIONS says in AWS; nothing of the test runner's own flags.
    execArgv: ['--enable-source-maps'],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stderr!.on('data', keep);
  child.stdout!.on('data', keep);
  const pending = new Map<string, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  const ready = new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`index.${exportName} of ${taskRoot} exited (${code}) while loading:\n${output}`)));
    child.on('message', (m: { ready?: true; id?: string; result?: unknown; error?: string }) => {
      if (m.ready) return resolve();
      const waiting = pending.get(m.id!);
      pending.delete(m.id!);
      if (m.error !== undefined) waiting?.reject(new Error(`${m.error}\n${output}`));
      else waiting?.resolve(m.result);
    });
  });
  await ready;
  return {
    invoke: <T>(event: unknown) =>
      new Promise<T>((resolve, reject) => {
        const id = randomUUID();
        pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
        child.send({ id, event });
      }),
    log: () => output,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill();
      await exited;
    },
  };
}

export interface ApiEventOptions {
  headers?: Record<string, string>;
  body?: string;
  sourceIp?: string;
}

/** The HTTP API (payload 2.0) event API Gateway sends for a request (headers lower-case, as it sends them). */
export function apiEvent(method: string, target: string, options: ApiEventOptions = {}): APIGatewayProxyEventV2 {
  const [rawPath = '/', rawQueryString = ''] = target.split('?', 2);
  const headers = Object.fromEntries(Object.entries({ host: 'api.example.com', ...options.headers }).map(([k, v]) => [k.toLowerCase(), v]));
  const query = new URLSearchParams(rawQueryString);
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString,
    headers,
    queryStringParameters: rawQueryString ? Object.fromEntries(query) : undefined,
    requestContext: {
      accountId: '123456789012',
      apiId: 'api',
      domainName: 'api.example.com',
      domainPrefix: 'api',
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: options.sourceIp ?? '203.0.113.7', userAgent: 'bundle-test' },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
    },
    body: options.body,
    isBase64Encoded: false,
  };
}

/** One AWS API call as IAM authorizes it: the IAM action (`dynamodb:Query`) and the resource's ARN. */
export interface AwsCall {
  action: string;
  resource: string;
}

export interface AwsRecorder {
  url: string;
  calls: AwsCall[];
  /** The messages sent to SQS (SendMessageBatch entries' bodies), answered as sent. */
  sqsMessages: string[];
  close(): Promise<void>;
}

const REGION = 'eu-west-1';
const ACCOUNT = '123456789012';
export const secretArnOf = (nameOrArn: string): string => {
  const name = nameOrArn.replace(/^arn:aws:secretsmanager:[^:]+:\d+:secret:/, '').replace(/-[A-Za-z0-9]{6}$/, '');
  // A secret's ARN ends in six random characters; a name or a partial ARN is matched against it.
  return `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:${name}-AbCdEf`;
};

/** The IAM actions and resources of one DynamoDB request (a transaction is authorized item by item). */
function dynamodbCalls(operation: string, body: Record<string, any>): AwsCall[] {
  const table = (name: string, index?: string) => `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${name}${index ? `/index/${index}` : ''}`;
  if (operation === 'TransactWriteItems' || operation === 'TransactGetItems') {
    return (body.TransactItems as Record<string, { TableName: string }>[]).flatMap((item) =>
      Object.entries(item).map(([kind, op]) => ({
        action: `dynamodb:${kind === 'ConditionCheck' ? 'ConditionCheckItem' : kind === 'Get' ? 'GetItem' : `${kind}Item`}`,
        resource: table(op.TableName),
      })),
    );
  }
  if (body.RequestItems) return Object.keys(body.RequestItems).map((name) => ({ action: `dynamodb:${operation}`, resource: table(name) }));
  return [{ action: `dynamodb:${operation}`, resource: table(body.TableName, body.IndexName) }];
}

/**
 * The AWS endpoint of one function: DynamoDB requests go on to DynamoDB Local, Secrets Manager
 * requests to `secretsManager` (tests/helpers/fake-secrets-manager.ts), S3 requests to `s3`
 * (tests/helpers/fake-s3.ts), SES v2 requests to `ses` (tests/helpers/fake-ses.ts), Route 53 requests to
 * `route53` (tests/helpers/fake-route53.ts), SQS is answered
 * here. Each request is recorded as the IAM action and resource it needs (`calls`), read from its
 * X-Amz-Target and body (S3: the signing scope, method, bucket and key; SES: the signing scope,
 * the From address's identity and the configuration set): what the function really asked of AWS,
 * with no code of its own involved.
 */
export async function startAwsRecorder(targets: {
  dynamodb: string;
  secretsManager: string;
  s3: string;
  ses?: string;
  /** tests/helpers/fake-route53.ts: ChangeResourceRecordSets on a hosted zone. */
  route53?: string;
}): Promise<AwsRecorder> {
  const calls: AwsCall[] = [];
  const sqsMessages: string[] = [];
  const forward = (req: IncomingMessage, res: ServerResponse, raw: Buffer, upstream: string) => {
    const sent = request(new URL(req.url ?? '/', upstream), { method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    sent.on('error', () => res.writeHead(502).end());
    sent.end(raw);
  };
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    // S3 is a REST API (no X-Amz-Target, any body): told by the service its request is signed for.
    if (signedForS3(req)) {
      const { bucket, key } = s3Address(req);
      calls.push({ action: `s3:${s3Operation(req)}`, resource: `arn:aws:s3:::${bucket}${key ? `/${key}` : ''}` });
      forward(req, res, raw, targets.s3);
      return;
    }
    // SES v2 is a REST API with JSON bodies, told apart the same way.
    if (signedForSes(req)) {
      calls.push(...sesCalls(req, raw, REGION, ACCOUNT));
      if (targets.ses) forward(req, res, raw, targets.ses);
      else res.writeHead(501).end();
      return;
    }
    // Route 53 is a REST API with XML bodies: the hosted zone is in the path.
    if (signedForRoute53(req)) {
      calls.push(...route53Calls(req));
      if (targets.route53) forward(req, res, raw, targets.route53);
      else res.writeHead(501).end();
      return;
    }
    const target = String(req.headers['x-amz-target'] ?? '');
    const [prefix = '', operation = ''] = target.split('.');
    const body = JSON.parse(raw.toString() || '{}') as Record<string, any>;
    if (prefix === 'AmazonSQS') {
      const entries = (body.Entries ?? [{ Id: '0', MessageBody: body.MessageBody }]) as { Id: string; MessageBody: string }[];
      // SendMessageBatch is authorized as sqs:SendMessage.
      calls.push({
        action: `sqs:${operation.replace(/Batch$/, '')}`,
        resource: `arn:aws:sqs:${REGION}:${ACCOUNT}:${String(body.QueueUrl).split('/').pop()}`,
      });
      sqsMessages.push(...entries.map((e) => e.MessageBody));
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
      res.end(
        JSON.stringify({
          Successful: entries.map((e) => ({
            Id: e.Id,
            MessageId: `m-${e.Id}`,
            MD5OfMessageBody: createHash('md5').update(e.MessageBody).digest('hex'),
          })),
          Failed: [],
        }),
      );
      return;
    }
    let upstream: string;
    if (prefix.startsWith('DynamoDB_')) {
      calls.push(...dynamodbCalls(operation, body));
      upstream = targets.dynamodb;
    } else if (prefix === 'secretsmanager') {
      calls.push({ action: `secretsmanager:${operation}`, resource: secretArnOf(body.SecretId ?? body.Name ?? '') });
      upstream = targets.secretsManager;
    } else {
      calls.push({ action: `unknown:${target || req.url}`, resource: '*' });
      res.writeHead(400).end();
      return;
    }
    forward(req, res, raw, upstream);
  });
  const port = await listenLocal(server);
  return { url: `http://127.0.0.1:${port}`, calls, sqsMessages, close: () => closeServer(server) };
}
