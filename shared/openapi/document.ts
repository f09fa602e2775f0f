import { exampleOf } from './examples.ts';
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { routeEntries, toTemplatePath, type RouteDef } from '../api/routes.ts';
import { errorStatusesOf, RETRY_AFTER_CODES } from '../api/contract.ts';
import { ERROR_MEANING, ERROR_STATUS, type ErrorCode } from '../errors.ts';
import { MAX_BODY_BYTES } from '../http/handler.ts';
import { API_VERSION } from './version.ts';
import * as z from 'zod';
import { EVENT_SCOPES } from '../api/event-types.ts';
import { WEBHOOK_PAYLOADS } from '../api/schemas/events.ts';

const DESCRIPTION = `
API-first control plane for game and application servers on Pterodactyl panels, metered hourly against a prepaid credit balance.

**Authentication.** Every request except \`GET /v1/health\` carries \`Authorization: Bearer <token>\`: an API key (\`cp_live_…\`, created with \`POST /v1/keys\`) or a session token from the identity provider. Missing, malformed, expired or revoked credentials get 401 \`unauthorized\`.

**Scopes.** \`account:read\`, \`keys:write\`, \`servers:read\`, \`servers:write\`, \`billing:read\`, \`billing:write\`, \`webhooks:read\`, \`webhooks:write\`, \`admin\`. Each operation names the scope it needs (\`x-required-scope\`); a missing scope or a non-admin calling \`/v1/admin/*\` gets 403 \`forbidden\`. Session tokens hold every scope of their account; an API key created without \`scopes\` gets every scope its creator holds, and can never hold more.

**Errors.** Always \`{"error": {"code", "message", "details"?}}\`. Each operation lists every status it can answer with and, under each, the codes it can say there, with an example of each; the test suite fails when an operation answers with a status or code its entry does not list. Codes and their statuses: ${Object.entries(
  ERROR_STATUS,
)
  .map(([code, status]) => `\`${code}\` ${status}`)
  .join(', ')}. Another account's resource answers 404 exactly like an unknown id.

**Lists.** \`?limit=\` (1–100, default 25) and \`?cursor=\`; responses are \`{"data": [...], "nextCursor": string|null}\`, newest first. Cursors are opaque, signed and bound to the caller and the listing.

**Rate limit.** 240 requests per minute per credential, and per source IP for requests whose credential is missing, malformed or refused; shared by every server of the service. The Stripe webhook is exempt. Every response carries \`RateLimit-Limit\`, \`RateLimit-Remaining\` and \`RateLimit-Reset\` (seconds); past the limit, 429 \`rate_limited\` with \`Retry-After\`.

**Idempotency.** Creating POSTs (keys, servers, checkout, instances, credit adjustments) accept \`Idempotency-Key\` (1–255 visible ASCII characters, kept 24 hours): the same key with the same request returns the first response again (header \`Idempotent-Replayed: true\`); with a different request, 409 \`idempotency_conflict\`. A failed request leaves no record.

**Bodies.** JSON with \`Content-Type: application/json\`, at most ${MAX_BODY_BYTES} bytes (413 \`payload_too_large\`); malformed JSON is 400 \`invalid_json\`; every invalid field is listed in \`details.issues\` of 400 \`validation_failed\`.

**Money.** Integers in cents; every balance change is a ledger entry.
`.trim();

function countHeader(description: string, maximum: number) {
  return { description, schema: { type: 'integer', format: 'int32', minimum: 0, maximum } };
}

/** Response headers, defined once as components and referenced by every response that carries them. */
const HEADERS = {
  'x-request-id': {
    description: 'The id of this request; quote it when reporting a problem. Every response has it.',
    schema: { type: 'string', maxLength: 128 },
  },
  'RateLimit-Limit': countHeader('Requests allowed per minute for this credential (or source IP).', 1_000_000),
  'RateLimit-Remaining': countHeader('Requests left in the current minute.', 1_000_000),
  'RateLimit-Reset': countHeader('Seconds until the current minute ends and the count starts again.', 60),
  'Retry-After': countHeader(
    'Seconds to wait before trying again; sent with `rate_limited`, `operation_in_progress` and `panel_unavailable`.',
    86_400,
  ),
  'Content-Disposition': {
    description: 'A document to save: `attachment; filename="<name>"` (the invoice PDF is named by its number, `INV-2026-000001.pdf`).',
    schema: { type: 'string', maxLength: 128 },
  },
  ETag: {
    description: 'The version of this answer; send it back as `If-None-Match` to get 304 Not Modified while it has not changed.',
    schema: { type: 'string', maxLength: 64 },
  },
  'Cache-Control': {
    description: 'How long any cache may keep this answer (`public, max-age=<seconds>`).',
    schema: { type: 'string', maxLength: 64 },
  },
  'Idempotent-Replayed': {
    description: '`true` when this is the stored response of an earlier request with the same Idempotency-Key.',
    schema: { type: 'string', enum: ['true'] as string[] },
  },
} satisfies Record<string, { description: string; schema: Record<string, unknown> }>;
type HeaderName = keyof typeof HEADERS;
const headerComponent = (name: HeaderName) => (name === 'x-request-id' ? 'RequestId' : name.replace(/-/g, ''));
/** The headers every answer of an operation carries: the request id, and the rate limit where it counts. */
const commonHeaders = (rateLimited: boolean): HeaderName[] =>
  rateLimited ? ['x-request-id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'] : ['x-request-id'];
const headerRefs = (names: HeaderName[]) =>
  Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${headerComponent(name)}` }]));

/** Every failure's shape, whatever the status. */
const ERROR_ENVELOPE = {
  type: 'object',
  description: 'Every failure, whatever the status, has this shape.',
  required: ['error'],
  additionalProperties: false,
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      additionalProperties: false,
      properties: {
        code: {
          type: 'string',
          enum: Object.keys(ERROR_STATUS),
          description: 'A stable machine code; each operation lists the codes it can answer with under each status.',
        },
        message: { type: 'string', maxLength: 2048, description: 'For people; may change between versions.' },
        details: { description: 'Machine-readable specifics (for example `issues` of `validation_failed`).' },
      },
    },
  },
};

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad request',
  401: 'Unauthenticated',
  402: 'Payment required',
  403: 'Forbidden',
  404: 'Not found',
  409: 'Conflict',
  413: 'Body too large',
  415: 'Unsupported media type',
  422: 'Above a platform limit',
  429: 'Rate limited',
  500: 'Internal error',
  502: 'Bad gateway',
  503: 'Service unavailable',
  504: 'Gateway timeout',
};

/** One error status of an operation: its codes as an enum, an example of each, its headers. */
function errorResponse(status: number, codes: ErrorCode[], rateLimited: boolean) {
  const headers = commonHeaders(rateLimited);
  if (codes.some((code) => RETRY_AFTER_CODES.has(code))) headers.push('Retry-After');
  return {
    description: `${STATUS_TEXT[status] ?? 'Error'}: ${codes.map((code) => `\`${code}\` (${ERROR_MEANING[code]})`).join('; ')}`,
    headers: headerRefs(headers),
    content: {
      'application/json': {
        // The envelope with `code` narrowed to what this status of this operation can say.
        schema: {
          ...ERROR_ENVELOPE,
          properties: {
            error: {
              ...ERROR_ENVELOPE.properties.error,
              properties: { ...ERROR_ENVELOPE.properties.error.properties, code: { type: 'string', enum: codes } },
            },
          },
        },
        examples: Object.fromEntries(
          codes.map((code) => [code, { summary: code, value: { error: { code, message: ERROR_MEANING[code] } } }]),
        ),
      },
    },
  };
}

let cached: object | undefined;

/** The OpenAPI 3.1.0 document, generated from the route table and its zod schemas (once per process). */
export function openApiDocument(serverUrl?: string): object {
  cached ??= generate();
  return serverUrl ? { ...cached, servers: [{ url: serverUrl }] } : cached;
}

function generate(): object {
  const registry = new OpenAPIRegistry();
  const bearer = registry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    description: 'An API key (`cp_live_…`) or a session token (OIDC JWT) from the identity provider.',
  });
  const adminBearer = registry.registerComponent('securitySchemes', 'adminBearer', {
    type: 'http',
    scheme: 'bearer',
    description:
      'An admin\'s API key or session token. In AWS an API Gateway authorizer checks it before the admin function runs (cached up to 60 s per credential); a credential it refuses is answered by API Gateway itself, `401 {"message":"Unauthorized"}` or `403 {"message":"Forbidden"}`, not with the error envelope. The admin function checks again.',
  });
  // The payment provider's webhook is not called with a bearer: the signature over its body is its credential.
  const signature = registry.registerComponent('securitySchemes', 'webhookSignature', {
    type: 'apiKey',
    in: 'header',
    name: 'Stripe-Signature',
    description:
      "Stripe's signature over the raw body and a timestamp (HMAC-SHA256 with the webhook's signing secret); a missing, wrong or stale one is 400 `invalid_signature`.",
  });
  for (const name of Object.keys(HEADERS) as HeaderName[])
    registry.registerComponent('headers', headerComponent(name), HEADERS[name] as never);
  const isAdminRoute = (path: string) => path === '/v1/admin' || path.startsWith('/v1/admin/');
  const securityOf = (def: RouteDef) => {
    if (def.auth === 'bearer') return [{ [isAdminRoute(def.path) ? adminBearer.name : bearer.name]: [] }];
    return def.rawBody ? [{ [signature.name]: [] }] : [];
  };

  for (const [id, def] of routeEntries()) {
    if (def.hidden || def.group === 'dev') continue;
    const success = def.status ?? 200;
    const rateLimited = !def.unlimited;
    const successHeaders = commonHeaders(rateLimited);
    if (def.idempotent) successHeaders.push('Idempotent-Replayed');
    // A route that answers a document (not JSON) sends it as a file to save.
    if (def.mediaType) successHeaders.push('Content-Disposition');
    if (def.cacheSeconds) successHeaders.push('ETag', 'Cache-Control');
    const responses: Record<number, unknown> = {
      [success]: {
        description: def.summary,
        headers: headerRefs(successHeaders),
        content: { [def.mediaType ?? 'application/json']: { schema: def.response } },
      },
      ...(def.cacheSeconds
        ? {
            304: {
              description: 'Not Modified: the answer has not changed since the `If-None-Match` tag.',
              headers: headerRefs(successHeaders),
            },
          }
        : {}),
    };
    for (const [status, codes] of errorStatusesOf(def)) responses[status] = errorResponse(status, codes, rateLimited);
    registry.registerPath({
      operationId: id,
      method: def.method.toLowerCase() as 'get',
      path: toTemplatePath(def.path),
      summary: def.summary,
      description: def.description,
      tags: [def.tag],
      security: securityOf(def),
      ...(def.scope ? { 'x-required-scope': def.scope } : {}),
      request: {
        params: def.params,
        query: def.query,
        body: def.body ? { required: true, content: { 'application/json': { schema: def.body } } } : undefined,
      },
      ...(def.idempotent
        ? {
            parameters: [
              {
                name: 'Idempotency-Key',
                in: 'header',
                required: false,
                schema: { type: 'string', maxLength: 255 },
                description: 'Replays the first response for a repeated request (24 hours).',
              },
            ],
          }
        : {}),
      ...(def.cacheSeconds
        ? {
            parameters: [
              {
                name: 'If-None-Match',
                in: 'header',
                required: false,
                schema: { type: 'string', maxLength: 1024 },
                description: 'The `ETag` of an answer you hold: 304 with no body while it is still current.',
              },
            ],
          }
        : {}),
      responses: responses as never,
    });
  }

  // What each event type's delivery POSTs to a webhook endpoint (docs/webhooks.md), one entry a type.
  const deliveryHeaders = z.object({
    'webhook-id': z.string().max(64).meta({ description: 'The event id: the same on every retry and endpoint; deduplicate on it.' }),
    'webhook-timestamp': z
      .string()
      .regex(/^[0-9]{1,12}$/)
      .max(12)
      .meta({ description: 'Epoch seconds of this attempt.' }),
    'webhook-signature': z.string().max(512).meta({
      description: '`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` keyed with the secret (Standard Webhooks).',
    }),
  });
  for (const { type, schema } of WEBHOOK_PAYLOADS) {
    registry.registerWebhook({
      operationId: `webhook:${type}`,
      method: 'post',
      path: type,
      summary: `Delivered on ${type} (${EVENT_SCOPES[type]} reads it)`,
      tags: ['Webhooks'],
      // Authenticated by its signature header (a parameter above), not by a credential of ours.
      security: [],
      request: { headers: deliveryHeaders, body: { required: true, content: { 'application/json': { schema } } } },
      responses: { 200: { description: 'Any 2xx within 5 seconds acknowledges the delivery; anything else is retried.' } },
    });
  }

  const document = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: { title: 'Hosting Control Plane API', version: API_VERSION, description: DESCRIPTION },
    servers: [{ url: '/', description: 'This deployment (production, or the local stack)', 'x-internal': false }],
    tags: [
      ...new Set(
        routeEntries()
          .filter(([, d]) => !d.hidden && d.group !== 'dev')
          .map(([, d]) => d.tag),
      ),
    ].map((name) => ({ name })),
  });
  withSuccessExamples(document as unknown as OpenApiDoc);
  return document;
}

type OpenApiDoc = {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema?: object; example?: unknown }> }> }>
  >;
  components?: { schemas?: Record<string, object> };
};

/** Each success response gets a readable example (shared/openapi/examples.ts) where /docs would make one up. */
function withSuccessExamples(document: OpenApiDoc): void {
  const components = (document.components?.schemas ?? {}) as Record<string, never>;
  for (const operations of Object.values(document.paths))
    for (const operation of Object.values(operations))
      for (const [status, response] of Object.entries(operation.responses)) {
        const json = Number(status) < 300 ? response.content?.['application/json'] : undefined;
        if (json?.schema && json.example === undefined) json.example = exampleOf(json.schema as never, components);
      }
}
