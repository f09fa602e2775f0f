import { marshall } from '@aws-sdk/util-dynamodb';

/**
 * Map keys as stored. A key is the caller's data (a label, an egg variable, a field of an event's
 * payload), but the DynamoDB converter reads a map as a JavaScript object, and two names mean
 * something there: an own `constructor` makes `marshall` take the map for a class instance (it
 * throws), and `__proto__` is a setter, so the converters and the wire (de)serializers drop it. Those
 * two, and any key that starts with the escape mark itself, are stored with the mark in front
 * (`~constructor`, `~~x`); every other key is stored as it is, so items written before stay valid.
 * Every other Object.prototype name (`toString`, `hasOwnProperty`, `valueOf`) is an ordinary own
 * property to the converters, which never call a map's methods; our code reads maps by own key.
 *
 * The document client escapes every command's items, keys, values and attribute names on the way
 * in and unescapes every result on the way out (shared/db/client.ts), so the rest of the service,
 * and a filter or condition on `labels.#k`, sees the caller's keys. A decoded map is built with
 * Object.fromEntries: `__proto__` becomes an own data property, never a prototype.
 */

const MARK = '~';

/** The stored spelling of one key. */
export const escapeKey = (key: string): string => (key === '__proto__' || key === 'constructor' || key.startsWith(MARK) ? MARK + key : key);

/** The key of a stored spelling (a key stored before escaping existed reads as itself). */
export const unescapeKey = (stored: string): string => (stored.startsWith(MARK) ? stored.slice(1) : stored);

/** An object literal or a map decoded from JSON: what holds keys. Sets, byte arrays and numbers are values. */
const isPlain = (v: unknown): v is Record<string, unknown> => {
  if (v === null || typeof v !== 'object') return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
};

/** `value` with `key` applied to every map key at every depth; what nothing changes in is returned as it is (no copy). */
function mapKeys(value: unknown, key: (k: string) => string): unknown {
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    value.forEach((v, i) => {
      const mapped = mapKeys(v, key);
      if (mapped === v) return;
      copy ??= [...value];
      copy[i] = mapped;
    });
    return copy ?? value;
  }
  if (!isPlain(value)) return value;
  const names = Object.keys(value);
  let entries: [string, unknown][] | undefined;
  names.forEach((k, i) => {
    const v = value[k];
    const name = key(k);
    const mapped = mapKeys(v, key);
    if (!entries && (name !== k || mapped !== v)) entries = names.slice(0, i).map((n) => [n, value[n]]);
    entries?.push([name, mapped]);
  });
  // Object.fromEntries: a key is an own data property, `__proto__` included.
  return entries ? Object.fromEntries(entries) : value;
}

/** A document (an item, a value) with every map key at every depth in its stored spelling. */
export const escapeKeys = <T>(value: T): T => mapKeys(value, escapeKey) as T;

/** A stored document with the caller's keys back. */
export const unescapeKeys = <T>(value: T): T => mapKeys(value, unescapeKey) as T;

/** Command fields that hold documents (their keys are data). */
const DOCUMENTS = new Set(['Item', 'Key', 'ExpressionAttributeValues', 'ExclusiveStartKey']);

/**
 * A command's input with its documents escaped: the fields above at any depth (TransactItems,
 * RequestItems), `Keys` of a batch read, and the names of `ExpressionAttributeNames` (a `#k` may be
 * a map key). The other fields are the command's own structure and stay as they are.
 */
export function escapeCommandInput(input: unknown): unknown {
  if (Array.isArray(input)) return input.map(escapeCommandInput);
  if (!isPlain(input)) return input;
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(input)) {
    if (DOCUMENTS.has(field)) out[field] = escapeKeys(value);
    else if (field === 'Keys' && Array.isArray(value)) out[field] = value.map(escapeKeys);
    else if (field === 'ExpressionAttributeNames' && isPlain(value)) {
      out[field] = Object.fromEntries(Object.entries(value).map(([k, name]) => [k, typeof name === 'string' ? escapeKey(name) : name]));
    } else out[field] = escapeCommandInput(value);
  }
  return out;
}

/**
 * Throws what the converter would throw for `doc`, without a write: a deploy checks the fields the
 * caller chose before it creates anything on a panel, so a record that cannot be written is
 * refused before the create, never found out after it (and the server removed again).
 */
export function assertStorable(doc: Record<string, unknown>): void {
  marshall(escapeKeys(doc), { removeUndefinedValues: true });
}
