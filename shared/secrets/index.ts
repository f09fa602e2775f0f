import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { getConfig } from '../config/env.ts';
import { AwsSecretStore } from './aws-store.ts';
import type { InstanceKeys, SecretStore } from './store.ts';

/**
 * Panel keys, behind one interface: AWS Secrets Manager in AWS (one secret per instance, named
 * `<prefix>/instances/<id>`, cached per Lambda for SECRET_CACHE_MS), and for the local stack a JSON
 * file (mode 0600) under the data folder, or memory. Never the table, never a response or a log.
 */
export { type InstanceKeys, SECRET_CACHE_MS, type SecretStore } from './store.ts';

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

let store: { key: string; store: SecretStore } | undefined;

export function secretStore(): SecretStore {
  const config = getConfig().secrets;
  const key = JSON.stringify(config);
  if (store?.key !== key)
    store = {
      key,
      store: config.kind === 'aws' ? new AwsSecretStore(config.prefix) : new LocalSecretStore(config.file),
    };
  return store.store;
}
