import { createServer, type Server } from 'node:http';

/**
 * A local stand-in for AWS Secrets Manager's JSON API (the calls our code makes: GetSecretValue,
 * CreateSecret, PutSecretValue, DeleteSecret), so the code that only runs in AWS is exercised by the
 * real AWS SDK over HTTP. The SDK is pointed at it with `AWS_ENDPOINT_URL_SECRETS_MANAGER`.
 */
export interface FakeSecretsManager {
  url: string;
  secrets: Map<string, string>;
  /**
   * Secrets deleted with a recovery window, as Secrets Manager keeps them for 7 days: every
   * operation on them but RestoreSecret answers InvalidRequestException, and so does creating one
   * of the same name.
   */
  scheduledForDeletion: Map<string, string>;
  calls: { action: string; secretId: string }[];
  close(): Promise<void>;
}

export async function startFakeSecretsManager(): Promise<FakeSecretsManager> {
  const secrets = new Map<string, string>();
  const scheduledForDeletion = new Map<string, string>();
  const calls: FakeSecretsManager['calls'] = [];
  const arn = (name: string) => `arn:aws:secretsmanager:us-east-1:123456789012:secret:${name}-AbCdEf`;
  const nameOf = (id: string) => id.replace(/^arn:aws:secretsmanager:[^:]+:\d+:secret:/, '').replace(/-[A-Za-z0-9]{6}$/, '');
  const server: Server = createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const action = String(req.headers['x-amz-target'] ?? '').replace('secretsmanager.', '');
    const body = JSON.parse(raw || '{}') as { SecretId?: string; Name?: string; SecretString?: string };
    const name = nameOf(body.SecretId ?? body.Name ?? '');
    calls.push({ action, secretId: name });
    const send = (status: number, payload: unknown, errorType?: string) => {
      res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1', ...(errorType ? { 'x-amzn-errortype': errorType } : {}) });
      res.end(JSON.stringify(payload));
    };
    const notFound = () =>
      send(
        400,
        { __type: 'ResourceNotFoundException', message: "Secrets Manager can't find the specified secret." },
        'ResourceNotFoundException',
      );
    // Secrets Manager's own words (GetSecretValue, PutSecretValue, DeleteSecret, CreateSecret).
    const marked = () =>
      send(
        400,
        {
          __type: 'InvalidRequestException',
          message:
            action === 'CreateSecret'
              ? "You can't create this secret because a secret with this name is already scheduled for deletion."
              : "You can't perform this operation on the secret because it was marked for deletion.",
        },
        'InvalidRequestException',
      );
    if (scheduledForDeletion.has(name) && action !== 'RestoreSecret') return marked();
    switch (action) {
      case 'RestoreSecret':
        if (!scheduledForDeletion.has(name)) return notFound();
        secrets.set(name, scheduledForDeletion.get(name)!);
        scheduledForDeletion.delete(name);
        return send(200, { ARN: arn(name), Name: name });
      case 'GetSecretValue':
        return secrets.has(name) ? send(200, { ARN: arn(name), Name: name, SecretString: secrets.get(name), VersionId: 'v1' }) : notFound();
      case 'CreateSecret':
        if (secrets.has(name)) return send(400, { __type: 'ResourceExistsException', message: 'exists' }, 'ResourceExistsException');
        secrets.set(name, body.SecretString ?? '');
        return send(200, { ARN: arn(name), Name: name, VersionId: 'v1' });
      case 'PutSecretValue':
        if (!secrets.has(name)) return notFound();
        secrets.set(name, body.SecretString ?? '');
        return send(200, { ARN: arn(name), Name: name, VersionId: 'v2' });
      case 'DeleteSecret':
        if (!secrets.has(name)) return notFound();
        scheduledForDeletion.set(name, secrets.get(name)!);
        secrets.delete(name);
        return send(200, { ARN: arn(name), Name: name, DeletionDate: Date.now() / 1000 });
      default:
        return send(400, { __type: 'InvalidRequestException', message: `unsupported ${action}` }, 'InvalidRequestException');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    secrets,
    scheduledForDeletion,
    calls,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
