/** The store's interface and cache time: read by ./index.ts and by the Secrets Manager store it loads on use (./aws-store.ts). */
export interface InstanceKeys {
  appApiKey: string;
  clientApiKey?: string;
}

export interface SecretStore {
  get(instanceId: string): Promise<InstanceKeys | undefined>;
  put(instanceId: string, keys: InstanceKeys): Promise<void>;
  delete(instanceId: string): Promise<void>;
}

/** How long a Lambda trusts its copy of a panel key: a rotated key is picked up within this. */
export const SECRET_CACHE_MS = 5 * 60_000;
