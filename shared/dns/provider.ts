import { getConfig } from '../config/env.ts';
import { localProvider } from './local.ts';
import type { DnsProvider } from './records.ts';
import { route53Provider } from './route53.ts';

export type { DnsProvider, DnsRecordSet } from './records.ts';

/** The provider the configuration names, or null when subdomains are off (the Route 53 client loads with its first change). */
export function dnsProvider(): DnsProvider | null {
  const { dns } = getConfig();
  if (dns.provider === 'route53') return route53Provider(dns.hostedZoneId!, dns.ttlSeconds);
  if (dns.provider === 'local') return localProvider;
  return null;
}
