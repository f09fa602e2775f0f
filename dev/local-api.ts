import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { GROUPS, toTemplatePath, type Group } from '../shared/api/routes.ts';
import { routerForGroups } from '../shared/http/router.ts';
import { errorResponse, MAX_BODY_BYTES } from '../shared/http/handler.ts';
import { ApiError } from '../shared/errors.ts';

/**
 * API Gateway emulation: turns each HTTP request into the HTTP API (payload v2) event that API
 * Gateway would send, picks the endpoint group's Lambda handler from the route table, and writes
 * its result back. Unknown routes answer the error envelope, like the `$default` route in AWS.
 */
export type LambdaHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;

export async function loadGroupHandlers(groups: readonly Group[] = GROUPS): Promise<Partial<Record<Group, LambdaHandler>>> {
  const modules: Record<Group, () => Promise<{ handler: unknown }>> = {
    public: () => import('../functions/public/handler.ts'),
    account: () => import('../functions/account/handler.ts'),
    admin: () => import('../functions/admin/handler.ts'),
    'admin-panels': () => import('../functions/admin-panels/handler.ts'),
    'admin-storefront': () => import('../functions/admin-storefront/handler.ts'),
    dev: () => import('./handler.ts'),
    catalog: () => import('../functions/catalog/handler.ts'),
    servers: () => import('../functions/servers/handler.ts'),
    'server-tools': () => import('../functions/server-tools/handler.ts'),
    'server-history': () => import('../functions/server-history/handler.ts'),
    billing: () => import('../functions/billing/handler.ts'),
    payments: () => import('../functions/payments/handler.ts'),
  };
  const out: Partial<Record<Group, LambdaHandler>> = {};
  for (const group of groups) {
    const { handler } = await modules[group]();
    if (handler) out[group] = handler as LambdaHandler;
  }
  return out;
}

/**
 * The request target split as API Gateway sees it: the path exactly as sent (no dot-segment,
 * double-slash or trailing-slash normalisation; `new URL` would read `//x/y` as a host) and the
 * raw query string.
 */
export function splitTarget(target: string): { rawPath: string; rawQueryString: string } {
  const noFragment = target.split('#', 1)[0]!;
  const q = noFragment.indexOf('?');
  const rawPath = q === -1 ? noFragment : noFragment.slice(0, q);
  return { rawPath: rawPath.startsWith('/') ? rawPath : `/${rawPath}`, rawQueryString: q === -1 ? '' : noFragment.slice(q + 1) };
}

export function toEvent(req: IncomingMessage, body: Buffer): APIGatewayProxyEventV2 {
  const { rawPath, rawQueryString } = splitTarget(req.url ?? '/');
  const searchParams = new URLSearchParams(rawQueryString);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  const query: Record<string, string> = {};
  for (const [k, v] of searchParams) query[k] = k in query ? `${query[k]},${v}` : v;
  const isText = body.length === 0 || /json|text|xml|form/.test(headers['content-type'] ?? 'application/json');
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString,
    headers,
    queryStringParameters: Object.keys(query).length ? query : undefined,
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'local',
      http: {
        method: req.method ?? 'GET',
        path: rawPath,
        protocol: 'HTTP/1.1',
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
    },
    body: body.length ? (isText ? body.toString('utf8') : body.toString('base64')) : undefined,
    isBase64Encoded: !isText,
  };
}

const fakeContext = (requestId: string): Context =>
  ({
    awsRequestId: requestId,
    functionName: 'local',
    getRemainingTimeInMillis: () => 30_000,
    callbackWaitsForEmptyEventLoop: false,
  }) as unknown as Context;

/** Answers what is not the API (the dashboard's files); false passes the request on to the API. */
export type Preroute = (req: IncomingMessage, res: ServerResponse) => boolean;

export function createLocalApi(handlers: Partial<Record<Group, LambdaHandler>>, preroute?: () => Preroute | undefined): Server {
  const match = routerForGroups(GROUPS.filter((g) => handlers[g]));
  return createServer(async (req, res) => {
    if (preroute?.()?.(req, res)) return;
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      // API Gateway refuses bodies past its own limit before the Lambda sees them.
      if (size > MAX_BODY_BYTES + 1024) tooLarge = true;
      else chunks.push(chunk as Buffer);
    }
    const event = toEvent(req, Buffer.concat(chunks));
    let result: APIGatewayProxyStructuredResultV2;
    try {
      if (tooLarge) throw new ApiError('payload_too_large', `The request body exceeds ${MAX_BODY_BYTES} bytes`);
      // Like API Gateway: a matching route goes to its group's function, anything else to the
      // `$default` route (the public function), which answers 404 or 405 in the envelope.
      let group: Group = 'public';
      try {
        const route = match(event.requestContext.http.method, event.rawPath).def;
        group = route.group;
        event.routeKey = event.requestContext.routeKey = `${route.method} ${toTemplatePath(route.path)}`;
      } catch {
        /* $default */
      }
      result = await handlers[group]!(event, fakeContext(event.requestContext.requestId));
    } catch (err) {
      result = errorResponse(err, event.requestContext.requestId, undefined);
    }
    res.writeHead(result.statusCode ?? 200, result.headers as Record<string, string>);
    res.end(result.isBase64Encoded ? Buffer.from(result.body ?? '', 'base64') : (result.body ?? ''));
  });
}

export async function listen(server: Server, port: number, host = '127.0.0.1'): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as { port: number };
  return `http://${host}:${address.port}`;
}
