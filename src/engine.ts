/**
 * The engine facade: the public library API over the native core.
 */
import { existsSync } from 'node:fs';
import {
  countriesFile,
  countryPolygonsFile,
  defaultDbDir,
  defaultIpDatabases,
  landFile,
  placesFile,
  timezonesFile,
} from './data-files.js';
import { ReverseLookup } from './geocoding/reverse-lookup.js';
import { type NativeEngine, type NativeStats, native, WireBuffers } from './native.js';
import { type LocateRequest, type ParseOptions, parseRequest } from './request.js';
import { type AddressLookup, errorResponse, type ProcessResponse, shapeAnswer } from './response.js';
import { answerReverse, type ReverseQuery, type ReverseResponse } from './reverse.js';
import { answerTimezone, type TimezoneQuery, type TimezoneResponse } from './timezone.js';

/** Requests parsed and solved together inside one `processBatch` call. */
const BATCH_CHUNK = 64;

/** Options of {@link Engine.open}. Every field is optional: no options open the embedded demo data. */
export interface EngineOptions {
  /** Station database directory made by `whereabouts import`; default: the embedded simulated database. */
  db?: string;
  /** Land polygons for border strictness (`bt`); default: the embedded Natural Earth land. `false` disables `bt`. */
  land?: string | false;
  /**
   * MMDB files for the IP fallback (`ipf`), tried in order: GeoLite2/DB-IP city or country databases.
   * Default: the country-level database of `@ip-location-db/geo-whois-asn-country-mmdb`. `false` disables `ipf`.
   */
  ipDatabases?: string[] | false;
  /** Country table for country-level MMDBs; default: the embedded one. */
  countries?: string;
  /** Most cell objects accepted per request; default 7 (spec 8). */
  maxCells?: number;
  /** A fixed clock for the 90-day `aged` rule (reproducible evaluations); default: the system clock. */
  now?: Date | number;
  /** Timezone polygons for {@link Engine.timezone}; default: the embedded ones. `false` disables timezones. */
  timezones?: string | false;
  /** Places for {@link Engine.reverse}; default: the embedded GeoNames places. `false` disables reverse geocoding. */
  places?: string | false;
}

/** What an open engine holds. */
export type EngineStats = NativeStats;

/**
 * An offline location engine answering `/process` requests (spec 2.2 to 2.8).
 *
 * ```ts
 * import { Engine } from 'whereabouts';
 * const engine = await Engine.open();          // embedded demo data
 * const res = engine.process({ token: 'x', cells: [{ radio: 'lte', mcc: 1, mnc: 1, lac: 1, cid: 1 }] });
 * if (res.status === 'ok') console.log(res.lat, res.lon, res.accuracy);
 * engine.close();
 * ```
 *
 * `process` and `processBatch` are synchronous: they never touch the network.
 */
export class Engine {
  readonly #native: NativeEngine;
  readonly #parse: ParseOptions;
  readonly #wire = new WireBuffers();
  readonly #zoneNames: string[] | undefined;
  readonly #hasPlaces: boolean;
  readonly #reverseLookup: ReverseLookup;
  #closed = false;

  private constructor(
    nativeEngine: NativeEngine,
    parse: ParseOptions,
    hasTimezones: boolean,
    hasPlaces: boolean,
  ) {
    this.#native = nativeEngine;
    this.#parse = parse;
    this.#zoneNames = hasTimezones ? nativeEngine.timezoneNames() : undefined;
    this.#hasPlaces = hasPlaces;
    this.#reverseLookup = new ReverseLookup(nativeEngine);
  }

  /**
   * Opens a station database (memory-mapped: opening costs no work in proportion to its size).
   * Rejects with a clear message when the database is missing or corrupt.
   */
  static async open(options: EngineOptions = {}): Promise<Engine> {
    const land =
      options.land === false ? undefined : (options.land ?? (existsSync(landFile) ? landFile : undefined));
    const ipDatabases = options.ipDatabases === false ? [] : (options.ipDatabases ?? defaultIpDatabases());
    const now = options.now instanceof Date ? options.now.getTime() / 1000 : options.now;
    const timezones =
      options.timezones === false
        ? undefined
        : (options.timezones ?? (existsSync(timezonesFile) ? timezonesFile : undefined));
    const places =
      options.places === false
        ? undefined
        : (options.places ?? (existsSync(placesFile) ? placesFile : undefined));
    const handle = native().NativeEngine.open({
      db: options.db ?? defaultDbDir,
      land,
      ipDatabases,
      countries: options.countries ?? countriesFile,
      now: now === undefined ? undefined : Math.floor(now),
      timezones,
      places,
      // the countries serve reverse geocoding only: without places they are not needed
      countryPolygons:
        places !== undefined && existsSync(countryPolygonsFile) ? countryPolygonsFile : undefined,
    });
    return new Engine(handle, { maxCells: options.maxCells }, timezones !== undefined, places !== undefined);
  }

  /**
   * Answers one `/process` request object (spec 2.2) with the response object (spec 2.8).
   * Invalid requests get the spec's error message; this method never throws for bad input.
   */
  process(request: unknown): ProcessResponse {
    return this.processBatch([request])[0] as ProcessResponse;
  }

  /** Answers many requests in one call into the core: the fast path for bulk work. */
  processBatch(requests: readonly unknown[]): ProcessResponse[] {
    this.#assertOpen();
    const out: ProcessResponse[] = new Array(requests.length);
    const valid: LocateRequest[] = [];
    const slots: number[] = [];
    for (let start = 0; start < requests.length; start += BATCH_CHUNK) {
      // Parse, solve and shape a chunk at a time: a thousand parsed requests alive at once
      // outlive the young generation and cost the garbage collector more than the solving.
      const end = Math.min(requests.length, start + BATCH_CHUNK);
      valid.length = 0;
      slots.length = 0;
      for (let i = start; i < end; i++) {
        const parsed = parseRequest(requests[i], this.#parse);
        if (parsed.ok) {
          valid.push(parsed.request);
          slots.push(i);
        } else {
          out[i] = errorResponse(parsed.message);
        }
      }
      this.#solve(valid, slots, out);
    }
    return out;
  }

  /** Answers already-validated requests (the server validates once, then calls this). */
  processParsed(requests: readonly LocateRequest[]): ProcessResponse[] {
    this.#assertOpen();
    return this.#solve(
      requests,
      requests.map((_, i) => i),
      new Array(requests.length),
    );
  }

  #solve(valid: readonly LocateRequest[], slots: number[], out: ProcessResponse[]): ProcessResponse[] {
    if (valid.length > 0) {
      const { input, output: answers, ips } = this.#wire.encode(valid);
      this.#native.locateInto(input, ips, answers);
      for (let k = 0; k < valid.length; k++) {
        out[slots[k] as number] = shapeAnswer(valid[k] as LocateRequest, answers, k, this.#addressOf);
      }
    }
    return out;
  }

  /**
   * The timezone at a point (spec 4.4, 2.10): `{ status: 'ok', timezone }`, or
   * `{ status: 'error', message: 'INVALID_REQUEST' }` for a missing or out-of-range coordinate.
   * Synchronous; the body of `/v2/timezone` without `balance`.
   */
  timezone(query: TimezoneQuery): TimezoneResponse {
    this.#assertOpen();
    const names = this.#zoneNames;
    if (!names) return { status: 'error', message: 'UNKNOWN_ERROR' };
    return answerTimezone(query, (lat, lon) => names[this.#native.timezoneIndexAt(lat, lon)] ?? null);
  }

  /**
   * The address at a point (spec 4.3, 2.9): `{ status: 'ok', address }` with the fields
   * `zoom` asks for that the data has (see src/reverse.ts), `NO_MATCHES` at sea more than
   * 5 km from every country, `INVALID_REQUEST` for a bad coordinate or zoom. Synchronous; the body of
   * `/v2/reverse` without `balance`.
   */
  reverse(query: ReverseQuery): ReverseResponse {
    this.#assertOpen();
    if (!this.#hasPlaces) return { status: 'error', message: 'UNKNOWN_ERROR' };
    const lookup = this.#reverseLookup;
    return answerReverse(query, (lat, lon, zoom) => lookup.find(lat, lon, zoom));
  }

  /** The address of a located point, from the same places as {@link Engine.reverse}. */
  readonly #addressOf: AddressLookup = (lat, lon, zoom, acceptLanguage) => {
    if (!this.#hasPlaces) return undefined;
    const r = this.reverse({ lat, lon, zoom, acceptLanguage });
    if (r.status !== 'ok') return undefined;
    const { lat: _lat, lon: _lon, display_name, ...details } = r.address;
    return { text: display_name, details };
  };

  /** Counts of the open database and which optional data is loaded. */
  stats(): EngineStats {
    this.#assertOpen();
    return this.#native.stats();
  }

  /** Releases the database; later calls throw. */
  close(): void {
    if (!this.#closed) {
      this.#closed = true;
      this.#native.close();
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error('the engine is closed');
  }
}
