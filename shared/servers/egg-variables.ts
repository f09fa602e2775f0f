import type { PanelEgg, PanelEggVariable } from '../panel/types.ts';

/**
 * Egg variables at deploy (pterodactyl/panel:app/Services/Servers/VariableValidatorService.php): the panel fills no
 * defaults itself, so every variable is sent: the caller's value where given, else the egg's
 * default. Values for variables that are not editable, values the variable's rules refuse, and
 * names that are not variables of the egg are refused here, before any panel call.
 *
 * The rules are Laravel validation strings; the common ones are checked here (required, nullable,
 * string, integer, numeric, boolean, min, max, between, in, regex, alpha_dash, alpha_num, size).
 * A rule we do not know is left to the panel, whose 422 comes back as `panel_error` with fields.
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
  const environment: Record<string, string> = {};
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
    environment[name] = value;
  }
  return { environment, issues };
}

/** Splits `a|b:1,2|regex:/x|y/` into rules; a pipe inside a regex pattern does not split. */
export function parseRules(rules: string): { name: string; arg: string }[] {
  const parts = rules.split('|');
  const out: { name: string; arg: string }[] = [];
  for (let i = 0; i < parts.length; i++) {
    let part = parts[i]!;
    if (/^(not_)?regex:/.test(part)) {
      while (!/:\/.*\/[a-z]*$/s.test(part) && i + 1 < parts.length) part += `|${parts[++i]}`;
    }
    if (!part) continue;
    const colon = part.indexOf(':');
    out.push(colon === -1 ? { name: part, arg: '' } : { name: part.slice(0, colon), arg: part.slice(colon + 1) });
  }
  return out;
}

function toRegExp(source: string): RegExp | undefined {
  const m = /^\/(.*)\/([a-z]*)$/s.exec(source);
  if (!m) return undefined;
  try {
    return new RegExp(m[1]!, m[2]!.replace(/[^imsu]/g, ''));
  } catch {
    return undefined;
  }
}

/** The first rule `value` breaks, as a message; undefined when it passes. */
export function checkRules(value: string, rules: string): string | undefined {
  const parsed = parseRules(rules);
  const has = (n: string) => parsed.some((r) => r.name === n);
  // The panel turns "" into null before validating (Laravel's ConvertEmptyStringsToNull middleware).
  if (value === '') return has('required') ? 'is required' : undefined;
  const numeric = has('integer') || has('numeric');
  const size = numeric ? Number(value) : [...value].length;
  for (const { name, arg } of parsed) {
    switch (name) {
      case 'integer':
        if (!/^[+-]?\d+$/.test(value)) return 'must be an integer';
        break;
      case 'numeric':
        if (value.trim() === '' || !Number.isFinite(Number(value))) return 'must be a number';
        break;
      case 'boolean':
        if (!['true', 'false', '1', '0'].includes(value)) return 'must be true, false, 1 or 0';
        break;
      case 'min':
        if (size < Number(arg)) return numeric ? `must be at least ${arg}` : `must be at least ${arg} characters`;
        break;
      case 'max':
        if (size > Number(arg)) return numeric ? `must be at most ${arg}` : `must be at most ${arg} characters`;
        break;
      case 'between': {
        const [lo, hi] = arg.split(',').map(Number);
        if (size < lo! || size > hi!) return numeric ? `must be between ${lo} and ${hi}` : `must be between ${lo} and ${hi} characters`;
        break;
      }
      case 'size':
        if (size !== Number(arg)) return numeric ? `must be ${arg}` : `must be ${arg} characters`;
        break;
      case 'in':
        if (!arg.split(',').includes(value)) return `must be one of: ${arg.split(',').join(', ')}`;
        break;
      case 'regex': {
        const re = toRegExp(arg);
        if (re && !re.test(value)) return 'has an invalid format';
        break;
      }
      case 'alpha_dash':
        if (!/^[\p{L}\p{M}\p{N}_-]+$/u.test(value)) return 'may only contain letters, numbers, dashes and underscores';
        break;
      case 'alpha_num':
        if (!/^[\p{L}\p{M}\p{N}]+$/u.test(value)) return 'may only contain letters and numbers';
        break;
      default:
        break;
    }
  }
  return undefined;
}
