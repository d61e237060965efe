/**
 * Validation and normalisation of `/process` geolocation requests (spec 2.2 to 2.7).
 *
 * Every spec parsing error is decided here, once, by {@link RequestReader}; what comes out is
 * trusted plain numbers that the Rust core can take without checking again: the reader's rows
 * (the engine's path) or a {@link LocateRequest} made from them (the public API). Decisions
 * where the spec is silent are listed in docs/request-validation.md. The rules live by
 * concern: the body's fields (`body.ts`), cells and radios (`cells.ts`), access points
 * (`wifi.ts`), GPS fixes (`gps.ts`).
 */
import { GeoMessage } from '../../errors.js';
import { jsonWithinLimits } from './limits.js';
import { RequestReader } from './reader.js';
import type { ParseOptions, ParseResult } from './types.js';

/**
 * Parses a JSON body text. Malformed JSON, including an unquoted number with a leading zero
 * (spec 2.2 body rule 1), gives `Invalid request`, as does a text nested deeper or holding
 * more elements than a request can need (`limits.ts`), without parsing it.
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
  if (!jsonWithinLimits(text)) return failure(GeoMessage.invalidRequest);
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

const sharedReader = new RequestReader();

function failure(message: string): ParseResult {
  return { ok: false, message };
}

export {
  LIMITS,
  parseRadio,
  RadioCode,
  type RadioCodeValue,
  UNKNOWN_MCC,
  UNKNOWN_RADIO,
} from './cells.js';
export {
  AP_FIELDS,
  ApField,
  CELL_FIELDS,
  CellField,
  RequestReader,
  type RequestRows,
  rowsOf,
} from './reader.js';
export {
  type CellObservation,
  DEFAULT_MAX_CELLS,
  type Fallbacks,
  type GpsObservation,
  type LocateRequest,
  MAX_GPS,
  MAX_WIFI,
  type ParseOptions,
  type ParseResult,
  type WifiObservation,
} from './types.js';
export { formatBssid, parseBssid } from './wifi.js';
