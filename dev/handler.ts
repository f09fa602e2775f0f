import { createGroupHandler } from '../shared/http/handler.ts';
import { getConfig } from '../shared/config/env.ts';
import { localJwks, mintSessionToken } from './local-idp.ts';

/** The `/dev/*` routes: local stack only, never part of the AWS deployment. */
export const handler = createGroupHandler('dev', {
  devSession: async ({ body }) => mintSessionToken(getConfig().oidc!.issuer, body.email),
  devJwks: async () => localJwks() as Promise<{ keys: Record<string, unknown>[] }>,
});
