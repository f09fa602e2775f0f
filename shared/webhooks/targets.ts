import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { getConfig } from '../config/env.ts';
import { ApiError } from '../errors.ts';

/**
 * Which URLs an endpoint may point at. In AWS: `https` only, and (at delivery, after DNS
 * resolution) no private, loopback, link-local or other non-public address. In the local stack
 * plain `http` is allowed on loopback too, so a receiver on this machine can be tested.
 *
 * Two checks, because a URL that is fine when created can resolve elsewhere later: `checkTargetUrl`
 * at create and update (syntax; in AWS also a literal non-public address), and `targetLookup` at
 * every delivery, which resolves the host, refuses if any of its addresses is not public, and hands
 * the connection exactly the address it checked (no second resolution a DNS rebinding could answer
 * differently).
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
  if (inAws) {
    const literal = hostAddress(url.hostname);
    const refused = literal ? refusedAddress(literal) : url.hostname === 'localhost' ? 'loopback address' : null;
    if (refused) throw invalid(`url must not point at a ${refused}`);
  }
  if (url.protocol === 'https:') return url;
  if (url.protocol === 'http:' && !inAws && isLoopbackHost(url.hostname)) return url;
  throw invalid(inAws ? 'url must use https' : 'url must use https (plain http only on loopback in the local stack)');
}

/**
 * The url an endpoint stores: checked, and within `maxLength` in the form stored. `new URL` percent-
 * encodes what is not ASCII (one `€` becomes `%E2%82%AC`), so a url within the bound as sent can be
 * nine times over it once normalised; the bound holds for what is kept and shown.
 */
export function storedTargetUrl(raw: string, maxLength: number): string {
  const href = checkTargetUrl(raw).href;
  if (href.length > maxLength) {
    throw invalid(
      `must be at most ${maxLength} characters once normalised (non-ASCII characters are percent-encoded); this one is ${href.length}`,
    );
  }
  return href;
}

const isLoopbackHost = (host: string): boolean => host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);

const invalid = (message: string) =>
  new ApiError('validation_failed', `Invalid request: body.url ${message}`, { issues: [{ field: 'body.url', message }] });

/** The address of a URL host that is an IP literal (`[::1]` → `::1`), else undefined. */
export function hostAddress(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isIP(bare) ? bare : undefined;
}

/** A delivery the target rules refuse: recorded as the attempt's error `target_refused: <reason>`. */
export class TargetRefusedError extends Error {
  readonly reason: string;

  constructor(reason: string) {
    super(`target_refused: ${reason}`);
    this.reason = reason;
    this.name = 'TargetRefusedError';
  }
}

// ---- the address classifier ----

interface Range {
  base: bigint;
  bits: number;
  reason: string;
}

const v4 = (cidr: string, reason: string): Range => {
  const [addr, bits] = cidr.split('/');
  return { base: v4ToBigInt(addr!), bits: Number(bits), reason };
};
const v6 = (cidr: string, reason: string): Range => {
  const [addr, bits] = cidr.split('/');
  return { base: v6ToBigInt(addr!), bits: Number(bits), reason };
};

/** Every IPv4 range that is not the public internet (IANA special-purpose registry, RFC 6890 and successors). */
const V4_REFUSED: Range[] = [
  v4('0.0.0.0/8', 'unspecified address'),
  v4('10.0.0.0/8', 'private address'),
  v4('100.64.0.0/10', 'shared (CGNAT) address'),
  v4('127.0.0.0/8', 'loopback address'),
  // 169.254.169.254 is the instance metadata service of AWS (and of the other clouds).
  v4('169.254.0.0/16', 'link-local address'),
  v4('172.16.0.0/12', 'private address'),
  v4('192.0.0.0/24', 'reserved address'),
  v4('192.0.2.0/24', 'documentation address'),
  v4('192.88.99.0/24', 'reserved address'),
  v4('192.168.0.0/16', 'private address'),
  v4('198.18.0.0/15', 'benchmarking address'),
  v4('198.51.100.0/24', 'documentation address'),
  v4('203.0.113.0/24', 'documentation address'),
  v4('224.0.0.0/4', 'multicast address'),
  v4('255.255.255.255/32', 'broadcast address'),
  v4('240.0.0.0/4', 'reserved address'),
];

const V6_REFUSED: Range[] = [
  v6('::/128', 'unspecified address'),
  v6('::1/128', 'loopback address'),
  v6('100::/64', 'discard address'),
  v6('2001:db8::/32', 'documentation address'),
  v6('fc00::/7', 'unique-local address'),
  v6('fe80::/10', 'link-local address'),
  v6('fec0::/10', 'site-local address'),
  v6('ff00::/8', 'multicast address'),
];

/** IPv6 forms that carry an IPv4 address, which is then judged as IPv4: mapped, NAT64, 6to4. */
const V6_EMBEDDING_V4: { range: Range; v4At: (n: bigint) => bigint }[] = [
  { range: v6('::ffff:0:0/96', 'mapped'), v4At: (n) => n & 0xffffffffn },
  { range: v6('64:ff9b::/96', 'nat64'), v4At: (n) => n & 0xffffffffn },
  { range: v6('2002::/16', '6to4'), v4At: (n) => (n >> 80n) & 0xffffffffn },
  // IPv4-compatible (deprecated) ::a.b.c.d; ::/128 and ::1/128 are caught above.
  { range: v6('::/96', 'compatible'), v4At: (n) => n & 0xffffffffn },
];

const within = (n: bigint, range: Range, width: number): boolean =>
  n >> BigInt(width - range.bits) === range.base >> BigInt(width - range.bits);

function v4ToBigInt(address: string): bigint {
  return address.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

function v6ToBigInt(address: string): bigint {
  let text = address.split('%')[0]!.toLowerCase();
  // A trailing dotted IPv4 (::ffff:10.0.0.1) becomes two hex groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const n = v4ToBigInt(dotted[1]!);
    text = `${text.slice(0, -dotted[1]!.length)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const groups =
    tail === undefined ? headGroups : [...headGroups, ...Array(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(Number.parseInt(g || '0', 16)), 0n);
}

const refusedV4 = (n: bigint): string | null => V4_REFUSED.find((r) => within(n, r, 32))?.reason ?? null;

/**
 * Why a delivery must not go to this IP address (`private address`, `loopback address`, …), or
 * null for a public one. Not an IP address at all: refused too.
 */
export function refusedAddress(address: string): string | null {
  const family = isIP(address.startsWith('[') ? address.slice(1, -1) : address);
  if (family === 4) return refusedV4(v4ToBigInt(address));
  if (family !== 6) return 'not an IP address';
  const n = v6ToBigInt(address.startsWith('[') ? address.slice(1, -1) : address);
  const direct = V6_REFUSED.find((r) => within(n, r, 128));
  if (direct) return direct.reason;
  const embedding = V6_EMBEDDING_V4.find((e) => within(n, e.range, 128));
  return embedding ? refusedV4(embedding.v4At(n)) : null;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for node:http(s) `request` that resolves every address of the host, refuses the
 * connection when any of them is not public (a host with one private address among public ones is
 * a rebinding set-up or a misconfiguration; either way not ours to call), and connects to exactly
 * the addresses it checked.
 */
export function targetLookup(hostname: string, options: { all?: boolean; family?: number | string }, callback: LookupCallback): void {
  dnsLookup(hostname, { all: true, family: typeof options.family === 'number' ? options.family : 0 }, (err, addresses) => {
    if (err) return callback(err, []);
    for (const { address } of addresses) {
      const reason = refusedAddress(address);
      if (reason) return callback(Object.assign(new TargetRefusedError(reason), { code: 'ETARGETREFUSED' }), []);
    }
    if (addresses.length === 0) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), []);
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}

/**
 * The delivery-time rule for a URL (besides `checkTargetUrl`): in AWS a host that is an IP literal
 * must be public (node connects to a literal without calling `lookup`); names are checked by
 * `targetLookup` as the connection is made. Throws TargetRefusedError.
 */
export function checkDeliveryTarget(raw: string): { url: URL; guarded: boolean } {
  const guarded = getConfig().stage === 'aws';
  // checkTargetUrl refuses a non-public literal address in AWS (node connects to a literal without `lookup`).
  let url: URL;
  try {
    url = checkTargetUrl(raw);
  } catch (err) {
    const issue = err instanceof ApiError ? (err.details as { issues?: { message: string }[] } | undefined)?.issues?.[0] : undefined;
    const message = issue?.message ?? 'invalid url';
    throw new TargetRefusedError(message.replace(/^url (must not point at an? )?/, ''));
  }
  return { url, guarded };
}
