import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { crc32 } from 'node:zlib';
import { closeServer, listenLocal } from './local-server.ts';

/**
 * A stand-in for S3 that takes PutObject and nothing else, as the SDK's S3 client sends it to a
 * custom endpoint (AWS_ENDPOINT_URL_S3): path style (`/<bucket>/<key>`, what the SDK uses for an
 * IP address) or virtual-hosted (`<bucket>.<host>/<key>`). It checks what S3 would refuse before
 * storing: a request not signed for S3, a body whose SHA-256 or CRC32 differs from the one sent.
 * The signature itself is not verified (the SDK's signer makes it; no AWS account is involved).
 */
export interface StoredObject {
  body: Buffer;
  contentType: string | undefined;
  cacheControl: string | undefined;
}

export interface FakeS3 {
  url: string;
  /** By `<bucket>/<key>`. */
  objects: Map<string, StoredObject>;
  close(): Promise<void>;
}

/** The bucket and key a request names, whichever addressing style it uses. */
export function s3Address(req: IncomingMessage): { bucket: string; key: string } {
  const path = decodeURIComponent(new URL(req.url ?? '/', 'http://s3').pathname).slice(1);
  const hostname = String(req.headers.host ?? '').replace(/:\d+$/, '');
  const virtual = /^(.+)\.(127\.0\.0\.1|localhost)$/.exec(hostname);
  if (virtual) return { bucket: virtual[1]!, key: path };
  const [bucket = '', ...key] = path.split('/');
  return { bucket, key: key.join('/') };
}

/**
 * The operation of a request, as far as this stand-in tells them apart: a PUT of an object with no
 * sub-resource (the SDK adds `?x-id=PutObject`) and no copy source is PutObject.
 */
export function s3Operation(req: IncomingMessage): string {
  const query = new URL(req.url ?? '/', 'http://s3').searchParams;
  const subresources = [...query.keys()].filter((k) => k !== 'x-id');
  if (req.method === 'PUT' && subresources.length === 0 && !req.headers['x-amz-copy-source']) return 'PutObject';
  return query.get('x-id') ?? `${req.method} ${[...query.keys()].join('&')}`;
}

/** The request was signed with Signature V4 for S3 (its credential scope names the service). */
export const signedForS3 = (req: IncomingMessage): boolean =>
  /^AWS4-HMAC-SHA256 Credential=[^/]+\/\d{8}\/[^/]+\/s3\/aws4_request,/.test(String(req.headers.authorization ?? ''));

const xmlError = (code: string, message: string) =>
  `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`;

export async function startFakeS3(): Promise<FakeS3> {
  const objects = new Map<string, StoredObject>();
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const fail = (status: number, code: string, message: string) =>
      res.writeHead(status, { 'content-type': 'application/xml' }).end(xmlError(code, message));
    if (!signedForS3(req)) return fail(403, 'AccessDenied', 'Not signed with Signature V4 for s3');
    const { bucket, key } = s3Address(req);
    if (s3Operation(req) !== 'PutObject' || !bucket || !key) return fail(501, 'NotImplemented', `Only PutObject: ${req.method} ${req.url}`);
    if (String(req.headers['content-encoding'] ?? '').includes('aws-chunked'))
      return fail(501, 'NotImplemented', 'aws-chunked bodies are not taken here');
    const sha256 = String(req.headers['x-amz-content-sha256'] ?? '');
    if (/^[0-9a-f]{64}$/.test(sha256) && sha256 !== createHash('sha256').update(body).digest('hex'))
      return fail(400, 'XAmzContentSHA256Mismatch', 'The body is not the one signed');
    const crc = req.headers['x-amz-checksum-crc32'];
    if (crc !== undefined) {
      const ours = Buffer.alloc(4);
      ours.writeUInt32BE(crc32(body));
      if (crc !== ours.toString('base64')) return fail(400, 'BadDigest', 'The CRC32 checksum does not match the body');
    }
    objects.set(`${bucket}/${key}`, {
      body,
      contentType: req.headers['content-type'],
      cacheControl: req.headers['cache-control'],
    });
    res.writeHead(200, { etag: `"${createHash('md5').update(body).digest('hex')}"` }).end();
  });
  const port = await listenLocal(server);
  return { url: `http://127.0.0.1:${port}`, objects, close: () => closeServer(server) };
}
