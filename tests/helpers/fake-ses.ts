import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { closeServer, listenLocal } from './local-server.ts';

/**
 * A stand-in for Amazon SES (API v2) that takes SendEmail with raw content and nothing else, as
 * the SDK's SESv2 client sends it to a custom endpoint (AWS_ENDPOINT_URL_SESV2): a JSON POST to
 * /v2/email/outbound-emails, signed for the service `ses`. It refuses what SES would (a request
 * not signed for SES, a simple or template content, no recipient), keeps the raw MIME as sent and
 * answers a MessageId. The signature itself is not verified (no AWS account is involved).
 */
export interface SentEmail {
  from: string;
  to: string[];
  configurationSet: string | undefined;
  /** The message's bytes, decoded from the request's base64. */
  raw: Buffer;
  messageId: string;
}

export interface FakeSes {
  url: string;
  sent: SentEmail[];
  close(): Promise<void>;
}

/** The request was signed with Signature V4 for SES (API v1 and v2 share the signing name). */
export const signedForSes = (req: IncomingMessage): boolean =>
  /^AWS4-HMAC-SHA256 Credential=[^/]+\/\d{8}\/[^/]+\/ses\/aws4_request,/.test(String(req.headers.authorization ?? ''));

const SEND_EMAIL_PATH = '/v2/email/outbound-emails';

/** The address of a From value (`Name <a@b>` or `a@b`). */
const addressOf = (from: string): string => /<([^>]+)>/.exec(from)?.[1] ?? from.trim();

/**
 * The IAM action and resources one SES v2 request is authorized on: SendEmail on the identity the
 * From address belongs to (its domain) and on the configuration set it names.
 */
export function sesCalls(req: IncomingMessage, raw: Buffer, region: string, account: string): { action: string; resource: string }[] {
  const path = new URL(req.url ?? '/', 'http://ses').pathname;
  if (req.method !== 'POST' || path !== SEND_EMAIL_PATH) return [{ action: `ses:${req.method} ${path}`, resource: '*' }];
  const body = JSON.parse(raw.toString() || '{}') as { FromEmailAddress?: string; ConfigurationSetName?: string };
  const arn = (resource: string) => `arn:aws:ses:${region}:${account}:${resource}`;
  const domain = addressOf(body.FromEmailAddress ?? '').split('@')[1] ?? '';
  return [
    { action: 'ses:SendEmail', resource: arn(`identity/${domain}`) },
    ...(body.ConfigurationSetName ? [{ action: 'ses:SendEmail', resource: arn(`configuration-set/${body.ConfigurationSetName}`) }] : []),
  ];
}

export async function startFakeSes(): Promise<FakeSes> {
  const sent: SentEmail[] = [];
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const fail = (status: number, type: string, message: string) =>
      res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-errortype': type }).end(JSON.stringify({ message }));
    if (!signedForSes(req)) return fail(403, 'AccessDeniedException', 'Not signed with Signature V4 for ses');
    const path = new URL(req.url ?? '/', 'http://ses').pathname;
    if (req.method !== 'POST' || path !== SEND_EMAIL_PATH) return fail(501, 'NotImplemented', `Only SendEmail: ${req.method} ${path}`);
    const body = JSON.parse(Buffer.concat(chunks).toString() || '{}') as {
      FromEmailAddress?: string;
      Destination?: { ToAddresses?: string[] };
      Content?: { Raw?: { Data?: string }; Simple?: unknown; Template?: unknown };
      ConfigurationSetName?: string;
    };
    const data = body.Content?.Raw?.Data;
    if (!data) return fail(400, 'BadRequestException', 'Only raw content is taken here');
    const to = body.Destination?.ToAddresses ?? [];
    if (to.length === 0) return fail(400, 'BadRequestException', 'No recipient');
    const messageId = `0100${randomUUID().replace(/-/g, '')}-000000`;
    sent.push({
      from: body.FromEmailAddress ?? '',
      to,
      configurationSet: body.ConfigurationSetName,
      raw: Buffer.from(data, 'base64'),
      messageId,
    });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ MessageId: messageId }));
  });
  const port = await listenLocal(server);
  return { url: `http://127.0.0.1:${port}`, sent, close: () => closeServer(server) };
}
