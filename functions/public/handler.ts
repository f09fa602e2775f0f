import { createGroupHandler } from '../../shared/http/handler.ts';
import { publicRoutes } from '../../shared/api/routes/public.ts';
import { countInstances } from '../../shared/instances/index.ts';
import { API_VERSION } from '../../shared/openapi/version.ts';
import { DOCS_HTML, docsAsset } from '../../shared/openapi/docs-page.ts';

/** Public group: health, the OpenAPI document and the interactive reference. No credential. */
export const handler = createGroupHandler('public', publicRoutes, {
  health: async () => ({ status: 'ok', version: API_VERSION, time: new Date().toISOString(), instances: await countInstances() }),
  // The document is built from the whole route table (every group's schemas) and zod-to-openapi:
  // loaded with the first request for it, not at every cold start of health checks.
  openapi: async ({ baseUrl }) => (await import('../../shared/openapi/document.ts')).openApiDocument(baseUrl) as Record<string, unknown>,
  docs: async () => ({ contentType: 'text/html; charset=utf-8', body: DOCS_HTML, cacheSeconds: 300 }),
  docsAsset: async ({ params }) => docsAsset(params.file),
});
