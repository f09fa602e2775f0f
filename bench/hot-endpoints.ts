import { randomUUID } from 'node:crypto';
import * as doc from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type { LocalStack } from '../dev/stack.ts';
import { db } from '../shared/db/client.ts';
import { handler as accountHandler } from '../functions/account/handler.ts';
import { handler as serversHandler } from '../functions/servers/handler.ts';
import { countByName, countDynamoCalls, fmt, table, timeInterleaved, waves, type DynamoCall, type Timing } from './harness.ts';
import type { DeployedServer } from './round-trips.ts';

/**
 * Handler time of hot endpoints next to their bare DynamoDB calls, like bench/account-endpoint.ts:
 * the group's Lambda handler invoked in this process with an API Gateway v2 event, against the
 * floor of the very DynamoDB commands that handler sent (captured from one request, replayed with
 * the same grouping: side by side where the handler ran them side by side).
 */
type Handler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2 | string | undefined>;

const context = { awsRequestId: 'bench' } as Context;

function event(method: string, path: string, token: string): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: '',
    headers: { authorization: `Bearer ${token}`, host: '127.0.0.1' },
    requestContext: { http: { method, path, sourceIp: '127.0.0.1' }, requestId: randomUUID() },
    isBase64Encoded: false,
  } as unknown as APIGatewayProxyEventV2;
}

/** Document-client command classes by the name the client reports (GetItemCommand → GetCommand). */
const COMMANDS: Record<string, new (input: never) => doc.DynamoDBDocumentClientCommand<never, never, never, never, never>> = {
  GetItemCommand: doc.GetCommand,
  PutItemCommand: doc.PutCommand,
  UpdateItemCommand: doc.UpdateCommand,
  DeleteItemCommand: doc.DeleteCommand,
  QueryCommand: doc.QueryCommand,
  ScanCommand: doc.ScanCommand,
  BatchGetItemCommand: doc.BatchGetCommand,
  BatchWriteItemCommand: doc.BatchWriteCommand,
  TransactGetItemsCommand: doc.TransactGetCommand,
  TransactWriteItemsCommand: doc.TransactWriteCommand,
} as never;

/** Replays captured calls: each group after the previous one, the calls of a group side by side. */
function replayer(calls: DynamoCall[]): () => Promise<void> {
  const groups = waves(calls).map((group) =>
    group.map((c) => {
      const Command = COMMANDS[c.name];
      if (!Command) throw new Error(`cannot replay ${c.name}`);
      return { Command, input: structuredClone(c.input) };
    }),
  );
  return async () => {
    for (const group of groups) {
      await Promise.all(
        group.map(({ Command, input }) =>
          db()
            .send(new Command(structuredClone(input) as never))
            .catch((err: Error) => {
              // A conditional write that fails still costs its round trip; that is all the floor needs.
              if (err.name !== 'ConditionalCheckFailedException' && err.name !== 'TransactionCanceledException') throw err;
            }),
        ),
      );
    }
  };
}

interface Row {
  label: string;
  timing: Timing;
  floor?: boolean;
}

async function handlerVsBare(opts: {
  title: string;
  handler: Handler;
  handlerLabel: string;
  method: string;
  path: string;
  token: string;
  n: number;
  /** Work the handler does besides DynamoDB that the floor should include (panel calls). */
  extraFloor?: { label: string; run: () => Promise<void> };
  check?: (body: Record<string, unknown>) => void;
  note: string;
}): Promise<string> {
  const invoke = async () => {
    const res = (await opts.handler(event(opts.method, opts.path, opts.token), context)) as { statusCode: number; body: string };
    if (res.statusCode !== 200) throw new Error(`${opts.method} ${opts.path} failed: ${res.statusCode} ${res.body}`);
    return res;
  };
  opts.check?.(JSON.parse((await invoke()).body) as Record<string, unknown>);
  const counter = countDynamoCalls();
  counter.reset();
  await invoke();
  // The rate-limit counter is claimed in batches (one write per several requests), so whether the
  // captured request made one is chance: the floor leaves it out, the handler carries its share.
  const captured = counter.records().filter((c) => !String((c.input as { Key?: { PK?: string } }).Key?.PK ?? '').startsWith('RATE#'));
  const bare = replayer(captured);
  const groups = waves(captured).length;

  // Handler and floor(s) alternate request by request, so other load on the machine falls on all alike.
  const extra = opts.extraFloor;
  const [handlerTiming, bareTiming, bareWithExtra] = await timeInterleaved(opts.n, [
    invoke,
    bare,
    ...(extra
      ? [
          async () => {
            await bare();
            await extra.run();
          },
        ]
      : []),
  ]);
  const rows: Row[] = [{ label: 'bare DynamoDB calls', timing: bareTiming!, floor: !extra }];
  if (extra) rows.push({ label: `bare DynamoDB calls + ${extra.label}`, timing: bareWithExtra!, floor: true });
  rows.push({ label: `${opts.handlerLabel} in-process`, timing: handlerTiming! });
  const floor = rows.find((r) => r.floor)!.timing;
  return [
    `### ${opts.title}`,
    '',
    `DynamoDB round trips per request: **${captured.length}** (${countByName(captured.map((c) => c.name))}) in **${groups}** sequential waits. ${opts.note}`,
    '',
    table(
      ['measure', 'mean', 'p50', 'p99', 'ratio (p50)', 'CPU / request', 'ratio (CPU)'],
      rows.map((r) => [
        `${r.label}${r.floor ? ' (floor)' : ''}`,
        fmt(r.timing.meanMs),
        fmt(r.timing.p50Ms),
        fmt(r.timing.p99Ms),
        `${(r.timing.p50Ms / floor.p50Ms).toFixed(2)}`,
        fmt(r.timing.cpuMs!),
        `${(r.timing.cpuMs! / floor.cpuMs!).toFixed(2)}`,
      ]),
    ),
    '',
    `${opts.n} sequential requests each after a warm-up, handler and floor alternating, against DynamoDB Local on this machine; the floor replays the commands the handler sent in one captured request.`,
  ].join('\n');
}

export async function benchHotEndpoints(stack: LocalStack, server: DeployedServer, n = 400): Promise<string> {
  const sim = stack.panel!.sim;
  const panelServer = sim.server(server.identifier);
  if (!panelServer) throw new Error(`server ${server.identifier} is not on the panel`);
  const panelGet = async (path: string, key: string) => {
    const res = await fetch(`${sim.url}${path}`, { headers: { authorization: `Bearer ${key}`, accept: 'application/json' } });
    if (res.status !== 200) throw new Error(`panel ${path}: ${res.status} ${await res.text()}`);
    await res.json();
  };
  const keys = await handlerVsBare({
    title: 'GET /v1/keys',
    handler: accountHandler as Handler,
    handlerLabel: 'account handler',
    method: 'GET',
    path: '/v1/keys',
    token: stack.adminApiKey,
    n,
    note: "Key lookup and rate-limit counter side by side, then one Query for the first page (25) of the account's keys.",
  });
  const serverRead = await handlerVsBare({
    title: 'GET /v1/servers/:id (with the panel part)',
    handler: serversHandler as Handler,
    handlerLabel: 'servers handler',
    method: 'GET',
    path: `/v1/servers/${server.id}`,
    token: stack.adminApiKey,
    n,
    check: (body) => {
      const live = body.live as { available?: boolean; resources?: unknown } | undefined;
      if (!live?.available || !live.resources) throw new Error(`GET /v1/servers/:id returned no live state: ${JSON.stringify(live)}`);
    },
    extraFloor: {
      label: 'the same 2 panel calls made with fetch',
      run: async () => {
        await panelGet(`/api/application/servers/${panelServer.id}`, sim.appKey);
        await panelGet(`/api/client/servers/${server.identifier}/resources`, sim.clientKey);
      },
    },
    note: 'Then the live state from the panel simulator on this machine: the server from the application API, then its resources from the client API (sequential), so the floor includes those two HTTP calls, made bare with `fetch` (the simulator runs in this process, so its CPU is in both the floor and the handler).',
  });
  return [keys, '', serverRead].join('\n');
}
