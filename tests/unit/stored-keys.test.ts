import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { assertStorable, escapeCommandInput, escapeKey, escapeKeys, unescapeKey, unescapeKeys } from '../../shared/db/stored-keys.ts';

/**
 * Map keys as stored (shared/db/stored-keys.ts), against the converter the document client uses:
 * every name JavaScript gives meaning to survives marshall and unmarshall as a plain key, the
 * escaping is one to one, and keys stored before it existed read as themselves.
 */
const DANGEROUS = [
  ...new Set([...Object.getOwnPropertyNames(Object.prototype), '__proto__', 'constructor', 'prototype', 'toJSON', 'then']),
];
const OTHERS = ['env', 'example.com/team', '~', '~x', '~~x', 'a~', ''];
/** Built by entries: `__proto__` is an own data property, as JSON.parse makes it. */
const mapOf = (names: string[]) => Object.fromEntries(names.map((n, i) => [n, `v${i}`]));
const entries = (m: object) => Object.entries(m).sort(([a], [b]) => (a < b ? -1 : 1));

describe('stored map keys', () => {
  it('the bare converter loses them: `constructor` throws, `__proto__` is dropped (why the escaping exists)', () => {
    expect(() => marshall({ labels: { constructor: 'x' } })).toThrow();
    expect(Object.keys(marshall({ labels: mapOf(['__proto__', 'a']) }).labels!.M!)).toEqual(['a']);
  });

  it('every dangerous name round-trips through marshall and unmarshall, at any depth', () => {
    const doc = { labels: mapOf([...DANGEROUS, ...OTHERS]), nested: [{ deeper: mapOf(DANGEROUS) }] };
    const stored = marshall(escapeKeys(doc), { removeUndefinedValues: true });
    const back = unescapeKeys(unmarshall(stored));
    expect(entries(back.labels)).toEqual(entries(doc.labels));
    expect(entries(back.nested[0]!.deeper)).toEqual(entries(doc.nested[0]!.deeper));
    expect(Object.getPrototypeOf(back.labels)).toBe(Object.prototype);
  });

  it('is one to one, and leaves every other key as it is (items stored before read as they were)', () => {
    const all = [...DANGEROUS, ...OTHERS];
    expect(new Set(all.map(escapeKey)).size).toBe(all.length);
    for (const k of all) expect(unescapeKey(escapeKey(k))).toBe(k);
    for (const k of ['env', 'toString', 'hasOwnProperty', 'valueOf', 'example.com/constructor']) {
      expect(escapeKey(k)).toBe(k);
      expect(unescapeKey(k)).toBe(k);
    }
    // A `constructor` label stored raw before (only its empty value got through the converter) reads as itself.
    expect(unescapeKeys({ constructor: '' })).toEqual({ constructor: '' });
  });

  it('a command: documents and attribute names escaped, its own structure untouched', () => {
    const input = {
      TableName: 't',
      TransactItems: [
        { Put: { Item: { PK: 'a', labels: { constructor: 'x' } }, ConditionExpression: 'attribute_not_exists(PK)' } },
        {
          Update: {
            Key: { PK: 'b' },
            UpdateExpression: 'SET #l.#k = :v',
            ExpressionAttributeNames: { '#l': 'labels', '#k': 'constructor' },
            ExpressionAttributeValues: { ':v': { constructor: 'y' } },
          },
        },
      ],
      RequestItems: { t: { Keys: [{ PK: 'c', constructor: 'z' }] } },
    };
    const out = escapeCommandInput(input) as typeof input;
    expect(out.TableName).toBe('t');
    expect(out.TransactItems[0]!.Put!.Item).toEqual({ PK: 'a', labels: { '~constructor': 'x' } });
    expect(out.TransactItems[0]!.Put!.ConditionExpression).toBe('attribute_not_exists(PK)');
    expect(out.TransactItems[1]!.Update!.ExpressionAttributeNames).toEqual({ '#l': 'labels', '#k': '~constructor' });
    expect(out.TransactItems[1]!.Update!.ExpressionAttributeValues).toEqual({ ':v': { '~constructor': 'y' } });
    expect(out.RequestItems.t.Keys).toEqual([{ PK: 'c', '~constructor': 'z' }]);
    expect(input.TransactItems[0]!.Put!.Item.labels).toEqual({ constructor: 'x' });
  });

  it('assertStorable passes what the client can write and throws what the converter refuses', () => {
    expect(() => assertStorable({ name: 'x', labels: mapOf(DANGEROUS) })).not.toThrow();
    expect(() => assertStorable({ price: Number.NaN })).toThrow();
  });
});
