/**
 * Shapes `/process` responses (spec 2.8), in one place for the library, the CLI and the server.
 */
import { GeoMessage } from './errors.js';
import { ANSWER, FALLBACK_NAMES } from './native.js';
import type { LocateRequest } from './request.js';

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

/** Address text until geocoding data is loaded: the spec's value for "no address". */
const NO_ADDRESS = 'Not available';

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** Shapes the core's answer at `answers[index * ANSWER ..]` for `request`. */
export function shapeAnswer(request: LocateRequest, answers: Float64Array, index: number): ProcessResponse {
  if (request.geolocation === 0) return { status: 'ok' };
  const at = index * ANSWER;
  if (answers[at] !== 1) return errorResponse(GeoMessage.noMatches);
  const out: ProcessResponse = {
    status: 'ok',
    lat: round(answers[at + 1] as number, 7),
    lon: round(answers[at + 2] as number, 7),
    accuracy: Math.round(answers[at + 3] as number),
  };
  if (request.address !== 0) out.address = NO_ADDRESS;
  const fallback = FALLBACK_NAMES[answers[at + 4] as number];
  if (fallback) out.fallback = fallback;
  if (answers[at + 5] === 1) out.aged = true;
  return out;
}
