import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { TargetRefusedError, targetLookup } from './targets.ts';

/**
 * One webhook POST with node:http(s) rather than fetch: fetch follows redirects unless told, and
 * offers no hook between DNS resolution and connect. Here `lookup` is `targetLookup` when the
 * target must be public (AWS), so the address that was checked is the address connected to.
 *
 * - no redirect is followed (node's request never follows): a 3xx is a failed attempt;
 * - one deadline for the whole exchange (connect, TLS, headers, excerpt);
 * - at most EXCERPT_BYTES of the response body are read, then the socket is dropped: a receiver
 *   cannot make us read (or store) more.
 */
export const EXCERPT_BYTES = 256;

export interface SendInput {
  url: URL;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
  /** Resolve and check every address before connecting (AWS). */
  guarded: boolean;
}

export interface SendResult {
  /** The HTTP status, when one came back. */
  status: number | null;
  /** Null on a 2xx; otherwise why the attempt failed (`http_500`, `redirect_not_followed`, `timeout`, `target_refused: …`, `connection_failed: ECONNREFUSED`). */
  error: string | null;
  durationMs: number;
  responseExcerpt: string | null;
}

export function sendWebhook(input: SendInput): Promise<SendResult> {
  const started = performance.now();
  const request = input.url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    const finish = (result: Omit<SendResult, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve({ ...result, durationMs: Math.round(performance.now() - started) });
    };
    const req = request(input.url, {
      method: 'POST',
      headers: { ...input.headers, 'content-length': String(Buffer.byteLength(input.body)) },
      // A fresh connection per attempt: a pooled socket would skip the lookup (and its check).
      agent: false,
      ...(input.guarded ? { lookup: targetLookup as never } : {}),
    });
    const timer = setTimeout(() => finish({ status: null, error: 'timeout', responseExcerpt: null }), input.timeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err instanceof TargetRefusedError) return finish({ status: null, error: err.message, responseExcerpt: null });
      finish({ status: null, error: `connection_failed: ${err.code ?? err.name}`, responseExcerpt: null });
    });
    req.on('response', (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      let bytes = 0;
      const done = () => {
        const excerpt = Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8');
        const error = status >= 200 && status < 300 ? null : status >= 300 && status < 400 ? 'redirect_not_followed' : `http_${status}`;
        finish({ status, error, responseExcerpt: excerpt || null });
      };
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        bytes += chunk.length;
        if (bytes >= EXCERPT_BYTES) done();
      });
      res.on('end', done);
      res.on('error', done);
      res.on('aborted', done);
    });
    req.end(input.body);
  });
}
