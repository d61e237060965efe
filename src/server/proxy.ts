/**
 * Who is calling, behind reverse proxies: which forwarding hops to trust (`--trust-proxy`) and
 * the caller's address that follows from them.
 *
 * The caller is the rightmost address of the chain (socket address, then `X-Forwarded-For`
 * read right to left) that is not a trusted proxy. Everything left of it was written by the
 * caller and proves nothing. A malformed entry (`notanip`) ends the walk: it is never the
 * caller, and the hop that handed it over (the last trusted address) is taken instead, so a
 * garbled header neither names a fake caller nor lets the walk skip on to client-written text.
 */
import { isIP } from 'node:net';
import { ipAllowed, ipEntryProblem } from '../tokens/index.js';

/**
 * Which proxies to trust: `false` (none: the socket address is the caller), a hop count (the
 * nearest N hops, whatever their address), or addresses and CIDR subnets (also `loopback`,
 * `linklocal`, `uniquelocal`). `true` means `['loopback']`: a proxy on the same machine.
 */
export type TrustProxy = boolean | number | string | readonly string[];

/** The named ranges that `--trust-proxy` accepts, as in Express and proxy-addr. */
const NAMED_RANGES: Record<string, readonly string[]> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

/** A trust setting's entries as address ranges; throws with the reason when one is not valid. */
export function trustedRanges(entries: string | readonly string[]): string[] {
  const list = typeof entries === 'string' ? entries.split(',') : entries;
  const ranges: string[] = [];
  for (const raw of list) {
    const entry = raw.trim();
    if (entry === '') continue;
    const named = NAMED_RANGES[entry];
    if (named) {
      ranges.push(...named);
      continue;
    }
    const problem = ipEntryProblem(entry);
    if (problem !== undefined) throw new Error(`--trust-proxy: ${problem}`);
    ranges.push(entry);
  }
  if (ranges.length === 0) throw new Error('--trust-proxy needs a hop count or addresses and CIDR subnets');
  return ranges;
}

/** Whether `text` is an IP address (an IPv6 zone suffix allowed). */
export function isAddress(text: string): boolean {
  const zone = text.indexOf('%');
  return isIP(zone < 0 ? text : text.slice(0, zone)) !== 0;
}

/**
 * The trust function Fastify (proxy-addr) calls with each address of the chain and its
 * distance from this server (0 is the socket's peer), or `false` to trust nobody. A
 * malformed address is never trusted, so the walk stops there.
 */
export function trustFunction(trust: TrustProxy): false | ((address: string, hop: number) => boolean) {
  if (trust === false || trust === 0) return false;
  if (typeof trust === 'number') {
    if (!Number.isInteger(trust) || trust < 0)
      throw new Error('--trust-proxy hop count must be a whole number');
    return (address, hop) => hop < trust && isAddress(address);
  }
  const ranges = trustedRanges(trust === true ? ['loopback'] : trust);
  return (address) => isAddress(address) && ipAllowed(ranges, address);
}

/**
 * The caller's address from Fastify's `ips` (the chain from the socket's peer up to the first
 * address not trusted; undefined when no proxy is trusted) and `ip`: the last entry, or the one
 * before it when the last is malformed.
 */
export function callerAddress(request: { ip: string; ips?: string[] | undefined }): string {
  const chain = request.ips;
  if (chain === undefined || chain.length === 0) return request.ip;
  for (let i = chain.length - 1; i >= 0; i--) {
    const address = (chain[i] as string).trim();
    if (isAddress(address)) return address;
  }
  return request.ip;
}
