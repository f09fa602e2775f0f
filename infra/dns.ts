import type { Construct } from 'constructs';

/**
 * Server subdomains in AWS (docs/deploy.md, "Server subdomains"): contexts `dnsZone` (the zone's
 * name, `play.example.com`) and `dnsHostedZoneId` (its Route 53 hosted zone, `Z…`), both or neither.
 * Without them no function gets a Route 53 grant and subdomains are off.
 */
export interface DnsZone {
  zone: string;
  hostedZoneId: string;
}

export function dnsZoneFromContext(scope: Construct): DnsZone | undefined {
  const read = (key: string): string | undefined => {
    const value: unknown = scope.node.tryGetContext(key);
    return typeof value === 'string' && value.trim() ? value.trim() : undefined;
  };
  const zone = read('dnsZone')?.toLowerCase().replace(/\.$/, '');
  // The console shows `/hostedzone/Z…` in places; the id is the last part.
  const hostedZoneId = read('dnsHostedZoneId')?.replace(/^\/?hostedzone\//, '');
  if (!zone && !hostedZoneId) return undefined;
  if (!zone || !hostedZoneId) throw new Error('Contexts dnsZone and dnsHostedZoneId go together: give both, or neither');
  if (!/^[A-Z0-9]{1,32}$/.test(hostedZoneId))
    throw new Error(`Context dnsHostedZoneId: "${hostedZoneId}" is not a Route 53 hosted zone id`);
  if (!/^(?=.{1,200}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(zone))
    throw new Error(`Context dnsZone: "${zone}" is not a DNS name`);
  return { zone, hostedZoneId };
}
