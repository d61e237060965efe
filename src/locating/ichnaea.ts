/**
 * The Ichnaea (Google Geolocation API style) interface of the engine: bodies of
 * `/v1/geolocate`, `/v1/country` and `/v2/geosubmit` translated into the `/process` request
 * shape, validated by the `/process` rules (src/locating/request/) and solved by the same
 * engine; answers and errors shaped as that interface has them. There is one path with two
 * shapes at its edges: nothing here decides whether a cell or an access point is valid.
 * docs/server.md, "The Ichnaea interface", lists the decisions where the interfaces differ.
 */
import { GeoMessage } from '../errors.js';
import type { ReverseResponse } from '../geocoding/reverse.js';
import { optedOut } from '../learning/submissions.js';
import { type LocateRequest, parseRequest } from './request/index.js';
import { DEFAULT_MAX_CELLS, MAX_WIFI } from './request/types.js';
import type { FallbackName, ProcessResponse } from './response.js';

/**
 * The factor from the engine's 68% radius to the 95% one this interface promises: the 95%
 * quantile of error / reported radius over every answer of the simulator's scenarios
 * (`npx tsx bench/accuracy.ts --requests 10000 --seed N --ratios`, row "all answers"; the runs
 * are in docs/server.md). A two-dimensional Gaussian error would give 1.62; the errors' tails
 * are heavier than that. One factor for all answers is a compromise: per scenario the quantile
 * runs from 1.4 (LAC fallback) to 3.0 (a single cell).
 */
export const ACCURACY_95_FACTOR = 2.18;

/** One entry of an error's `errors` list. */
export interface IchnaeaErrorItem {
  domain: string;
  reason: string;
  message: string;
}

/** The error body of the interface: the HTTP status is `error.code`. */
export interface IchnaeaError {
  error: { errors: IchnaeaErrorItem[]; code: number; message: string };
}

/** A located answer of `/v1/geolocate`: `accuracy` is a 95% radius in metres. */
export interface GeolocateResponse {
  location: { lat: number; lng: number };
  accuracy: number;
  /** Present when the location came from a location area or the caller's IP address. */
  fallback?: 'lacf' | 'ipf';
}

/** A located answer of `/v1/country`. */
export interface CountryResponse {
  country_code: string;
  country_name: string;
  fallback?: 'lacf' | 'ipf';
}

/** An error body with one entry; `topMessage` is the body's own message (default: the entry's). */
export function ichnaeaError(
  code: number,
  domain: string,
  reason: string,
  message: string,
  topMessage = message,
): IchnaeaError {
  return { error: { errors: [{ domain, reason, message }], code, message: topMessage } };
}

/** The interface's errors, as its documentation words them where it does, in ours where not. */
export const IchnaeaErrors = {
  parse: (): IchnaeaError => ichnaeaError(400, 'global', 'parseError', 'Parse Error'),
  notFound: (): IchnaeaError => ichnaeaError(404, 'geolocation', 'notFound', 'Not found'),
  keyInvalid: (): IchnaeaError =>
    ichnaeaError(400, 'usageLimits', 'keyInvalid', 'Missing or invalid API key.', 'Invalid API key'),
  dailyLimit: (): IchnaeaError =>
    ichnaeaError(403, 'usageLimits', 'dailyLimitExceeded', 'You have exceeded your daily limit.'),
  rateLimit: (): IchnaeaError =>
    ichnaeaError(
      429,
      'usageLimits',
      'userRateLimitExceeded',
      'Too many requests for this API key; retry after the Retry-After seconds.',
    ),
  restricted: (): IchnaeaError =>
    ichnaeaError(
      403,
      'usageLimits',
      'ipRefererBlocked',
      'This API key does not accept requests from this referrer or IP address.',
    ),
  submitNotEnabled: (): IchnaeaError =>
    ichnaeaError(403, 'usageLimits', 'accessNotConfigured', 'Submissions are not enabled for this API key.'),
  tooLarge: (): IchnaeaError => ichnaeaError(413, 'global', 'requestTooLarge', 'Request body too large'),
  backend: (): IchnaeaError =>
    ichnaeaError(500, 'global', 'backendError', 'Backend error; please try again after some time.'),
} as const;

type Obj = Record<string, unknown>;

function isObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A 0/1 switch of this interface (JSON booleans) as the `/process` rules read it; other values pass on to them. */
function switchOf(v: unknown): unknown {
  return typeof v === 'boolean' ? (v ? 1 : 0) : v;
}

/**
 * An Ichnaea cell (`cellTowers[]`) in the `/process` cell shape; anything but an object passes
 * on for the rules to refuse. `psc` is geolocate's name, `primaryScramblingCode` geosubmit's.
 * `age` and `serving` have no `/process` field and are not used.
 */
function cellOf(c: unknown): unknown {
  if (!isObject(c)) return c;
  return {
    radio: c.radioType,
    mcc: c.mobileCountryCode,
    mnc: c.mobileNetworkCode,
    lac: c.locationAreaCode,
    cid: c.cellId,
    signal: c.signalStrength,
    asu: c.asu,
    ta: c.timingAdvance,
    psc: c.psc ?? c.primaryScramblingCode,
  };
}

/** The received signal of an access point for ranking them; none is the weakest. */
function apStrength(ap: unknown): number {
  const s = isObject(ap) ? ap.signalStrength : undefined;
  return typeof s === 'number' && Number.isFinite(s) ? s : Number.NEGATIVE_INFINITY;
}

/**
 * Whether the access point may be used: hidden networks (an empty SSID) and those whose SSID
 * opted out (`_nomap`) are dropped here, as the interface asks; an absent SSID says nothing.
 */
function usableAp(ap: unknown): boolean {
  if (!isObject(ap)) return true;
  const ssid = ap.ssid;
  if (typeof ssid !== 'string') return true;
  // Android reports a hidden network's SSID as empty, some drivers as NUL bytes.
  if (ssid.replace(/\0/g, '').trim() === '') return false;
  return !optedOut(ssid);
}

/**
 * `wifiAccessPoints` in the `/process` shape: without hidden and opted-out networks, and the
 * strongest {@link MAX_WIFI} of a longer scan (clients of this interface send every network
 * they see; the `/process` rules take at most 15).
 */
function wifiOf(list: unknown): unknown {
  if (!Array.isArray(list)) return list;
  let kept = list.filter(usableAp);
  if (kept.length > MAX_WIFI) {
    kept = kept
      .map((ap, i) => ({ ap, i, s: apStrength(ap) }))
      .sort((a, b) => b.s - a.s || a.i - b.i)
      .slice(0, MAX_WIFI)
      .map((x) => x.ap);
  }
  return kept.map((ap) =>
    isObject(ap)
      ? {
          bssid: ap.macAddress,
          signal: ap.signalStrength,
          channel: ap.channel,
          frequency: ap.frequency,
          signalToNoiseRatio: ap.signalToNoiseRatio,
        }
      : ap,
  );
}

/** `cellTowers` in the `/process` shape, the first `max` in their order (the first is the serving cell). */
function cellsOf(list: unknown, max: number): unknown {
  if (!Array.isArray(list)) return list;
  return list.slice(0, max).map(cellOf);
}

/**
 * A `/v1/geolocate` (or `/v1/country`) body as a `/process` request object, or undefined for a
 * body this interface calls a parse error (not an object; `fallbacks` not an object;
 * `bluetoothBeacons` not a list). What is left to judge, the `/process` rules judge.
 *
 * - `radioType` (top level or per cell; `wcdma` is UMTS, `nr` 5G) is `radio`;
 * - `fallbacks.ipf`, else `considerIp`, else on, is `ipf`; `fallbacks.lacf`, else on, is `lacf`;
 * - `carrier`, `homeMobileCountryCode` and `homeMobileNetworkCode` name the SIM's home network,
 *   not the network the cells belong to (they differ when roaming): not used;
 * - `bluetoothBeacons` are accepted and not used: the station database has no beacons;
 * - more than 7 cells: the first 7; more than 15 access points: the 15 strongest.
 */
export function geolocateToProcess(value: unknown): Obj | undefined {
  if (!isObject(value)) return undefined;
  const fallbacks = value.fallbacks;
  if (fallbacks !== undefined && fallbacks !== null && !isObject(fallbacks)) return undefined;
  const beacons = value.bluetoothBeacons;
  if (beacons !== undefined && beacons !== null && !Array.isArray(beacons)) return undefined;
  const f = fallbacks ?? {};
  const out: Obj = {
    fallbacks: {
      ipf: switchOf(f.ipf ?? value.considerIp ?? true),
      lacf: switchOf(f.lacf ?? true),
    },
    address: 0,
  };
  if (value.radioType !== undefined) out.radio = value.radioType;
  if (value.cellTowers !== undefined) out.cells = cellsOf(value.cellTowers, DEFAULT_MAX_CELLS);
  if (value.wifiAccessPoints !== undefined) out.wifi = wifiOf(value.wifiAccessPoints);
  return out;
}

/** The validated `/process` request of a `/v1/geolocate` body, or the interface's error. */
export function readGeolocate(
  value: unknown,
): { ok: true; request: LocateRequest } | { ok: false; error: IchnaeaError } {
  const body = geolocateToProcess(value);
  if (body === undefined) return { ok: false, error: IchnaeaErrors.parse() };
  const parsed = parseRequest(body);
  return parsed.ok ? parsed : { ok: false, error: refusalOf(parsed.message) };
}

/** Reads a request body text as JSON; undefined for text that is not JSON. */
export function parseJsonText(text: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(text) };
  } catch {
    return undefined;
  }
}

/**
 * A `/process` error as this interface's: a request that names nothing to locate with
 * (no network data, no cell with valid ids) is `notFound`, as the interface answers a request it
 * cannot locate; the other `/process` parsing errors (a missing or malformed id, a wrong type)
 * are `parseError`.
 */
export function refusalOf(message: string): IchnaeaError {
  switch (message) {
    case GeoMessage.noNetworkData:
    case GeoMessage.noValidCells:
    case GeoMessage.noMatches:
    case GeoMessage.noMatchesRetry:
      return IchnaeaErrors.notFound();
    default:
      return IchnaeaErrors.parse();
  }
}

/** The fallbacks this interface names; `scf` (a short-CID match) is a cell match to it. */
function fallbackOf(name: FallbackName | undefined): 'lacf' | 'ipf' | undefined {
  return name === 'lacf' || name === 'ipf' ? name : undefined;
}

/** A 68% radius as the 95% one of this interface, in whole metres. */
export function accuracy95(accuracy68: number): number {
  return Math.round(accuracy68 * ACCURACY_95_FACTOR);
}

/** A `/process` answer as a `/v1/geolocate` answer or error. */
export function geolocateAnswer(res: ProcessResponse): GeolocateResponse | IchnaeaError {
  if (res.status !== 'ok' || res.lat === undefined || res.lon === undefined || res.accuracy === undefined) {
    return refusalOf(res.message ?? GeoMessage.noMatches);
  }
  const out: GeolocateResponse = {
    location: { lat: res.lat, lng: res.lon },
    accuracy: accuracy95(res.accuracy),
  };
  const fallback = fallbackOf(res.fallback);
  if (fallback !== undefined) out.fallback = fallback;
  return out;
}

/**
 * A `/process` answer as a `/v1/country` answer: the country whose polygon holds the located
 * point (or lies within 5 km of it), found by `reverse` at country zoom; `notFound` at sea.
 */
export function countryAnswer(
  res: ProcessResponse,
  reverse: (lat: number, lon: number) => ReverseResponse,
): CountryResponse | IchnaeaError {
  if (res.status !== 'ok' || res.lat === undefined || res.lon === undefined) {
    return refusalOf(res.message ?? GeoMessage.noMatches);
  }
  const place = reverse(res.lat, res.lon);
  if (place.status !== 'ok' || !place.address.country_code || !place.address.country) {
    return IchnaeaErrors.notFound();
  }
  const out: CountryResponse = {
    country_code: place.address.country_code.toUpperCase(),
    country_name: place.address.country,
  };
  const fallback = fallbackOf(res.fallback);
  if (fallback !== undefined) out.fallback = fallback;
  return out;
}

/** Whether a body of this interface is an error. */
export function isIchnaeaError(body: unknown): body is IchnaeaError {
  return isObject(body) && isObject(body.error);
}

// ---------------------------------------------------------------------------------------------
// /v1/search, the interface's first request shape

/** An answer of `/v1/search`: located, or `not_found` (HTTP 200 both). */
export type SearchAnswer =
  | { status: 'ok'; lat: number; lon: number; accuracy: number }
  | { status: 'not_found' };

/** The error body of `/v1/search` (HTTP 400): what was wrong, by field. */
export interface SearchError {
  errors: Record<string, string>;
}

/**
 * A `/v1/search` body as a `/process` request: its `cell` entries already use the `/process`
 * names (`radio`, `mcc`, `mnc`, `lac`, `cid`, `signal`, `asu`, `psc`); a `wifi` entry names
 * its BSSID `key`. Hidden and `_nomap` networks are dropped as for geolocate; the LAC fallback
 * is on, the IP fallback off (this shape has no switch for either). Undefined for a body that
 * is not an object.
 */
export function searchToProcess(value: unknown): Obj | undefined {
  if (!isObject(value)) return undefined;
  const out: Obj = { address: 0, fallbacks: { ipf: 0, lacf: 1 } };
  if (value.radio !== undefined) out.radio = value.radio;
  if (value.cell !== undefined)
    out.cells = Array.isArray(value.cell) ? value.cell.slice(0, DEFAULT_MAX_CELLS) : value.cell;
  const wifi = value.wifi;
  if (wifi !== undefined) {
    out.wifi = Array.isArray(wifi)
      ? wifiOf(wifi.map((w) => (isObject(w) ? { ...w, macAddress: w.key, signalStrength: w.signal } : w)))
      : wifi;
  }
  return out;
}

/** The validated `/process` request of a `/v1/search` body, or its answer when it names nothing to locate with. */
export function readSearch(
  value: unknown,
):
  | { ok: true; request: LocateRequest }
  | { ok: false; status: 200; body: SearchAnswer }
  | { ok: false; status: 400; body: SearchError } {
  const body = searchToProcess(value);
  if (body === undefined) return { ok: false, status: 400, body: { errors: { body: 'Parse Error' } } };
  const parsed = parseRequest(body);
  if (parsed.ok) return parsed;
  return refusalOf(parsed.message).error.code === 404
    ? { ok: false, status: 200, body: { status: 'not_found' } }
    : { ok: false, status: 400, body: { errors: { body: parsed.message } } };
}

/** A `/process` answer as a `/v1/search` answer; `accuracy` is the 95% radius, as geolocate's. */
export function searchAnswer(res: ProcessResponse): SearchAnswer {
  if (res.status !== 'ok' || res.lat === undefined || res.lon === undefined || res.accuracy === undefined) {
    return { status: 'not_found' };
  }
  return { status: 'ok', lat: res.lat, lon: res.lon, accuracy: accuracy95(res.accuracy) };
}

// ---------------------------------------------------------------------------------------------
// /v2/geosubmit

/** Most items one `/v2/geosubmit` body may carry. */
export const MAX_SUBMIT_ITEMS = 1000;
/** Most cells one item may carry: more is an oversized item. */
export const MAX_ITEM_CELLS = 32;
/** Most access points one item may carry: more is an oversized item. */
export const MAX_ITEM_WIFI = 256;
/** Most refused items listed in the error's `errors`. */
const LISTED_ITEMS = 10;

/**
 * A geosubmit item as a `/process` request with one GPS fix and `gps_sandbox: 0`: `position` is
 * the fix (`latitude`/`longitude` are `lat`/`lon`, `altitudeAccuracy` is `altitude_accuracy`,
 * `source` defaults to `gps`), at the item's `timestamp` less the position's `age`.
 */
function itemToProcess(item: Obj): Obj {
  const position = item.position;
  let fix: unknown = position;
  if (isObject(position)) {
    let timestamp = item.timestamp;
    if (typeof timestamp === 'number' && typeof position.age === 'number') timestamp -= position.age;
    fix = {
      lat: position.latitude,
      lon: position.longitude,
      accuracy: position.accuracy,
      altitude: position.altitude,
      altitude_accuracy: position.altitudeAccuracy,
      heading: position.heading,
      speed: position.speed,
      source: position.source ?? 'gps',
      timestamp,
    };
  }
  const out: Obj = {
    gps: [fix],
    gps_sandbox: 0,
    geolocation: 0,
    address: 0,
    fallbacks: { ipf: 0, lacf: 0 },
  };
  if (item.cellTowers !== undefined) out.cells = cellsOf(item.cellTowers, MAX_ITEM_CELLS);
  if (item.wifiAccessPoints !== undefined) out.wifi = wifiOf(item.wifiAccessPoints);
  return out;
}

/** Why an item is refused, or undefined when it is not: the interface's own limits and shapes. */
function itemShapeProblem(item: unknown): string | undefined {
  if (!isObject(item)) return 'not an object';
  if (Array.isArray(item.cellTowers) && item.cellTowers.length > MAX_ITEM_CELLS) {
    return `oversized: more than ${MAX_ITEM_CELLS} cellTowers`;
  }
  if (Array.isArray(item.wifiAccessPoints) && item.wifiAccessPoints.length > MAX_ITEM_WIFI) {
    return `oversized: more than ${MAX_ITEM_WIFI} wifiAccessPoints`;
  }
  const beacons = item.bluetoothBeacons;
  if (beacons !== undefined && beacons !== null && !Array.isArray(beacons))
    return 'bluetoothBeacons is not a list';
  if (!isObject(item.position)) return 'no position';
  return undefined;
}

/** What a `/v2/geosubmit` body holds once every item passed. */
export interface GeosubmitBatch {
  /** The items to store and learn, each validated as a `/process` GPS submission. */
  items: LocateRequest[];
  /** Items with nothing this engine can learn (no usable cell or access points; beacons only). */
  ignored: number;
}

/**
 * Validates a `/v2/geosubmit` body: every item by the `/process` rules (its position as a GPS
 * fix), all or nothing. A body that is not an object with an `items` list, more than
 * {@link MAX_SUBMIT_ITEMS} items, or any oversized or malformed item is a `parseError` that
 * counts the refused items and names the first of them (`items[i]: why`).
 */
export function readGeosubmit(
  value: unknown,
): { ok: true; batch: GeosubmitBatch } | { ok: false; error: IchnaeaError } {
  if (!isObject(value) || !Array.isArray(value.items)) return { ok: false, error: IchnaeaErrors.parse() };
  const list = value.items;
  if (list.length > MAX_SUBMIT_ITEMS) {
    return {
      ok: false,
      error: ichnaeaError(400, 'global', 'parseError', `more than ${MAX_SUBMIT_ITEMS} items`, 'Parse Error'),
    };
  }
  const items: LocateRequest[] = [];
  const refused: IchnaeaErrorItem[] = [];
  let refusedCount = 0;
  let ignored = 0;
  const refuse = (i: number, why: string) => {
    refusedCount++;
    if (refused.length < LISTED_ITEMS)
      refused.push({ domain: 'global', reason: 'parseError', message: `items[${i}]: ${why}` });
  };
  list.forEach((item, i) => {
    const problem = itemShapeProblem(item);
    if (problem !== undefined) {
      refuse(i, problem);
      return;
    }
    const parsed = parseRequest(itemToProcess(item as Obj), { maxCells: MAX_ITEM_CELLS });
    if (parsed.ok) {
      items.push(parsed.request);
    } else if (parsed.message === GeoMessage.noNetworkData || parsed.message === GeoMessage.noValidCells) {
      ignored++;
    } else {
      refuse(i, parsed.message);
    }
  });
  if (refusedCount > 0) {
    return {
      ok: false,
      error: {
        error: {
          errors: refused,
          code: 400,
          message: `Parse Error: ${refusedCount} of ${list.length} items refused; nothing was stored`,
        },
      },
    };
  }
  return { ok: true, batch: { items, ignored } };
}
