import { ruleList } from '../panel/rules.ts';
import type { PanelEgg, PanelEggVariable } from '../panel/types.ts';

/**
 * Egg variables at deploy (pterodactyl/panel:app/Services/Servers/VariableValidatorService.php): the panel fills no
 * defaults itself, so every variable is sent: the caller's value where given, else the egg's
 * default. Values for variables that are not editable, values the variable's rules refuse, and
 * names that are not variables of the egg are refused here, before any panel call.
 *
 * The rules are Laravel validation strings; the ones eggs use are checked here exactly as the panel's
 * validator does (`checkRules`; tests/unit/egg-rules.test.ts holds the table, run against the panel
 * simulator's validator too). A rule we do not know is left to the panel, whose 422 comes back as
 * `panel_error` with fields.
 */
export interface VariableIssue {
  field: string;
  message: string;
}

export function variablesOf(egg: PanelEgg): PanelEggVariable[] {
  return egg.relationships?.variables?.data.map((d) => d.attributes) ?? [];
}

export function resolveEnvironment(
  egg: PanelEgg,
  given: Record<string, string> = {},
): { environment: Record<string, string>; issues: VariableIssue[] } {
  const variables = variablesOf(egg);
  const issues: VariableIssue[] = [];
  const known = new Set(variables.map((v) => v.env_variable));
  for (const name of Object.keys(given)) {
    if (!known.has(name)) issues.push({ field: `body.environment.${name}`, message: 'is not a variable of this egg' });
  }
  // Entries, not assignments: a variable's name is data (`__proto__` would set the prototype of `{}`).
  const environment: [string, string][] = [];
  for (const variable of variables) {
    const name = variable.env_variable;
    const provided = Object.hasOwn(given, name);
    if (provided && !variable.user_editable) {
      issues.push({ field: `body.environment.${name}`, message: 'is not editable' });
      continue;
    }
    const value = provided ? given[name]! : (variable.default_value ?? '');
    const problem = checkRules(value, variable.rules);
    if (problem)
      issues.push({ field: `body.environment.${name}`, message: provided ? problem : `has no valid default (${problem}); give a value` });
    environment.push([name, value]);
  }
  return { environment: Object.fromEntries(environment), issues };
}

/**
 * Splits a rule string as Laravel does (`ValidationRuleParser::explodeExplicitRule`: `explode('|', …)`,
 * then `name:params`, params by CSV except for `regex`/`not_regex`). A pipe inside a regex splits it
 * too, exactly as on the panel (which then fails the whole check with a 500); such a broken rule is
 * left to the panel here.
 */
export function parseRules(rules: readonly string[] | string): { name: string; arg: string }[] {
  const out: { name: string; arg: string }[] = [];
  for (const part of ruleList(rules)) {
    const trimmed = part.trim();
    if (!trimmed) continue;
    const colon = trimmed.indexOf(':');
    let name = (colon === -1 ? trimmed : trimmed.slice(0, colon)).trim().toLowerCase();
    if (name === 'int') name = 'integer';
    if (name === 'bool') name = 'boolean';
    out.push({ name, arg: colon === -1 ? '' : trimmed.slice(colon + 1) });
  }
  return out;
}

/** A PHP (PCRE) pattern with its delimiters as a JS RegExp; undefined when it cannot be read faithfully. */
function toRegExp(pattern: string): RegExp | undefined {
  const open = pattern.charAt(0);
  const close = ({ '(': ')', '{': '}', '[': ']', '<': '>' } as Record<string, string>)[open] ?? open;
  const end = pattern.lastIndexOf(close);
  if (pattern.length < 2 || end <= 0 || /[\s\\a-zA-Z0-9]/.test(open)) return undefined;
  const flags = pattern.slice(end + 1);
  if (!/^[imsuD]*$/.test(flags)) return undefined;
  try {
    return new RegExp(pattern.slice(1, end), flags.replace(/D/g, ''));
  } catch {
    return undefined;
  }
}

/** PHP 8 `is_numeric` on a string: optional surrounding whitespace, decimal or exponent form, no hex. */
export function phpIsNumeric(value: string): boolean {
  return /^[ \t\n\r\v\f]*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?[ \t\n\r\v\f]*$/.test(value);
}

/** `filter_var($v, FILTER_VALIDATE_INT) !== false`: optional sign, no leading zeros but "0", 64-bit range. */
export function phpIsInt(value: string): boolean {
  const m = /^[ \t\n\r\v]*([+-]?)(0|[1-9]\d*)[ \t\n\r\v]*$/.exec(value);
  if (!m) return false;
  const n = BigInt(m[2]!);
  return m[1] === '-' ? n <= 9223372036854775808n : n <= 9223372036854775807n;
}

/** PHP's loose `==` between two strings (what `in_array` does for `in:`): numeric strings compare as numbers. */
function looseEquals(a: string, b: string): boolean {
  if (a === b) return true;
  return phpIsNumeric(a) && phpIsNumeric(b) && Number(a) === Number(b);
}

/** The value the panel validates: TrimStrings then ConvertEmptyStringsToNull (app/Http/Kernel.php). */
export function panelSees(value: string): string | null {
  const trimmed = value.trim();
  return trimmed === '' ? null : trimmed;
}

const IMPLICIT = new Set(['required', 'present', 'filled', 'accepted']);
const KNOWN = new Set([
  'required',
  'present',
  'filled',
  'nullable',
  'sometimes',
  'bail',
  'string',
  'integer',
  'numeric',
  'boolean',
  'in',
  'not_in',
  'min',
  'max',
  'between',
  'size',
  'regex',
  'not_regex',
  'alpha',
  'alpha_dash',
  'alpha_num',
  'url',
]);

/**
 * The first rule `value` breaks, as a message; undefined when it passes. Mirrors Laravel's validator
 * for the rules eggs use (Illuminate\Validation\Concerns\ValidatesAttributes): the value is what the
 * panel sees after its middleware (trimmed, "" → null); a rule other than `required`/`present`/`filled`
 * is skipped on null only under `nullable`; `min`/`max`/`between`/`size` compare the number when a
 * numeric rule (`integer`, `numeric`) is present and the value is numeric, else the length in
 * characters. A rule we do not know, or a pattern we cannot read, is left to the panel.
 */
export function checkRules(raw: string, rules: readonly string[] | string): string | undefined {
  const parsed = parseRules(rules);
  const has = (n: string) => parsed.some((r) => r.name === n);
  const value = panelSees(raw);
  const nullable = has('nullable');
  const numericRule = has('integer') || has('numeric');
  const size = (): number => (numericRule && value !== null && phpIsNumeric(value) ? Number(value) : [...(value ?? '')].length);
  const unit = () => (numericRule && value !== null && phpIsNumeric(value) ? '' : ' characters');
  for (const { name, arg } of parsed) {
    if (!KNOWN.has(name)) continue;
    const implicit = IMPLICIT.has(name);
    if (!implicit && value === null && nullable) continue;
    const params = arg.split(',');
    switch (name) {
      case 'required':
      case 'filled':
        if (value === null) return 'is required';
        break;
      case 'accepted':
        if (!['yes', 'on', '1', 'true'].includes(value ?? '')) return 'must be accepted';
        break;
      case 'string':
        if (value === null) return 'must be a string';
        break;
      case 'integer':
        if (value === null || !phpIsInt(value)) return 'must be an integer';
        break;
      case 'numeric':
        if (value === null || !phpIsNumeric(value)) return 'must be a number';
        break;
      case 'boolean':
        // strict in_array against [true, false, 0, 1, '0', '1']: of strings only "0" and "1"
        if (value !== '0' && value !== '1') return 'must be 1 or 0 (true and false are refused)';
        break;
      case 'min':
        if (!(size() >= Number(params[0]))) return `must be at least ${params[0]}${unit()}`;
        break;
      case 'max':
        if (!(size() <= Number(params[0]))) return `must be at most ${params[0]}${unit()}`;
        break;
      case 'between': {
        const s = size();
        if (!(s >= Number(params[0]) && s <= Number(params[1]))) return `must be between ${params[0]} and ${params[1]}${unit()}`;
        break;
      }
      case 'size':
        if (size() !== Number(params[0])) return `must be ${params[0]}${unit()}`;
        break;
      case 'in':
        if (!params.some((p) => looseEquals(value ?? '', p))) return `must be one of: ${params.join(', ')}`;
        break;
      case 'not_in':
        if (params.some((p) => looseEquals(value ?? '', p))) return `must not be one of: ${params.join(', ')}`;
        break;
      case 'regex':
      case 'not_regex': {
        const re = toRegExp(arg);
        if (!re) continue;
        if (value === null || re.test(value) !== (name === 'regex')) return 'has an invalid format';
        break;
      }
      case 'alpha':
        if (value === null || !/^[\p{L}\p{M}]+$/u.test(value)) return 'may only contain letters';
        break;
      case 'alpha_dash':
        if (value === null || !/^[\p{L}\p{M}\p{N}_-]+$/u.test(value)) return 'may only contain letters, numbers, dashes and underscores';
        break;
      case 'alpha_num':
        if (value === null || !/^[\p{L}\p{M}\p{N}]+$/u.test(value)) return 'may only contain letters and numbers';
        break;
      case 'url':
        if (value === null || !isUrl(value)) return 'must be a URL';
        break;
      default:
        break;
    }
  }
  return undefined;
}

/**
 * Laravel's `url` (Str::isUrl, after Symfony's UrlValidator): scheme://[user[:pass]@]host[:port][/path][?query][#fragment],
 * host a domain name, an IPv4 address or a bracketed IPv6 address. The panel accepts only its list of
 * known schemes; any scheme is accepted here and an unknown one is left to the panel.
 */
export function isUrl(value: string): boolean {
  return URL_PATTERN.test(value);
}

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
