// A small re-implementation of Laravel's validator (the subset the panel and
// egg variables use), so 422 bodies match the panel's: one error entry per
// failed message, `meta.source_field` = dotted input path, `meta.rule` = snake
// case rule name (the panel's app/Exceptions/Handler.php::invalidJson). Messages come from the panel's own
// `resources/lang/en/validation.php` (older wording, e.g. "may not be greater than").
//
// Semantics mirrored from Illuminate\Validation\Validator:
//  - a rule on an attribute that is absent (or a blank string) only runs if the
//    rule is implicit (required*, present, filled, accepted);
//  - an attribute that is present but null still runs its rules unless it has
//    `nullable` (so `string` fails on null, `required` fails on null);
//  - `sometimes` skips the attribute entirely when it is absent;
//  - validation of an attribute stops after a failed implicit rule, or after any
//    failure when it has `bail`;
//  - exists/unique are skipped when the attribute already has an error;
//  - wildcard rules (`a.b.*`) expand over the data and are validated after the
//    explicit attributes (Laravel appends the exploded keys).

export interface CustomRule {
  /** name reported in `meta.rule` (e.g. `exists`, `unique`, `p_username`) */
  name: string;
  /** message, `:attribute` is replaced */
  message: string;
  implicit?: boolean;
  /** like Laravel's Unique/Exists: skipped once the attribute already failed */
  presence?: boolean;
  passes(value: unknown, attribute: string, data: Record<string, unknown>): boolean;
}

export type RuleItem = string | CustomRule;
export type RuleSet = string | RuleItem[];

export interface ValidationFailure {
  field: string;
  rule: string;
  message: string;
}

export interface ValidateOptions {
  /** custom display names (Laravel `attributes()` / customAttributes) */
  attributes?: Record<string, string>;
}

export class UnknownRuleError extends Error {}

const IMPLICIT = new Set([
  'required',
  'required_with',
  'required_with_all',
  'required_without',
  'required_without_all',
  'required_if',
  'required_unless',
  'present',
  'filled',
  'accepted',
]);

const NUMERIC_RULES = ['numeric', 'integer', 'decimal'];

const MESSAGES: Record<string, string | Record<'numeric' | 'string' | 'array', string>> = {
  accepted: 'The :attribute must be accepted.',
  alpha: 'The :attribute may only contain letters.',
  alpha_dash: 'The :attribute may only contain letters, numbers, and dashes.',
  alpha_num: 'The :attribute may only contain letters and numbers.',
  array: 'The :attribute must be an array.',
  between: {
    numeric: 'The :attribute must be between :min and :max.',
    string: 'The :attribute must be between :min and :max characters.',
    array: 'The :attribute must have between :min and :max items.',
  },
  boolean: 'The :attribute field must be true or false.',
  digits: 'The :attribute must be :digits digits.',
  digits_between: 'The :attribute must be between :min and :max digits.',
  email: 'The :attribute must be a valid email address.',
  exists: 'The selected :attribute is invalid.',
  filled: 'The :attribute field is required.',
  in: 'The selected :attribute is invalid.',
  integer: 'The :attribute must be an integer.',
  ip: 'The :attribute must be a valid IP address.',
  ipv4: 'The :attribute must be a valid IPv4 address.',
  json: 'The :attribute must be a valid JSON string.',
  max: {
    numeric: 'The :attribute may not be greater than :max.',
    string: 'The :attribute may not be greater than :max characters.',
    array: 'The :attribute may not have more than :max items.',
  },
  min: {
    numeric: 'The :attribute must be at least :min.',
    string: 'The :attribute must be at least :min characters.',
    array: 'The :attribute must have at least :min items.',
  },
  not_in: 'The selected :attribute is invalid.',
  not_regex: 'The :attribute format is invalid.',
  numeric: 'The :attribute must be a number.',
  present: 'The :attribute field must be present.',
  regex: 'The :attribute format is invalid.',
  required: 'The :attribute field is required.',
  required_with: 'The :attribute field is required when :values is present.',
  required_unless: 'The :attribute field is required unless :other is in :values.',
  required_with_all: 'The :attribute field is required when :values is present.',
  required_without: 'The :attribute field is required when :values is not present.',
  required_without_all: 'The :attribute field is required when none of :values are present.',
  size: {
    numeric: 'The :attribute must be :size.',
    string: 'The :attribute must be :size characters.',
    array: 'The :attribute must contain :size items.',
  },
  string: 'The :attribute must be a string.',
  unique: 'The :attribute has already been taken.',
  url: 'The :attribute format is invalid.',
  uuid: 'The :attribute must be a valid UUID.',
};

// ---------------------------------------------------------------- PHP helpers

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** PHP is_array: JSON arrays and objects both decode to PHP arrays. */
export function isPhpArray(v: unknown): v is unknown[] | Record<string, unknown> {
  return Array.isArray(v) || isPlainObject(v);
}

function phpCount(v: unknown[] | Record<string, unknown>): number {
  return Array.isArray(v) ? v.length : Object.keys(v).length;
}

/** PHP is_numeric */
export function isNumeric(v: unknown): boolean {
  if (typeof v === 'number') return Number.isFinite(v);
  if (typeof v !== 'string') return false;
  return /^[ \t\n\r\v\f]*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?[ \t\n\r\v\f]*$/.test(v);
}

/** filter_var($v, FILTER_VALIDATE_INT) !== false: optional sign, no leading zeros but "0", 64-bit range */
export function isPhpInteger(v: unknown): boolean {
  if (typeof v === 'boolean') return v; // (string) true === "1"
  if (typeof v === 'number') return Number.isInteger(v);
  if (typeof v !== 'string') return false;
  const m = /^[ \t\n\r\v]*([+-]?)(0|[1-9]\d*)[ \t\n\r\v]*$/.exec(v);
  if (!m) return false;
  const n = BigInt(m[2]!);
  return m[1] === '-' ? n <= 9223372036854775808n : n <= 9223372036854775807n;
}

/**
 * Laravel `url` (Str::isUrl, from Symfony's UrlValidator): scheme://[auth@]host[:port][path][?query][#fragment].
 * Laravel lists the schemes it knows; any scheme is taken here.
 */
const URL_PATTERN = new RegExp(
  [
    '^[a-z][a-z0-9+.-]*://',
    '(((?:[_.\\p{L}\\p{N}-]|%[0-9A-Fa-f]{2})+:)?((?:[_.\\p{L}\\p{N}-]|%[0-9A-Fa-f]{2})+)@)?',
    '(([\\p{L}\\p{N}\\p{S}\\-_.])+(\\.?([\\p{L}\\p{N}]|xn--[\\p{L}\\p{N}-]+)+\\.?)|\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}|\\[[0-9a-f:.]+\\])',
    '(:[0-9]+)?',
    "(?:/(?:[\\p{L}\\p{N}\\-._~!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})*)*",
    "(?:\\?(?:[\\p{L}\\p{N}\\-._~!$&'\\[\\]()*+,;=:@/?]|%[0-9A-Fa-f]{2})*)?",
    "(?:#(?:[\\p{L}\\p{N}\\-._~!$&'()*+,;=:@/?]|%[0-9A-Fa-f]{2})*)?$",
  ].join(''),
  'iu',
);

/** (string) cast as PHP does it for scalars */
export function phpString(v: unknown): string {
  if (v === null || v === undefined || v === false) return '';
  if (v === true) return '1';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return v;
  return 'Array';
}

/** Laravel Str::snake (only the parts that matter for attribute names) */
export function strSnake(value: string): string {
  if (/^[a-z]+$/.test(value)) return value;
  const ucFirst = value.charAt(0).toUpperCase() + value.slice(1);
  return ucFirst
    .replace(/\s+/gu, '')
    .replace(/(.)(?=[A-Z])/gu, '$1_')
    .toLowerCase();
}

/** Convert a PHP PCRE pattern (`/.../flags`) into a JS RegExp. */
export function phpRegex(pattern: string): RegExp {
  const open = pattern.charAt(0);
  const closeMap: Record<string, string> = { '(': ')', '{': '}', '[': ']', '<': '>' };
  const close = closeMap[open] ?? open;
  const end = pattern.lastIndexOf(close);
  if (pattern.length < 2 || end <= 0) throw new Error(`preg_match(): No ending delimiter '${close}' found`);
  const body = pattern.slice(1, end);
  const flags = [...pattern.slice(end + 1)].filter((f) => 'imsu'.includes(f)).join('');
  return new RegExp(body, flags);
}

function getPath(data: unknown, path: string): { present: boolean; value: unknown } {
  if (path === '') return { present: true, value: data };
  let cur: unknown = data;
  for (const seg of path.split('.')) {
    if (Array.isArray(cur)) {
      const idx = Number(seg);
      if (!/^\d+$/.test(seg) || idx >= cur.length) return { present: false, value: undefined };
      cur = cur[idx];
    } else if (isPlainObject(cur)) {
      if (!Object.hasOwn(cur, seg)) return { present: false, value: undefined };
      cur = cur[seg];
    } else {
      return { present: false, value: undefined };
    }
  }
  return { present: true, value: cur };
}

export function dataGet(data: unknown, path: string): unknown {
  return getPath(data, path).value;
}

function childKeys(v: unknown): string[] {
  if (Array.isArray(v)) return v.map((_, i) => String(i));
  if (isPlainObject(v)) return Object.keys(v);
  return [];
}

/** Expand `a.*.b` into the concrete attribute names present in the data. */
function expandWildcard(data: unknown, key: string): string[] {
  const segs = key.split('.');
  let paths: string[] = [''];
  for (const seg of segs) {
    const next: string[] = [];
    for (const p of paths) {
      if (seg === '*') {
        const v = getPath(data, p).value;
        for (const k of childKeys(v)) next.push(p === '' ? k : `${p}.${k}`);
      } else {
        next.push(p === '' ? seg : `${p}.${seg}`);
      }
    }
    paths = next;
  }
  return paths;
}

/** str_getcsv, enough for rule parameters */
function parseCsv(s: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charAt(i);
    if (quoted) {
      if (c === '"' && s.charAt(i + 1) === '"') {
        cur += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cur += c;
    } else if (c === '"' && cur === '') quoted = true;
    else if (c === ',') {
      out.push(cur);
      cur = '';
    } else cur += c;
  }
  out.push(cur);
  return out;
}

interface ParsedRule {
  name: string;
  params: string[];
  custom?: CustomRule;
}

function parseRule(rule: RuleItem): ParsedRule {
  if (typeof rule !== 'string') return { name: rule.name, params: [], custom: rule };
  const trimmed = rule.trim();
  if (trimmed === '') return { name: '', params: [] };
  const colon = trimmed.indexOf(':');
  let name = (colon === -1 ? trimmed : trimmed.slice(0, colon)).trim();
  name = strSnake(name.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase()));
  if (name === 'int') name = 'integer';
  if (name === 'bool') name = 'boolean';
  const rest = colon === -1 ? '' : trimmed.slice(colon + 1);
  let params: string[] = [];
  if (colon !== -1) params = name === 'regex' || name === 'not_regex' ? [rest] : parseCsv(rest);
  return { name, params };
}

function normalizeRules(set: RuleSet): RuleItem[] {
  // A string is exploded on `|`; array items are single rules (so a regex with `|` must be in an array).
  return typeof set === 'string' ? set.split('|') : [...set];
}

function isBlank(v: unknown): boolean {
  return typeof v === 'string' && v.trim() === '';
}

function passesRequired(v: unknown): boolean {
  if (v === null || v === undefined) return false;
  if (typeof v === 'string') return v.trim() !== '';
  if (isPhpArray(v)) return phpCount(v) > 0;
  return true;
}

// ------------------------------------------------------------------ validator

export function validate(
  data: Record<string, unknown>,
  rules: Record<string, RuleSet>,
  options: ValidateOptions = {},
): ValidationFailure[] {
  // Explode rules (explicit first, wildcard-expanded appended, as Laravel does).
  const explicit: Array<[string, ParsedRule[]]> = [];
  const expanded: Array<[string, ParsedRule[]]> = [];
  const implicitAttributes = new Set<string>();
  for (const [key, set] of Object.entries(rules)) {
    const parsed = normalizeRules(set).map(parseRule);
    if (key.includes('*')) {
      for (const attr of expandWildcard(data, key)) {
        implicitAttributes.add(attr);
        const existing = expanded.find(([k]) => k === attr);
        if (existing) existing[1].push(...parsed);
        else expanded.push([attr, [...parsed]]);
      }
    } else {
      const existing = explicit.find(([k]) => k === key);
      if (existing) existing[1].push(...parsed);
      else explicit.push([key, parsed]);
    }
  }
  const all = [...explicit, ...expanded];
  const rulesByAttr = new Map(all);
  const failures: ValidationFailure[] = [];
  const failedRules = new Map<string, string[]>();

  const hasRule = (attr: string, names: string[]): boolean => (rulesByAttr.get(attr) ?? []).some((r) => names.includes(r.name));

  const display = (attr: string): string => {
    const custom = options.attributes?.[attr];
    if (custom !== undefined) return custom;
    if (implicitAttributes.has(attr)) return attr;
    return strSnake(attr).replace(/_/g, ' ');
  };

  const sizeOf = (attr: string, value: unknown): number => {
    if (isNumeric(value) && hasRule(attr, NUMERIC_RULES)) return Number(typeof value === 'string' ? value.trim() : value);
    if (isPhpArray(value)) return phpCount(value);
    return [...phpString(value)].length;
  };

  const attributeType = (attr: string): 'numeric' | 'string' | 'array' => {
    if (hasRule(attr, NUMERIC_RULES)) return 'numeric';
    if (hasRule(attr, ['array'])) return 'array';
    return 'string';
  };

  const check = (attr: string, rule: ParsedRule, value: unknown): boolean => {
    const p = rule.params;
    const num = (i: number): number => Number(p[i]);
    switch (rule.name) {
      case 'sometimes':
      case 'nullable':
      case 'bail':
        return true;
      case 'required':
        return passesRequired(value);
      case 'filled':
        return !getPath(data, attr).present || passesRequired(value);
      case 'present':
        return getPath(data, attr).present;
      case 'required_with':
        return p.every((o) => !passesRequired(dataGet(data, o))) ? true : passesRequired(value);
      case 'required_with_all':
        return p.every((o) => passesRequired(dataGet(data, o))) ? passesRequired(value) : true;
      case 'required_without':
        return p.some((o) => !passesRequired(dataGet(data, o))) ? passesRequired(value) : true;
      case 'required_unless': {
        // required_unless:other,v1,v2: required unless `other` is one of the values.
        const other = phpString(dataGet(data, p[0] ?? ''));
        return p.slice(1).includes(other) ? true : passesRequired(value);
      }
      case 'required_without_all':
        return p.every((o) => !passesRequired(dataGet(data, o))) ? passesRequired(value) : true;
      case 'accepted':
        return ['yes', 'on', '1', 1, true, 'true'].includes(value as never);
      case 'string':
        return typeof value === 'string';
      case 'array':
        return isPhpArray(value);
      case 'boolean':
        return [true, false, 0, 1, '0', '1'].includes(value as never);
      case 'integer':
        return isPhpInteger(value);
      case 'numeric':
        return isNumeric(value);
      case 'min':
        return sizeOf(attr, value) >= num(0);
      case 'max':
        return sizeOf(attr, value) <= num(0);
      case 'between': {
        const s = sizeOf(attr, value);
        return s >= num(0) && s <= num(1);
      }
      case 'size':
        return sizeOf(attr, value) === num(0);
      case 'digits':
        return /^\d+$/.test(phpString(value)) && phpString(value).length === num(0);
      case 'digits_between': {
        const s = phpString(value);
        return /^\d+$/.test(s) && s.length >= num(0) && s.length <= num(1);
      }
      case 'in':
      case 'not_in': {
        if (isPhpArray(value)) return rule.name === 'not_in';
        const s = phpString(value);
        const found = p.some((x) => x === s || (isNumeric(x) && isNumeric(s) && Number(x) === Number(s)));
        return rule.name === 'in' ? found : !found;
      }
      case 'regex':
      case 'not_regex': {
        if (typeof value !== 'string' && !isNumeric(value)) return false;
        const matched = phpRegex(p[0] ?? '').test(phpString(value));
        return rule.name === 'regex' ? matched : !matched;
      }
      case 'alpha':
        return typeof value === 'string' && /^[\p{L}\p{M}]+$/u.test(value);
      case 'alpha_num':
        return (typeof value === 'string' || isNumeric(value)) && /^[\p{L}\p{M}\p{N}]+$/u.test(phpString(value));
      case 'alpha_dash':
        return (typeof value === 'string' || isNumeric(value)) && /^[\p{L}\p{M}\p{N}_-]+$/u.test(phpString(value));
      case 'email':
        return typeof value === 'string' && /^[^\s@]+@[^\s@]+$/.test(value);
      case 'url':
        return typeof value === 'string' && URL_PATTERN.test(value);
      case 'uuid':
        return typeof value === 'string' && /^[\da-f]{8}-[\da-f]{4}-[\da-f]{4}-[\da-f]{4}-[\da-f]{12}$/i.test(value);
      case 'ip':
      case 'ipv4':
        return typeof value === 'string' && /^((25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(25[0-5]|2[0-4]\d|1?\d?\d)$/.test(value);
      case 'json':
        if (typeof value !== 'string') return false;
        try {
          JSON.parse(value);
          return true;
        } catch {
          return false;
        }
      default:
        // Laravel throws BadMethodCallException for an unknown rule (a 500).
        throw new UnknownRuleError(`Method Illuminate\\Validation\\Validator::validate${rule.name} does not exist.`);
    }
  };

  const message = (attr: string, rule: ParsedRule): string => {
    let tpl: string;
    if (rule.custom) tpl = rule.custom.message;
    else {
      const m = MESSAGES[rule.name];
      tpl = m === undefined ? `validation.${rule.name}` : typeof m === 'string' ? m : m[attributeType(attr)];
    }
    const p = rule.params;
    return tpl
      .replace(/:attribute/g, display(attr))
      .replace(/:other/g, display(p[0] ?? ''))
      .replace(
        /:values/g,
        rule.name === 'required_unless'
          ? p.slice(1).join(', ')
          : rule.name.startsWith('required_')
            ? p.map(display).join(' / ')
            : p.join(', '),
      )
      .replace(/:min/g, p[0] ?? '')
      .replace(/:max/g, rule.name === 'max' ? (p[0] ?? '') : (p[1] ?? ''))
      .replace(/:size/g, p[0] ?? '')
      .replace(/:digits/g, p[0] ?? '');
  };

  for (const [attr, parsedRules] of all) {
    const { present, value } = getPath(data, attr);
    if (hasRule(attr, ['sometimes']) && !present) continue;
    const nullable = hasRule(attr, ['nullable']);
    const bail = hasRule(attr, ['bail']);
    for (const rule of parsedRules) {
      if (rule.name === '') continue;
      const implicit = rule.custom ? rule.custom.implicit === true : IMPLICIT.has(rule.name);
      // presentOrRuleIsImplicit
      if (isBlank(value) && !implicit) continue;
      if (!present && !implicit) continue;
      // isNotNullIfMarkedAsNullable
      if (!implicit && nullable && value === null) continue;
      // hasNotFailedPreviousRuleIfPresenceRule
      if ((rule.custom?.presence || rule.name === 'exists' || rule.name === 'unique') && failedRules.has(attr)) continue;
      const ok = rule.custom ? rule.custom.passes(value, attr, data) : check(attr, rule, value);
      if (!ok) {
        failures.push({ field: attr, rule: rule.name, message: message(attr, rule) });
        const list = failedRules.get(attr) ?? [];
        list.push(rule.name);
        failedRules.set(attr, list);
        if (bail) break;
        if (implicit) break;
      }
    }
  }
  return failures;
}

// ---------------------------------------------------------------- helpers

export function existsRule(test: (value: unknown) => boolean): CustomRule {
  return { name: 'exists', message: MESSAGES.exists as string, presence: true, passes: (v) => test(v) };
}

export function uniqueRule(isTaken: (value: unknown) => boolean): CustomRule {
  return { name: 'unique', message: MESSAGES.unique as string, presence: true, passes: (v) => !isTaken(v) };
}
