import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { notFound } from '../errors.ts';
import type { RawResponse } from '../http/handler.ts';
import { ASSETS_DIR, bundleFolder, DOCUMENT_FILE, SERVER_URL_PLACEHOLDER, withServerUrl } from './bundle-files.ts';
import { openApiDocument } from './document.ts';

/**
 * /docs: Swagger UI, served entirely by the service (no CDN), so the reference works offline.
 * In Lambda the assets are read from the function's asset folder (./bundle-files.ts), never from
 * a package: a deployed function has no node_modules. Elsewhere they come from swagger-ui-dist.
 */
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'init.js': 'text/javascript; charset=utf-8',
};

function assetDir(): string {
  const folder = bundleFolder();
  return folder ? join(folder, ASSETS_DIR) : dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
}

const INIT_JS = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#api', deepLinking: true, persistAuthorization: true, tryItOutEnabled: true });
});`;

export const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Hosting Control Plane API reference</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="api"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/init.js"></script>
</body>
</html>`;

const cache = new Map<string, string>();

export async function docsAsset(file: string): Promise<RawResponse> {
  // Own properties only: `constructor` or `__proto__` must be a 404, not a lookup on Object.prototype.
  const contentType = Object.hasOwn(ASSETS, file) ? ASSETS[file] : undefined;
  if (!contentType) throw notFound('Asset');
  if (file === 'init.js') return { contentType, body: INIT_JS, cacheSeconds: 3600 };
  let body = cache.get(file);
  if (body === undefined) {
    body = await readFile(join(assetDir(), file), 'utf8');
    cache.set(file, body);
  }
  return { contentType, body, cacheSeconds: 86_400 };
}

let documentText: Promise<string> | undefined;

/**
 * GET /openapi.json: in Lambda the document written at bundle time (≈ 1.2 MB; generating it took a
 * cold function ≈ 0.3–0.9 s of CPU; the bundle holds no generator, infra/bundle.ts), elsewhere built
 * in process with the first request.
 */
export async function openApiText(serverUrl: string): Promise<RawResponse> {
  const folder = bundleFolder();
  documentText ??= folder
    ? readFile(join(folder, DOCUMENT_FILE), 'utf8')
    : Promise.resolve().then(() => JSON.stringify(openApiDocument(SERVER_URL_PLACEHOLDER)));
  // A failed read is not kept: the next request tries again.
  const text = await documentText.catch((err: unknown) => {
    documentText = undefined;
    throw err;
  });
  return { contentType: 'application/json; charset=utf-8', body: withServerUrl(text, serverUrl) };
}
