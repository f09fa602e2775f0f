import { type ControlPlaneClient, ControlPlaneError, createControlPlaneClient } from '../../clients/typescript/index.ts';
import { sessionToken, signIn } from './auth.ts';
import { config } from './config.ts';

export { ControlPlaneError };
export type { Schema } from '../../clients/typescript/index.ts';

/**
 * The API, only through the typed client package: every path, body and answer checked by the
 * compiler against the OpenAPI document. The session's current ID token goes on each request (so a
 * renewed token is used at once); a 401 sends the user to sign in again.
 */
let client: ControlPlaneClient | undefined;

export function api(): ControlPlaneClient {
  client ??= createControlPlaneClient({
    baseUrl: config().apiBaseUrl || location.origin,
    fetch: async (request) => {
      const token = sessionToken();
      if (token) request.headers.set('Authorization', `Bearer ${token}`);
      const response = await globalThis.fetch(request);
      if (response.status === 401 && token) void signIn();
      return response;
    },
  });
  return client;
}

/**
 * The data of an answer, or a ControlPlaneError carrying the API's message and request id:
 * `const account = await ok(api().GET('/v1/account'))`.
 */
export async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (error !== undefined || !response.ok) throw new ControlPlaneError(response, error);
  return data as T;
}

/**
 * Where the API says a field is wrong (`details.issues` of a `validation_failed` or
 * `limit_exceeded`), by field without its `body.`: `{ ramMb: '…', 'variables.X': '…' }`; the first
 * message of a field wins.
 */
export function fieldIssues(error: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!(error instanceof ControlPlaneError)) return out;
  const issues = (error.details as { issues?: unknown } | undefined)?.issues;
  for (const issue of Array.isArray(issues) ? (issues as { field: string; message: string }[]) : []) {
    out[issue.field.replace(/^body\./, '')] ??= issue.message;
  }
  return out;
}
