import createClient, { type Client } from 'openapi-fetch';
import type { components, operations, paths } from './schema.ts';

/**
 * The control plane's typed client: openapi-fetch over the types openapi-typescript generates
 * from the OpenAPI document (schema.ts, `npm run client`). Every path, parameter, body and
 * response is checked by the compiler against the document; nothing here is written per endpoint.
 *
 *   const api = createControlPlaneClient({ baseUrl: 'http://127.0.0.1:3000', token: process.env.KEY! });
 *   const { data, error } = await api.GET('/v1/servers/{id}', { params: { path: { id } } });
 */
export type { components, operations, paths };
export type ControlPlaneClient = Client<paths, 'application/json'>;

/** The body a status code of `R` (an operation's `responses`) carries, for the 4xx and 5xx ones only. */
type ErrorBodies<R> = {
  [S in keyof R]: `${S & (number | string)}` extends `4${string}` | `5${string}` | 'default'
    ? R[S] extends { content: { 'application/json': infer Body } }
      ? Body
      : never
    : never;
}[keyof R];
/** What an operation can fail with: `OperationError<'createServer'>['error']['code']` is the codes the document lists for it. */
export type OperationError<Id extends keyof operations> = ErrorBodies<operations[Id]['responses']>;
/** The body of every failure, whatever the operation or status: `{ error: { code, message, details? } }`. */
export type ErrorEnvelope = { [Id in keyof operations]: OperationError<Id> }[keyof operations];
/** Every error code the document lists. */
export type ErrorCode = ErrorEnvelope['error']['code'];
/** A named schema of the document: `Schema<'Server'>`. */
export type Schema<Name extends keyof components['schemas']> = components['schemas'][Name];

export interface ControlPlaneClientOptions {
  /** The service's root, e.g. `http://127.0.0.1:3000` or the API Gateway stage URL (no `/v1`). */
  baseUrl: string;
  /** An API key (`cp_live_…`) or a session token; sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Another fetch (tests, retries, tracing); globalThis.fetch by default. */
  fetch?: (input: Request) => Promise<Response>;
}

export function createControlPlaneClient({ baseUrl, token, fetch }: ControlPlaneClientOptions): ControlPlaneClient {
  return createClient<paths>({
    baseUrl,
    ...(fetch ? { fetch } : {}),
    ...(token ? { headers: { Authorization: `Bearer ${token}` } } : {}),
  });
}
