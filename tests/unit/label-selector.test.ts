import { describe, expect, it } from 'vitest';
import { labelKeyProblem, labelValueProblem } from '../../shared/labels.ts';
import { parseLabelSelector, selectorMatches, type SelectorTerm } from '../../shared/label-selector.ts';
import { Labels } from '../../shared/api/schemas/common.ts';
import { serverFilterOf } from '../../shared/servers/filters.ts';

const terms = (s: string): SelectorTerm[] => {
  const parsed = parseLabelSelector(s);
  if (!parsed.ok) throw new Error(parsed.problem);
  return parsed.terms;
};
const problem = (s: string): string => {
  const parsed = parseLabelSelector(s);
  if (parsed.ok) throw new Error(`${s} parsed`);
  return parsed.problem;
};

describe('label selectors', () => {
  it('k=v: has k with the value v', () => {
    expect(terms('env=prod')).toEqual([{ op: 'eq', key: 'env', value: 'prod' }]);
    expect(selectorMatches(terms('env=prod'), { env: 'prod' })).toBe(true);
    expect(selectorMatches(terms('env=prod'), { env: 'dev' })).toBe(false);
    expect(selectorMatches(terms('env=prod'), {})).toBe(false);
    expect(selectorMatches(terms('env='), { env: '' })).toBe(true);
  });

  it('k!=v: no label k, or another value', () => {
    expect(terms('env!=prod')).toEqual([{ op: 'ne', key: 'env', value: 'prod' }]);
    expect(selectorMatches(terms('env!=prod'), { env: 'dev' })).toBe(true);
    expect(selectorMatches(terms('env!=prod'), {})).toBe(true);
    expect(selectorMatches(terms('env!=prod'), undefined)).toBe(true);
    expect(selectorMatches(terms('env!=prod'), { env: 'prod' })).toBe(false);
  });

  it('k: has label k, whatever its value', () => {
    expect(terms('example.com/tier')).toEqual([{ op: 'exists', key: 'example.com/tier' }]);
    expect(selectorMatches(terms('tier'), { tier: '' })).toBe(true);
    expect(selectorMatches(terms('tier'), { other: 'x' })).toBe(false);
  });

  it('!k: no label k', () => {
    expect(terms('!tier')).toEqual([{ op: 'absent', key: 'tier' }]);
    expect(selectorMatches(terms('!tier'), {})).toBe(true);
    expect(selectorMatches(terms('!tier'), { tier: 'gold' })).toBe(false);
  });

  it('commas mean and; spaces around terms and operators are ignored', () => {
    const t = terms(' env = prod , team!=red,tier , ! legacy ');
    expect(t).toEqual([
      { op: 'eq', key: 'env', value: 'prod' },
      { op: 'ne', key: 'team', value: 'red' },
      { op: 'exists', key: 'tier' },
      { op: 'absent', key: 'legacy' },
    ]);
    expect(selectorMatches(t, { env: 'prod', team: 'blue', tier: 'gold' })).toBe(true);
    expect(selectorMatches(t, { env: 'prod', team: 'red', tier: 'gold' })).toBe(false);
    expect(selectorMatches(t, { env: 'prod', tier: 'gold', legacy: '' })).toBe(false);
    expect(selectorMatches(t, { env: 'prod' })).toBe(false);
  });

  it('refuses bad selectors, naming the problem', () => {
    expect(problem('k==v')).toBe('`k==v` is not a selector term (use k=v, k!=v, k or !k)');
    expect(problem('=v')).toMatch(/`=v` is not a selector term/);
    expect(problem('!=v')).toMatch(/`!=v` is not a selector term/);
    expect(problem('k!v')).toMatch(/`k!v` is not a selector term/);
    expect(problem('k=v=w')).toMatch(/`k=v=w` is not a selector term/);
    expect(problem('a,,b')).toMatch(/empty term/);
    expect(problem('a,')).toMatch(/empty term/);
    expect(problem('')).toMatch(/empty/);
    expect(problem('-bad=x')).toBe('`-bad` is not a label key');
    expect(problem('k=bad value')).toBe('`bad value` is not a label value');
    expect(problem('Example.com/k')).toBe('`Example.com/k`: the prefix is not a DNS name');
    expect(problem(Array.from({ length: 33 }, (_, i) => `k${i}`).join(','))).toMatch(/at most 32 terms/);
  });
});

describe('label rules', () => {
  it('keys: optional DNS prefix, a name of 1 to 63 characters', () => {
    expect(labelKeyProblem('a')).toBeUndefined();
    expect(labelKeyProblem('app.kubernetes.io/name')).toBeUndefined();
    expect(labelKeyProblem('a'.repeat(63))).toBeUndefined();
    expect(labelKeyProblem('a'.repeat(64))).toBeDefined();
    expect(labelKeyProblem('')).toBeDefined();
    expect(labelKeyProblem('a_')).toBeDefined();
    expect(labelKeyProblem('/a')).toBeDefined();
    expect(labelKeyProblem('a/b/c')).toBeDefined();
  });

  it('values: empty, or the name rule', () => {
    expect(labelValueProblem('')).toBeUndefined();
    expect(labelValueProblem('v1.2_x-y')).toBeUndefined();
    expect(labelValueProblem('x'.repeat(64))).toBeDefined();
    expect(labelValueProblem('a/b')).toBeDefined();
  });

  it('the schema takes at most 32 labels and names a bad key', () => {
    const of = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']));
    expect(Labels.safeParse(of(32)).success).toBe(true);
    expect(Labels.safeParse(of(33)).success).toBe(false);
    const bad = Labels.safeParse({ ok: 'v', 'no way': 'v' });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues[0]!.path).toEqual(['no way']);
  });
});

describe('the table filter of the server filters', () => {
  it('none given: no filter; each given: one term, label keys as attribute names, never spliced in', () => {
    expect(serverFilterOf({})).toBeUndefined();
    const f = serverFilterOf({ status: 'active', name_prefix: 'mc-', label_selector: 'example.com/env=prod,!legacy' })!;
    expect(f.expression).toBe('#f0 = :f0 AND begins_with(#fname, :fname) AND #flabels.#fl0 = :fl0 AND attribute_not_exists(#flabels.#fl1)');
    expect(f.names).toMatchObject({ '#f0': 'status', '#fl0': 'example.com/env', '#fl1': 'legacy', '#flabels': 'labels' });
    expect(f.values).toEqual({ ':f0': 'active', ':fname': 'mc-', ':fl0': 'prod' });
  });
});
