import { createGroupHandler } from '../../shared/http/handler.ts';
import { countInstances } from '../../shared/instances/index.ts';
import { API_VERSION, openApiDocument } from '../../shared/openapi/document.ts';
import { DOCS_HTML, docsAsset } from '../../shared/openapi/docs-page.ts';

/** Public group: health, the OpenAPI document and the interactive reference. No credential. */
export const handler = createGroupHandler('public', {
  health: async () => ({ status: 'ok', version: API_VERSION, time: new Date().toISOString(), instances: await countInstances() }),
  openapi: async ({ baseUrl }) => openApiDocument(baseUrl) as Record<string, unknown>,
  docs: async () => ({ contentType: 'text/html; charset=utf-8', body: DOCS_HTML, cacheSeconds: 300 }),
  docsAsset: async ({ params }) => docsAsset(params.file),
});
