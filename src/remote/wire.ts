/**
 * What goes to the remote `/process` service and how its answer is judged (spec 2.2, 2.8, 7.1).
 *
 * The body is rebuilt from the validated, normalised request, so nothing the local validation
 * refused can go out, and nothing but stations, fallbacks and address wishes does: no GPS fixes,
 * device id or metadata request.
 */
import { GeoMessage } from '../errors.js';
import { formatBssid, type LocateRequest, RadioCode } from '../locating/request/index.js';
import type { FallbackName, ProcessResponse } from '../locating/response.js';

const RADIO_NAMES = Object.keys(RadioCode) as (keyof typeof RadioCode)[];
/** The fallbacks this project's response type names; `cidf` and `ncf` (spec 2.8) have no stated meaning. */
const FALLBACKS: readonly string[] = ['lacf', 'scf', 'ipf'];

/** The spec 2.2 body sent to the remote for `request`, carrying the remote's `token`. */
export function remoteBody(request: LocateRequest, token: string): string {
  const body: Record<string, unknown> = { token };
  if (request.cells.length > 0) {
    body.cells = request.cells.map((c) => {
      const cell: Record<string, unknown> = {};
      // An unknown radio or CDMA mcc stays unknown: the remote decides as the local core did.
      if (c.radio >= 0) cell.radio = RADIO_NAMES[c.radio];
      if (c.mcc >= 0) cell.mcc = c.mcc;
      cell.mnc = c.mnc;
      cell.lac = c.lac;
      cell.cid = c.cid;
      if (c.signal !== undefined) cell.signal = c.signal;
      if (c.asu !== undefined) cell.asu = c.asu;
      if (c.ta !== undefined) cell.ta = c.ta;
      if (c.psc !== undefined) cell.psc = c.psc;
      return cell;
    });
  }
  if (request.wifi.length > 0) {
    body.wifi = request.wifi.map((w) => {
      const ap: Record<string, unknown> = { bssid: formatBssid(w.bssid) };
      if (w.signal !== undefined) ap.signal = w.signal;
      if (w.frequency !== undefined) ap.frequency = w.frequency;
      if (w.channel !== undefined) ap.channel = w.channel;
      if (w.snr !== undefined) ap.signalToNoiseRatio = w.snr;
      return ap;
    });
  }
  if (request.ip !== undefined) body.ip = request.ip;
  body.fallbacks = { ...request.fallbacks };
  body.bt = request.bt;
  body.address = request.address;
  if (request.acceptLanguage !== undefined) body['accept-language'] = request.acceptLanguage;
  return JSON.stringify(body);
}

/**
 * How a remote reply is taken:
 * - `answer`: a located answer or a valid "no match" error, to use.
 * - `refused`: the service is up but declined (HTTP 4xx, a bad token, a used-up balance): not
 *   retried, not held against the service's health.
 * - `failed`: the service is unwell (HTTP 5xx, `UNKNOWN_ERROR`, a network error, a timeout,
 *   garbage); `retry` says whether another attempt may help (garbage will not).
 */
export type RemoteReply =
  | { kind: 'answer'; response: ProcessResponse; byFallback: boolean }
  | { kind: 'refused'; reason: string }
  | { kind: 'failed'; reason: string; retry: boolean };

/** The messages meaning "the service is fine but knows no answer". */
const NO_MATCH: readonly string[] = [GeoMessage.noMatches, GeoMessage.noMatchesRetry];

/** The server-error messages clients may retry (spec 7.2, and this project's own 7.1 text). */
const UNKNOWN_ERRORS: readonly string[] = [
  'UNKNOWN_ERROR',
  'Unknown error - please try again after some time',
];

const isFiniteIn = (v: unknown, min: number, max: number): v is number =>
  typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max;

/** Judges an HTTP reply of the remote: its status code and its body text. */
export function readReply(status: number, text: string): RemoteReply {
  if (status >= 500) return { kind: 'failed', reason: `HTTP ${status}`, retry: true };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: 'failed', reason: `HTTP ${status} with a body that is not JSON`, retry: false };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { kind: 'failed', reason: 'the answer is not a JSON object', retry: false };
  }
  const v = value as Record<string, unknown>;
  if (v.status === 'error' && typeof v.message === 'string') {
    if (UNKNOWN_ERRORS.includes(v.message)) return { kind: 'failed', reason: v.message, retry: true };
    if (status >= 400 || !NO_MATCH.includes(v.message)) {
      return { kind: 'refused', reason: `HTTP ${status}: ${v.message.slice(0, 200)}` };
    }
    const response: ProcessResponse = { status: 'error', message: v.message };
    if (isFiniteIn(v.balance, -Infinity, Infinity)) response.balance = v.balance;
    return { kind: 'answer', response, byFallback: false };
  }
  if (status >= 400) return { kind: 'refused', reason: `HTTP ${status}` };
  if (v.status !== 'ok')
    return { kind: 'failed', reason: 'the answer has no status ok or error', retry: false };
  if (!isFiniteIn(v.lat, -90, 90) || !isFiniteIn(v.lon, -180, 180) || !isFiniteIn(v.accuracy, 0, 2e7)) {
    return { kind: 'failed', reason: 'the answer has no valid lat, lon and accuracy', retry: false };
  }
  // Any fallback named, even one this project does not know, means the stations were not located.
  return { kind: 'answer', response: located(v), byFallback: typeof v.fallback === 'string' };
}

/** Copies the spec 2.8 fields of a located answer that have the right types; nothing else. */
function located(v: Record<string, unknown>): ProcessResponse {
  const out: ProcessResponse = {
    status: 'ok',
    lat: v.lat as number,
    lon: v.lon as number,
    accuracy: v.accuracy as number,
  };
  if (isFiniteIn(v.balance, -Infinity, Infinity)) out.balance = v.balance;
  if (isFiniteIn(v.balance_slots, -Infinity, Infinity)) out.balance_slots = v.balance_slots;
  if (typeof v.address === 'string') out.address = v.address;
  const details = v.address_details;
  if (typeof details === 'object' && details !== null && !Array.isArray(details)) {
    const strings = Object.entries(details).filter(([, s]) => typeof s === 'string') as [string, string][];
    out.address_details = Object.fromEntries(strings);
  }
  if (v.aged !== undefined && v.aged !== false) out.aged = true;
  if (typeof v.fallback === 'string' && FALLBACKS.includes(v.fallback)) {
    out.fallback = v.fallback as FallbackName;
  }
  return out;
}
