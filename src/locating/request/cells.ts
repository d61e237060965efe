/** Radios and cells of a `/process` request: radio names and codes, each radio's ranges, the `cells` list. */
import { GeoMessage } from '../../errors.js';
import { RadioCode } from '../../native/contracts.js';
import { CELL_FIELDS, CellField, type RequestReader } from './reader.js';
import {
  fieldsOf,
  inRange,
  optionalInt,
  optionalMeasure,
  type Range,
  r,
  readInt,
  readString,
  reject,
} from './values.js';

/** Radio codes shared with the Rust core (`Radio` discriminants), generated from it; the numbers never change. */
export { RadioCode };

/** A known radio code. */
export type RadioCodeValue = (typeof RadioCode)[keyof typeof RadioCode];

/** `radio` of a cell when the request named no radio at all: the core tries every radio that fits. */
export const UNKNOWN_RADIO = -1;

/** `mcc` of a CDMA cell sent without one (spec 1.5.06: mcc is optional for CDMA). */
export const UNKNOWN_MCC = -1;

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

export const RADIO_ALIASES: Readonly<Record<string, RadioCodeValue>> = {
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
export const RADIO_BY_NAME = new Map(Object.entries(RADIO_ALIASES));

/** Ranges of spec table 2.3; an absent optional range means the field is not used by that radio. */
export interface RadioLimits {
  readonly lac: Range;
  readonly cid: Range;
  readonly mnc: Range;
  readonly signal?: Range;
  readonly asu?: Range;
  readonly ta?: Range;
  readonly psc?: Range;
}

export const LIMITS: readonly RadioLimits[] = [
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
export const UNKNOWN_LIMITS: RadioLimits = {
  lac: r(0, 16777215),
  cid: r(0, 68719476735),
  mnc: r(0, 32767),
  signal: r(-140, -25),
  asu: r(-5, 97),
  ta: r(0, 63),
  psc: r(0, 1007),
};

export const MCC_RANGE = r(0, 999);
// The last radio text accepted and its code: requests name the same radio in every cell, and
// the code depends on the text alone.
let lastRadioText: string | undefined;
let lastRadioCode: number = UNKNOWN_RADIO;

/** A `radio` field: undefined when absent, a code when known, otherwise `Invalid request`. */
export function parseRadioField(v: unknown): number | undefined {
  if (typeof v === 'string' && v === lastRadioText) return lastRadioCode;
  const name = readString(v);
  if (name === undefined) return undefined;
  const code = parseRadio(name);
  if (code === undefined) reject(GeoMessage.invalidRequest);
  lastRadioText = v as string;
  lastRadioCode = code;
  return code;
}

export function readCells(
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
export function hasCell(cells: Float64Array, at: number): boolean {
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
export function readCell(
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
