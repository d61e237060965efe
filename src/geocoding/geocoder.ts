/**
 * Geocoding: timezones, reverse geocoding, place and house-number search, and the address of a
 * located point, over the native engine's places, polygons and address file.
 */

import type { AddressLookup } from '../locating/response.js';
import type { NativeHandle } from '../native/handle.js';
import { ReverseLookup } from '../native/reverse-lookup.js';
import { ZoneLookup } from '../native/zone-lookup.js';
import { type AddressMatch, searchAddresses, streetFields } from './addresses.js';
import { answerReverse, type ReverseQuery, type ReverseResponse, ShapedAddresses } from './reverse.js';
import {
  answerSearch,
  type ParsedSearch,
  type ScoredAddress,
  type SearchQuery,
  type SearchResponse,
} from './search.js';
import { answerTimezone, type TimezoneQuery, type TimezoneResponse, ZoneAnswers } from './timezone.js';

/** Which geocoding data an engine has: fixed for its life. */
export interface GeocodingData {
  hasTimezones: boolean;
  hasPlaces: boolean;
  hasSearch: boolean;
}

/** The geocoding part of an `Engine`: its methods are the engine's `timezone`, `reverse`, `search`... */
export class Geocoder {
  readonly #handle: NativeHandle;
  readonly #hasTimezones: boolean;
  readonly #hasPlaces: boolean;
  readonly #hasSearch: boolean;
  /** Whether an address file is loaded: fixed for the engine's life, asked once (a napi call costs). */
  readonly #hasAddresses: boolean;
  /**
   * The zone names and cell tree, and each zone's answer kept until its next transition, made on
   * the first timezone lookup (or by prepareTimezones).
   */
  #zones: { lookup: ZoneLookup; answers: ZoneAnswers } | undefined;
  readonly #reverseLookup: ReverseLookup;
  readonly #shapedAddresses = new ShapedAddresses();

  constructor(handle: NativeHandle, data: GeocodingData) {
    this.#handle = handle;
    this.#hasTimezones = data.hasTimezones;
    this.#hasPlaces = data.hasPlaces;
    this.#hasSearch = data.hasSearch;
    this.#hasAddresses = handle.native.hasAddresses();
    this.#reverseLookup = new ReverseLookup(handle.native);
  }

  /**
   * The timezone at a point (spec 4.4, 2.10): `{ status: 'ok', timezone }`, or
   * `{ status: 'error', message: 'INVALID_REQUEST' }` for a missing or out-of-range coordinate.
   * Synchronous; the body of `/v2/timezone` without `balance`.
   */
  timezone(query: TimezoneQuery): TimezoneResponse {
    this.#handle.assertOpen();
    if (!this.#hasTimezones) return { status: 'error', message: 'UNKNOWN_ERROR' };
    // the file is read and the cell tree built on the first lookup (or by prepareTimezones):
    // they are for engines that answer timezones
    const zones = this.#zonesPrepared();
    return answerTimezone(query, zones.lookup, zones.answers);
  }

  /** The zone lookup and the answers by its index, made once. */
  #zonesPrepared(): { lookup: ZoneLookup; answers: ZoneAnswers } {
    if (this.#zones === undefined) {
      const lookup = new ZoneLookup(this.#handle.native);
      this.#zones = { lookup, answers: new ZoneAnswers(lookup.names) };
    }
    return this.#zones;
  }

  /**
   * The address at a point (spec 4.3, 2.9): `{ status: 'ok', address }` with the fields
   * `zoom` asks for that the data has (see src/geocoding/reverse.ts), `NO_MATCHES` at sea more than
   * 5 km from every country, `INVALID_REQUEST` for a bad coordinate or zoom. Synchronous; the body of
   * `/v2/reverse` without `balance`.
   */
  reverse(query: ReverseQuery): ReverseResponse {
    this.#handle.assertOpen();
    if (!this.#hasPlaces) return { status: 'error', message: 'UNKNOWN_ERROR' };
    const native = this.#handle.native;
    return answerReverse(
      query,
      this.#reverseLookup,
      this.#shapedAddresses,
      this.#hasAddresses ? (lat, lon, zoom) => streetFields(native, lat, lon, zoom) : undefined,
    );
  }

  /**
   * Places matching free text (spec 4.2, 2.9): `{ status: 'ok', address: [...] }`, best first,
   * `NO_MATCHES` when nothing matches, `INVALID_REQUEST` for a missing `q` or a bad `limit`,
   * `countrycodes` or `viewbox` (formats in src/geocoding/search.ts). Synchronous; the body of
   * `/v2/search` without `balance`.
   */
  search(query: SearchQuery): SearchResponse {
    this.#handle.assertOpen();
    if (!this.#hasSearch) return { status: 'error', message: 'UNKNOWN_ERROR' };
    return answerSearch(
      query,
      (p) => this.#handle.native.searchPlaces(p.q, p.limit, p.countries, p.viewbox),
      this.#hasAddresses ? (p) => this.#streetHits(p, query.acceptLanguage) : undefined,
    );
  }

  /**
   * Reads and validates the search file now (about 0.1 s of this thread) and starts building the
   * forward-search word index on a background thread, so that the first {@link Engine.search}
   * does not wait for them (a search before the index is ready waits only for the rest). The
   * server calls this at start; a one-shot script need not. Throws when the file is not sound.
   */
  prepareSearch(): void {
    this.#handle.assertOpen();
    if (this.#hasSearch) this.#handle.native.prepareSearch();
  }

  /**
   * Reads and validates the timezone file and builds its cell tree now (6.4 MB; about 0.3 s of
   * this thread in all) instead of on the first {@link Engine.timezone}, which would otherwise
   * wait for them. The server calls this at start; a one-shot script need not. Throws when the
   * file is not sound; does nothing without timezone data.
   */
  prepareTimezones(): void {
    this.#handle.assertOpen();
    if (this.#hasTimezones) this.#zonesPrepared();
  }

  /**
   * Reads and validates the places, country polygons and address file and builds the countries'
   * cell tree now instead of on the first {@link Engine.reverse} (about 0.1 s of this thread
   * without addresses). The server calls
   * this at start; a one-shot script need not. Throws when a file is not sound; does nothing
   * without places.
   */
  prepareReverse(): void {
    this.#handle.assertOpen();
    if (this.#hasPlaces) this.#handle.native.prepareReverse();
  }

  /**
   * House-number hits of a search as whole Address objects: each house is reverse geocoded at
   * zoom 18, which names the house itself (it is the nearest address to its own point) and adds
   * the city, state and country that the address file lacks.
   */
  #streetHits(p: ParsedSearch, acceptLanguage: string | undefined): ScoredAddress[] {
    const hits: ScoredAddress[] = [];
    for (const m of searchAddresses(this.#handle.native, p.q, p.limit)) {
      const r = this.reverse({ lat: m.address.lat, lon: m.address.lon, zoom: 18, acceptLanguage });
      const address = r.status === 'ok' ? r.address : m.address;
      const cc = (address as { country_code?: string }).country_code?.toUpperCase();
      if (p.countries.length > 0 && (cc === undefined || !p.countries.includes(cc))) continue;
      hits.push({ address, score: m.score });
    }
    return hits;
  }

  /**
   * House-number search over the address file: `'10 Downing St, London'` gives matching
   * addresses, best first, each with a score in [0, 1] (see src/geocoding/addresses.ts). Empty
   * without an address file. Synchronous.
   */
  searchAddresses(q: string, limit = 10): AddressMatch[] {
    this.#handle.assertOpen();
    if (typeof q !== 'string' || !this.#hasAddresses) return [];
    return searchAddresses(this.#handle.native, q, Number.isFinite(limit) ? limit : 10);
  }

  /** The address of a located point, from the same places as {@link Engine.reverse}. */
  readonly addressOf: AddressLookup = (lat, lon, zoom, acceptLanguage) => {
    if (!this.#hasPlaces) return undefined;
    const r = this.reverse({ lat, lon, zoom, acceptLanguage });
    if (r.status !== 'ok') return undefined;
    const { lat: _lat, lon: _lon, display_name, ...details } = r.address;
    return { text: display_name, details };
  };
}
