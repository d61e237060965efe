/**
 * Reverse geocoding's Address object (spec 4.3, 2.9) from the place the core found.
 *
 * The data is GeoNames populated places with their admin1 (state) and admin2 (county) names;
 * road, house number, suburb and postcode come only from an address file (src/geocoding/addresses.ts),
 * when one is loaded. `zoom` chooses how much of what we have is shown: 0-4 country,
 * 5-7 + state, 8-9 + county, 10 and above + city, 16 + road, 17-18 + house number, suburb and
 * postcode. The country comes from the
 * country polygons (the core's `countries`), the place from that country's places. Country
 * names are ICU's (CLDR, through `Intl.DisplayNames`) in the language `accept-language` asks
 * for, or in the country's own language for `native`; place and admin names are GeoNames'
 * names (mostly local names in Latin script) whatever the language.
 */

import {
  countryIndexOfKey,
  placeIdOfKey,
  type ReverseFound,
  type ReverseLookup,
} from '../native/reverse-lookup.js';
import { type StreetFields, streetLine } from './addresses.js';
import { numberOf, parseLatLon } from './coordinates.js';
import { countryName, languageOf } from './languages.js';

/** Spec 2.9, the fields this data can fill; only those with a value are present. */
export interface AddressObject {
  lat: string;
  lon: string;
  display_name: string;
  house_number?: string;
  road?: string;
  suburb?: string;
  city?: string;
  county?: string;
  state?: string;
  country?: string;
  country_code?: string;
  postcode?: string;
}

/** Input of `engine.reverse`: numbers or decimal strings, as a query string has them. */
export interface ReverseQuery {
  lat: number | string;
  lon: number | string;
  /** 0 to 18 (default 18: all the detail there is). */
  zoom?: number | string;
  /** An RFC 2616 Accept-Language value or a plain list of codes (`de,en`); default `en`. */
  acceptLanguage?: string;
}

/** The `/reverse` body without `balance`. */
export type ReverseResponse = { status: 'ok'; address: AddressObject } | { status: 'error'; message: string };

/** `zoom` as an integer 0..18, default 18; undefined when it is something else. */
export function parseZoom(zoom: unknown): number | undefined {
  if (zoom === undefined || zoom === '') return 18;
  const z = numberOf(zoom);
  if (z === undefined || !Number.isInteger(z) || z < 0 || z > 18) return undefined;
  return z;
}

/**
 * Builds the Address object of a country and place at `zoom`, with the country's name;
 * `street` (from the address file, zoom 16 to 18) adds house number, road, suburb and
 * postcode, and its city and point override the place's.
 */
export function shapeAddress(
  answer: Omit<ReverseFound, 'placeId'>,
  query: { lat: number; lon: number },
  zoom: number,
  countryName: string | undefined,
  street?: StreetFields,
): AddressObject {
  const place = answer.place;
  const city = street?.city ?? (zoom >= 10 ? place?.name : undefined);
  const county = zoom >= 8 ? (place?.county ?? undefined) : undefined;
  const state = zoom >= 5 ? (place?.state ?? undefined) : undefined;
  // a city answer stands at the place it names; coarser answers at the query point, as no
  // point of a state or country (centroid, seat) is in the data
  const at = street?.at ?? (city === undefined || !place ? query : place);
  const parts = [
    street && streetLine(street),
    street?.suburb,
    city,
    county,
    state,
    street?.postcode,
    countryName,
  ].filter((p): p is string => !!p);
  // GeoNames often names a city and its county alike ("Paris, Paris"): say it once
  const unique = parts.filter((p, i) => i === 0 || p !== parts[i - 1]);
  const address: AddressObject = {
    lat: String(Math.round(at.lat * 1e5) / 1e5),
    lon: String(Math.round(at.lon * 1e5) / 1e5),
    display_name: unique.join(', '),
  };
  if (street?.house_number) address.house_number = street.house_number;
  if (street?.road) address.road = street.road;
  if (street?.suburb) address.suburb = street.suburb;
  if (city) address.city = city;
  if (county) address.county = county;
  if (state) address.state = state;
  if (countryName) address.country = countryName;
  address.country_code = answer.countryCode.toLowerCase();
  if (street?.postcode) address.postcode = street.postcode;
  return address;
}

/**
 * Address objects of answers without a street, by language, then place (or country) and the
 * zoom band that decides their fields (0-4, 5-7, 8-9, 10-18): everything in them but the
 * query point depends on these alone, and shaping one (ICU name, display_name) costs more
 * than the lookup. One per engine, as place ids are its places file's; bounded like the
 * places cache.
 */
export class ShapedAddresses {
  readonly #byLanguage = new Map<string, Map<number, AddressObject>>();
  #lastLanguage: string | undefined;
  #last: Map<number, AddressObject> | undefined;

  /**
   * {@link shapeAddress} without a street of the answer `key` (a reverse key of `lookup`,
   * not NO_ANSWER) at the query point; a copy each time (callers may change theirs).
   */
  address(
    key: number,
    lookup: ReverseLookup,
    lat: number,
    lon: number,
    zoom: number,
    lang: string,
  ): AddressObject {
    // most engines answer in one language: the last one's memo without a lookup
    let shaped = lang === this.#lastLanguage ? this.#last : this.#byLanguage.get(lang);
    if (shaped === undefined) {
      shaped = new Map();
      this.#byLanguage.set(lang, shaped);
    }
    this.#lastLanguage = lang;
    this.#last = shaped;
    const band = zoom >= 10 ? 3 : zoom >= 8 ? 2 : zoom >= 5 ? 1 : 0;
    // a place implies its country (the ranking keeps to the country); small integer keys
    // hash without allocating. Without a place, the country's index, its sign flipped.
    const placeId = placeIdOfKey(key);
    const memoKey = placeId >= 0 ? placeId * 4 + band : -(countryIndexOfKey(key) * 4 + band) - 1;
    let shape = shaped.get(memoKey);
    if (shape === undefined) {
      if (shaped.size >= MAX_SHAPED) shaped.clear();
      const answer = lookup.found(key) as ReverseFound;
      shape = shapeAddress(answer, { lat, lon }, zoom, countryName(answer.countryCode, lang));
      shaped.set(memoKey, shape);
    }
    // a city answer stands at the place (as in shapeAddress), others at the query point
    const atQuery = band < 3 || placeId < 0;
    // a copy field by field, in AddressObject's order (shapeAddress's): callers may change
    // theirs, and a spread of these varied shapes is twice as slow
    const copy: AddressObject = {
      lat: atQuery ? String(Math.round(lat * 1e5) / 1e5) : shape.lat,
      lon: atQuery ? String(Math.round(lon * 1e5) / 1e5) : shape.lon,
      display_name: shape.display_name,
    };
    if (shape.city !== undefined) copy.city = shape.city;
    if (shape.county !== undefined) copy.county = shape.county;
    if (shape.state !== undefined) copy.state = shape.state;
    if (shape.country !== undefined) copy.country = shape.country;
    if (shape.country_code !== undefined) copy.country_code = shape.country_code;
    return copy;
  }
}

/** Address objects kept per language. */
const MAX_SHAPED = 50_000;

/**
 * Validates the query, asks `lookup` (the core) for the country and place, and `findStreet`
 * (when an address file is loaded) for the street part, and shapes the answer (through
 * `shaped` without a street).
 */
export function answerReverse(
  query: ReverseQuery,
  lookup: ReverseLookup,
  shaped: ShapedAddresses,
  findStreet?: (lat: number, lon: number, zoom: number) => StreetFields | undefined,
): ReverseResponse {
  const qLat = query?.lat;
  const qLon = query?.lon;
  const qZoom = query?.zoom;
  let lat: number;
  let lon: number;
  // plain numbers in range, as the library's callers send them, without parseLatLon's
  // object; anything else (strings, out of range, NaN) takes the general path
  if (
    typeof qLat === 'number' &&
    typeof qLon === 'number' &&
    qLat >= -90 &&
    qLat <= 90 &&
    qLon >= -180 &&
    qLon <= 180
  ) {
    lat = qLat;
    lon = qLon;
  } else {
    const p = parseLatLon(qLat, qLon);
    if (!p) return { status: 'error', message: 'INVALID_REQUEST' };
    lat = p.lat;
    lon = p.lon;
  }
  const zoom =
    typeof qZoom === 'number' && Number.isInteger(qZoom) && qZoom >= 0 && qZoom <= 18
      ? qZoom
      : parseZoom(qZoom);
  if (zoom === undefined) return { status: 'error', message: 'INVALID_REQUEST' };
  const acceptLanguage = query.acceptLanguage;
  if (acceptLanguage !== undefined && typeof acceptLanguage !== 'string')
    return { status: 'error', message: 'INVALID_REQUEST' };
  const key = lookup.key(lat, lon, zoom);
  if (key < 0) return { status: 'error', message: 'NO_MATCHES' };
  const lang = languageOf(acceptLanguage);
  const street = findStreet?.(lat, lon, zoom);
  const address = street
    ? shapeAddress(
        lookup.found(key) as ReverseFound,
        { lat, lon },
        zoom,
        countryName(lookup.countryCode(key), lang),
        street,
      )
    : shaped.address(key, lookup, lat, lon, zoom, lang);
  return { status: 'ok', address };
}
