/**
 * Forward geocoding (spec 4.2, 2.9): validating a `/search` query and shaping the places the
 * core found into Address objects.
 *
 * The core (crates/whereabouts-core/src/search) matches names and alternate names with typo
 * and word-order tolerance and reads "city, region, country"; this module owns the spec's
 * inputs: `q` (required), `limit` (integer 1 to {@link MAX_LIMIT}, default
 * {@link DEFAULT_LIMIT}), `countrycodes` (comma-separated ISO 3166-1 alpha-2 codes, any case:
 * restricts) and `viewbox` (`left,right,top,bottom`: west longitude, east longitude, north
 * latitude, south latitude in decimal degrees; prefers, does not restrict; `left > right`
 * crosses the antimeridian). Country names follow `accept-language` as in reverse geocoding;
 * place and admin names are GeoNames' names.
 */

import type { NativeSearchPlace } from '../native/binding.js';
import { numberOf } from './coordinates.js';
import { countryNameFor } from './languages.js';
import { type AddressObject, shapeAddress } from './reverse.js';

/** Results answered when `limit` is absent. */
export const DEFAULT_LIMIT = 10;
/** The largest `limit` accepted. */
export const MAX_LIMIT = 50;
/** The longest `q` accepted, in characters (the core reads at most 16 words of it anyway). */
export const MAX_QUERY_LENGTH = 500;

/** Input of `engine.search`: strings as a query string has them, or numbers and arrays. */
export interface SearchQuery {
  /** The free text to find: "münchen", "paris, texas", "Springfield, IL, USA". */
  q: string;
  /** 1 to 50; default 10. */
  limit?: number | string;
  /** Alpha-2 codes, as `de,fr` or `['de', 'fr']`: only places in these countries. */
  countrycodes?: string | readonly string[];
  /** `left,right,top,bottom` in degrees, as a string or four numbers: places inside rank higher. */
  viewbox?: string | readonly (number | string)[];
  /** An RFC 2616 Accept-Language value or a plain list of codes (`de,en`); default `en`. */
  acceptLanguage?: string;
}

/** The `/search` body without `balance`. */
export type SearchResponse =
  | { status: 'ok'; address: AddressObject[] }
  | { status: 'error'; message: string };

/** A validated query, as the core takes it. */
export interface ParsedSearch {
  q: string;
  limit: number;
  /** Upper case. */
  countries: string[];
  viewbox: [number, number, number, number] | null;
}

/** Validates a search query; undefined when any part is malformed (`INVALID_REQUEST`). */
export function parseSearch(query: SearchQuery): ParsedSearch | undefined {
  const q = typeof query?.q === 'string' ? query.q.trim() : '';
  if (q === '' || q.length > MAX_QUERY_LENGTH) return undefined;
  let limit = DEFAULT_LIMIT;
  if (query.limit !== undefined && query.limit !== '') {
    const n = numberOf(query.limit);
    if (n === undefined || !Number.isInteger(n) || n < 1 || n > MAX_LIMIT) return undefined;
    limit = n;
  }
  const countries = listOf(query.countrycodes);
  if (!countries?.every((c) => typeof c === 'string' && /^[a-z]{2}$/i.test(c))) return undefined;
  let viewbox: ParsedSearch['viewbox'] = null;
  const box = listOf(query.viewbox);
  if (box === undefined) return undefined;
  if (box.length > 0) {
    const v = box.map(numberOf);
    if (v.length !== 4 || v.some((x) => x === undefined)) return undefined;
    const [left, right, top, bottom] = v as [number, number, number, number];
    const lon = (x: number) => x >= -180 && x <= 180;
    const lat = (x: number) => x >= -90 && x <= 90;
    if (!lon(left) || !lon(right) || !lat(top) || !lat(bottom)) return undefined;
    viewbox = [left, right, top, bottom];
  }
  if (query.acceptLanguage !== undefined && typeof query.acceptLanguage !== 'string') return undefined;
  return { q, limit, countries: countries.map((c) => String(c).toUpperCase()), viewbox };
}

/** A comma list or array as trimmed items (empty: none given); undefined for another type. */
function listOf(value: string | readonly (number | string)[] | undefined): (string | number)[] | undefined {
  if (value === undefined) return [];
  if (typeof value === 'string') return value.trim() === '' ? [] : value.split(',').map((s) => s.trim());
  if (Array.isArray(value)) return value.map((s) => (typeof s === 'string' ? s.trim() : s));
  return undefined;
}

/** Validates the query, asks `find` (the core) for places and shapes them. */
export function answerSearch(
  query: SearchQuery,
  find: (parsed: ParsedSearch) => NativeSearchPlace[],
  findStreets?: StreetSearch,
): SearchResponse {
  const parsed = parseSearch(query);
  if (!parsed) return { status: 'error', message: 'INVALID_REQUEST' };
  const countryName = countryNameFor(query.acceptLanguage);
  const places: ScoredAddress[] = find(parsed).map((p) => ({
    address: shapeAddress(
      { countryCode: p.countryCode, place: p },
      p,
      ZOOM_OF_LEVEL[p.level] ?? 18,
      countryName(p.countryCode),
    ),
    score: p.score,
  }));
  // Street hits first at an equal score (the sort is stable): a house that matches is more
  // precise than the place it lies in.
  const hits = [...(findStreets?.(parsed) ?? []), ...places].sort((a, b) => b.score - a.score);
  if (hits.length === 0) return { status: 'error', message: 'NO_MATCHES' };
  return { status: 'ok', address: hits.slice(0, parsed.limit).map((h) => h.address) };
}

/**
 * The reverse-geocoding zoom whose Address object a hit of each level takes: a place names
 * its city, county and state; a state only itself and its country (zoom 5); a country only
 * itself (zoom 3). Both stand at their seat's point (the core's choice).
 */
const ZOOM_OF_LEVEL: Record<string, number> = { place: 18, state: 5, country: 3 };

/** An Address object with its score in [0, 1], the scale places and street hits share. */
export interface ScoredAddress {
  address: AddressObject;
  score: number;
}

/**
 * Street-level hits of a search (house numbers from an address file), each a whole Address
 * object already restricted to `countries`; merged with the place hits by score.
 */
export type StreetSearch = (parsed: ParsedSearch) => ScoredAddress[];
