import { describe, expect, it } from 'vitest';
import { commitMessageProblems } from '../../dev/commit-message.ts';

describe('commit message rule', () => {
  it('takes a short subject with a body that says why', () => {
    expect(commitMessageProblems('Hold the item table to the key builders\n\nThe map had drifted.\n')).toEqual([]);
  });

  it('refuses a long subject, a missing body, a missing blank line and a full stop', () => {
    expect(commitMessageProblems(`${'x'.repeat(73)}\n\nwhy`)).toEqual([expect.stringContaining('73 characters')]);
    expect(commitMessageProblems('Short subject\n')).toEqual([expect.stringContaining('body is missing')]);
    expect(commitMessageProblems('Short subject\nwhy right here')).toContainEqual(expect.stringContaining('second line must be blank'));
    expect(commitMessageProblems('Short subject.\n\nwhy')).toEqual([expect.stringContaining('full stop')]);
    expect(commitMessageProblems('\n\nbody only')).toEqual(['the subject line is empty']);
  });

  it('lets merges go without a body and ignores comment lines', () => {
    expect(commitMessageProblems("Merge branch 'money-pdf'\n# Please enter a commit message\n")).toEqual([]);
    expect(commitMessageProblems(`Subject\n\n# ${'x'.repeat(200)}\nthe why`)).toEqual([]);
  });
});
