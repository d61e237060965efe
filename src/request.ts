/**
 * Validation and normalisation of `/process` geolocation requests (spec 2.2 to 2.7).
 *
 * Every spec parsing error is decided here, once; what comes out is a compact, trusted
 * {@link LocateRequest} made of plain numbers that the Rust core can take without checking
 * again. Decisions where the spec is silent are listed in docs/request-validation.md.
 */
import { isIP } from 'node:net';
import { GeoMessage, type GeoMessageText } from './errors.js';

/** Radio codes shared with the Rust core (`Radio` discriminants); the numbers never change. */
export const RadioCode = { gsm: 0, cdma: 1, umts: 2, lte: 3, nbiot: 4, nr: 5 } as const;

/** A known radio code. */
export type RadioCodeValue = (typeof RadioCode)[keyof typeof RadioCode];

/** `radio` of a cell when the request named no radio at all: the core tries every radio that fits. */
export const UNKNOWN_RADIO = -1;

/** `mcc` of a CDMA cell sent without one (spec 1.5.06: mcc is optional for CDMA). */
export const UNKNOWN_MCC = -1;

/** The most cell objects a request may carry unless the account's limit was raised (spec 8). */
export const DEFAULT_MAX_CELLS = 7;

/** The most WiFi objects a request may carry (spec 2.4, 8). */
export const MAX_WIFI = 15;

/** The most GPS objects accepted in one request (the spec is silent; this bounds the work). */
export const MAX_GPS = 1000;

/** One normalised cell observation. */
export interface CellObservation {
  /** A {@link RadioCode}, or {@link UNKNOWN_RADIO} when no radio was given anywhere. */
  radio: number;
  /** 0-999, or {@link UNKNOWN_MCC} for a CDMA cell sent without one. */
  mcc: number;
  /** MNC, or the SID for CDMA. */
  mnc: number;
  /** LAC, TAC, or the NID for CDMA. */
  lac: number;
  /** Cell id; up to 36 bits for NR, which a JS number holds exactly. */
  cid: number;
  signal?: number;
  asu?: number;
  ta?: number;
  psc?: number;
}

/** One normalised WiFi access point. */
export interface WifiObservation {
  /** The 48-bit MAC address as an integer. */
  bssid: number;
  signal?: number;
  frequency?: number;
  channel?: number;
  snr?: number;
}

/** Fallback switches (spec 2.6) with defaults applied. */
export interface Fallbacks {
  lacf: 0 | 1 | 2;
  scf: 0 | 1;
  ipf: 0 | 1;
}

/** One GPS observation (spec 2.5). */
export interface GpsObservation {
  source?: string;
  lat: number;
  lon: number;
  accuracy?: number;
  altitude?: number;
  altitudeAccuracy?: number;
  speed?: number;
  heading?: number;
  /** ms since the epoch. */
  timestamp?: number;
}

/** A validated `/process` request with every default applied. */
export interface LocateRequest {
  token?: string;
  /** Device id, lower-cased. */
  id?: string;
  /** Valid cells only, in request order: the first one is the serving cell. */
  cells: CellObservation[];
  /** Valid, distinct access points; empty when fewer than 2 were usable. */
  wifi: WifiObservation[];
  ip?: string;
  fallbacks: Fallbacks;
  bt: 0 | 1 | 2;
  address: 0 | 1 | 2;
  acceptLanguage?: string;
  metadata: 0 | 1;
  geolocation: 0 | 1;
  gps: GpsObservation[];
  gpsSandbox: 0 | 1;
}

/** The outcome of parsing: a request, or one of the spec 7.1 messages. */
export type ParseResult = { ok: true; request: LocateRequest } | { ok: false; message: string };

/** Options that depend on who is asking. */
export interface ParseOptions {
  /** Most cell objects accepted; default 7 (spec: raisable per account). */
  maxCells?: number;
  /** Whether a missing token is an error; default false (the library has no tokens, the server has). */
  requireToken?: boolean;
}

/**
 * Parses a JSON body text. Malformed JSON, including an unquoted number with a leading zero
 * (spec 2.2 body rule 1), gives `Invalid request`.
 */
export function parseRequestText(text: string, options?: ParseOptions): ParseResult {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return failure(GeoMessage.invalidRequest);
  }
  return parseRequest(value, options);
}

/** Validates an already-parsed request value (the library API takes objects). Never throws. */
export function parseRequest(value: unknown, options?: ParseOptions): ParseResult {
  try {
    return { ok: true, request: parseBody(value, options ?? {}) };
  } catch (err) {
    if (err instanceof Rejection) return failure(err.message);
    // Library callers may hand over proxies or objects with throwing getters: whatever
    // goes wrong while reading them is their malformed request, not our crash.
    return failure(GeoMessage.invalidRequest);
  }
}

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
const HEX = new Int8Array(128).fill(-1);
for (let c = 0; c < 10; c++) HEX[48 + c] = c;
for (let c = 0; c < 6; c++) {
  HEX[65 + c] = 10 + c;
  HEX[97 + c] = 10 + c;
}

function hexValue(code: number): number {
  return code < 128 ? (HEX[code] as number) : -1;
}

/**
 * The common `aa:bb:cc:dd:ee:ff` spelling (or with `-` or `.`), read without allocating:
 * a scan has up to 15 of them, and this is the hot path of request parsing.
 */
function parseColonMac(t: string): number | undefined {
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

/**
 * Parses a radio name case-insensitively, accepting the technology names of spec table 2.3
 * (`wcdma`, `hspa+`, `4g`, `nb-iot`, `evdo_a`, `5g`...). Returns undefined for an unknown name.
 */
export function parseRadio(name: string): RadioCodeValue | undefined {
  if (typeof name !== 'string') return undefined;
  const exact = RADIO_BY_NAME.get(name);
  if (exact !== undefined) return exact;
  // Android and modem tools spell the same technology with '-', '_' or spaces.
  return RADIO_BY_NAME.get(name.trim().toLowerCase().replace(/[-_ ]/g, ''));
}

// ---------------------------------------------------------------------------------------------

const MAC_MAX = 0xffff_ffff_ffff;
const TWO_POW_40 = 2 ** 40;

const RADIO_ALIASES: Readonly<Record<string, RadioCodeValue>> = {
  gsm: RadioCode.gsm,
  edge: RadioCode.gsm,
  gprs: RadioCode.gsm,
  '2g': RadioCode.gsm,
  cdma: RadioCode.cdma,
  cdma2000: RadioCode.cdma,
  '1xrtt': RadioCode.cdma,
  ehrpd: RadioCode.cdma,
  evdo: RadioCode.cdma,
  evdo0: RadioCode.cdma,
  evdoa: RadioCode.cdma,
  evdob: RadioCode.cdma,
  is95: RadioCode.cdma,
  is95a: RadioCode.cdma,
  is95b: RadioCode.cdma,
  umts: RadioCode.umts,
  wcdma: RadioCode.umts,
  hspa: RadioCode.umts,
  hsdpa: RadioCode.umts,
  hsupa: RadioCode.umts,
  'hspa+': RadioCode.umts,
  hspap: RadioCode.umts,
  '3g': RadioCode.umts,
  lte: RadioCode.lte,
  '4g': RadioCode.lte,
  catm: RadioCode.lte,
  catm1: RadioCode.lte,
  ltem: RadioCode.lte,
  nbiot: RadioCode.nbiot,
  nr: RadioCode.nr,
  '5g': RadioCode.nr,
  '5gnr': RadioCode.nr,
};

// A Map sees no prototype (`constructor`, `__proto__`) and is faster than a dictionary object.
const RADIO_BY_NAME = new Map(Object.entries(RADIO_ALIASES));

interface Range {
  readonly min: number;
  readonly max: number;
}

/** Ranges of spec table 2.3; an absent optional range means the field is not used by that radio. */
interface RadioLimits {
  readonly lac: Range;
  readonly cid: Range;
  readonly mnc: Range;
  readonly signal?: Range;
  readonly asu?: Range;
  readonly ta?: Range;
  readonly psc?: Range;
}

const r = (min: number, max: number): Range => ({ min, max });

const LIMITS: readonly RadioLimits[] = [
  /* gsm */ {
    lac: r(0, 65533),
    cid: r(0, 65535),
    mnc: r(0, 999),
    signal: r(-113, -51),
    asu: r(0, 31),
    ta: r(0, 63),
  },
  /* cdma */ { lac: r(0, 65534), cid: r(0, 65535), mnc: r(1, 32767), signal: r(-100, -75), asu: r(1, 16) },
  /* umts */ {
    lac: r(0, 65533),
    cid: r(0, 268435455),
    mnc: r(0, 999),
    signal: r(-121, -25),
    asu: r(-5, 91),
    psc: r(0, 511),
  },
  /* lte */ {
    lac: r(0, 65533),
    cid: r(0, 268435455),
    mnc: r(0, 999),
    signal: r(-137, -45),
    asu: r(0, 97),
    ta: r(0, 63),
    psc: r(0, 503),
  },
  // NB-IoT signal is "currently ignored" by the spec, so it has no range and is never kept.
  /* nbiot */ { lac: r(0, 65533), cid: r(0, 268435455), mnc: r(0, 999), psc: r(0, 503) },
  /* nr */ {
    lac: r(0, 16777215),
    cid: r(0, 68719476735),
    mnc: r(0, 999),
    signal: r(-140, -44),
    asu: r(0, 97),
    psc: r(0, 1007),
  },
];

// Without a radio the core tries every radio whose ranges fit, so accept the union of them.
const UNKNOWN_LIMITS: RadioLimits = {
  lac: r(0, 16777215),
  cid: r(0, 68719476735),
  mnc: r(0, 32767),
  signal: r(-140, -25),
  asu: r(-5, 97),
  ta: r(0, 63),
  psc: r(0, 1007),
};

const MCC_RANGE = r(0, 999);
const WIFI_SIGNAL_SPEC = r(-113, -51);
// Readings a little outside the spec range are real (a very near or very far AP) and still
// tell the solver "strong" or "weak"; beyond these bounds they are junk such as 0 or +70.
const WIFI_SIGNAL_CLAMPABLE = r(-120, -30);
const WIFI_FREQUENCY = r(1, 100_000);
const WIFI_CHANNEL = r(1, 255);
const WIFI_SNR = r(0, 100);
const MAX_FALLBACK_NAMES = 16;

/** Carries a spec message out of nested validation to {@link parseRequest}. */
class Rejection extends Error {}

// One instance per message, made once: invalid requests are common under load, and
// constructing an Error captures a stack trace each time.
const REJECTIONS = new Map<string, Rejection>(Object.values(GeoMessage).map((m) => [m, new Rejection(m)]));

function reject(message: GeoMessageText): never {
  throw REJECTIONS.get(message) ?? new Rejection(message);
}

function failure(message: string): ParseResult {
  return { ok: false, message };
}

type Obj = Record<string, unknown>;

function isObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The object itself when it is a plain object (what JSON.parse and object literals make),
 * else a null-prototype copy of its own enumerable properties: fields are then read by name,
 * which V8 optimises well, and nothing a class or `Object.create` prototype supplies is seen.
 * (A globally polluted `Object.prototype` is outside what validation can defend.)
 */
function own(o: Obj): Obj {
  const proto = Object.getPrototypeOf(o);
  return proto === Object.prototype || proto === null ? o : Object.assign(Object.create(null) as Obj, o);
}

function inRange(n: number, range: Range): boolean {
  return n >= range.min && n <= range.max;
}

const INT_TEXT = /^-?\d{1,16}$/;
const NUM_TEXT = /^-?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/i;

/**
 * Reads an integer field: undefined when absent (missing, null or ""), NaN when present but
 * not an integer. Quoted integers are accepted: leading zeros are only invalid unquoted.
 */
function readInt(v: unknown): number | undefined {
  if (v === undefined || v === null) return undefined;
  let n: number;
  if (typeof v === 'number') {
    n = v;
  } else if (typeof v === 'string') {
    const t = v.trim();
    if (t === '') return undefined;
    if (!INT_TEXT.test(t)) return Number.NaN;
    n = Number(t);
  } else {
    return Number.NaN;
  }
  // `+ 0` turns -0 into 0 so that "-0" and 0 are the same key.
  return Number.isSafeInteger(n) ? n + 0 : Number.NaN;
}

/** Reads a real-valued field like {@link readInt}, accepting decimals and quoted decimals. */
function readNumber(v: unknown): number | undefined {
  if (v === undefined || v === null) return undefined;
  let n: number;
  if (typeof v === 'number') {
    n = v;
  } else if (typeof v === 'string') {
    const t = v.trim();
    if (t === '') return undefined;
    if (t.length > 64 || !NUM_TEXT.test(t)) return Number.NaN;
    n = Number(t);
  } else {
    return Number.NaN;
  }
  return Number.isFinite(n) ? n + 0 : Number.NaN;
}

/** An optional integer measurement: kept when it is an integer inside `range`, else dropped. */
function optionalInt(v: unknown, range: Range | undefined): number | undefined {
  if (range === undefined) return undefined;
  const n = readInt(v);
  return n !== undefined && inRange(n, range) ? n : undefined;
}

/** An optional signal-like measurement: decimals are rounded (they are readings, not ids). */
function optionalMeasure(v: unknown, range: Range | undefined): number | undefined {
  if (range === undefined) return undefined;
  const n = readNumber(v);
  if (n === undefined || Number.isNaN(n)) return undefined;
  const rounded = Math.round(n) + 0;
  return inRange(rounded, range) ? rounded : undefined;
}

/**
 * Reads a small enumerated integer such as `bt` (0..max). Booleans are accepted where the
 * field is a 0/1 switch, because JSON encoders of many languages turn flags into true/false.
 */
function readChoice<T extends number>(v: unknown, max: T, fallback: T): T {
  if (v === undefined || v === null) return fallback;
  if (typeof v === 'boolean' && max === 1) return (v ? 1 : 0) as T;
  const n = readInt(v);
  if (n === undefined) return fallback;
  if (Number.isNaN(n) || n < 0 || n > max) reject(GeoMessage.invalidRequest);
  return n as T;
}

/** Reads an optional string; empty or blank means absent, a non-string is a malformed request. */
function readString(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') reject(GeoMessage.invalidRequest);
  const t = v.trim();
  return t === '' ? undefined : t;
}

/** Reads an optional array; a non-array is a malformed request, an empty array means absent. */
function readArray(v: unknown, max: number): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.length > max) reject(GeoMessage.invalidRequest);
  return v;
}

interface TopLevel {
  radio: number | undefined;
  mcc: number | undefined;
  mnc: number | undefined;
}

function parseBody(input: unknown, options: ParseOptions): LocateRequest {
  if (!isObject(input)) reject(GeoMessage.invalidRequest);
  const value = own(input);

  // Authentication is answered before any parsing error, as the service would: a client
  // without a token learns that first.
  const token = readString(value.token);
  if (token === undefined && options.requireToken === true) reject(GeoMessage.invalidToken);

  const idText = readString(value.id);
  if (idText !== undefined && !/^[a-z0-9]{1,20}$/i.test(idText)) reject(GeoMessage.invalidRequest);
  // Device slots are counted per id, so "ABC1" and "abc1" must be the same device.
  const id = idText?.toLowerCase();

  const ip = readString(value.ip);
  if (ip !== undefined && isIP(ip) === 0) reject(GeoMessage.invalidRequest);

  const acceptLanguage = readString(value['accept-language']);
  const bt = readChoice<0 | 1 | 2>(value.bt, 2, 1);
  const address = readChoice<0 | 1 | 2>(value.address, 2, 1);
  const metadata = readChoice<0 | 1>(value.metadata, 1, 0);
  const geolocation = readChoice<0 | 1>(value.geolocation, 1, 1);
  const gpsSandbox = readChoice<0 | 1>(value.gps_sandbox, 1, 1);
  const fallbacks = parseFallbacks(value.fallbacks);
  const rawGps = readArray(value.gps, MAX_GPS);
  const gps = rawGps.length === 0 ? [] : rawGps.map(parseGps);

  const maxCells =
    typeof options.maxCells === 'number' && Number.isSafeInteger(options.maxCells) && options.maxCells > 0
      ? options.maxCells
      : DEFAULT_MAX_CELLS;
  const rawCells = readArray(value.cells, maxCells);
  const rawWifi = readArray(value.wifi, MAX_WIFI);

  const top = parseTopLevel(value);
  const cells = parseCells(rawCells, top);
  const wifi = parseWifi(rawWifi);

  if (cells.length === 0 && wifi.length === 0 && fallbacks.ipf === 0) {
    // Cells whose fields were missing or malformed were rejected above with their own message,
    // so sent-but-empty here means every cell had a lac or cid outside its radio's range.
    reject(rawCells.length > 0 ? GeoMessage.noValidCells : GeoMessage.noNetworkData);
  }

  const request: LocateRequest = {
    cells,
    wifi,
    fallbacks,
    bt,
    address,
    metadata,
    geolocation,
    gps,
    gpsSandbox,
  };
  if (token !== undefined) request.token = token;
  if (id !== undefined) request.id = id;
  if (ip !== undefined) request.ip = ip;
  if (acceptLanguage !== undefined) request.acceptLanguage = acceptLanguage;
  return request;
}

function parseTopLevel(value: Obj): TopLevel {
  const radio = parseRadioField(value.radio);
  const mcc = readInt(value.mcc);
  if (mcc !== undefined && !inRange(mcc, MCC_RANGE)) reject(GeoMessage.invalidMcc);
  // Only the union of the radios' ranges can be checked here: which radio's range applies
  // is known per cell, where the inherited value is checked again.
  const mnc = readInt(value.mnc);
  if (mnc !== undefined && !inRange(mnc, UNKNOWN_LIMITS.mnc)) reject(GeoMessage.invalidMnc);
  return { radio, mcc, mnc };
}

/** A `radio` field: undefined when absent, a code when known, otherwise `Invalid request`. */
// The last radio text accepted and its code: requests name the same radio in every cell, and
// the code depends on the text alone.
let lastRadioText: string | undefined;
let lastRadioCode: number = UNKNOWN_RADIO;

function parseRadioField(v: unknown): number | undefined {
  if (typeof v === 'string' && v === lastRadioText) return lastRadioCode;
  const name = readString(v);
  if (name === undefined) return undefined;
  const code = parseRadio(name);
  if (code === undefined) reject(GeoMessage.invalidRequest);
  lastRadioText = v as string;
  lastRadioCode = code;
  return code;
}

function parseCells(raw: unknown[], top: TopLevel): CellObservation[] {
  const cells: CellObservation[] = [];
  for (const item of raw) {
    const cell = parseCell(item, top);
    if (cell === undefined) continue;
    // A repeated cell would count twice in the solver; the first copy keeps its place.
    // A scan of at most 7 cells is cheaper than building string keys for a Set.
    if (!hasCell(cells, cell)) cells.push(cell);
  }
  return cells;
}

function hasCell(cells: readonly CellObservation[], b: CellObservation): boolean {
  for (const a of cells) {
    if (a.cid === b.cid && a.lac === b.lac && a.mnc === b.mnc && a.mcc === b.mcc && a.radio === b.radio)
      return true;
  }
  return false;
}

/** Returns the normalised cell, undefined for a cell to drop, or rejects the whole request. */
function parseCell(input: unknown, top: TopLevel): CellObservation | undefined {
  if (!isObject(input)) reject(GeoMessage.invalidRequest);
  const item = own(input);
  const radio = parseRadioField(item.radio) ?? top.radio ?? UNKNOWN_RADIO;
  const limits = LIMITS[radio] ?? UNKNOWN_LIMITS;

  // Missing fields are reported before malformed ones, in the order of the spec 7.1 table.
  const cid = readInt(item.cid);
  if (cid === undefined) reject(GeoMessage.noCellId);
  const lac = readInt(item.lac);
  if (lac === undefined) reject(GeoMessage.noLac);

  let mcc = readInt(item.mcc) ?? top.mcc;
  if (mcc === undefined) {
    if (radio !== RadioCode.cdma) reject(GeoMessage.noCountryCode);
    mcc = UNKNOWN_MCC;
  } else if (!inRange(mcc, MCC_RANGE)) {
    reject(GeoMessage.invalidMcc);
  }

  const mnc = readInt(item.mnc) ?? top.mnc;
  if (mnc === undefined || !inRange(mnc, limits.mnc)) reject(GeoMessage.invalidMnc);

  // Devices report unknown ids as sentinels such as 2147483647; such a cell cannot be looked
  // up, but its neighbours still can, so it is dropped rather than failing the request.
  if (!inRange(lac, limits.lac) || !inRange(cid, limits.cid)) return undefined;

  // Every cell gets the same shape (absent measurements as undefined): one allocation and
  // monomorphic reads in the wire encoding, instead of a shape per combination of fields.
  return {
    radio,
    mcc,
    mnc,
    lac,
    cid,
    signal: optionalMeasure(item.signal, limits.signal),
    asu: optionalMeasure(item.asu, limits.asu),
    ta: optionalInt(item.ta, limits.ta),
    psc: optionalInt(item.psc, limits.psc),
  };
}

/** True for a MAC that names one fixed access point. */
function isUsableMac(mac: number): boolean {
  const firstOctet = Math.floor(mac / TWO_POW_40);
  // Bit 0: multicast (and broadcast). Bit 1: locally administered, which is what randomised
  // hotspot and privacy MACs use; they move with their phone, so they cannot locate anything.
  return mac !== 0 && (firstOctet & 0b11) === 0;
}

function parseWifi(raw: unknown[]): WifiObservation[] {
  const aps: WifiObservation[] = [];
  for (const input of raw) {
    if (!isObject(input)) reject(GeoMessage.invalidRequest);
    const item = own(input);
    const text = item.bssid;
    if (typeof text !== 'string') continue;
    const bssid = parseBssid(text);
    if (bssid === undefined || !isUsableMac(bssid)) continue;

    const signal = optionalMeasure(item.signal, WIFI_SIGNAL_CLAMPABLE);
    // One shape for every AP, as for cells.
    const ap: WifiObservation = {
      bssid,
      signal:
        signal === undefined
          ? undefined
          : Math.min(WIFI_SIGNAL_SPEC.max, Math.max(WIFI_SIGNAL_SPEC.min, signal)),
      frequency: optionalInt(item.frequency, WIFI_FREQUENCY),
      channel: optionalInt(item.channel, WIFI_CHANNEL),
      snr: optionalMeasure(item.signalToNoiseRatio, WIFI_SNR),
    };

    // At most 15 APs: a scan beats a Map.
    const previous = indexOfBssid(aps, bssid);
    if (previous < 0) {
      aps.push(ap);
    } else if ((ap.signal ?? -Infinity) > (aps[previous]?.signal ?? -Infinity)) {
      aps[previous] = ap;
    }
  }
  // One access point gives no position the cells or IP would not; the spec asks for two.
  return aps.length >= 2 ? aps : [];
}

function indexOfBssid(aps: readonly WifiObservation[], bssid: number): number {
  for (let i = 0; i < aps.length; i++) if ((aps[i] as WifiObservation).bssid === bssid) return i;
  return -1;
}

function parseFallbacks(fallbacks: unknown): Fallbacks {
  const out: Fallbacks = { lacf: 1, scf: 1, ipf: 0 };
  if (fallbacks === undefined || fallbacks === null) return out;
  if (Array.isArray(fallbacks)) {
    // PHP encodes an empty associative array as [], and "array" in spec 2.6 invites a list of
    // switch names; both read naturally as "these fallbacks on".
    if (fallbacks.length > MAX_FALLBACK_NAMES) reject(GeoMessage.invalidRequest);
    for (const name of fallbacks) {
      if (typeof name !== 'string') reject(GeoMessage.invalidRequest);
      const key = name.trim().toLowerCase();
      if (key === 'all' || key === 'ipf') out.ipf = 1;
      if (key === 'all' || key === 'scf') out.scf = 1;
      if (key === 'all' || key === 'lacf') out.lacf = 1;
    }
    return out;
  }
  if (!isObject(fallbacks)) reject(GeoMessage.invalidRequest);
  const v = own(fallbacks);
  // -1 stands for "all not given", which leaves the defaults in place.
  const all = readChoice<0 | 1 | -1>(v.all, 1, -1);
  if (all !== -1) {
    out.ipf = all;
    out.scf = all;
    out.lacf = all;
  }
  out.ipf = readChoice(v.ipf, 1, out.ipf);
  out.scf = readChoice(v.scf, 1, out.scf);
  out.lacf = readChoice(v.lacf, 2, out.lacf);
  return out;
}

/** A real field of a GPS object: undefined when absent; malformed or out of range is `Invalid request`. */
function gpsNumber(o: Obj, key: string, range?: Range): number | undefined {
  const n = readNumber(o[key]);
  if (n === undefined) return undefined;
  if (Number.isNaN(n) || (range !== undefined && !inRange(n, range))) reject(GeoMessage.invalidRequest);
  return n;
}

const NON_NEGATIVE = r(0, Number.MAX_VALUE);

function parseGps(input: unknown): GpsObservation {
  if (!isObject(input)) reject(GeoMessage.invalidRequest);
  const item = own(input);
  const lat = gpsNumber(item, 'lat', r(-90, 90));
  const lon = gpsNumber(item, 'lon', r(-180, 180));
  if (lat === undefined || lon === undefined) reject(GeoMessage.invalidRequest);
  const fix: GpsObservation = { lat, lon };
  const source = readString(item.source);
  if (source !== undefined) fix.source = source;
  const accuracy = gpsNumber(item, 'accuracy', NON_NEGATIVE);
  if (accuracy !== undefined) fix.accuracy = accuracy;
  const altitude = gpsNumber(item, 'altitude');
  if (altitude !== undefined) fix.altitude = altitude;
  const altitudeAccuracy = gpsNumber(item, 'altitude_accuracy', NON_NEGATIVE);
  if (altitudeAccuracy !== undefined) fix.altitudeAccuracy = altitudeAccuracy;
  const speed = gpsNumber(item, 'speed', NON_NEGATIVE);
  if (speed !== undefined) fix.speed = speed;
  const heading = gpsNumber(item, 'heading', r(0, 360));
  if (heading !== undefined) fix.heading = heading;
  const timestamp = readInt(item.timestamp);
  if (timestamp !== undefined) {
    if (Number.isNaN(timestamp) || timestamp < 0) reject(GeoMessage.invalidRequest);
    fix.timestamp = timestamp;
  }
  return fix;
}
