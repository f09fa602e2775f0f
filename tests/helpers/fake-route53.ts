import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { closeServer, listenLocal } from './local-server.ts';

/**
 * A stand-in for Amazon Route 53 that takes ChangeResourceRecordSets and nothing else, as the SDK's
 * Route 53 client sends it to a custom endpoint (AWS_ENDPOINT_URL_ROUTE_53): an XML POST to
 * /2013-04-01/hostedzone/<id>/rrset/, signed for the service `route53`. It keeps the record sets of
 * each zone and applies a batch as Route 53 does, all or nothing: a DELETE of a record set that is
 * not there with exactly those values refuses the whole batch (InvalidChangeBatch, "not found").
 * `failing` makes it answer 503 (as an outage would) until cleared. The signature is not verified.
 */
export interface RecordSet {
  name: string;
  type: string;
  ttl: number;
  values: string[];
}

export interface Route53Change {
  action: string;
  set: RecordSet;
}

export interface FakeRoute53 {
  url: string;
  /** Record sets by zone id, then `<name> <type>`. */
  zones: Map<string, Map<string, RecordSet>>;
  /** Every accepted or refused batch, by zone id. */
  requests: { zoneId: string; changes: Route53Change[] }[];
  failing: boolean;
  close(): Promise<void>;
}

export const signedForRoute53 = (req: IncomingMessage): boolean =>
  /^AWS4-HMAC-SHA256 Credential=[^/]+\/\d{8}\/[^/]+\/route53\/aws4_request,/.test(String(req.headers.authorization ?? ''));

const CHANGE_PATH = /^\/2013-04-01\/hostedzone\/([^/]+)\/rrset\/?$/;

const tag = (xml: string, name: string): string | undefined => new RegExp(`<${name}>([\\s\\S]*?)</${name}>`).exec(xml)?.[1];
const tags = (xml: string, name: string): string[] =>
  [...xml.matchAll(new RegExp(`<${name}>([\\s\\S]*?)</${name}>`, 'g'))].map((m) => m[1]!);

/** The changes of a ChangeResourceRecordSets body. */
export function parseChanges(xml: string): Route53Change[] {
  return tags(xml, 'Change').map((change) => {
    const set = tag(change, 'ResourceRecordSet') ?? '';
    return {
      action: tag(change, 'Action') ?? '',
      set: { name: tag(set, 'Name') ?? '', type: tag(set, 'Type') ?? '', ttl: Number(tag(set, 'TTL')), values: tags(set, 'Value') },
    };
  });
}

/** The IAM action and resource of one Route 53 request: ChangeResourceRecordSets on the hosted zone it names. */
export function route53Calls(req: IncomingMessage): { action: string; resource: string }[] {
  const path = new URL(req.url ?? '/', 'http://route53').pathname;
  const zoneId = CHANGE_PATH.exec(path)?.[1];
  if (req.method !== 'POST' || !zoneId) return [{ action: `route53:${req.method} ${path}`, resource: '*' }];
  return [{ action: 'route53:ChangeResourceRecordSets', resource: `arn:aws:route53:::hostedzone/${zoneId}` }];
}

const errorXml = (code: string, message: string) =>
  `<?xml version="1.0"?><ErrorResponse xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>${randomUUID()}</RequestId></ErrorResponse>`;

export async function startFakeRoute53(): Promise<FakeRoute53> {
  const fake: Omit<FakeRoute53, 'url' | 'close'> = { zones: new Map(), requests: [], failing: false };
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const fail = (status: number, code: string, message: string) =>
      res.writeHead(status, { 'content-type': 'text/xml', 'x-amzn-errortype': code }).end(errorXml(code, message));
    if (!signedForRoute53(req)) return fail(403, 'AccessDenied', 'Not signed with Signature V4 for route53');
    const zoneId = CHANGE_PATH.exec(new URL(req.url ?? '/', 'http://route53').pathname)?.[1];
    if (req.method !== 'POST' || !zoneId) return fail(400, 'InvalidInput', 'Only ChangeResourceRecordSets is served here');
    const changes = parseChanges(Buffer.concat(chunks).toString());
    fake.requests.push({ zoneId, changes });
    if (fake.failing) return fail(503, 'ServiceUnavailable', 'Route 53 is failing (test)');
    const zone = new Map(fake.zones.get(zoneId) ?? []);
    for (const { action, set } of changes) {
      const key = `${set.name} ${set.type}`;
      if (action === 'DELETE') {
        const existing = zone.get(key);
        if (!existing || existing.ttl !== set.ttl || existing.values.join() !== set.values.join())
          return fail(
            400,
            'InvalidChangeBatch',
            `Tried to delete resource record set [name='${set.name}', type='${set.type}'] but it was not found`,
          );
        zone.delete(key);
      } else if (action === 'UPSERT') zone.set(key, set);
      else return fail(400, 'InvalidInput', `Unsupported action ${action}`);
    }
    fake.zones.set(zoneId, zone);
    res
      .writeHead(200, { 'content-type': 'text/xml' })
      .end(
        `<?xml version="1.0"?><ChangeResourceRecordSetsResponse xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><ChangeInfo><Id>/change/C${randomUUID().slice(0, 8).toUpperCase()}</Id><Status>PENDING</Status><SubmittedAt>${new Date().toISOString()}</SubmittedAt></ChangeInfo></ChangeResourceRecordSetsResponse>`,
      );
  });
  const port = await listenLocal(server);
  return Object.assign(fake, { url: `http://127.0.0.1:${port}`, close: () => closeServer(server) });
}
