import { getConfig } from '../config/env.ts';
import { ApiError } from '../errors.ts';

/**
 * Which URLs an endpoint may point at. In AWS: `https` only, and (at delivery, after DNS
 * resolution) no private, loopback, link-local or other non-public address. In the local stack
 * plain `http` is allowed on loopback too, so a receiver on this machine can be tested.
 */
export function checkTargetUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid('url must be an absolute URL');
  }
  if (url.username || url.password) throw invalid('url must not carry credentials');
  const inAws = getConfig().stage === 'aws';
  if (url.protocol === 'https:') return url;
  if (url.protocol === 'http:' && !inAws && isLoopbackHost(url.hostname)) return url;
  throw invalid(inAws ? 'url must use https' : 'url must use https (plain http only on loopback in the local stack)');
}

const isLoopbackHost = (host: string): boolean => host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);

const invalid = (message: string) =>
  new ApiError('validation_failed', `Invalid request: body.url ${message}`, { issues: [{ field: 'body.url', message }] });
