import { describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../../shared/api/event-types.ts';
import { EVENT_DATA, Event, WEBHOOK_PAYLOADS } from '../../shared/api/schemas/events.ts';
import { openApiDocument } from '../../shared/openapi/document.ts';
import { EVENT_SAMPLES } from '../helpers/event-samples.ts';

/**
 * Typed events: one `data` schema per event type (shared/api/schemas/events.ts), from which the
 * document's `webhooks` section and the `/v1/events` union come. The writers are held to the same
 * schemas by the compiler (eventWrite's `data` parameter); here, the document lists exactly the
 * types the service emits, and the union refuses what another type's data would be.
 */
type Doc = {
  webhooks: Record<string, { post: { requestBody: { content: Record<string, { schema: { $ref: string } }> } } }>;
  components: {
    schemas: Record<
      string,
      { oneOf?: unknown[]; discriminator?: { mapping: Record<string, string> }; properties?: Record<string, { enum?: string[] }> }
    >;
  };
};
const doc = openApiDocument() as unknown as Doc;

describe('typed events', () => {
  it('every event type has a data schema, and its sample parses', () => {
    expect(Object.keys(EVENT_DATA)).toEqual(EVENT_TYPES);
    for (const type of EVENT_TYPES) expect(EVENT_DATA[type].safeParse(EVENT_SAMPLES[type]()).success, type).toBe(true);
  });

  it("the document's webhooks section has one entry per type, each with its payload schema", () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual([...EVENT_TYPES].sort());
    for (const type of EVENT_TYPES) {
      const ref = doc.webhooks[type]!.post.requestBody.content['application/json']!.schema.$ref;
      const schema = doc.components.schemas[ref.replace('#/components/schemas/', '')]!;
      expect(schema.properties?.type?.enum, type).toEqual([type]);
      expect(Object.keys(schema.properties ?? {}).sort()).toEqual(['data', 'id', 'timestamp', 'type']);
    }
    expect(WEBHOOK_PAYLOADS.map((p) => p.type)).toEqual(EVENT_TYPES);
  });

  it('/v1/events items are a union discriminated by type', () => {
    const union = doc.components.schemas.Event!;
    expect(union.oneOf).toHaveLength(EVENT_TYPES.length);
    expect(Object.keys(union.discriminator!.mapping).sort()).toEqual([...EVENT_TYPES].sort());
  });

  it("the union refuses an event whose data is another type's", () => {
    const event = (type: string, data: unknown) => ({ id: crypto.randomUUID(), type, createdAt: new Date().toISOString(), data });
    expect(Event.safeParse(event('balance.low', EVENT_SAMPLES['balance.low']())).success).toBe(true);
    expect(Event.safeParse(event('server.created', EVENT_SAMPLES['balance.low']())).success).toBe(false);
    expect(Event.safeParse(event('server.suspended', EVENT_SAMPLES['server.created']())).success).toBe(false); // no reason
    expect(Event.safeParse(event('no.such.type', {})).success).toBe(false);
  });
});
