import { labelKeyProblem, labelValueProblem, type Labels } from './labels.ts';

/* Label selectors (the `label_selector` filter of the server lists). */

/** One term of a label selector: `k=v` (has k with value v), `k!=v` (no k, or another value), `k` (has k), `!k` (no k). */
export type SelectorTerm =
  | { op: 'eq'; key: string; value: string }
  | { op: 'ne'; key: string; value: string }
  | { op: 'exists'; key: string }
  | { op: 'absent'; key: string };

export type ParsedSelector = { ok: true; terms: SelectorTerm[] } | { ok: false; problem: string };

/** Terms in one selector; a selector of more could only be made cheaper by splitting it, and costs a longer filter. */
export const MAX_SELECTOR_TERMS = 32;

/** Parses `k=v,k2!=v2,k3,!k4` (terms joined by commas, meaning and; spaces around terms and operators ignored). */
export function parseLabelSelector(selector: string): ParsedSelector {
  if (selector.trim() === '') return { ok: false, problem: 'the selector is empty' };
  const parts = selector.split(',');
  if (parts.length > MAX_SELECTOR_TERMS) return { ok: false, problem: `at most ${MAX_SELECTOR_TERMS} terms` };
  const terms: SelectorTerm[] = [];
  for (const raw of parts) {
    const part = raw.trim();
    if (part === '') return { ok: false, problem: 'an empty term (two commas, or a comma at an end)' };
    const term = parseTerm(part);
    if (typeof term === 'string') return { ok: false, problem: term };
    terms.push(term);
  }
  return { ok: true, terms };
}

function parseTerm(part: string): SelectorTerm | string {
  const bad = `\`${part}\` is not a selector term (use k=v, k!=v, k or !k)`;
  const ne = part.indexOf('!=');
  const eq = part.indexOf('=');
  if (ne === 0 || eq === 0) return bad;
  if (ne > 0 || eq > 0) {
    const op = ne > 0 && ne < eq ? 'ne' : 'eq';
    const at = op === 'ne' ? ne : eq;
    const key = part.slice(0, at).trim();
    const value = part.slice(at + (op === 'ne' ? 2 : 1)).trim();
    if (value.startsWith('=') || value.includes('=') || value.includes('!')) return bad;
    const problem = labelKeyProblem(key) ?? labelValueProblem(value);
    if (problem) return problem;
    return { op, key, value };
  }
  const absent = part.startsWith('!');
  const key = (absent ? part.slice(1) : part).trim();
  if (key.includes('!')) return bad;
  const problem = labelKeyProblem(key);
  if (problem) return problem;
  return absent ? { op: 'absent', key } : { op: 'exists', key };
}

/** Whether labels satisfy every term (the same rule the table's filter applies; old records have none). */
export function selectorMatches(terms: SelectorTerm[], labels: Labels | undefined): boolean {
  const has = (k: string) => labels !== undefined && Object.hasOwn(labels, k);
  return terms.every((t) => {
    if (t.op === 'eq') return has(t.key) && labels![t.key] === t.value;
    if (t.op === 'ne') return !has(t.key) || labels![t.key] !== t.value;
    if (t.op === 'exists') return has(t.key);
    return !has(t.key);
  });
}
