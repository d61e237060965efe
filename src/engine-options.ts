/**
 * The options of `Engine.open`, and how they resolve to the files each part of the engine opens.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import {
  countriesFile,
  countryPolygonsFile,
  defaultDbDir,
  defaultIpDatabases,
  landFile,
  placesFile,
  searchFile,
  timezonesFile,
} from './data-files.js';
import { ADDRESS_FILE_NAME } from './geocoding/addresses.js';
import type { ParseOptions } from './locating/request/index.js';
import type { NativeOpenOptions } from './native/binding.js';
import type { RemoteOptions } from './remote/index.js';
import type { BackgroundSyncOptions } from './sync/scheduler.js';

/** The most threads `batchThreads` may ask for. */
const MAX_BATCH_THREADS = 256;

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
  /**
   * Threads {@link Engine.processBatch} may solve a batch on: the calling thread, which reads
   * each chunk of requests (64, then 128, then 256 at a time) while the batch threads solve the
   * one before, and up to `batchThreads - 1` of them (a batch of 128 requests or fewer stays on
   * the calling thread); default: the machine's available parallelism. `1` keeps every call on
   * the calling thread. `process` uses one thread.
   */
  batchThreads?: number;
  /** A fixed clock for the 90-day `aged` rule (reproducible evaluations); default: the system clock. */
  now?: Date | number;
  /** Timezone polygons for {@link Engine.timezone}; default: the embedded ones. `false` disables timezones. */
  timezones?: string | false;
  /** Places for {@link Engine.reverse}; default: the embedded GeoNames places. `false` disables reverse geocoding. */
  places?: string | false;
  /**
   * A remote `/process` service to fall back on or to ask first (docs/remote.md). Only
   * {@link Engine.locate} applies it; `process` and `processBatch` stay local. Default: none.
   */
  remote?: RemoteOptions;
  /**
   * Keeps `db` up to date in the background from an export or another Whereabouts server
   * (docs/sync.md): the first sync starts at once, one runs at a time, and the engine switches
   * to each generation a sync writes. Needs `db`. See {@link Engine.syncState}.
   */
  sync?: BackgroundSyncOptions;
  /**
   * When learned stations are folded into a new database generation in the background
   * (docs/learning.md): once `stations` wait (default 10,000) or the oldest has waited
   * `ageSeconds` (default 3,600; checked when observations arrive and on {@link Engine.reload}). `false`: only on
   * {@link Engine.compact}. Learning needs `db`: the overlay lives in `DIR/learned.sqlite`.
   */
  compaction?: { stations?: number; ageSeconds?: number } | false;
  /**
   * Places for {@link Engine.search}; default: the embedded GeoNames places with alternate names.
   * `false` disables forward geocoding. The word index is built on the first search (about half a second of one core), or ahead of it on a background thread by {@link Engine.prepareSearch}.
   */
  search?: string | false;
  /**
   * Street-level address file (from `whereabouts import` of OpenAddresses or OpenStreetMap
   * files) for {@link Engine.reverse} at zoom 16-18 and {@link Engine.searchAddresses}.
   * Default: `addresses.bin` in the `db` directory when there is one. `false` disables it.
   */
  addresses?: string | false;
}

/** {@link EngineOptions} resolved: what the native engine opens, and what each part needs. */
export interface ResolvedOptions {
  native: NativeOpenOptions;
  parse: ParseOptions;
  batchThreads: number;
  hasTimezones: boolean;
  hasPlaces: boolean;
  hasSearch: boolean;
}

/**
 * Resolves the options: defaults to the embedded data where it is present, `false` turns a
 * part off. Throws for a bad `batchThreads` (checked first: a bad setting should not cost a
 * database mapping).
 */
export function resolveOptions(options: EngineOptions): ResolvedOptions {
  const batchThreads = options.batchThreads ?? availableParallelism();
  if (!Number.isInteger(batchThreads) || batchThreads < 1 || batchThreads > MAX_BATCH_THREADS) {
    throw new Error(
      `batchThreads must be a whole number from 1 to ${MAX_BATCH_THREADS}, got ${String(options.batchThreads)}`,
    );
  }
  const orDefault = (value: string | false | undefined, file: string): string | undefined =>
    value === false ? undefined : (value ?? (existsSync(file) ? file : undefined));
  const land = orDefault(options.land, landFile);
  const timezones = orDefault(options.timezones, timezonesFile);
  const places = orDefault(options.places, placesFile);
  const search = orDefault(options.search, searchFile);
  const addresses =
    options.addresses === false
      ? undefined
      : (options.addresses ??
        (options.db === undefined ? undefined : orDefault(undefined, join(options.db, ADDRESS_FILE_NAME))));
  const now = options.now instanceof Date ? options.now.getTime() / 1000 : options.now;
  return {
    native: {
      db: options.db ?? defaultDbDir,
      land,
      ipDatabases: options.ipDatabases === false ? [] : (options.ipDatabases ?? defaultIpDatabases()),
      countries: options.countries ?? countriesFile,
      now: now === undefined ? undefined : Math.floor(now),
      timezones,
      places,
      learned: options.db !== undefined,
      compactStations: options.compaction === false ? 0 : options.compaction?.stations,
      compactAgeSeconds: options.compaction === false ? 0 : options.compaction?.ageSeconds,
      search,
      addresses,
      // the countries serve reverse geocoding only: without places they are not needed
      countryPolygons:
        places !== undefined && existsSync(countryPolygonsFile) ? countryPolygonsFile : undefined,
    },
    parse: { maxCells: options.maxCells },
    batchThreads,
    hasTimezones: timezones !== undefined,
    hasPlaces: places !== undefined,
    hasSearch: search !== undefined,
  };
}

/**
 * The options of a command that reads or rewrites the stations alone (compact, stats, a
 * learning round): no land mask, IP databases, timezones or places loaded, and no background
 * compaction of its own.
 */
export const STATIONS_ONLY = {
  land: false,
  ipDatabases: false,
  timezones: false,
  places: false,
  compaction: false,
} as const satisfies EngineOptions;
