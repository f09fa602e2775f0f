import type { Change } from '@aws-sdk/client-route-53';
import type { DnsRecordValues } from '../db/items.ts';
import { loadRoute53, type Route53Client } from '../packages.ts';
import { srvNameOf } from './names.ts';
import { addressRecordType, type DnsProvider, type DnsRecordSet } from './records.ts';

/**
 * Route 53: one ChangeResourceRecordSets per change of a name, in the hosted zone the operator
 * named (context `dnsHostedZoneId`; the functions' role may change that zone only). A batch is
 * atomic, so an address and its SRV record move together. The client's endpoint follows the SDK's
 * `AWS_ENDPOINT_URL_ROUTE_53` (tests point it at a fake).
 */
let client: Route53Client | undefined;

async function send(hostedZoneId: string, changes: Change[]): Promise<void> {
  const { Route53Client, ChangeResourceRecordSetsCommand } = await loadRoute53();
  // Route 53 is a global service: its API is signed for us-east-1 whatever the function's region.
  client ??= new Route53Client({ region: 'us-east-1' });
  await client.send(new ChangeResourceRecordSetsCommand({ HostedZoneId: hostedZoneId, ChangeBatch: { Changes: changes } }));
}

/** The record sets `values` makes for a name: the address, and the SRV record pointing at it. */
function recordSets(set: { zone: string; name: string; values: DnsRecordValues }, ttl: number): NonNullable<Change['ResourceRecordSet']>[] {
  const fqdn = `${set.name}.${set.zone}`;
  const { ip, port, srvService } = set.values;
  return [
    { Name: `${fqdn}.`, Type: addressRecordType(ip), TTL: ttl, ResourceRecords: [{ Value: ip }] },
    ...(srvService
      ? [
          {
            Name: `${srvNameOf(srvService, set.name, set.zone)}.`,
            Type: 'SRV' as const,
            TTL: ttl,
            ResourceRecords: [{ Value: `0 5 ${port} ${fqdn}.` }],
          },
        ]
      : []),
  ];
}

/** Route 53 refuses a DELETE of a record set that is not there (or differs): the whole batch is refused. */
const notFound = (err: unknown): boolean =>
  (err as { name?: string }).name === 'InvalidChangeBatch' && /not found/i.test(String((err as Error).message));

export function route53Provider(hostedZoneId: string, ttl: number): DnsProvider {
  return {
    async upsert(set: DnsRecordSet, previous?: DnsRecordValues) {
      const wanted = recordSets(set, ttl);
      const stale = previous
        ? recordSets({ ...set, values: previous }, ttl).filter((old) => !wanted.some((w) => w.Name === old.Name && w.Type === old.Type))
        : [];
      const upserts: Change[] = wanted.map((r) => ({ Action: 'UPSERT', ResourceRecordSet: r }));
      try {
        await send(hostedZoneId, [...upserts, ...stale.map((r): Change => ({ Action: 'DELETE', ResourceRecordSet: r }))]);
      } catch (err) {
        // A stale record someone removed already: the upserts alone.
        if (!stale.length || !notFound(err)) throw err;
        await send(hostedZoneId, upserts);
      }
    },
    async remove(set: DnsRecordSet) {
      const changes = recordSets(set, ttl).map((r): Change => ({ Action: 'DELETE', ResourceRecordSet: r }));
      try {
        await send(hostedZoneId, changes);
      } catch (err) {
        if (!notFound(err)) throw err;
        // One of them is gone already (or differs): each alone, a missing one counting as removed.
        for (const change of changes)
          await send(hostedZoneId, [change]).catch((e: unknown) => (notFound(e) ? undefined : Promise.reject(e)));
      }
    },
  };
}
