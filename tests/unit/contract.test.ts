import { describe, expect, it } from 'vitest';
import { errorCodesOf, errorStatusesOf, noteResponse, takeContractBreaches } from '../../shared/api/contract.ts';
import { routeEntries, routes } from '../../shared/api/routes.ts';
import { ERROR_STATUS } from '../../shared/errors.ts';
import { openApiDocument } from '../../shared/openapi/document.ts';

interface Operation {
  operationId: string;
  responses: Record<
    string,
    { headers?: Record<string, unknown>; content?: Record<string, { schema: unknown; examples?: Record<string, unknown> }> }
  >;
  security?: Record<string, unknown>[];
}

const doc = openApiDocument() as { paths: Record<string, Record<string, Operation>> };
const operations = Object.values(doc.paths).flatMap((item) => Object.values(item));
const operation = (id: string) => operations.find((o) => o.operationId === id)!;
const codesIn = (response: Operation['responses'][string]) =>
  (response.content!['application/json']!.schema as { properties: { error: { properties: { code: { enum: string[] } } } } }).properties
    .error.properties.code.enum;

describe('the contract of each operation (shared/api/contract.ts)', () => {
  it('derives the shared codes from the route definition and adds the route’s own', () => {
    expect(errorCodesOf(routes.health)).toEqual(['rate_limited', 'internal']);
    const deploy = errorCodesOf(routes.createServer);
    for (const code of [
      'unauthorized',
      'forbidden',
      'validation_failed',
      'invalid_json',
      'payload_too_large',
      'idempotency_conflict',
    ] as const)
      expect(deploy).toContain(code);
    for (const code of ['insufficient_credit', 'limit_exceeded', 'no_capacity', 'panel_unavailable', 'panel_timeout'] as const)
      expect(deploy).toContain(code);
    expect(errorCodesOf(routes.listServers)).toContain('invalid_cursor');
    // The webhook is neither rate limited nor JSON-parsed: no 429, no invalid_json.
    expect(errorCodesOf(routes.stripeWebhook)).not.toContain('rate_limited');
    expect(errorCodesOf(routes.stripeWebhook)).not.toContain('invalid_json');
    expect(errorCodesOf(routes.stripeWebhook)).toContain('invalid_signature');
  });

  it('documents exactly those statuses and codes, an example of each, for every operation', () => {
    for (const [id, def] of routeEntries()) {
      if (def.hidden || def.group === 'dev') continue;
      const op = operation(id);
      const expected = errorStatusesOf(def);
      const documented = Object.keys(op.responses)
        .map(Number)
        .filter((s) => s >= 400);
      expect(documented.sort(), id).toEqual([...expected.keys()].sort());
      for (const [status, codes] of expected) {
        const response = op.responses[status]!;
        expect(codesIn(response), `${id} ${status}`).toEqual(codes);
        expect(Object.keys(response.content!['application/json']!.examples ?? {}), `${id} ${status}`).toEqual(codes);
        for (const code of codes) expect(ERROR_STATUS[code]).toBe(status);
      }
    }
  });

  it('documents the headers: request id everywhere, rate limit where counted, Retry-After where asked to wait, replay on idempotent creates', () => {
    const deploy = operation('createServer');
    expect(Object.keys(deploy.responses['201']!.headers!)).toEqual(
      expect.arrayContaining(['x-request-id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Idempotent-Replayed']),
    );
    expect(Object.keys(deploy.responses['503']!.headers!)).toContain('Retry-After');
    expect(Object.keys(deploy.responses['429']!.headers!)).toContain('Retry-After');
    expect(Object.keys(operation('powerServer').responses['409']!.headers!)).toContain('Retry-After');
    // payments_unavailable is sent without Retry-After, so its 503 does not promise one.
    expect(Object.keys(operation('checkout').responses['503']!.headers!)).not.toContain('Retry-After');
    expect(Object.keys(operation('stripeWebhook').responses['200']!.headers!)).toEqual(['x-request-id']);
  });

  it('gives admin routes and the webhook their own security requirement', () => {
    expect(operation('adminListServers').security).toEqual([{ adminBearer: [] }]);
    expect(operation('listServers').security).toEqual([{ bearer: [] }]);
    expect(operation('stripeWebhook').security).toEqual([{ webhookSignature: [] }]);
  });

  it('notes a response the document does not list, once, and nothing else', () => {
    takeContractBreaches();
    noteResponse('getServer', routes.getServer, 200, null);
    noteResponse('getServer', routes.getServer, 404, 'not_found');
    noteResponse('getServer', routes.getServer, 500, 'internal');
    expect(takeContractBreaches()).toEqual([]);

    noteResponse('getServer', routes.getServer, 409, 'operation_in_progress'); // not a code of GET
    noteResponse('getServer', routes.getServer, 409, 'operation_in_progress');
    noteResponse('getServer', routes.getServer, 201, null); // not its success status
    noteResponse('createServer', routes.createServer, 400, 'insufficient_credit'); // a listed code under the wrong status
    expect(takeContractBreaches()).toEqual([
      { route: 'getServer', status: 409, code: 'operation_in_progress' },
      { route: 'getServer', status: 201, code: null },
      { route: 'createServer', status: 400, code: 'insufficient_credit' },
    ]);
    expect(takeContractBreaches()).toEqual([]);
  });

  it('notes a listed code that comes without the Retry-After its document promises', () => {
    takeContractBreaches();
    noteResponse('powerServer', routes.powerServer, 409, 'operation_in_progress', { 'Retry-After': '3' });
    noteResponse('powerServer', routes.powerServer, 409, 'conflict', {});
    expect(takeContractBreaches()).toEqual([]);
    noteResponse('powerServer', routes.powerServer, 409, 'operation_in_progress', {});
    expect(takeContractBreaches()).toEqual([
      { route: 'powerServer', status: 409, code: 'operation_in_progress', missingHeader: 'Retry-After' },
    ]);
  });
});

/** Rules of the specification that a rewrite of the API must keep (an outside acceptance run checks them). */
describe("the specification's rules in the document", () => {
  type Schema = { $ref?: string; properties?: Record<string, Schema>; required?: string[]; enum?: string[] };
  const components = (doc as unknown as { components: { schemas: Record<string, Schema> } }).components.schemas;
  const resolve = (schema: Schema | undefined): Schema =>
    schema?.$ref ? resolve(components[schema.$ref.split('/').pop()!]) : (schema ?? {});
  const field = (schema: Schema, name: string): Schema => {
    expect(schema.required, `${name} is required`).toContain(name);
    return resolve(schema.properties?.[name]);
  };

  it('live usage carries attributes.current_state (the power state) and the panel counters under attributes.resources', () => {
    const usage = resolve(operation('serverResources').responses['200']!.content!['application/json']!.schema as Schema);
    const attributes = field(usage, 'attributes');
    expect(field(attributes, 'current_state').enum).toEqual(expect.arrayContaining(['running', 'offline']));
    const counters = field(attributes, 'resources');
    for (const name of ['cpu_absolute', 'memory_bytes', 'disk_bytes', 'network_rx_bytes', 'network_tx_bytes']) field(counters, name);
  });
});
