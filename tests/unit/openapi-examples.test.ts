import { describe, expect, it } from 'vitest';
import { routeEntries, toTemplatePath } from '../../shared/api/routes.ts';
import { openApiDocument } from '../../shared/openapi/document.ts';

/**
 * /docs shows each operation's success example: it must be a response the operation could give,
 * so each is parsed with the route's own zod response schema (the one the pipeline checks real
 * responses against outside AWS).
 */
type Doc = { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { example?: unknown }> }> }>> };

describe('OpenAPI success examples', () => {
  const doc = openApiDocument() as Doc;
  // JSON answers only: a file (an invoice PDF) has no example to show.
  const routes = routeEntries().filter(([, def]) => !def.hidden && def.group !== 'dev' && def.response && !def.mediaType);

  it.each(routes.map(([id, def]) => [id, def] as const))('%s: the example parses with the response schema', (_id, def) => {
    const operation = doc.paths[toTemplatePath(def.path)]![def.method.toLowerCase()]!;
    const success = operation.responses[String(def.status ?? 200)]!;
    const example = success.content?.['application/json']?.example;
    expect(example).toBeDefined();
    const parsed = def.response!.safeParse(example);
    expect(parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual([]);
  });

  it('no example carries noise: e-mails are addresses, times are times', () => {
    const text = JSON.stringify(Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((op) => op.responses)));
    for (const email of text.match(/"email":"[^"]*"/g) ?? []) expect(email).toBe('"email":"ann@example.com"');
  });
});
