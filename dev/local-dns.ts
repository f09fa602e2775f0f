import dns2 from 'dns2';
import * as accessPatterns from '../shared/db/access-patterns.ts';
import { addressRecordType } from '../shared/dns/records.ts';
import { errorFields, logger } from '../shared/observability/logger.ts';

/**
 * The local stack's DNS server (dns2, UDP on 127.0.0.1): authoritative for the zone of
 * `DNS_ZONE`, it answers A, AAAA and SRV queries from the records the local provider wrote to the
 * table (shared/dns/local.ts), read on each query, so a change through the API is answered at once.
 * Names outside the zone are REFUSED (it resolves nothing else); a name of the zone without records NXDOMAIN.
 *
 *   dig @127.0.0.1 -p 10053 survival.play.test A
 *   dig @127.0.0.1 -p 10053 _minecraft._tcp.survival.play.test SRV
 */
export interface LocalDns {
  zone: string;
  host: string;
  port: number;
  close(): Promise<void>;
}

const { Packet } = dns2;
const TTL_S = 5;

/**
 * dns2 3.1.1 compresses an SRV record's target (a pointer to the query's name), which RFC 2782
 * forbids and c-ares (Node's resolver) refuses with EBADRESP: the target is written in full. Only
 * this dev server uses dns2, so replacing its SRV encoder changes nothing else.
 */
type SrvWriter = InstanceType<typeof Packet.Writer> & { names?: unknown };
(Packet.Resource as unknown as Record<string, { encode: unknown }>).SRV!.encode = (
  record: { priority: number; weight: number; port: number; target: string },
  writer: SrvWriter,
) => {
  writer.write(record.priority, 16);
  writer.write(record.weight, 16);
  writer.write(record.port, 16);
  const names = writer.names;
  writer.names = undefined;
  Packet.Name.encode(record.target, writer);
  writer.names = names;
};

export async function startLocalDns(options: { zone: string; port?: number; host?: string }): Promise<LocalDns> {
  const zone = options.zone.toLowerCase();
  const host = options.host ?? '127.0.0.1';
  // UDP only: Node's resolver and dig ask over UDP, and these answers are far below 512 bytes.
  const server = dns2.createUDPServer((request, send) => {
    answer(zone, request)
      .then((response) => send(response))
      .catch((err: unknown) => {
        logger.warn('local DNS: query failed', errorFields(err));
        const response = Packet.createResponseFromRequest(request);
        response.header.rcode = Packet.RCODE.SERVFAIL;
        return send(response);
      });
  });
  server.on('requestError', (err) => logger.debug('local DNS: undecodable query', errorFields(err)));
  await server.listen(options.port ?? 0, host);
  const { port } = server.address();
  return { zone, host, port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

async function answer(zone: string, request: InstanceType<typeof Packet>) {
  const response = Packet.createResponseFromRequest(request);
  response.header.aa = 1;
  const question = request.questions[0];
  if (!question) return response;
  const asked = question.name.toLowerCase().replace(/\.$/, '');
  if (asked !== zone && !asked.endsWith(`.${zone}`)) {
    response.header.rcode = Packet.RCODE.REFUSED;
    return response;
  }
  const labels = asked.slice(0, -(zone.length + 1)).split('.');
  // `<name>` (A, AAAA) or `_service._proto.<name>` (SRV).
  const name = labels.at(-1) ?? '';
  const service = labels.length === 3 ? `${labels[0]}.${labels[1]}` : undefined;
  const stored = labels.length === 1 || service ? await accessPatterns.localDnsRecords(zone, name) : undefined;
  const values = stored?.values;
  const nameExists = values !== undefined && (service === undefined || values.srvService === service);
  if (!nameExists) {
    response.header.rcode = Packet.RCODE.NXDOMAIN;
    return response;
  }
  const fqdn = `${name}.${zone}`;
  const type = addressRecordType(values.ip);
  if (!service && question.type === Packet.TYPE[type]) {
    response.answers.push(Packet.createResourceFromQuestion(question, { type: Packet.TYPE[type], ttl: TTL_S, address: values.ip }));
  }
  if (service && question.type === Packet.TYPE.SRV) {
    response.answers.push(
      Packet.createResourceFromQuestion(question, {
        type: Packet.TYPE.SRV,
        ttl: TTL_S,
        priority: 0,
        weight: 5,
        port: values.port,
        target: fqdn,
      }),
    );
  }
  return response;
}
