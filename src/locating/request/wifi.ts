/** Access points of a `/process` request: BSSID spellings, usable MACs, the `wifi` list. */
import { AP_FIELDS, ApField, type RequestReader } from './reader.js';
import { fieldsOf, optionalInt, optionalMeasure, r } from './values.js';

/**
 * Parses a MAC address written as 12 hex digits, as six groups of one or two hex digits
 * separated by `:`, `-` or `.`, or as three groups of four separated by one of them
 * (`0024.b2c3.d4e5`). Case-insensitive; surrounding white space is ignored.
 * Returns the address as a 48-bit integer, or undefined when the text is not a MAC address.
 */
export function parseBssid(text: string): number | undefined {
  if (typeof text !== 'string' || text.length > 64) return undefined;
  if (text.length === 17) {
    const fast = parseColonMac(text);
    if (fast !== undefined) return fast;
  }
  const t = text.trim();
  let hex: string;
  if (/^[0-9a-f]{12}$/i.test(t)) {
    hex = t;
  } else {
    const delimiter = /[:.-]/.exec(t)?.[0];
    if (delimiter === undefined) return undefined;
    const groups = t.split(delimiter);
    if (groups.length === 6 && groups.every((g) => /^[0-9a-f]{1,2}$/i.test(g))) {
      // Some tools (macOS airport, older BSD) drop the leading zero of each octet.
      hex = groups.map((g) => g.padStart(2, '0')).join('');
    } else if (groups.length === 3 && groups.every((g) => /^[0-9a-f]{4}$/i.test(g))) {
      hex = groups.join('');
    } else {
      return undefined;
    }
  }
  return Number.parseInt(hex, 16);
}

// Hex digit values by char code, -1 for anything else.
export const HEX = new Int8Array(128).fill(-1);
for (let c = 0; c < 10; c++) HEX[48 + c] = c;
for (let c = 0; c < 6; c++) {
  HEX[65 + c] = 10 + c;
  HEX[97 + c] = 10 + c;
}

export function hexValue(code: number): number {
  return code < 128 ? (HEX[code] as number) : -1;
}

/**
 * The common `aa:bb:cc:dd:ee:ff` spelling (or with `-` or `.`), read without allocating:
 * a scan has up to 15 of them, and this is the hot path of request parsing.
 */
export function parseColonMac(t: string): number | undefined {
  const delimiter = t.charCodeAt(2);
  if (delimiter !== 58 && delimiter !== 45 && delimiter !== 46) return undefined;
  if (
    t.charCodeAt(5) !== delimiter ||
    t.charCodeAt(8) !== delimiter ||
    t.charCodeAt(11) !== delimiter ||
    t.charCodeAt(14) !== delimiter
  )
    return undefined;
  // Two 24-bit halves stay small integers; one 48-bit sum would be a double throughout.
  let hi = 0;
  let lo = 0;
  let bad = 0;
  for (let i = 0; i < 9; i += 3) {
    const a = hexValue(t.charCodeAt(i));
    const b = hexValue(t.charCodeAt(i + 1));
    bad |= a | b;
    hi = (hi << 8) | (a << 4) | b;
  }
  for (let i = 9; i < 18; i += 3) {
    const a = hexValue(t.charCodeAt(i));
    const b = hexValue(t.charCodeAt(i + 1));
    bad |= a | b;
    lo = (lo << 8) | (a << 4) | b;
  }
  return bad < 0 ? undefined : hi * 0x1000000 + lo;
}

/**
 * Formats a 48-bit MAC integer as `aa:bb:cc:dd:ee:ff`.
 * @throws RangeError when `mac` is not an integer in 0 to 2^48 - 1.
 */
export function formatBssid(mac: number): string {
  if (!Number.isInteger(mac) || mac < 0 || mac > MAC_MAX) {
    throw new RangeError(`not a 48-bit MAC address: ${mac}`);
  }
  const hex = mac.toString(16).padStart(12, '0');
  return hex.replace(/(..)(?!$)/g, '$1:');
}

export const MAC_MAX = 0xffff_ffff_ffff;
export const TWO_POW_40 = 2 ** 40;

export const WIFI_SIGNAL_SPEC = r(-113, -51);
// Readings a little outside the spec range are real (a very near or very far AP) and still
// tell the solver "strong" or "weak"; beyond these bounds they are junk such as 0 or +70.
export const WIFI_SIGNAL_CLAMPABLE = r(-120, -30);
export const WIFI_FREQUENCY = r(1, 100_000);
export const WIFI_CHANNEL = r(1, 255);
export const WIFI_SNR = r(0, 100);
/** True for a MAC that names one fixed access point. */
export function isUsableMac(mac: number): boolean {
  const firstOctet = Math.floor(mac / TWO_POW_40);
  // Bit 0: multicast (and broadcast). Bit 1: locally administered, which is what randomised
  // hotspot and privacy MACs use; they move with their phone, so they cannot locate anything.
  return mac !== 0 && (firstOctet & 0b11) === 0;
}

export function readWifi(r: RequestReader, raw: readonly unknown[]): void {
  const aps = r.aps;
  let count = 0;
  for (const input of raw) {
    const item = fieldsOf(input);
    const text = item.bssid;
    if (typeof text !== 'string') continue;
    const bssid = parseBssid(text);
    if (bssid === undefined || !isUsableMac(bssid)) continue;

    const measured = optionalMeasure(item.signal, WIFI_SIGNAL_CLAMPABLE);
    const signal =
      measured === undefined
        ? Number.NaN
        : Math.min(WIFI_SIGNAL_SPEC.max, Math.max(WIFI_SIGNAL_SPEC.min, measured));
    const frequency = optionalInt(item.frequency, WIFI_FREQUENCY) ?? Number.NaN;
    const channel = optionalInt(item.channel, WIFI_CHANNEL) ?? Number.NaN;
    const snr = optionalMeasure(item.signalToNoiseRatio, WIFI_SNR) ?? Number.NaN;
    // At most 15 APs: a scan beats a Map. The stronger of two copies keeps the first's place.
    let at = indexOfBssid(aps, count, bssid);
    if (at < 0) {
      at = count * AP_FIELDS;
      count++;
    } else if (!(strength(signal) > strength(aps[at + ApField.signal] as number))) {
      continue;
    }
    aps[at + ApField.bssid] = bssid;
    aps[at + ApField.signal] = signal;
    aps[at + ApField.frequency] = frequency;
    aps[at + ApField.channel] = channel;
    aps[at + ApField.snr] = snr;
  }
  // One access point gives no position the cells or IP would not; the spec asks for two.
  r.apCount = count >= 2 ? count : 0;
}

/** A signal for comparing two copies of an access point: a missing one (NaN) is the weakest. */
export function strength(signal: number): number {
  return Number.isNaN(signal) ? Number.NEGATIVE_INFINITY : signal;
}

/** Where the access point `bssid` is among the first `count` of `aps`, or -1. */
export function indexOfBssid(aps: Float64Array, count: number, bssid: number): number {
  for (let at = 0; at < count * AP_FIELDS; at += AP_FIELDS) if (aps[at + ApField.bssid] === bssid) return at;
  return -1;
}
