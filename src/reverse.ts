/**
 * Reverse geocoding's Address object (spec 4.3, 2.9) from the place the core found.
 *
 * A thin, honest version: the data is GeoNames populated places with their admin1 (state)
 * and admin2 (county) names; road, house number, suburb and postcode come only from an
 * address file (src/addresses.ts), when one is loaded. `zoom` chooses how much of what we
 * have is shown: 0-4 country, 5-7 + state, 8-9 + county, 10 and above + city, 16 + road,
 * 17-18 + house number, suburb and postcode. The country is the chosen
 * place's country (no country polygons yet). Country names are i18n-iso-countries' in the
 * language `accept-language` asks for (data/country-names.json); place and admin names are
 * GeoNames' names (mostly local names in Latin script) whatever the language.
 */
import { readFileSync } from 'node:fs';
import { type StreetFields, streetLine } from './addresses.js';
import { numberOf, parseLatLon } from './geocoding/coordinates.js';
import type { NativePlace } from './native.js';

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

type CountryNames = Record<string, Record<string, string>>;

let names: CountryNames | undefined;

/** Country names by language, read once from data/country-names.json (built by scripts/build-places.mjs). */
function countryNames(file: string): CountryNames {
  names ??= JSON.parse(readFileSync(file, 'utf8')) as CountryNames;
  return names;
}

/**
 * The languages of an Accept-Language value, best first: q-values honoured (q=0 dropped),
 * equal q in the order given; region subtags dropped (`fr-CH` is `fr`), codes lower case.
 */
export function preferredLanguages(value: string | undefined): string[] {
  if (!value) return [];
  const items: { code: string; q: number; at: number }[] = [];
  value.split(',').forEach((part, at) => {
    const [tag, ...params] = part.trim().split(';');
    const code = (tag ?? '').trim().split(/[-_]/)[0]?.toLowerCase() ?? '';
    if (!/^[a-z]{2,3}$/.test(code)) return;
    let q = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(p);
      if (m) q = Number(m[1]);
    }
    if (Number.isFinite(q) && q > 0) items.push({ code, q, at });
  });
  items.sort((a, b) => b.q - a.q || a.at - b.at);
  return items.map((i) => i.code);
}

/** The first preferred language we have country names in (2-letter codes, then 3-letter ones), else `en`. */
export function pickLanguage(value: string | undefined, available: (code: string) => boolean): string {
  const langs = preferredLanguages(value);
  return (
    langs.find((c) => c.length === 2 && available(c)) ??
    langs.find((c) => c.length === 3 && available(c)) ??
    'en'
  );
}

/** `zoom` as an integer 0..18, default 18; undefined when it is something else. */
export function parseZoom(zoom: unknown): number | undefined {
  if (zoom === undefined || zoom === '') return 18;
  const z = numberOf(zoom);
  if (z === undefined || !Number.isInteger(z) || z < 0 || z > 18) return undefined;
  return z;
}

/**
 * Builds the Address object of a place at `zoom` in language `lang`; `street` (from the
 * address file, zoom 16 to 18) adds house number, road, suburb and postcode, and its city
 * and point override the place's.
 */
export function shapeAddress(
  place: Pick<NativePlace, 'lat' | 'lon' | 'name' | 'state' | 'county' | 'countryCode'>,
  query: { lat: number; lon: number },
  zoom: number,
  countryName: string | undefined,
  street?: StreetFields,
): AddressObject {
  const city = street?.city ?? (zoom >= 10 ? place.name : undefined);
  const county = zoom >= 8 ? (place.county ?? undefined) : undefined;
  const state = zoom >= 5 ? (place.state ?? undefined) : undefined;
  // a city answer stands at the place it names; coarser answers at the query point, as no
  // point of a state or country (centroid, seat) is in the data
  const at = street?.at ?? (city === undefined ? query : place);
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
  address.country_code = place.countryCode.toLowerCase();
  if (street?.postcode) address.postcode = street.postcode;
  return address;
}

/**
 * Country names in the first language of `acceptLanguage` that data/country-names.json has
 * (else English): a function of an alpha-2 code, either case.
 */
export function countryNameFor(
  namesFile: string,
  acceptLanguage: string | undefined,
): (countryCode: string) => string | undefined {
  const table = countryNames(namesFile);
  const lang = pickLanguage(acceptLanguage, (c) => table[c] !== undefined);
  return (code) => {
    const cc = code.toUpperCase();
    return table[lang]?.[cc] ?? table.en?.[cc];
  };
}

/**
 * Validates the query, asks `find` (the core) for the place, and `findStreet` (when an
 * address file is loaded) for the street part, and shapes the answer.
 */
export function answerReverse(
  query: ReverseQuery,
  find: (lat: number, lon: number, zoom: number) => NativePlace | null,
  namesFile: string,
  findStreet?: (lat: number, lon: number, zoom: number) => StreetFields | undefined,
): ReverseResponse {
  const p = parseLatLon(query?.lat, query?.lon);
  const zoom = parseZoom(query?.zoom);
  if (!p || zoom === undefined) return { status: 'error', message: 'INVALID_REQUEST' };
  if (query.acceptLanguage !== undefined && typeof query.acceptLanguage !== 'string')
    return { status: 'error', message: 'INVALID_REQUEST' };
  const place = find(p.lat, p.lon, zoom);
  if (!place) return { status: 'error', message: 'NO_MATCHES' };
  const countryName = countryNameFor(namesFile, query.acceptLanguage)(place.countryCode);
  const street = findStreet?.(p.lat, p.lon, zoom);
  return { status: 'ok', address: shapeAddress(place, p, zoom, countryName, street) };
}
