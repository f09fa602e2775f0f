import { createHash, createHmac } from 'node:crypto';
import { awsEnvironment } from '../config/env.ts';

/**
 * One S3 PutObject, signed with Signature Version 4 from the function's own credentials (Lambda's
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN). The project has no S3 client
 * package and this is its only S3 call; `AWS_ENDPOINT_URL_S3` points it elsewhere (path style).
 */
export async function putObject(input: {
  bucket: string;
  key: string;
  body: Uint8Array;
  contentType: string;
  cacheControl: string;
}): Promise<void> {
  const { accessKeyId: keyId, secretAccessKey: secret, sessionToken: token, region, s3Endpoint: endpoint } = awsEnvironment();
  if (!keyId || !secret) throw new Error('S3 upload: no AWS credentials in the environment');
  const url = endpoint
    ? new URL(`${endpoint.replace(/\/$/, '')}/${input.bucket}/${input.key}`)
    : new URL(`https://${input.bucket}.s3.${region}.amazonaws.com/${input.key}`);
  const sha256 = (data: string | Uint8Array) => createHash('sha256').update(data).digest('hex');
  const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();
  const amzDate = new Date().toISOString().replace(/[-:]|\.\d{3}/g, '');
  const day = amzDate.slice(0, 8);
  const headers: Record<string, string> = {
    'cache-control': input.cacheControl,
    'content-type': input.contentType,
    host: url.host,
    'x-amz-content-sha256': sha256(input.body),
    'x-amz-date': amzDate,
    ...(token ? { 'x-amz-security-token': token } : {}),
  };
  const names = Object.keys(headers).sort();
  const signedHeaders = names.join(';');
  const canonical = [
    'PUT',
    url.pathname,
    '',
    ...names.map((n) => `${n}:${headers[n]}`),
    '',
    signedHeaders,
    headers['x-amz-content-sha256'],
  ].join('\n');
  const scope = `${day}/${region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${secret}`, day), region), 's3'), 'aws4_request');
  const signature = createHmac('sha256', signingKey).update(toSign).digest('hex');
  const { host: _host, ...sent } = headers;
  const response = await fetch(url, {
    method: 'PUT',
    body: input.body,
    headers: {
      ...sent,
      authorization: `AWS4-HMAC-SHA256 Credential=${keyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`,
    },
  });
  if (!response.ok) throw new Error(`S3 upload of ${input.key} failed: HTTP ${response.status}`);
}
