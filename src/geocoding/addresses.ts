/**
 * Street-level addresses from the address file (`whereabouts import` of OpenAddresses CSVs
 * and OpenStreetMap extracts): the street part of a reverse answer at zoom 16 to 18, and
 * house-number search. Rules and figures: docs/geocoding.md.
 */
import type { NativeAddress, NativeEngine } from '../native/binding.js';

/** How far (metres) the nearest address may be for a zoom 17-18 answer to name it. */
export const ADDRESS_RADIUS_M = 75;
/** How far (metres) the nearest named road may be for a zoom 16-18 answer to name it. */
export const ROAD_RADIUS_M = 75;
/** The file name of the address file inside a database directory. */
export const ADDRESS_FILE_NAME = 'addresses.bin';

/** The spec 2.9 fields the address file can fill, and the point they stand at. */
export interface StreetFields {
  house_number?: string;
  road?: string;
  postcode?: string;
  suburb?: string;
  city?: string;
  /** The house, or the nearest point of the road: where the answer stands. */
  at?: { lat: number; lon: number };
}

/**
 * The street part of a reverse answer: at zoom 17-18 the nearest address within
 * {@link ADDRESS_RADIUS_M} (house number, road, postcode, suburb and city where the data has
 * them), else, and at zoom 16, the nearest named road within {@link ROAD_RADIUS_M}.
 * Undefined below zoom 16 or with nothing that near.
 */
export function streetFields(
  addresses: Pick<NativeEngine, 'nearestAddress' | 'nearestRoad'>,
  lat: number,
  lon: number,
  zoom: number,
): StreetFields | undefined {
  if (zoom < 16) return undefined;
  if (zoom >= 17) {
    const a = addresses.nearestAddress(lat, lon, ADDRESS_RADIUS_M);
    if (a) return fieldsOf(a);
  }
  const road = addresses.nearestRoad(lat, lon, ROAD_RADIUS_M);
  return road ? { road: road.name, at: { lat: road.lat, lon: road.lon } } : undefined;
}

function fieldsOf(a: NativeAddress): StreetFields {
  const f: StreetFields = { house_number: a.houseNumber, road: a.road, at: { lat: a.lat, lon: a.lon } };
  if (a.postcode) f.postcode = a.postcode;
  if (a.suburb) f.suburb = a.suburb;
  if (a.city) f.city = a.city;
  return f;
}

/** "10 Downing Street" (or the road alone) for `display_name`. */
export function streetLine(f: StreetFields): string | undefined {
  if (!f.road) return undefined;
  return f.house_number ? `${f.house_number} ${f.road}` : f.road;
}

/** A free-text address query split into the parts the address search takes. */
export interface AddressQuery {
  number: string;
  street: string;
  city: string;
}

const HAS_DIGIT = /\d/;

/**
 * Splits "10 Downing St, London", "Hauptstraße 5, Berlin" or "10, Downing Street, London":
 * the first comma-separated part holds the number (its first word with a digit, else its
 * last such word) and the street; the rest is the city (any of city, suburb, postcode).
 *
 * @example
 * ```ts
 * import { parseAddressQuery } from 'whereabouts/geocoding';
 * console.log(parseAddressQuery('Hauptstraße 5, Berlin')); // prints: { number: '5', street: 'Hauptstraße', city: 'Berlin' }
 * ```
 */
export function parseAddressQuery(q: string): AddressQuery {
  const parts = q
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p.length > 0);
  let head = parts.shift() ?? '';
  // "10, Downing Street": the number stands alone before the street
  if (/^\S+$/.test(head) && HAS_DIGIT.test(head) && parts.length > 0) head = `${head} ${parts.shift()}`;
  const words = head.split(/\s+/).filter((w) => w.length > 0);
  let number = '';
  if (words.length > 1 && HAS_DIGIT.test(words[0] as string)) number = words.shift() as string;
  else if (words.length > 1 && HAS_DIGIT.test(words[words.length - 1] as string))
    number = words.pop() as string;
  return { number, street: words.join(' '), city: parts.join(' ') };
}

/** One address search result: spec 2.9 fields the address file has, and a score in [0, 1]. */
export interface AddressMatch {
  address: {
    lat: string;
    lon: string;
    display_name: string;
    house_number: string;
    road: string;
    suburb?: string;
    city?: string;
    postcode?: string;
  };
  score: number;
}

/**
 * House-number search over the address file: `searchAddresses(engine, '10 Downing St, London')`.
 * Results carry only what the address file has (no state or country: the place search
 * adds those when the two are merged); best first, at most `limit`.
 */
export function searchAddresses(
  addresses: Pick<NativeEngine, 'searchAddresses'>,
  q: string,
  limit = 10,
): AddressMatch[] {
  const { number, street, city } = parseAddressQuery(q);
  if (!street) return [];
  const n = Number.isFinite(limit) ? Math.min(Math.max(0, Math.floor(limit)), 0xffff_ffff) : 10;
  return addresses.searchAddresses(number, street, city, n).map((a) => {
    const f = fieldsOf(a);
    const line = [streetLine(f), f.suburb, f.city, f.postcode].filter((p): p is string => !!p);
    return {
      address: {
        lat: String(Math.round(a.lat * 1e7) / 1e7),
        lon: String(Math.round(a.lon * 1e7) / 1e7),
        display_name: line.join(', '),
        house_number: a.houseNumber,
        road: a.road,
        ...(f.suburb ? { suburb: f.suburb } : {}),
        ...(f.city ? { city: f.city } : {}),
        ...(f.postcode ? { postcode: f.postcode } : {}),
      },
      score: a.score ?? 0,
    };
  });
}
