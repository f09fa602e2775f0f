import type { LocalDnsRecordsItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { writeItem } from '../db/write.ts';
import type { DnsProvider } from './records.ts';

/**
 * The local stack's provider: a name's records are one item in the table (keys.localDnsRecords),
 * which the local DNS server (dev/local-dns.ts) reads on every query. The API and the DNS server
 * share nothing but the table, as a Lambda and Route 53 share nothing but Route 53's API.
 */
export const localProvider: DnsProvider = {
  async upsert(set) {
    const item: LocalDnsRecordsItem = {
      ...keys.localDnsRecords(set.zone, set.name),
      kind: 'local-dns-records',
      zone: set.zone,
      name: set.name,
      values: set.values,
      updatedAt: new Date().toISOString(),
    };
    await writeItem({ Put: { Item: item } });
  },
  async remove(set) {
    await writeItem({ Delete: { Key: keys.localDnsRecords(set.zone, set.name) } });
  },
};
