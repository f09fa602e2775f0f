import { describe, expect, it } from 'vitest';
import { validate } from '../../dev/panel-sim/rules.ts';
import type { PanelEgg } from '../../shared/panel/types.ts';
import { checkRules, resolveEnvironment } from '../../shared/servers/egg-variables.ts';

/**
 * Egg-variable rules, one table for both validators: our pre-check (shared/servers/egg-variables.ts)
 * and the panel simulator's Laravel validator (dev/panel-sim/rules.ts) must both accept or both refuse
 * each value, as the panel's Laravel validation does. Rule strings are those of real eggs (Minecraft
 * Paper/Vanilla/Forge/Bungeecord, Rust, the simulator's seed eggs) plus the rules eggs may use.
 * Values are the strings we send in `environment`; the panel trims them and turns "" into null first.
 */
type Case = [rules: string, value: string, accepted: boolean];

const TABLE: Case[] = [
  // Minecraft version: required|string|max:20 (length in characters)
  ['required|string|max:20', 'latest', true],
  ['required|string|max:20', '', false],
  ['required|string|max:20', '   ', false],
  ['required|string|max:20', 'a'.repeat(20), true],
  ['required|string|max:20', 'a'.repeat(21), false],
  ['required|string|max:20', 'ü'.repeat(20), true],
  ['required|string|max:20', '  1.20.4  ', true],
  ['required|max:20', '', false],
  ['max:20', '', true],
  ['string|max:20', '', false],
  ['string|max:20', 'abc', true],
  // Server jar file
  ['required|regex:/^([\\w\\d._-]+)(\\.jar)$/', 'server.jar', true],
  ['required|regex:/^([\\w\\d._-]+)(\\.jar)$/', ' server.jar ', true],
  ['required|regex:/^([\\w\\d._-]+)(\\.jar)$/', 'server.zip', false],
  ['required|regex:/^([\\w\\d._-]+)(\\.jar)$/', 'my server.jar', false],
  ['required|regex:/^([\\w\\d._-]+)(\\.jar)$/', '', false],
  ['required|regex:/^([0-9_\\.-]+)$/', '1.20.4', true],
  ['required|regex:/^([0-9_\\.-]+)$/', 'latest', false],
  ['required|regex:/^[\\w.-]*$/|max:64', 'a.b-c', true],
  ['required|regex:/^[\\w.-]*$/|max:64', 'a b', false],
  // nullable
  ['nullable|string', '', true],
  ['nullable|string', '   ', true],
  ['nullable|string', 'x', true],
  ['nullable|string|max:128', 'x'.repeat(129), false],
  // boolean: only "1" and "0" among strings
  ['required|boolean', '1', true],
  ['required|boolean', '0', true],
  ['required|boolean', ' 1 ', true],
  ['required|boolean', 'true', false],
  ['required|boolean', 'false', false],
  ['required|boolean', 'yes', false],
  ['required|boolean', '01', false],
  ['required|boolean', '1.0', false],
  ['required|boolean', '', false],
  ['nullable|boolean', '', true],
  ['nullable|boolean', 'true', false],
  // in:true,false (strings compared; numeric strings loosely)
  ['required|in:true,false', 'true', true],
  ['required|in:true,false', 'false', true],
  ['required|in:true,false', 'TRUE', false],
  ['required|in:true,false', '1', false],
  ['required|in:true,false', '', false],
  ['required|string|in:vanilla,oxide,carbon', 'oxide', true],
  ['required|string|in:vanilla,oxide,carbon', 'Oxide', false],
  ['required|string|in:Procedural Map,Barren,HapisIsland,SavasIsland', 'Procedural Map', true],
  ['required|in:1,2', '1.0', true],
  ['required|in:1,2', '01', true],
  ['required|in:1,2', '3', false],
  // integer: FILTER_VALIDATE_INT
  ['required|integer|between:1,65535', '25565', true],
  ['required|integer|between:1,65535', ' 80 ', true],
  ['required|integer|between:1,65535', '+5', true],
  ['required|integer|between:1,65535', '65535', true],
  ['required|integer|between:1,65535', '65536', false],
  ['required|integer|between:1,65535', '0', false],
  ['required|integer|between:1,65535', '-1', false],
  ['required|integer|between:1,65535', '007', false],
  ['required|integer|between:1,65535', '0x1A', false],
  ['required|integer|between:1,65535', '1e3', false],
  ['required|integer|between:1,65535', '80.0', false],
  ['required|integer|between:1,65535', '1_000', false],
  ['required|integer|between:1,65535', '', false],
  ['required|integer', '-0', true],
  ['required|integer', '+0', true],
  ['required|integer', '00', false],
  ['required|integer', '9223372036854775807', true],
  ['required|integer', '9223372036854775808', false],
  ['required|integer', '-9223372036854775808', true],
  ['required|integer', '-9223372036854775809', false],
  ['required|integer|min:1|max:500', '500', true],
  ['required|integer|min:1|max:500', '501', false],
  ['required|integer|between:1000,6000', '999', false],
  ['nullable|integer|between:0,2147483647', '', true],
  ['nullable|integer|between:0,2147483647', '12', true],
  ['nullable|integer|between:0,2147483647', '2147483648', false],
  ['nullable|integer|between:0,2147483647', 'x', false],
  // numeric: is_numeric (leading zeros and exponents fine, hex not)
  ['required|numeric|between:1,10', '007', true],
  ['required|numeric|between:1,10', '1e1', true],
  ['required|numeric|between:1,10', '1e2', false],
  ['required|numeric|between:1,10', '0x1A', false],
  ['required|numeric|between:1,10', '.5', false],
  ['required|numeric|between:1,10', '5.', true],
  ['required|numeric|between:1,10', '2.5', true],
  ['required|numeric|between:1,10', 'abc', false],
  ['required|numeric', '1e3', true],
  ['required|numeric', '-.5', true],
  ['required|numeric', '1e', false],
  ['required|numeric', '.', false],
  ['required|numeric', '1 000', false],
  ['required|numeric', 'NAN', false],
  ['required|numeric', 'INF', false],
  // sizes of strings without a numeric rule are lengths
  ['required|string|min:3', '99', false],
  ['required|string|min:3', '100', true],
  ['required|string|between:3,15', '1.2', true],
  ['required|string|between:3,15', 'ab', false],
  // alpha_dash / alpha_num
  ['required|alpha_dash|max:32', 'my-world_1', true],
  ['required|alpha_dash|max:32', 'wörld', true],
  ['required|alpha_dash|max:32', 'my world', false],
  ['required|alpha_dash|max:32', 'a.b', false],
  ['required|alpha_num|between:1,6', 'abc123', true],
  ['required|alpha_num|between:1,6', 'abc-1', false],
  // url
  ['required|url', 'https://example.com/x.jar', true],
  ['required|url', 'http://127.0.0.1:8080/a?b=c#d', true],
  ['required|url', 'example.com', false],
  ['required|url', 'not a url', false],
  ['required|url', 'http://', false],
  ['required|url', '', false],
  ['nullable|url', '', true],
  // sometimes / present: the panel always sets every variable's key (null when absent)
  ['sometimes|required|string', '', false],
  ['sometimes|required|string', 'x', true],
  ['present|nullable|string', '', true],
  ['present|string', '', false],
];

/** The panel's TrimStrings and ConvertEmptyStringsToNull, as the simulator's request cleaning does. */
const middleware = (value: string): string | null => (value.trim() === '' ? null : value.trim());

const simAccepts = (rules: string, value: string): boolean =>
  validate({ environment: { X: middleware(value) } }, { 'environment.X': rules }).length === 0;

const label = ([rules, value, accepted]: Case) => `${JSON.stringify(value)} for ${rules} is ${accepted ? 'accepted' : 'refused'}`;

describe('egg-variable rules: our pre-check and the simulator agree with Laravel', () => {
  for (const c of TABLE) {
    it(label(c), () => {
      const [rules, value, accepted] = c;
      expect(checkRules(value, rules) === undefined, 'pre-check').toBe(accepted);
      expect(simAccepts(rules, value), 'simulator').toBe(accepted);
    });
  }
});

describe('a regex holding | is split by the panel too (explode on |)', () => {
  it('is left to the panel by the pre-check, and breaks the simulator as it breaks Laravel (500)', () => {
    const rules = 'required|regex:/^(latest|[0-9.]+)$/';
    expect(checkRules('latest', rules)).toBeUndefined();
    expect(() => validate({ environment: { X: 'latest' } }, { 'environment.X': rules })).toThrow();
  });
});

describe('egg-variable pre-check answers name body.environment.X', () => {
  const egg = (rules: string, default_value = ''): PanelEgg =>
    ({
      id: 1,
      relationships: {
        variables: {
          data: [{ attributes: { env_variable: 'ENABLE_QUERY', rules, default_value, user_editable: true, user_viewable: true } }],
        },
      },
    }) as unknown as PanelEgg;

  it('refuses "true" for a boolean variable', () => {
    const { issues } = resolveEnvironment(egg('required|boolean', '1'), { ENABLE_QUERY: 'true' });
    expect(issues).toEqual([{ field: 'body.environment.ENABLE_QUERY', message: expect.stringContaining('1 or 0') }]);
  });

  it('refuses an empty default of a required variable when no value is given', () => {
    const { issues } = resolveEnvironment(egg('required|string'), {});
    expect(issues.map((i) => i.field)).toEqual(['body.environment.ENABLE_QUERY']);
  });

  it('accepts "1" and sends it as given', () => {
    const { issues, environment } = resolveEnvironment(egg('required|boolean', '0'), { ENABLE_QUERY: '1' });
    expect(issues).toEqual([]);
    expect(environment).toEqual({ ENABLE_QUERY: '1' });
  });
});
