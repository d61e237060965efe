/**
 * Shapes `/process` responses (spec 2.8), in one place for the library, the CLI and the server.
 */
import { GeoMessage } from '../errors.js';
import { FALLBACK_NAMES } from '../native/wire.js';
import type { LocateRequest } from './request/index.js';

/** A fallback that produced a location (spec 2.6, 2.8). */
export type FallbackName = 'lacf' | 'scf' | 'ipf';

/** The `/process` response object (spec 2.8). */
export interface ProcessResponse {
  status: 'ok' | 'error';
  /** Additional information; the error text when `status` is `error`. */
  message?: string;
  /** Remaining balance of the token (server only). */
  balance?: number;
  /** Remaining device slots on a device plan (server only). */
  balance_slots?: number;
  lat?: number;
  lon?: number;
  /** Radius in metres holding the true position with 68% confidence. */
  accuracy?: number;
  address?: string;
  address_details?: Record<string, string>;
  /** Present when the location rests on one measurement, on data older than 90 days, or on a LAC fallback. */
  aged?: true;
  fallback?: FallbackName;
  metadata?: Record<string, unknown>;
}

/** The spec's error response. */
export function errorResponse(message: string): ProcessResponse {
  return { status: 'error', message };
}

/** The spec's address text when no address exists (no place near, or no places loaded). */
const NO_ADDRESS = 'Not available';

/** An address for a located point: the text, and its components (spec 2.8 `address_details`). */
export interface AddressOfPoint {
  text: string;
  details: Record<string, string>;
}

/**
 * Finds the address of a point at a reverse-geocoding zoom (0 country .. 18 all the detail there
 * is) in the request's language; undefined when there is none.
 */
export type AddressLookup = (
  lat: number,
  lon: number,
  zoom: number,
  acceptLanguage: string | undefined,
) => AddressOfPoint | undefined;

/**
 * The address detail a position supports: a town for a WiFi or cell answer, only the country for
 * a country-level IP answer hundreds of kilometres wide.
 */
export function addressZoom(accuracyM: number): number {
  if (accuracyM > 100_000) return 3;
  if (accuracyM > 20_000) return 6;
  if (accuracyM > 5_000) return 9;
  return 18;
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/**
 * Shapes the core's answer at `answers[at .. at + ANSWER)` for a request's `geolocation`,
 * `address` and `acceptLanguage` (of its {@link LocateRequest}). With `address` 1 the
 * response carries the address text; with 2 also `address_details` (the components that have
 * values: city, county, state, country, country_code).
 */
export function shapeAnswer(
  geolocation: LocateRequest['geolocation'],
  address: LocateRequest['address'],
  acceptLanguage: string | undefined,
  answers: Float64Array,
  at: number,
  addressOf?: AddressLookup,
): ProcessResponse {
  if (geolocation === 0) return { status: 'ok' };
  if (answers[at] !== 1) return errorResponse(GeoMessage.noMatches);
  const out: ProcessResponse = {
    status: 'ok',
    lat: round(answers[at + 1] as number, 7),
    lon: round(answers[at + 2] as number, 7),
    accuracy: Math.round(answers[at + 3] as number),
  };
  if (address !== 0) {
    const zoom = addressZoom(out.accuracy as number);
    const found = addressOf?.(out.lat as number, out.lon as number, zoom, acceptLanguage);
    out.address = found?.text ?? NO_ADDRESS;
    if (address === 2 && found) out.address_details = found.details;
  }
  const fallback = FALLBACK_NAMES[answers[at + 4] as number];
  if (fallback) out.fallback = fallback;
  if (answers[at + 5] === 1) out.aged = true;
  return out;
}
