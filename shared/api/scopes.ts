/** Scopes a credential can hold (docs/api.md, "Conventions"). Session tokens hold every scope of their account. */
export const SCOPES = [
  'account:read',
  'keys:write',
  'servers:read',
  'servers:write',
  'billing:read',
  'billing:write',
  'webhooks:read',
  'webhooks:write',
  'admin',
] as const;

export type Scope = (typeof SCOPES)[number];

/** Every scope an account may hold: admins also hold `admin`. */
export const scopesOfAccount = (isAdmin: boolean): Scope[] => (isAdmin ? [...SCOPES] : SCOPES.filter((s) => s !== 'admin'));
