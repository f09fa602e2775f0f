import { loadSecretsManager, type SecretsManagerClient } from '../packages.ts';
import { type InstanceKeys, SECRET_CACHE_MS, type SecretStore } from './store.ts';

/*
 * Panel keys in AWS Secrets Manager: one secret per instance, `<prefix>/instances/<id>`, cached per
 * process for SECRET_CACHE_MS.
 *
 * For 7 days after DeleteSecret (its recovery window) Secrets Manager answers
 * InvalidRequestException "…marked for deletion" rather than ResourceNotFoundException: both mean
 * the instance has no keys.
 */
const markedForDeletion = (err: unknown): boolean =>
  (err as Error).name === 'InvalidRequestException' && /marked for deletion/i.test((err as Error).message);
const noSecret = (err: unknown): boolean => (err as Error).name === 'ResourceNotFoundException' || markedForDeletion(err);

export class AwsSecretStore implements SecretStore {
  private readonly prefix: string;
  private readonly cache = new Map<string, { keys: InstanceKeys | undefined; at: number }>();

  constructor(prefix: string) {
    this.prefix = prefix;
  }

  private name(instanceId: string): string {
    return `${this.prefix}/instances/${instanceId}`;
  }

  private async sdk() {
    const sm = await loadSecretsManager();
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
      if (!noSecret(err)) throw err;
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
      if (markedForDeletion(err)) {
        // Keys set again within the recovery window: take the secret back rather than fail.
        await client.send(new sm.RestoreSecretCommand({ SecretId: this.name(instanceId) }));
        await client.send(new sm.PutSecretValueCommand({ SecretId: this.name(instanceId), SecretString }));
        this.cache.set(instanceId, { keys, at: Date.now() });
        return;
      }
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
      if (!noSecret(err)) throw err;
    }
    this.cache.delete(instanceId);
  }
}

let awsClient: SecretsManagerClient | undefined;
