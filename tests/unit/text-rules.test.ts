import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  AdminCredit,
  ConsoleCommand,
  CreateApiKey,
  CreateInstance,
  CreateServer,
  UpdateInstance,
  UpdateStartup,
} from '../../shared/api/schemas.ts';

/**
 * Text rules: every human-text field and the console command refuse the Unicode line and paragraph
 * separators, NEL and every other C1 control, wherever the character sits in the value.
 */
const C1 = Array.from({ length: 0x20 }, (_, i) => String.fromCharCode(0x80 + i));
const REFUSED = [...C1, '\u2028', '\u2029'];
const hex = (c: string) => `U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;

const server = { eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 };
const instance = { baseUrl: 'https://panel.example.com', appApiKey: 'ptla_0123456789' };
const FIELDS: [string, z.ZodType, (text: string) => unknown][] = [
  ['console command', ConsoleCommand, (t) => ({ command: t })],
  ['server name', CreateServer, (t) => ({ ...server, name: t })],
  ['key name', CreateApiKey, (t) => ({ name: t })],
  ['instance name (create)', CreateInstance, (t) => ({ ...instance, name: t })],
  ['instance name (update)', UpdateInstance, (t) => ({ name: t })],
  ['admin credit note', AdminCredit, (t) => ({ amountCents: 100, note: t })],
];
const fieldOf = (kind: string) => (kind === 'console command' ? 'command' : kind === 'admin credit note' ? 'note' : 'name');

describe('text rules', () => {
  for (const [kind, schema, body] of FIELDS) {
    it(`${kind}: plain text passes`, () => {
      expect(schema.safeParse(body('say hello')).success).toBe(true);
    });
    it.each(REFUSED.flatMap((c) => [`${c}start`, `in the ${c} middle`, `end${c}`].map((v) => [hex(c), v] as const)))(
      `${kind}: refuses %s (%j)`,
      (_code, value) => {
        const result = schema.safeParse(body(value));
        expect(result.success).toBe(false);
        expect(result.error!.issues.map((i) => i.path.join('.'))).toContain(fieldOf(kind));
      },
    );
  }

  it.each(['', ' ', '   ', '\u00a0', '\u3000 ', '\ufeff'])('a whitespace-only command %j is refused', (command) => {
    const result = ConsoleCommand.safeParse({ command });
    expect(result.success).toBe(false);
    expect(result.error!.issues.map((i) => i.path.join('.'))).toContain('command');
  });

  // Egg variable values go into the server's environment: text like any other, so NUL and newlines too.
  const EGG_VALUES: [string, z.ZodType, (value: string) => unknown, string][] = [
    [
      'deploy environment',
      CreateServer,
      (v) => ({ ...server, name: 'ok name', environment: { SERVER_JARFILE: v } }),
      'environment.SERVER_JARFILE',
    ],
    ['startup variables', UpdateStartup, (v) => ({ variables: { SERVER_JARFILE: v } }), 'variables.SERVER_JARFILE'],
  ];
  for (const [kind, schema, body, field] of EGG_VALUES) {
    it(`${kind}: a plain value and an empty one pass`, () => {
      expect(schema.safeParse(body('paper.jar')).success).toBe(true);
      expect(schema.safeParse(body('')).success).toBe(true);
    });
    it.each(['\u0000', '\n', '\r', '\t', '\u001b', '\u007f', ...REFUSED, '\u202e'].map((c) => [hex(c), `a${c}b`] as const))(
      `${kind}: refuses %s in a value`,
      (_code, value) => {
        const result = schema.safeParse(body(value));
        expect(result.success).toBe(false);
        expect(result.error!.issues.map((i) => i.path.join('.'))).toContain(field);
      },
    );
  }

  it('a command keeps its own spaces', () => {
    expect(ConsoleCommand.parse({ command: ' say  hi ' })).toEqual({ command: ' say  hi ' });
  });
});
