import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { getConfig } from '../config/env.ts';

/**
 * Panel keys, behind one interface: AWS Secrets Manager in AWS (one secret per instance, named
 * `<prefix>/instances/<id>`, cached per Lambda for SECRET_CACHE_MS), and for the local stack a JSON
 * file (mode 0600) under the data folder, or memory. Never the table, never a response or a log.
 */
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

class LocalSecretStore implements SecretStore {
  private readonly file: string | undefined;
  private memory: Record<string, InstanceKeys> = {};

  constructor(file: string | undefined) {
    this.file = file;
  }

  private load(): Record<string, InstanceKeys> {
    if (!this.file) return this.memory;
    return existsSync(this.file) ? (JSON.parse(readFileSync(this.file, 'utf8')) as Record<string, InstanceKeys>) : {};
  }

  private save(all: Record<string, InstanceKeys>): void {
    if (!this.file) {
      this.memory = all;
      return;
    }
    mkdirSync(dirname(this.file), { recursive: true });
    writeFileSync(this.file, JSON.stringify(all, null, 2), { mode: 0o600 });
    chmodSync(this.file, 0o600);
  }

  async get(instanceId: string) {
    return this.load()[instanceId];
  }

  async put(instanceId: string, keys: InstanceKeys) {
    this.save({ ...this.load(), [instanceId]: keys });
  }

  async delete(instanceId: string) {
    const all = this.load();
    delete all[instanceId];
    this.save(all);
  }
}

class AwsSecretStore implements SecretStore {
  private readonly prefix: string;
  private readonly cache = new Map<string, { keys: InstanceKeys | undefined; at: number }>();

  constructor(prefix: string) {
    this.prefix = prefix;
  }

  private name(instanceId: string): string {
    return `${this.prefix}/instances/${instanceId}`;
  }

  private async sdk() {
    // Loaded on first use so functions that never touch panel keys do not pay for the client.
    const sm = await import('@aws-sdk/client-secrets-manager');
    awsClient ??= new sm.SecretsManagerClient({});
    return { sm, client: awsClient };
  }

  async get(instanceId: string) {
    const hit = this.cache.get(instanceId);
    if (hit && Date.now() - hit.at < SECRET_CACHE_MS) return hit.keys;
    const { sm, client } = await this.sdk();
    let keys: InstanceKeys | undefined;
    try {
      const out = await client.send(new sm.GetSecretValueCommand({ SecretId: this.name(instanceId) }));
      keys = out.SecretString ? (JSON.parse(out.SecretString) as InstanceKeys) : undefined;
    } catch (err) {
      if ((err as Error).name !== 'ResourceNotFoundException') throw err;
    }
    this.cache.set(instanceId, { keys, at: Date.now() });
    return keys;
  }

  async put(instanceId: string, keys: InstanceKeys) {
    const { sm, client } = await this.sdk();
    const SecretString = JSON.stringify(keys);
    try {
      await client.send(new sm.PutSecretValueCommand({ SecretId: this.name(instanceId), SecretString }));
    } catch (err) {
      if ((err as Error).name !== 'ResourceNotFoundException') throw err;
      await client.send(
        new sm.CreateSecretCommand({
          Name: this.name(instanceId),
          SecretString,
          Description: 'Pterodactyl panel keys of one control-plane instance',
        }),
      );
    }
    this.cache.set(instanceId, { keys, at: Date.now() });
  }

  async delete(instanceId: string) {
    const { sm, client } = await this.sdk();
    try {
      await client.send(new sm.DeleteSecretCommand({ SecretId: this.name(instanceId), RecoveryWindowInDays: 7 }));
    } catch (err) {
      if ((err as Error).name !== 'ResourceNotFoundException') throw err;
    }
    this.cache.delete(instanceId);
  }
}

let awsClient: import('@aws-sdk/client-secrets-manager').SecretsManagerClient | undefined;
let store: { key: string; store: SecretStore } | undefined;

export function secretStore(): SecretStore {
  const config = getConfig().secrets;
  const key = JSON.stringify(config);
  if (store?.key !== key)
    store = { key, store: config.kind === 'aws' ? new AwsSecretStore(config.prefix) : new LocalSecretStore(config.file) };
  return store.store;
}
