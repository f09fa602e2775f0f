/**
 * Subdomain names and the SRV service a game answers on. Pure functions: the API schema
 * (shared/api/schemas/subdomains.ts) and the domain code (shared/servers/subdomain.ts) share them.
 */

/** One DNS label as we accept it: lower case letters, digits and inner hyphens, 1–63 characters. */
export const LABEL_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * Names a customer may not take: the zone's own service names and ones that could pass for the
 * operator's (mail, panel, the API) or mislead players.
 */
export const RESERVED_NAMES: ReadonlySet<string> = new Set([
  'www',
  'api',
  'app',
  'admin',
  'administrator',
  'panel',
  'dashboard',
  'billing',
  'pay',
  'payments',
  'status',
  'support',
  'help',
  'mail',
  'smtp',
  'imap',
  'pop',
  'pop3',
  'mx',
  'webmail',
  'ns',
  'ns1',
  'ns2',
  'ns3',
  'ns4',
  'dns',
  'ftp',
  'sftp',
  'ssh',
  'vpn',
  'cdn',
  'static',
  'assets',
  'auth',
  'login',
  'sso',
  'id',
  'account',
  'accounts',
  'root',
  'localhost',
  'wpad',
  'autodiscover',
  'autoconfig',
  'node',
  'wings',
  'docs',
  'blog',
  'shop',
  'store',
  'security',
  'abuse',
  'postmaster',
  'hostmaster',
  'webmaster',
]);

/** Why a name is refused, or null when it is a name we accept. Lower-casing is the caller's (the schema's). */
export function subdomainNameProblem(name: string): string | null {
  if (name.length < 1 || name.length > 63) return 'must be 1 to 63 characters';
  if (!LABEL_PATTERN.test(name))
    return 'must be lower-case letters, digits and hyphens, and start and end with a letter or digit (one DNS label)';
  // `xn--` labels are punycode: an IDN could imitate another name; `ab--` in general is reserved by RFC 5891.
  if (name.slice(2, 4) === '--') return 'must not have hyphens in the 3rd and 4th positions';
  if (RESERVED_NAMES.has(name)) return 'is reserved';
  return null;
}

/**
 * The SRV service of a game, by the egg's name first, then its nest's (names as the panel's default
 * eggs have them, compared in lower case): clients that look an SRV record up (Minecraft Java,
 * TeamSpeak 3) then need only `<name>.<zone>`, with no port. Eggs not listed get only the A/AAAA
 * record; players add the port. Add a row when a game's client reads SRV (docs/api.md "Subdomains").
 */
export const SRV_BY_EGG: ReadonlyMap<string, string> = new Map([
  ['teamspeak3', '_ts3._udp'],
  ['teamspeak3 server', '_ts3._udp'],
  // Bedrock clients do not read SRV: an empty service overrides the Minecraft nest's.
  ['minecraft bedrock', ''],
  ['bedrock', ''],
]);
export const SRV_BY_NEST: ReadonlyMap<string, string> = new Map([['minecraft', '_minecraft._tcp']]);

/** `_minecraft._tcp` for a Minecraft egg, undefined for a game without SRV. */
export function srvServiceOf(egg: { name: string; nestName: string } | undefined): string | undefined {
  if (!egg) return undefined;
  const byEgg = SRV_BY_EGG.get(egg.name.trim().toLowerCase());
  if (byEgg !== undefined) return byEgg || undefined;
  return SRV_BY_NEST.get(egg.nestName.trim().toLowerCase()) || undefined;
}

/** `survival.play.example.com` */
export const fqdnOf = (name: string, zone: string): string => `${name}.${zone}`;

/** `_minecraft._tcp.survival.play.example.com` */
export const srvNameOf = (service: string, name: string, zone: string): string => `${service}.${name}.${zone}`;
