import { authenticate, bearerToken } from '../../shared/auth/authenticate.ts';
import { ApiError } from '../../shared/errors.ts';
import { consumeRateLimit } from '../../shared/http/rate-limit.ts';
import { errorFields, logger } from '../../shared/observability/logger.ts';

/**
 * The Lambda REQUEST authorizer of API Gateway (HTTP API, payload 2.0, simple responses) in front
 * of every `/v1/admin/*` route (infra/stacks/api-stack.ts). It runs the service's own credential
 * check (`authenticate`: API keys by their hash, session tokens against the JWKS) and lets the
 * request through only for an admin principal. The admin function still checks every request in
 * its pipeline: this is a second wall at the edge, so that a fault in one group's routing or
 * pipeline cannot expose the admin endpoints, and refused callers never reach the admin code.
 *
 * A refused credential counts against the caller's address (`ip:<address>`), the same budget the
 * pipeline charges refused credentials to, so guessing at the edge is not free: the address's
 * other requests are throttled (429) by the functions once it is spent. The authorizer is no
 * route group and has no pipeline; it uses only the rate-limit counter of shared/http.
 */
export interface AuthorizerEvent {
  type?: string;
  routeArn?: string;
  identitySource?: string[] | null;
  headers?: Record<string, string | undefined>;
  requestContext?: { requestId?: string; http?: { sourceIp?: string; path?: string; method?: string } };
}

export interface AuthorizerResult {
  isAuthorized: boolean;
  /** Reaches the admin function as `requestContext.authorizer.lambda`: ids only, never a credential. */
  context?: Record<string, string | boolean>;
}

const DENY: AuthorizerResult = { isAuthorized: false };

export async function handler(event: AuthorizerEvent): Promise<AuthorizerResult> {
  const authorization = event.headers?.authorization ?? event.identitySource?.[0];
  try {
    const { principal } = await authenticate(bearerToken(authorization));
    if (!principal.isAdmin) {
      logger.warn('admin route refused at the edge: not an admin', {
        accountId: principal.accountId,
        credential: principal.credential.kind,
        requestId: event.requestContext?.requestId,
      });
      return DENY;
    }
    return {
      isAuthorized: true,
      context: { accountId: principal.accountId, credentialKind: principal.credential.kind, credentialId: principal.credential.id },
    };
  } catch (err) {
    // A refused credential is an answer (403 at the edge); anything else (DynamoDB, the JWKS) is
    // logged and still refused: failing closed is the point of this function.
    if (err instanceof ApiError) {
      logger.info('admin route refused at the edge', { code: err.code, requestId: event.requestContext?.requestId });
      await consumeRateLimit(`ip:${event.requestContext?.http?.sourceIp ?? 'unknown'}`).catch((countErr: unknown) =>
        logger.warn('authorizer could not count a refused credential', errorFields(countErr)),
      );
    } else {
      logger.error('authorizer failed', { ...errorFields(err), requestId: event.requestContext?.requestId });
    }
    return DENY;
  }
}
