import type { ItemFilter, PageRequest } from '../db/access-patterns.ts';
import { ApiError } from '../errors.ts';
import { parseLabelSelector } from '../label-selector.ts';

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
 * given. A bad selector is 400 `validation_failed` on `query.label_selector`, before any read.
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
    if (!parsed.ok) {
      throw new ApiError('validation_failed', `Invalid request: query.label_selector ${parsed.problem}`, {
        issues: [{ field: 'query.label_selector', message: parsed.problem }],
      });
    }
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

export type ListRequest = PageRequest & ServerFilters & { accountId?: string | undefined };

/** The page to read and its filter: with none given, the page as it was (old cursors stay valid); else the cursor bound to the filters too. */
export function filteredPage(page: ListRequest): { bound: PageRequest; filter: ItemFilter | undefined } {
  const plain = { limit: page.limit, cursor: page.cursor, boundTo: page.boundTo };
  if (!(page.label_selector || page.status || page.region || page.instanceId || page.name_prefix || page.accountId)) {
    return { bound: plain, filter: undefined };
  }
  return { bound: { ...plain, boundTo: `${page.boundTo}:${filterBinding(page)}` }, filter: serverFilterOf(page) };
}
