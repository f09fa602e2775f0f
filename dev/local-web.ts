import { createReadStream, existsSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, normalize, sep } from 'node:path';
import type { DashboardConfig } from '../web/dashboard-config.ts';
import { contentSecurityPolicy, DASHBOARD_HEADERS } from '../web/security-headers.ts';

/**
 * The dashboard on the local stack: the build in web/dist under `/app/`, from the same origin as the
 * API (as CloudFront serves it in AWS), with the same security headers, and its run-time
 * configuration at `/app/config.json` pointing at the local identity provider.
 */
export const DASHBOARD_PATH = '/app/';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
  '.png': 'image/png',
};

export interface LocalWebOptions {
  /** The built dashboard (web/dist). */
  dir: string;
  config: DashboardConfig;
}

/** Answers a request for the dashboard; false when the path is not the dashboard's. */
export function serveDashboard(options: LocalWebOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  const csp = contentSecurityPolicy({ insecureWebsockets: true });
  const headers = (type: string, cache: string) => ({
    ...DASHBOARD_HEADERS,
    'content-security-policy': csp,
    'content-type': type,
    'cache-control': cache,
  });
  return (req, res) => {
    const path = (req.url ?? '/').split(/[?#]/, 1)[0]!;
    if (path !== '/app' && !path.startsWith(DASHBOARD_PATH)) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('Method Not Allowed');
      return true;
    }
    if (path === '/app') {
      res.writeHead(301, { location: DASHBOARD_PATH }).end();
      return true;
    }
    if (path === `${DASHBOARD_PATH}config.json`) {
      res.writeHead(200, headers(TYPES['.json']!, 'no-store')).end(req.method === 'HEAD' ? undefined : JSON.stringify(options.config));
      return true;
    }
    const relative = decodeURIComponent(path.slice(DASHBOARD_PATH.length));
    const file = normalize(join(options.dir, relative));
    const inside = file.startsWith(options.dir.endsWith(sep) ? options.dir : options.dir + sep);
    const isAsset = inside && relative !== '' && existsSync(file) && statSync(file).isFile();
    // Hashed assets are immutable; every other path is the app's (its router reads it): index.html.
    const target = isAsset ? file : join(options.dir, 'index.html');
    if (!existsSync(target)) {
      res.writeHead(503, { 'content-type': 'text/plain' }).end('The dashboard is not built: npm run web');
      return true;
    }
    const type = TYPES[extname(target)] ?? 'application/octet-stream';
    res.writeHead(200, headers(type, isAsset && relative.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache'));
    if (req.method === 'HEAD') res.end();
    else createReadStream(target).pipe(res);
    return true;
  };
}

/** Where the local stack serves the brand's logo (as CloudFront serves it from the dashboard bucket in AWS). */
export const BRAND_PATH = '/brand/';
const LOGO_FILE = /^logo-[0-9a-f]{16}\.(png|jpg)$/;

/** Answers `/brand/logo-<hash>.<png|jpg>` from `dir` (shared/brand/logo.ts writes there); false for other paths. */
export function serveBrandFiles(dir: string): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    const path = (req.url ?? '/').split(/[?#]/, 1)[0]!;
    if (!path.startsWith(BRAND_PATH)) return false;
    const name = path.slice(BRAND_PATH.length);
    const file = join(dir, name);
    // Only the names the upload writes: nothing else of the folder is reachable.
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !LOGO_FILE.test(name) || !existsSync(file)) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found');
      return true;
    }
    res.writeHead(200, {
      'content-type': name.endsWith('.png') ? 'image/png' : 'image/jpeg',
      'cache-control': 'public, max-age=31536000, immutable',
      'x-content-type-options': 'nosniff',
    });
    if (req.method === 'HEAD') res.end();
    else createReadStream(file).pipe(res);
    return true;
  };
}
