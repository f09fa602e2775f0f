/**
 * A readable example for a JSON Schema of the generated document: what /docs shows for each
 * success response instead of the noise Swagger UI would make up (an e-mail like `Y|3.=P@_}8r{`).
 * Values follow the schema (enums, bounds, formats) and the field's name (`email`, `…Cents`,
 * `ramMb`); tests/unit/openapi-examples.test.ts parses every example with the route's own zod
 * response schema, so an example that stops matching its schema fails `npm run check`.
 */
type Schema = {
  $ref?: string;
  type?: string | string[];
  format?: string;
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  example?: unknown;
  examples?: unknown[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
};

const TIME = '2026-11-26T10:00:00.000Z';
/** Time-ordered ids (UUIDv7, as the service makes them), one per field name so related ids differ. */
const idFor = (name: string): string => {
  let h = 0;
  for (const c of name) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return `0193a7e2-5b1c-7d4e-9f3a-${h.toString(16).padStart(12, '0').slice(-12)}`;
};

/** Nullable fields shown as null: the state an ordinary object is in (not suspended, not deleted…). */
const UNSET = /^(suspended|deleted|voided|revoked|disabled|failing|previous|refunded)|Reason$|reason$|Error$|error$/;

/** Preferred enum values: the ordinary state (an active server, a paid invoice, a running game). */
const PREFERRED = ['active', 'paid', 'running', 'installed', 'succeeded', 'delivered', 'enabled'];

/** Values for string fields by name; the first pattern that matches the property name wins. */
const STRINGS: [RegExp, string][] = [
  [/email/i, 'ann@example.com'],
  [/sha256/i, '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08'],
  [/paymentIntentId/, 'pi_3QyExampleIntent'],
  [/sessionId/, 'cs_test_a1ExampleSession'],
  [/chargeId/, 'ch_3QyExampleCharge'],
  [/^number$|invoiceNumber/, 'INV-2026-000001'],
  [/currency/i, 'usd'],
  [/^name$/, 'survival'],
  [/description/i, 'Credit top-up'],
  [/^(note|reason)$/, 'Goodwill for the outage of 25 November'],
  [/message/i, 'The server is still installing'],
  [/prefix/i, 'cp_live_'],
  [/last4/i, '4242'],
  [/secret/i, 'whsec_C2FtcGxlIHNpZ25pbmcgc2VjcmV0IG9ubHk='],
  [/token/i, 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzZXJ2ZXIiOiJleGFtcGxlIn0.c2lnbmF0dXJl'],
  [/identifier/i, '1a7ce997'],
  [/uuid/i, '1a7ce997-259b-452e-8b4e-cecc464142ca'],
  [/region/i, 'eu-central'],
  [/dockerImage|image/i, 'ghcr.io/pterodactyl/yolks:java_21'],
  [/startup/i, 'java -Xms128M -Xmx{{SERVER_MEMORY}}M -jar {{SERVER_JARFILE}}'],
  [/ip$|address/i, '203.0.113.10'],
  [/^(file|path|root|directory)$/, '/server.properties'],
  [/content/i, 'motd=A Minecraft Server'],
  [/action/i, 'servers.create'],
  [/type$/i, 'topup'],
];

const URLS: [RegExp, string][] = [
  [/socket/i, 'wss://fra-1.example.com:8080/api/servers/1a7ce997-259b-452e-8b4e-cecc464142ca/ws'],
  [/origin|baseUrl|panel/i, 'https://panel.example.com'],
  [/url/i, 'https://hooks.example.com/control-plane'],
];

/** Integers by name; bounds of the schema still apply. */
const INTEGERS: [RegExp, number][] = [
  [/Bytes$/, 1_048_576],
  [/^(refunded|disputed|bonusReversed)Cents$/, 0],
  [/MillicentsPerHour$/, 2700],
  [/CentsPerHour$/, 3],
  [/Cents$/, 2500],
  [/Millicents/, 450],
  [/Usd$/, 25],
  [/ramMb|memory/i, 2048],
  [/diskMb|disk/i, 4096],
  [/cpuPercent|cpu/i, 100],
  [/Percent$/, 5],
  [/port/i, 25565],
  [/Seconds$/, 60],
  [/Ms$/, 1000],
  [/^(limit|remaining)$/i, 25],
  [/Hours$/, 720],
];

export function exampleOf(schema: Schema, components: Record<string, Schema>, name = '', depth = 0): unknown {
  if (schema.$ref) {
    const target = components[schema.$ref.replace('#/components/schemas/', '')];
    return target ? exampleOf(target, components, name, depth) : null;
  }
  if (schema.example !== undefined) return schema.example;
  if (schema.examples?.length) return schema.examples[0];
  if (schema.const !== undefined) return schema.const;
  // What has not happened in a typical answer: an active server was not deleted, a paid invoice not voided.
  const nullable =
    schema.anyOf?.some((o) => o.type === 'null') ||
    (Array.isArray(schema.type) && schema.type.includes('null')) ||
    schema.enum?.includes(null);
  if (nullable && UNSET.test(name)) return null;
  if (schema.enum?.length)
    return schema.enum.find((v) => PREFERRED.includes(v as string)) ?? schema.enum.find((v) => v !== null) ?? schema.enum[0];
  const options = schema.anyOf ?? schema.oneOf;
  if (options) {
    const chosen = options.find((o) => o.type !== 'null') ?? options[0]!;
    return exampleOf(chosen, components, name, depth);
  }
  if (schema.allOf) return Object.assign({}, ...schema.allOf.map((part) => exampleOf(part, components, name, depth)));
  const type = Array.isArray(schema.type) ? (schema.type.find((t) => t !== 'null') ?? 'null') : schema.type;
  switch (type) {
    case 'object': {
      if (depth > 8) return {};
      const out: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(schema.properties ?? {})) out[key] = exampleOf(value, components, key, depth + 1);
      if (!schema.properties && typeof schema.additionalProperties === 'object')
        out.EXAMPLE_KEY = exampleOf(schema.additionalProperties, components, 'value', depth + 1);
      return out;
    }
    case 'array': {
      const item = schema.items ? exampleOf(schema.items, components, name.replace(/s$/, ''), depth + 1) : 'item';
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => item);
    }
    case 'integer':
    case 'number':
      return numberFor(schema, name);
    case 'boolean':
      return schema.default ?? !/^(revoked|suspended|deleted|replayed|is_suspended)$/i.test(name);
    case 'string':
      return stringFor(schema, name);
    case 'null':
      return null;
    default:
      return null;
  }
}

function numberFor(schema: Schema, name: string): number {
  const wanted = typeof schema.default === 'number' ? schema.default : (INTEGERS.find(([re]) => re.test(name))?.[1] ?? 1);
  const min = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : undefined);
  let value = wanted;
  if (min !== undefined && value < min) value = min;
  if (schema.maximum !== undefined && value > schema.maximum) value = schema.maximum;
  return value;
}

function stringFor(schema: Schema, name: string): string {
  let value: string;
  if (schema.format === 'uuid') value = idFor(name);
  else if (schema.format === 'date-time') value = TIME;
  else if (schema.format === 'email') value = 'ann@example.com';
  else if (schema.format === 'uri' || schema.format === 'url') value = URLS.find(([re]) => re.test(name))?.[1] ?? 'https://example.com';
  else if (typeof schema.default === 'string') value = schema.default;
  else
    value =
      STRINGS.find(([re]) => re.test(name))?.[1] ??
      (/At$/.test(name) ? TIME : /Id$/.test(name) ? idFor(name) : `example ${name || 'text'}`.trim());
  if (schema.maxLength !== undefined && value.length > schema.maxLength) value = value.slice(0, schema.maxLength);
  if (schema.minLength !== undefined && value.length < schema.minLength) value = value.padEnd(schema.minLength, 'x');
  return value;
}
