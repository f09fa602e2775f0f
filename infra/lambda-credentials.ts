import type { AwsCredentialIdentityProvider } from '@aws-sdk/types';
import { fromEnv } from '@aws-sdk/credential-provider-env';
import type { DefaultProviderInit } from '@aws-sdk/credential-provider-node';
import { loadCredentialChain } from '../shared/packages.ts';

/**
 * Stands in for `@aws-sdk/credential-provider-node` in the Lambda bundles (infra/bundle.ts aliases
 * it here; local runs and tests use the SDK as it is). Lambda hands every function its role's
 * credentials in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, which is the
 * first link of the SDK's default chain; the other links (SSO, INI files, process, web identity,
 * container and instance metadata, with the STS/SSO clients they carry) are ≈ 110 KB that no
 * function reaches. They stay correct, not dead: without those variables (a runtime that serves
 * credentials otherwise) the whole default chain is loaded on first use (shared/packages.ts).
 */
export const defaultProvider = (init: DefaultProviderInit = {}): AwsCredentialIdentityProvider => {
  const env = fromEnv(init);
  let chain: AwsCredentialIdentityProvider | undefined;
  return async (options) => {
    if (process.env.AWS_ACCESS_KEY_ID && process.env.AWS_SECRET_ACCESS_KEY) return env(options);
    chain ??= (await loadCredentialChain()).defaultProvider(init);
    return chain(options);
  };
};
