import * as z from 'zod';
import { define } from '../route-def.ts';
import { Health } from '../schemas/health.ts';

/** The public group: health, the OpenAPI document and its reference page (no credential). */
export const publicRoutes = define({
  health: {
    method: 'GET',
    path: '/v1/health',
    group: 'public',
    tag: 'Health',
    auth: 'none',
    summary: 'Liveness and instance count',
    response: Health,
  },
  openapi: {
    method: 'GET',
    path: '/openapi.json',
    group: 'public',
    tag: 'Health',
    auth: 'none',
    hidden: true,
    // Served as text: a prebuilt document in Lambda (shared/openapi/bundle-files.ts).
    raw: true,
    summary: 'This OpenAPI document',
    response: z.string(),
  },
  docs: {
    method: 'GET',
    path: '/docs',
    group: 'public',
    tag: 'Health',
    auth: 'none',
    hidden: true,
    raw: true,
    summary: 'Interactive API reference',
    response: z.string(),
  },
  docsAsset: {
    method: 'GET',
    path: '/docs/assets/:file',
    group: 'public',
    tag: 'Health',
    auth: 'none',
    hidden: true,
    raw: true,
    summary: 'Assets of the API reference (served by the service itself, no CDN)',
    params: z.object({ file: z.string().max(64) }),
    response: z.string(),
  },
});
