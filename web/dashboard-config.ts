/**
 * The dashboard's run-time configuration, `/app/config.json`: written by the local stack
 * (dev/local-web.ts) and, in AWS, deployed beside the build by infra/constructs/dashboard.ts. One
 * build serves every stage; nothing about the identity provider is baked in.
 */
export interface DashboardConfig {
  oidc: {
    /** The issuer's base URL (`/.well-known/openid-configuration` below it), or the explicit metadata. */
    authority: string;
    clientId: string;
    /** Default `openid email profile`. */
    scope?: string;
    /** Endpoints given here are not discovered (Cognito's hosted UI needs `end_session_endpoint`). */
    metadata?: Record<string, string>;
  };
  /** Where the API is; empty (the default) means this origin (`/v1/*` on the same host). */
  apiBaseUrl?: string;
}
