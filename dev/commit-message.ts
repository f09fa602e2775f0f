import { readFileSync } from 'node:fs';

/**
 * The commit message rule (CONTRIBUTING.md, "Commits"): a subject of at most 72 characters, a
 * blank line, then a body that says why. Merge commits and fixups are exempt from the body.
 * `.githooks/commit-msg` runs this on every commit (`git config core.hooksPath .githooks`).
 */
export const SUBJECT_MAX = 72;

export function commitMessageProblems(message: string): string[] {
  const lines = message
    .split('\n')
    .filter((line) => !line.startsWith('#'))
    .join('\n')
    .trimEnd()
    .split('\n');
  const subject = lines[0] ?? '';
  const problems: string[] = [];
  if (!subject.trim()) return ['the subject line is empty'];
  if (subject.length > SUBJECT_MAX)
    problems.push(`the subject has ${subject.length} characters (at most ${SUBJECT_MAX}): say the what there, the why in the body`);
  if (/\.$/.test(subject)) problems.push('the subject ends with a full stop');
  const exempt = /^(Merge|fixup!|squash!|Revert) /.test(subject);
  if (lines.length > 1 && lines[1]!.trim() !== '') problems.push('the second line must be blank (subject, blank line, body)');
  if (!exempt && !lines.slice(2).some((line) => line.trim())) problems.push('the body is missing: say why the change is made');
  return problems;
}

if (process.argv[1]?.endsWith('commit-message.ts')) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: node dev/commit-message.ts <message file>');
  const problems = commitMessageProblems(readFileSync(file, 'utf8'));
  if (problems.length) {
    console.error(`Commit message refused (CONTRIBUTING.md, "Commits"):\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    process.exit(1);
  }
}
