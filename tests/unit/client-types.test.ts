import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  type ControlPlaneClient,
  ControlPlaneError,
  createControlPlaneClient,
  type ErrorDetails,
  type EventOf,
  type WebhookEvent,
  type ListItem,
  type ListPath,
  type Schema,
  typedError,
} from '../../clients/typescript/index.ts';

/**
 * The published client's types, checked by `tsc --noEmit` (npm run check): a change that loosens
 * them stops this file compiling. The few runtime assertions use a fetch that answers in memory.
 */
const answering = (status: number, body: unknown) => async () =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'x-request-id': 'req-1' } });

describe('the client types', () => {
  it('types the items of every list and the parameters a list needs', () => {
    expectTypeOf<ListItem<'/v1/servers'>>().toEqualTypeOf<Schema<'Server'>>();
    expectTypeOf<'/v1/servers' | '/v1/invoices' | '/v1/webhook-endpoints/{id}/deliveries'>().toExtend<ListPath>();
    // A single-resource path is no list.
    expectTypeOf<'/v1/servers/{id}'>().not.toExtend<ListPath>();
    const api: ControlPlaneClient = createControlPlaneClient({ baseUrl: 'http://127.0.0.1:1' });
    // Type checks only: none of these is iterated.
    void api.paginate('/v1/servers');
    void api.paginate('/v1/servers', { query: { limit: 100 } });
    void api.paginate('/v1/webhook-endpoints/{id}/deliveries', { path: { id: 'e1' } });
    // @ts-expect-error a path parameter the list needs
    void api.paginate('/v1/webhook-endpoints/{id}/deliveries');
    // @ts-expect-error the cursor is the iterator's
    void api.paginate('/v1/servers', { query: { cursor: 'c' } });
  });

  it('types a webhook delivery by its event type', () => {
    expectTypeOf<EventOf<'server.installed'>['data']['install']['kind']>().toEqualTypeOf<'deploy' | 'reinstall'>();
    expectTypeOf<EventOf<'invoice.paid'>['data']['number']>().toEqualTypeOf<string>();
    expectTypeOf<EventOf<'balance.low'>['timestamp']>().toEqualTypeOf<string>();
    const narrow = (event: WebhookEvent) => {
      if (event.type === 'server.install_failed') return event.data.install.reason;
      // @ts-expect-error a balance event has no install
      if (event.type === 'balance.low') return event.data.install;
      return undefined;
    };
    expect(narrow).toBeTypeOf('function');
  });

  it('types details by code', () => {
    expectTypeOf<ErrorDetails<'no_capacity'>['candidates'][number]['reason']>().toExtend<string>();
    expectTypeOf<ErrorDetails<'insufficient_credit'>['balanceCents']>().toEqualTypeOf<number>();
    expectTypeOf<ErrorDetails<'rate_limited'>['scope']>().toEqualTypeOf<'client' | 'account'>();
    expectTypeOf<ErrorDetails<'validation_failed'>['issues'][number]>().toEqualTypeOf<{ field: string; message: string }>();
    expectTypeOf<ErrorDetails<'not_found'>>().toBeUnknown();
  });

  it('paginate follows nextCursor and throws the envelope as a ControlPlaneError', async () => {
    const pages: Record<string, unknown> = {
      '': { data: [{ id: 'a' }], nextCursor: 'c1' },
      c1: { data: [{ id: 'b' }], nextCursor: null },
    };
    const asked: string[] = [];
    const api = createControlPlaneClient({
      baseUrl: 'http://127.0.0.1:1',
      fetch: async (request) => {
        const url = new URL(request.url);
        asked.push(url.search);
        return answering(200, pages[url.searchParams.get('cursor') ?? ''])();
      },
    });
    const ids: string[] = [];
    for await (const server of api.paginate('/v1/servers', { query: { limit: 1 } })) ids.push(server.id);
    expect(ids).toEqual(['a', 'b']);
    expect(asked).toEqual(['?limit=1', '?limit=1&cursor=c1']);

    const failing = createControlPlaneClient({
      baseUrl: 'http://127.0.0.1:1',
      fetch: answering(400, { error: { code: 'invalid_cursor', message: 'The cursor is not valid' } }),
    });
    const err = await failing
      .paginate('/v1/servers')
      .next()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ControlPlaneError);
    expect(err).toMatchObject({ status: 400, code: 'invalid_cursor', requestId: 'req-1' });
  });

  it('typedError narrows details on the code', () => {
    const body = {
      error: { code: 'insufficient_credit' as const, message: 'Not enough credit', details: { balanceCents: 5, requiredCents: 72 } },
    };
    const e = typedError(body);
    if (e.error.code !== 'insufficient_credit') throw new Error('narrowing');
    expect(e.error.details?.requiredCents).toBe(72);
  });
});
