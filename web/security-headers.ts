/**
 * The dashboard's security headers, one source for the local stack (dev/local-web.ts) and
 * CloudFront's response headers policy (infra/constructs/dashboard.ts). The policy is strict: the
 * build has no inline script or style and loads nothing from another origin; what it connects to
 * is this origin (the API under /v1), the identity provider's token endpoint, and the Wings nodes'
 * console websockets and signed upload addresses (a file upload is POSTed from the browser to the
 * node, as the API hands it out), whose hosts are only known at run time (an admin adds nodes),
 * hence `wss:` and `https:`.
 */
export interface CspOptions {
  /** Origins the page fetches from besides its own: the identity provider (Cognito's domain). */
  connect?: string[];
  /** Origins a form may post to besides this one (the identity provider's sign-in). */
  formAction?: string[];
  /** Allow `ws:` consoles and `http:` uploads (the local simulator speaks plain websockets and HTTP). */
  insecureWebsockets?: boolean;
}

export function contentSecurityPolicy(options: CspOptions = {}): string {
  const directives: Record<string, string[]> = {
    'default-src': ["'none'"],
    'script-src': ["'self'"],
    'style-src': ["'self'"],
    'img-src': ["'self'", 'data:'],
    'font-src': ["'self'"],
    'connect-src': ["'self'", 'wss:', 'https:', ...(options.insecureWebsockets ? ['ws:', 'http:'] : []), ...(options.connect ?? [])],
    'manifest-src': ["'self'"],
    'form-action': ["'self'", ...(options.formAction ?? [])],
    'frame-ancestors': ["'none'"],
    'base-uri': ["'none'"],
    'object-src': ["'none'"],
  };
  return Object.entries(directives)
    .map(([name, values]) => `${name} ${values.join(' ')}`)
    .join('; ');
}

/** The other headers every dashboard response carries (HSTS is added where the origin is HTTPS). */
export const DASHBOARD_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=(), payment=()',
};
