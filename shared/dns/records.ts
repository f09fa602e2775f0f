import type { DnsRecordValues } from '../db/items.ts';

/**
 * Where a subdomain's records are published: Route 53 in AWS (route53.ts), the table for the local
 * DNS server elsewhere (local.ts). Both are idempotent: `upsert` makes the name's records exactly
 * `values` (an A or AAAA record by the address's form, and the SRV record when `srvService` is set),
 * `remove` deletes the records `values` describes and treats records already gone as removed.
 */
export interface DnsRecordSet {
  zone: string;
  name: string;
  values: DnsRecordValues;
}

export interface DnsProvider {
  /** `previous`: what was published before, so records no longer wanted (an SRV of another service) go too. */
  upsert(set: DnsRecordSet, previous?: DnsRecordValues): Promise<void>;
  remove(set: DnsRecordSet): Promise<void>;
}

/** `AAAA` for an IPv6 address, else `A`. */
export const addressRecordType = (ip: string): 'A' | 'AAAA' => (ip.includes(':') ? 'AAAA' : 'A');
