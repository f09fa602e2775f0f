import type { Scope } from '../api/scopes.ts';

/** Who is calling: resolved once per request by shared/auth/authenticate.ts. */
export interface Principal {
  accountId: string;
  email: string;
  isAdmin: boolean;
  scopes: ReadonlySet<Scope>;
  credential: { kind: 'api_key' | 'session'; id: string };
}
