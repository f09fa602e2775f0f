import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { routeEntries, toTemplatePath, type RouteDef } from '../api/routes.ts';
import { ErrorEnvelope } from '../api/schemas.ts';
import { ERROR_STATUS } from '../errors.ts';
import { MAX_BODY_BYTES } from '../http/handler.ts';

/** The OpenAPI 3.1.0 document, generated from the route table and its zod schemas. */
export const API_VERSION = '1.0.0';

const DESCRIPTION = `
API-first control plane for game and application servers on Pterodactyl panels, metered hourly against a prepaid credit balance.

**Authentication.** Every request except \`GET /v1/health\` carries \`Authorization: Bearer <token>\`: an API key (\`cp_live_…\`, created with \`POST /v1/keys\`) or a session token from the identity provider. Missing, malformed, expired or revoked credentials get 401 \`unauthorized\`.

**Scopes.** \`account:read\`, \`keys:write\`, \`servers:read\`, \`servers:write\`, \`billing:read\`, \`billing:write\`, \`admin\`. Each operation names the scope it needs (\`x-required-scope\`); a missing scope or a non-admin calling \`/v1/admin/*\` gets 403 \`forbidden\`. Session tokens hold every scope of their account; an API key created without \`scopes\` gets every scope its creator holds, and can never hold more.

**Errors.** Always \`{"error": {"code", "message", "details"?}}\`. Codes: ${Object.entries(ERROR_STATUS)
  .map(([code, status]) => `\`${code}\` ${status}`)
  .join(', ')}. Another account's resource answers 404 exactly like an unknown id.

**Lists.** \`?limit=\` (1–100, default 25) and \`?cursor=\`; responses are \`{"data": [...], "nextCursor": string|null}\`, newest first. Cursors are opaque, signed and bound to the caller and the listing.

**Rate limit.** 240 requests per minute per credential, and per source IP for requests whose credential is missing, malformed or refused; shared by every server of the service. The Stripe webhook is exempt. Every response carries \`RateLimit-Limit\`, \`RateLimit-Remaining\` and \`RateLimit-Reset\` (seconds); past the limit, 429 \`rate_limited\` with \`Retry-After\`.

**Idempotency.** Creating POSTs (keys, servers, checkout, instances, credit adjustments) accept \`Idempotency-Key\` (1–255 visible ASCII characters, kept 24 hours): the same key with the same request returns the first response again (header \`Idempotent-Replayed: true\`); with a different request, 409 \`idempotency_conflict\`. A failed request leaves no record.

**Bodies.** JSON with \`Content-Type: application/json\`, at most ${MAX_BODY_BYTES} bytes (413 \`payload_too_large\`); malformed JSON is 400 \`invalid_json\`; every invalid field is listed in \`details.issues\` of 400 \`validation_failed\`.

**Money.** Integers in cents; every balance change is a ledger entry.
`.trim();

function errorResponsesFor(def: RouteDef): Record<number, string> {
  const out: Record<number, string> = {
    429: 'Rate limit exceeded (`rate_limited`, with `Retry-After`).',
    500: 'Unexpected failure (`internal`), no details.',
  };
  if (def.auth === 'bearer') {
    out[401] = 'Missing, malformed, expired or revoked credential (`unauthorized`).';
    out[403] = def.admin
      ? 'Not an admin, or the credential lacks the `admin` scope (`forbidden`).'
      : `The credential lacks the scope \`${def.scope}\` (\`forbidden\`).`;
  }
  if (def.body || def.query || def.params) out[400] = 'Invalid input (`validation_failed` listing every bad field, or `invalid_json`).';
  if (def.body) {
    out[413] = 'Body too large (`payload_too_large`).';
    out[415] = 'Body not sent as JSON (`unsupported_media_type`).';
  }
  if (def.params) out[404] = "Unknown id, or another account's resource (`not_found`).";
  if (def.idempotent)
    out[409] = 'Idempotency-Key reused with a different request (`idempotency_conflict`) or still in progress (`conflict`).';
  return out;
}

let cached: object | undefined;

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
  const isAdminRoute = (path: string) => path === '/v1/admin' || path.startsWith('/v1/admin/');

  for (const [id, def] of routeEntries()) {
    if (def.hidden || def.group === 'dev') continue;
    const success = def.status ?? 200;
    const responses: Record<number, unknown> = {
      [success]: { description: def.summary, content: { 'application/json': { schema: def.response } } },
    };
    for (const [status, description] of Object.entries(errorResponsesFor(def))) {
      responses[Number(status)] = { description, content: { 'application/json': { schema: ErrorEnvelope } } };
    }
    registry.registerPath({
      operationId: id,
      method: def.method.toLowerCase() as 'get',
      path: toTemplatePath(def.path),
      summary: def.summary,
      description: def.description,
      tags: [def.tag],
      security: def.auth === 'bearer' ? [{ [isAdminRoute(def.path) ? adminBearer.name : bearer.name]: [] }] : [],
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
      responses: responses as never,
    });
  }

  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: { title: 'Hosting Control Plane API', version: API_VERSION, description: DESCRIPTION },
    servers: [{ url: '/' }],
    tags: [
      ...new Set(
        routeEntries()
          .filter(([, d]) => !d.hidden && d.group !== 'dev')
          .map(([, d]) => d.tag),
      ),
    ].map((name) => ({ name })),
  });
}
