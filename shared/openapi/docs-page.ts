import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { notFound } from '../errors.ts';
import type { RawResponse } from '../http/handler.ts';

/**
 * /docs: Swagger UI, served entirely by the service (no CDN), so the reference works offline.
 * In the Lambda bundle the assets sit in `assets/` beside the code (copied by infra/bundle.ts);
 * elsewhere they come from the swagger-ui-dist package.
 */
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'init.js': 'text/javascript; charset=utf-8',
};

function assetDir(): string {
  const bundled = join(dirname(fileURLToPath(import.meta.url)), 'assets');
  if (existsSync(join(bundled, 'swagger-ui-bundle.js'))) return bundled;
  return dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
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
