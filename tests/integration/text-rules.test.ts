import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, expectEnvelope, type TestApi } from '../helpers/stack.ts';

/** Text rules over HTTP: each refused character in each field kind is a 400 naming the field. */
let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.stop());

const CHARS: [string, string][] = [
  ['U+2028 line separator', '\u2028'],
  ['U+2029 paragraph separator', '\u2029'],
  ['U+0085 NEL', '\u0085'],
  ['U+0080 first C1', '\u0080'],
  ['U+009B CSI', '\u009b'],
  ['U+009F last C1', '\u009f'],
];

const FIELDS: [string, string, (id: string) => string, (text: string) => unknown, string][] = [
  ['console command', 'POST', (id) => `/v1/servers/${id}/command`, (t) => ({ command: t }), 'body.command'],
  ['server name', 'POST', () => '/v1/servers', (t) => ({ name: t, eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 }), 'body.name'],
  ['key name', 'POST', () => '/v1/keys', (t) => ({ name: t }), 'body.name'],
  [
    'instance name',
    'POST',
    () => '/v1/admin/instances',
    (t) => ({ name: t, baseUrl: 'https://panel.example.com', appApiKey: 'ptla_0123456789' }),
    'body.name',
  ],
  ['instance name (update)', 'PATCH', (id) => `/v1/admin/instances/${id}`, (t) => ({ name: t }), 'body.name'],
  [
    'egg variable value (deploy)',
    'POST',
    () => '/v1/servers',
    (t) => ({ name: 'ok name', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048, environment: { SERVER_JARFILE: t } }),
    'body.environment.SERVER_JARFILE',
  ],
  [
    'egg variable value (startup)',
    'PUT',
    (id) => `/v1/servers/${id}/startup`,
    (t) => ({ variables: { SERVER_JARFILE: t } }),
    'body.variables.SERVER_JARFILE',
  ],
  ['admin credit note', 'POST', (id) => `/v1/admin/users/${id}/credits`, (t) => ({ amountCents: 100, note: t }), 'body.note'],
];

/** C0 controls too for egg variable values (names refuse them as well; the table above is about the rarer ones). */
const C0: [string, string][] = [
  ['NUL', '\u0000'],
  ['LF', '\n'],
  ['CR', '\r'],
];

const TABLE = FIELDS.flatMap(([kind, method, path, body, field]) =>
  [...CHARS, ...(kind.startsWith('egg variable') ? C0 : [])].map(([label, c]) => ({
    kind,
    label,
    method,
    path,
    body: body(`abc${c}def`),
    field,
  })),
);

describe('text rules over HTTP', () => {
  it.each(TABLE)('$kind refuses $label with 400 naming $field', async ({ method, path, body, field }) => {
    const res = await api.call(method, path(randomUUID()), { body });
    expectEnvelope(res, 400, 'validation_failed');
    expect(res.body.error.details.issues.map((i: { field: string }) => i.field)).toContain(field);
  });

  it.each(['   ', ' \u00a0 ', '\u3000'])('a whitespace-only command %j is 400, not a panel error', async (command) => {
    const res = await api.call('POST', `/v1/servers/${randomUUID()}/command`, { body: { command } });
    expectEnvelope(res, 400, 'validation_failed');
    expect(res.body.error.details.issues.map((i: { field: string }) => i.field)).toContain('body.command');
  });
});
