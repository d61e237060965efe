/**
 * Validation and normalisation of `/process` geolocation requests (spec 2.2 to 2.7).
 *
 * Every spec parsing error is decided here, once, by {@link RequestReader}; what comes out is
 * trusted plain numbers that the Rust core can take without checking again: the reader's rows
 * (the engine's path) or a {@link LocateRequest} made from them (the public API). Decisions
 * where the spec is silent are listed in docs/request-validation.md.
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
 *
 * @example
 * ```ts
 * import { parseRequestText } from 'whereabouts';
 * const r = parseRequestText('{"cells":[{"radio":"gsm","mcc":262,"mnc":01,"lac":1,"cid":2}]}');
 * console.log(r.ok ? 'ok' : r.message); // prints: Invalid request
 * ```
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

/**
 * Validates an already-parsed request value (the library API takes objects). Never throws.
 *
 * @example
 * ```ts
 * import { parseRequest } from 'whereabouts';
 * const r = parseRequest({ radio: 'umts', mcc: 262, mnc: 1, cells: [{ lac: 1, cid: 2 }] });
 * const cell = r.ok ? r.request.cells[0] : undefined; // the top-level fields fill in each cell's
 * console.log(cell?.mcc, cell?.mnc, cell?.lac, cell?.cid); // prints: 262 1 1 2
 * const bad = parseRequest({ cells: [{ radio: 'gsm', mcc: 262, mnc: 1, cid: 2 }] });
 * if (!bad.ok) console.log(bad.message); // prints: No location area code provided
 * ```
 */
export function parseRequest(value: unknown, options?: ParseOptions): ParseResult {
  // A getter of the value may itself call parseRequest: that call gets a reader of its own.
  const reader = sharedReader.busy ? new RequestReader() : sharedReader;
  const message = reader.read(value, options);
  return message === undefined ? { ok: true, request: reader.toRequest() } : failure(message);
}

/** Numbers of a cell in {@link RequestReader.cells}, in this order. */
export const CELL_FIELDS = 9;
/** Offsets of a cell's fields in {@link RequestReader.cells}; NaN marks an absent optional value. */
export const CellField = {
  radio: 0,
  mcc: 1,
  mnc: 2,
  lac: 3,
  cid: 4,
  signal: 5,
  asu: 6,
  ta: 7,
  psc: 8,
} as const;
/** Numbers of an access point in {@link RequestReader.aps}. */
export const AP_FIELDS = 5;
/** Offsets of an access point's fields in {@link RequestReader.aps}; NaN marks an absent value. */
export const ApField = { bssid: 0, signal: 1, frequency: 2, channel: 3, snr: 4 } as const;

/**
 * The validator itself: {@link RequestReader.read} checks a request value against every rule
 * and keeps the outcome in its fields, the cells and access points as rows of numbers, so
 * that the engine can encode them for the core without making an object per cell and access
 * point ({@link RequestReader.toRequest} makes the {@link LocateRequest} the public API
 * gives). The fields hold the last request read successfully; a read overwrites them.
 */
export class RequestReader {
  token: string | undefined = undefined;
  /** Lower-cased. */
  id: string | undefined = undefined;
  ip: string | undefined = undefined;
  acceptLanguage: string | undefined = undefined;
  bt: 0 | 1 | 2 = 1;
  address: 0 | 1 | 2 = 1;
  metadata: 0 | 1 = 0;
  geolocation: 0 | 1 = 1;
  gpsSandbox: 0 | 1 = 1;
  lacf: 0 | 1 | 2 = 1;
  scf: 0 | 1 = 1;
  ipf: 0 | 1 = 0;
  /** The GPS fixes; undefined for none. */
  gps: GpsObservation[] | undefined = undefined;
  /** {@link CELL_FIELDS} numbers per valid, distinct cell, in request order. */
  cells = new Float64Array(CELL_FIELDS * DEFAULT_MAX_CELLS);
  cellCount = 0;
  /** {@link AP_FIELDS} numbers per valid, distinct access point; none when fewer than 2. */
  readonly aps = new Float64Array(AP_FIELDS * MAX_WIFI);
  apCount = 0;
  /** Whether a read is under way (a getter of the value being read may call back). */
  busy = false;

  /** Reads a request value: undefined when it is valid, else its spec 7.1 message. Never throws. */
  read(value: unknown, options?: ParseOptions): GeoMessageText | undefined {
    this.busy = true;
    try {
      return readBody(this, value, options ?? NO_OPTIONS);
    } catch (err) {
      if (err instanceof Rejection) return err.message as GeoMessageText;
      // Library callers may hand over proxies or objects with throwing getters: whatever
      // goes wrong while reading them is their malformed request, not our crash.
      return GeoMessage.invalidRequest;
    } finally {
      this.busy = false;
    }
  }

  /** The last request read, as the objects of {@link LocateRequest}. */
  toRequest(): LocateRequest {
    const cells: CellObservation[] = new Array(this.cellCount);
    for (let k = 0; k < this.cellCount; k++) {
      const c = this.cells;
      const at = k * CELL_FIELDS;
      cells[k] = {
        radio: c[at + CellField.radio] as number,
        mcc: c[at + CellField.mcc] as number,
        mnc: c[at + CellField.mnc] as number,
        lac: c[at + CellField.lac] as number,
        cid: c[at + CellField.cid] as number,
        signal: present(c[at + CellField.signal] as number),
        asu: present(c[at + CellField.asu] as number),
        ta: present(c[at + CellField.ta] as number),
        psc: present(c[at + CellField.psc] as number),
      };
    }
    const wifi: WifiObservation[] = new Array(this.apCount);
    for (let k = 0; k < this.apCount; k++) {
      const a = this.aps;
      const at = k * AP_FIELDS;
      wifi[k] = {
        bssid: a[at + ApField.bssid] as number,
        signal: present(a[at + ApField.signal] as number),
        frequency: present(a[at + ApField.frequency] as number),
        channel: present(a[at + ApField.channel] as number),
        snr: present(a[at + ApField.snr] as number),
      };
    }
    const request: LocateRequest = {
      cells,
      wifi,
      fallbacks: { lacf: this.lacf, scf: this.scf, ipf: this.ipf },
      bt: this.bt,
      address: this.address,
      metadata: this.metadata,
      geolocation: this.geolocation,
      gps: this.gps ?? [],
      gpsSandbox: this.gpsSandbox,
    };
    if (this.token !== undefined) request.token = this.token;
    if (this.id !== undefined) request.id = this.id;
    if (this.ip !== undefined) request.ip = this.ip;
    if (this.acceptLanguage !== undefined) request.acceptLanguage = this.acceptLanguage;
    return request;
  }
}

/** A row value as an optional field: NaN marks an absent one. */
function present(n: number): number | undefined {
  return Number.isNaN(n) ? undefined : n;
}

const sharedReader = new RequestReader();

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

const NO_OPTIONS: ParseOptions = {};

/**
 * The fields of a request, cell or access point object, or `Invalid request` when the value
 * is not an object: the object itself when it is a plain object (what JSON.parse and object
 * literals make), else a null-prototype copy of its own enumerable properties, so that
 * nothing a class or `Object.create` prototype supplies is seen. (A globally polluted
 * `Object.prototype` is outside what validation can defend.) One function for the test and
 * the prototype check: it runs for every cell and access point.
 */
function fieldsOf(v: unknown): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) reject(GeoMessage.invalidRequest);
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null ? (v as Obj) : ownCopy(v as Obj);
}

function ownCopy(o: Obj): Obj {
  return Object.assign(Object.create(null) as Obj, o);
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
function readArray(v: unknown, max: number): readonly unknown[] {
  if (v === undefined || v === null) return NONE;
  if (!Array.isArray(v) || v.length > max) reject(GeoMessage.invalidRequest);
  return v;
}

const NONE: readonly unknown[] = [];

function readBody(r: RequestReader, input: unknown, options: ParseOptions): GeoMessageText | undefined {
  const value = fieldsOf(input);
  let tokenField: unknown;
  let idField: unknown;
  let ipField: unknown;
  let languageField: unknown;
  let btField: unknown;
  let addressField: unknown;
  let metadataField: unknown;
  let geolocationField: unknown;
  let sandboxField: unknown;
  let fallbacksField: unknown;
  let gpsField: unknown;
  let cellsField: unknown;
  let wifiField: unknown;
  let radioField: unknown;
  let mccField: unknown;
  let mncField: unknown;
  // One `for...in` rather than a read by name per field: bodies come in many shapes (which
  // optional fields a client sends), so a read by name is a megamorphic lookup, mostly of an
  // absent field, the slowest case (16 cost about 0.37 us, the loop over 5 to 7 keys 0.1 us).
  // Every field is thus read once, before any check: a getter that throws makes the request
  // `Invalid request` whatever else is wrong with it. The most frequent keys come first, as
  // a switch compares in order. (Cells and access points come in few shapes: read by name.)
  for (const key in value) {
    switch (key) {
      case 'cells':
        cellsField = value[key];
        break;
      case 'wifi':
        wifiField = value[key];
        break;
      case 'radio':
        radioField = value[key];
        break;
      case 'mcc':
        mccField = value[key];
        break;
      case 'mnc':
        mncField = value[key];
        break;
      case 'token':
        tokenField = value[key];
        break;
      case 'address':
        addressField = value[key];
        break;
      case 'id':
        idField = value[key];
        break;
      case 'ip':
        ipField = value[key];
        break;
      case 'accept-language':
        languageField = value[key];
        break;
      case 'bt':
        btField = value[key];
        break;
      case 'metadata':
        metadataField = value[key];
        break;
      case 'geolocation':
        geolocationField = value[key];
        break;
      case 'gps_sandbox':
        sandboxField = value[key];
        break;
      case 'fallbacks':
        fallbacksField = value[key];
        break;
      case 'gps':
        gpsField = value[key];
        break;
    }
  }

  // Authentication is answered before any parsing error, as the service would: a client
  // without a token learns that first.
  const token = readString(tokenField);
  if (token === undefined && options.requireToken === true) reject(GeoMessage.invalidToken);
  r.token = token;

  const idText = readString(idField);
  if (idText !== undefined && !/^[a-z0-9]{1,20}$/i.test(idText)) reject(GeoMessage.invalidRequest);
  // Device slots are counted per id, so "ABC1" and "abc1" must be the same device.
  r.id = idText?.toLowerCase();

  const ip = readString(ipField);
  if (ip !== undefined && isIP(ip) === 0) reject(GeoMessage.invalidRequest);
  r.ip = ip;

  r.acceptLanguage = readString(languageField);
  r.bt = readChoice<0 | 1 | 2>(btField, 2, 1);
  r.address = readChoice<0 | 1 | 2>(addressField, 2, 1);
  r.metadata = readChoice<0 | 1>(metadataField, 1, 0);
  r.geolocation = readChoice<0 | 1>(geolocationField, 1, 1);
  r.gpsSandbox = readChoice<0 | 1>(sandboxField, 1, 1);
  readFallbacks(r, fallbacksField);
  const rawGps = readArray(gpsField, MAX_GPS);
  r.gps = rawGps.length === 0 ? undefined : rawGps.map(parseGps);

  const maxCells =
    typeof options.maxCells === 'number' && Number.isSafeInteger(options.maxCells) && options.maxCells > 0
      ? options.maxCells
      : DEFAULT_MAX_CELLS;
  const rawCells = readArray(cellsField, maxCells);
  const rawWifi = readArray(wifiField, MAX_WIFI);

  const topRadio = parseRadioField(radioField);
  const topMcc = readInt(mccField);
  if (topMcc !== undefined && !inRange(topMcc, MCC_RANGE)) reject(GeoMessage.invalidMcc);
  // Only the union of the radios' ranges can be checked here: which radio's range applies
  // is known per cell, where the inherited value is checked again.
  const topMnc = readInt(mncField);
  if (topMnc !== undefined && !inRange(topMnc, UNKNOWN_LIMITS.mnc)) reject(GeoMessage.invalidMnc);

  readCells(r, rawCells, topRadio, topMcc, topMnc);
  readWifi(r, rawWifi);

  if (r.cellCount === 0 && r.apCount === 0 && r.ipf === 0) {
    // Cells whose fields were missing or malformed were rejected above with their own message,
    // so sent-but-empty here means every cell had a lac or cid outside its radio's range.
    // Returned, not thrown: this is the one rejection common in real traffic (a scan of
    // randomised MACs), and a throw costs about a microsecond.
    return rawCells.length > 0 ? GeoMessage.noValidCells : GeoMessage.noNetworkData;
  }
  return undefined;
}

// The last radio text accepted and its code: requests name the same radio in every cell, and
// the code depends on the text alone.
let lastRadioText: string | undefined;
let lastRadioCode: number = UNKNOWN_RADIO;

/** A `radio` field: undefined when absent, a code when known, otherwise `Invalid request`. */
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

function readCells(
  r: RequestReader,
  raw: readonly unknown[],
  topRadio: number | undefined,
  topMcc: number | undefined,
  topMnc: number | undefined,
): void {
  r.cellCount = 0;
  if (r.cells.length < raw.length * CELL_FIELDS) r.cells = new Float64Array(raw.length * CELL_FIELDS);
  const cells = r.cells;
  for (const item of raw) {
    const at = r.cellCount * CELL_FIELDS;
    if (!readCell(cells, at, item, topRadio, topMcc, topMnc)) continue;
    // A repeated cell would count twice in the solver; the first copy keeps its place.
    // A scan of at most 7 cells is cheaper than building string keys for a Set.
    if (!hasCell(cells, at)) r.cellCount++;
  }
}

/** Whether one of the cells before `at` has the key (radio, mcc, mnc, lac, cid) of the one at `at`. */
function hasCell(cells: Float64Array, at: number): boolean {
  for (let a = 0; a < at; a += CELL_FIELDS) {
    if (
      cells[a + CellField.cid] === cells[at + CellField.cid] &&
      cells[a + CellField.lac] === cells[at + CellField.lac] &&
      cells[a + CellField.mnc] === cells[at + CellField.mnc] &&
      cells[a + CellField.mcc] === cells[at + CellField.mcc] &&
      cells[a + CellField.radio] === cells[at + CellField.radio]
    )
      return true;
  }
  return false;
}

/**
 * Writes the normalised cell at `at` of `cells` and returns true, returns false for a cell
 * to drop, or rejects the whole request.
 */
function readCell(
  cells: Float64Array,
  at: number,
  input: unknown,
  topRadio: number | undefined,
  topMcc: number | undefined,
  topMnc: number | undefined,
): boolean {
  const item = fieldsOf(input);
  const radio = parseRadioField(item.radio) ?? topRadio ?? UNKNOWN_RADIO;
  const limits = radio >= 0 ? (LIMITS[radio] as RadioLimits) : UNKNOWN_LIMITS;

  // Missing fields are reported before malformed ones, in the order of the spec 7.1 table.
  const cid = readInt(item.cid);
  if (cid === undefined) reject(GeoMessage.noCellId);
  const lac = readInt(item.lac);
  if (lac === undefined) reject(GeoMessage.noLac);

  let mcc = readInt(item.mcc) ?? topMcc;
  if (mcc === undefined) {
    if (radio !== RadioCode.cdma) reject(GeoMessage.noCountryCode);
    mcc = UNKNOWN_MCC;
  } else if (!inRange(mcc, MCC_RANGE)) {
    reject(GeoMessage.invalidMcc);
  }

  const mnc = readInt(item.mnc) ?? topMnc;
  if (mnc === undefined || !inRange(mnc, limits.mnc)) reject(GeoMessage.invalidMnc);

  // Devices report unknown ids as sentinels such as 2147483647; such a cell cannot be looked
  // up, but its neighbours still can, so it is dropped rather than failing the request.
  if (!inRange(lac, limits.lac) || !inRange(cid, limits.cid)) return false;

  cells[at + CellField.radio] = radio;
  cells[at + CellField.mcc] = mcc;
  cells[at + CellField.mnc] = mnc;
  cells[at + CellField.lac] = lac;
  cells[at + CellField.cid] = cid;
  cells[at + CellField.signal] = optionalMeasure(item.signal, limits.signal) ?? Number.NaN;
  cells[at + CellField.asu] = optionalMeasure(item.asu, limits.asu) ?? Number.NaN;
  cells[at + CellField.ta] = optionalInt(item.ta, limits.ta) ?? Number.NaN;
  cells[at + CellField.psc] = optionalInt(item.psc, limits.psc) ?? Number.NaN;
  return true;
}

/** True for a MAC that names one fixed access point. */
function isUsableMac(mac: number): boolean {
  const firstOctet = Math.floor(mac / TWO_POW_40);
  // Bit 0: multicast (and broadcast). Bit 1: locally administered, which is what randomised
  // hotspot and privacy MACs use; they move with their phone, so they cannot locate anything.
  return mac !== 0 && (firstOctet & 0b11) === 0;
}

function readWifi(r: RequestReader, raw: readonly unknown[]): void {
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
function strength(signal: number): number {
  return Number.isNaN(signal) ? Number.NEGATIVE_INFINITY : signal;
}

/** Where the access point `bssid` is among the first `count` of `aps`, or -1. */
function indexOfBssid(aps: Float64Array, count: number, bssid: number): number {
  for (let at = 0; at < count * AP_FIELDS; at += AP_FIELDS) if (aps[at + ApField.bssid] === bssid) return at;
  return -1;
}

/** Reads `fallbacks` (spec 2.6) into `r`'s switches, the defaults applied. */
function readFallbacks(r: RequestReader, fallbacks: unknown): void {
  r.lacf = 1;
  r.scf = 1;
  r.ipf = 0;
  if (fallbacks === undefined || fallbacks === null) return;
  if (Array.isArray(fallbacks)) {
    // PHP encodes an empty associative array as [], and "array" in spec 2.6 invites a list of
    // switch names; both read naturally as "these fallbacks on".
    if (fallbacks.length > MAX_FALLBACK_NAMES) reject(GeoMessage.invalidRequest);
    for (const name of fallbacks) {
      if (typeof name !== 'string') reject(GeoMessage.invalidRequest);
      const key = name.trim().toLowerCase();
      if (key === 'all' || key === 'ipf') r.ipf = 1;
      if (key === 'all' || key === 'scf') r.scf = 1;
      if (key === 'all' || key === 'lacf') r.lacf = 1;
    }
    return;
  }
  const v = fieldsOf(fallbacks);
  // -1 stands for "all not given", which leaves the defaults in place.
  const all = readChoice<0 | 1 | -1>(v.all, 1, -1);
  if (all !== -1) {
    r.ipf = all;
    r.scf = all;
    r.lacf = all;
  }
  r.ipf = readChoice(v.ipf, 1, r.ipf);
  r.scf = readChoice(v.scf, 1, r.scf);
  r.lacf = readChoice(v.lacf, 2, r.lacf);
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
  const item = fieldsOf(input);
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
