/**
 * Labels: a string map on servers, API keys and webhook endpoints, for the caller's own
 * organization (the service never reads them). The rules follow Kubernetes labels: a key is an
 * optional DNS-style prefix and `/`, then a name; a value is empty or a name; at most MAX_LABELS.
 */

export const MAX_LABELS = 32;
/** 1–63 characters: letters, digits, `-`, `_`, `.`, starting and ending with a letter or digit. */
const NAME = /^[a-zA-Z0-9](?:[-a-zA-Z0-9_.]{0,61}[a-zA-Z0-9])?$/;
/** A DNS subdomain of at most 253 characters: lower-case labels of letters, digits and `-`, joined by dots. */
const PREFIX = /^(?=.{1,253}$)[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)*$/;

export type Labels = Record<string, string>;

/** Why a key is not a label key, or undefined when it is one. */
export function labelKeyProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (prefix !== undefined && !PREFIX.test(prefix))
    return `\`${key}\`: the prefix before \`/\` must be a DNS subdomain (lower case, at most 253 characters)`;
  if (!NAME.test(name))
    return `\`${key}\`: a key's name is 1 to 63 letters, digits, \`-\`, \`_\` or \`.\`, starting and ending with a letter or digit`;
  return undefined;
}

/** Why a value is not a label value, or undefined when it is one. */
export function labelValueProblem(value: string): string | undefined {
  if (value === '' || NAME.test(value)) return undefined;
  return `\`${value}\`: a value is empty or 1 to 63 letters, digits, \`-\`, \`_\` or \`.\`, starting and ending with a letter or digit`;
}

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
