import type { ItemFilter } from '../db/access-patterns.ts';
import { parseLabelSelector } from '../labels.ts';

/** The filters of GET /v1/servers (and the admin list): every one given must hold. */
export interface ServerFilters {
  label_selector?: string | undefined;
  status?: 'active' | 'suspended' | 'deleted' | undefined;
  region?: string | undefined;
  instanceId?: string | undefined;
  name_prefix?: string | undefined;
}

/**
 * The filters as one DynamoDB FilterExpression over the server item, or undefined when none is
 * given. The selector was checked by the query schema; parsing it again here cannot fail.
 * A server recorded before labels existed has no `labels` attribute: `k!=v` and `!k` hold for it.
 */
export function serverFilterOf(f: ServerFilters): ItemFilter | undefined {
  const terms: string[] = [];
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const eq = (attribute: string, value: string) => {
    const i = terms.length;
    names[`#f${i}`] = attribute;
    values[`:f${i}`] = value;
    terms.push(`#f${i} = :f${i}`);
  };
  if (f.status) eq('status', f.status);
  if (f.region) eq('region', f.region);
  if (f.instanceId) eq('instanceId', f.instanceId);
  if (f.name_prefix) {
    names['#fname'] = 'name';
    values[':fname'] = f.name_prefix;
    terms.push('begins_with(#fname, :fname)');
  }
  if (f.label_selector) {
    const parsed = parseLabelSelector(f.label_selector);
    if (!parsed.ok) throw new Error(`label_selector passed the schema but not the parser: ${parsed.problem}`);
    names['#flabels'] = 'labels';
    parsed.terms.forEach((t, i) => {
      const path = `#flabels.#fl${i}`;
      names[`#fl${i}`] = t.key;
      if (t.op === 'eq' || t.op === 'ne') values[`:fl${i}`] = t.value;
      if (t.op === 'eq') terms.push(`${path} = :fl${i}`);
      else if (t.op === 'ne') terms.push(`(attribute_not_exists(${path}) OR ${path} <> :fl${i})`);
      else if (t.op === 'exists') terms.push(`attribute_exists(${path})`);
      else terms.push(`attribute_not_exists(${path})`);
    });
  }
  return terms.length ? { expression: terms.join(' AND '), names, values } : undefined;
}

/** What a cursor is bound to besides the listing: the filters, so one cannot be replayed under others. */
export function filterBinding(f: ServerFilters & { accountId?: string | undefined }): string {
  return JSON.stringify([
    f.label_selector ?? null,
    f.status ?? null,
    f.region ?? null,
    f.instanceId ?? null,
    f.name_prefix ?? null,
    f.accountId ?? null,
  ]);
}
