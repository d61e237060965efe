/**
 * Referrer and IP restrictions of an access token (spec 5.4 and 5.5): matching, and the
 * validation that keeps a stored restriction list within the spec's limits.
 */
import { BlockList, isIP } from 'node:net';

/** Spec 8: at most 10 referrer patterns per token. */
export const MAX_REFERRERS = 10;
/** Spec 8: at most 5 IP entries per token. */
export const MAX_IPS = 5;
/** Longest referrer pattern accepted; a browser's Referer is rarely longer and a pattern never needs to be. */
export const MAX_REFERRER_LENGTH = 2048;

/**
 * Whether `referrer` passes the token's referrer patterns (spec 5.4).
 *
 * Case-sensitive. `*x*` matches a referrer that contains `x`, `x*` one that starts with `x`,
 * `*x` one that ends with `x`; any other pattern must equal the whole referrer, a trailing `/`
 * included. An empty list allows any referrer.
 *
 * A request without a Referer header is refused by a non-empty list: the list exists to tie the
 * token to the named sites, and a missing header would otherwise be the easiest way around it
 * (the header can be spoofed anyway, but omitting it should not be a free pass).
 */
export function referrerAllowed(patterns: readonly string[], referrer: string | undefined): boolean {
  if (patterns.length === 0) return true;
  if (referrer === undefined || referrer === '') return false;
  for (const p of patterns) if (patternMatches(p, referrer)) return true;
  return false;
}

function patternMatches(pattern: string, referrer: string): boolean {
  const starts = pattern.startsWith('*');
  const ends = pattern.length > 1 && pattern.endsWith('*');
  if (starts && ends) return referrer.includes(pattern.slice(1, -1));
  if (pattern === '*') return true;
  if (ends) return referrer.startsWith(pattern.slice(0, -1));
  if (starts) return referrer.endsWith(pattern.slice(1));
  return referrer === pattern;
}

/**
 * Checks one referrer pattern and returns the reason it is refused, or undefined when it is fine.
 * A `*` anywhere but at either end is refused: the spec gives it no meaning there, and reading it
 * literally would surprise whoever wrote it.
 */
export function referrerPatternProblem(pattern: string): string | undefined {
  if (pattern.length === 0) return 'an empty referrer pattern';
  if (pattern.length > MAX_REFERRER_LENGTH)
    return `referrer pattern longer than ${MAX_REFERRER_LENGTH} characters`;
  if (/[\s]/.test(pattern)) return `referrer pattern "${pattern}" contains white space`;
  if (pattern.slice(1, -1).includes('*'))
    return `referrer pattern "${pattern}" has a "*" in the middle; "*" may only start or end a pattern`;
  return undefined;
}

interface ParsedRange {
  family: 'ipv4' | 'ipv6';
  address: string;
  /** Prefix length; the full width for a single address. */
  prefix: number;
}

/** Strips an IPv6 zone (`fe80::1%eth0`), which names a local interface and never matters to a rule. */
function stripZone(ip: string): string {
  const i = ip.indexOf('%');
  return i < 0 ? ip : ip.slice(0, i);
}

/** `::ffff:1.2.3.4` (and its hexadecimal spelling) as `1.2.3.4`, anything else unchanged. */
function unmapIpv4(ip: string): string {
  const lower = ip.toLowerCase();
  if (!lower.startsWith('::ffff:')) return ip;
  const rest = lower.slice(7);
  if (isIP(rest) === 4) return rest;
  const m = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(rest);
  if (!m) return ip;
  const hi = Number.parseInt(m[1] as string, 16);
  const lo = Number.parseInt(m[2] as string, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Parses an address or CIDR; a string describing the problem when it is not one. */
function parseRange(entry: string): ParsedRange | string {
  const slash = entry.indexOf('/');
  let address = stripZone(slash < 0 ? entry : entry.slice(0, slash));
  const prefixText = slash < 0 ? undefined : entry.slice(slash + 1);
  let family = isIP(address);
  if (family === 0) return `"${entry}" is not an IPv4 or IPv6 address or CIDR subnet`;
  let prefix = family === 4 ? 32 : 128;
  if (prefixText !== undefined) {
    if (!/^\d{1,3}$/.test(prefixText)) return `"${entry}" has a bad prefix length`;
    prefix = Number(prefixText);
    if (prefix > (family === 4 ? 32 : 128))
      return `"${entry}" has a prefix length over ${family === 4 ? 32 : 128}`;
  }
  // An IPv4-mapped rule is an IPv4 rule: callers are compared in IPv4 form too.
  const unmapped = family === 6 ? unmapIpv4(address) : address;
  if (unmapped !== address) {
    if (prefix < 96) return `"${entry}" mixes the IPv4-mapped prefix with a prefix length under 96`;
    address = unmapped;
    family = 4;
    prefix -= 96;
  }
  return { family: family === 4 ? 'ipv4' : 'ipv6', address, prefix };
}

/** Checks one IP restriction entry: the reason it is refused, or undefined when it is fine. */
export function ipEntryProblem(entry: string): string | undefined {
  const r = parseRange(entry);
  return typeof r === 'string' ? r : undefined;
}

// Building a BlockList costs more than checking one, and every request of a token checks the
// same short list, so lists are kept by their text. Bounded: token lists are few, but a cache
// keyed by caller data must never grow without limit.
const blockLists = new Map<string, BlockList>();
const MAX_BLOCKLISTS = 1000;

function blockListFor(ranges: readonly string[]): BlockList {
  const key = ranges.join('\n');
  let list = blockLists.get(key);
  if (list) return list;
  list = new BlockList();
  for (const entry of ranges) {
    const r = parseRange(entry);
    // Stored lists were validated; an entry that still fails to parse allows nobody rather than everybody.
    if (typeof r === 'string') continue;
    list.addSubnet(r.address, r.prefix, r.family);
  }
  if (blockLists.size >= MAX_BLOCKLISTS) blockLists.clear();
  blockLists.set(key, list);
  return list;
}

/**
 * Whether the caller's address `ip` passes the token's IP restrictions (spec 5.5): IPv4 and
 * IPv6 addresses and CIDR subnets. An IPv4-mapped IPv6 address (`::ffff:1.2.3.4`, what a
 * dual-stack socket reports for an IPv4 client) is checked as the IPv4 address. An empty list
 * allows any address; an unparseable `ip` passes only an empty list.
 */
export function ipAllowed(ranges: readonly string[], ip: string): boolean {
  if (ranges.length === 0) return true;
  const address = unmapIpv4(stripZone(ip.trim()));
  const family = isIP(address);
  if (family === 0) return false;
  return blockListFor(ranges).check(address, family === 4 ? 'ipv4' : 'ipv6');
}
