/**
 * The engine facade: the public library API, a thin layer over parts with one job each
 * (locating, geocoding, learning, sync) that share one native engine.
 */
import { type EngineOptions, resolveOptions } from './engine-options.js';
import type { AddressMatch } from './geocoding/addresses.js';
import { Geocoder } from './geocoding/geocoder.js';
import type { ReverseQuery, ReverseResponse } from './geocoding/reverse.js';
import type { SearchQuery, SearchResponse } from './geocoding/search.js';
import type { TimezoneQuery, TimezoneResponse } from './geocoding/timezone.js';
import { Learner } from './learning/learner.js';
import {
  LearnBatcher,
  type LearnCounts,
  type LearnSummary,
  type NativeSubmission,
  remoteSubmission,
} from './learning/submissions.js';
import {
  type CountryResponse,
  countryAnswer,
  type GeolocateResponse,
  geolocateAnswer,
  geolocateToProcess,
  type IchnaeaError,
  IchnaeaErrors,
} from './locating/ichnaea.js';
import { Locator } from './locating/locator.js';
import type { LocateRequest } from './locating/request/index.js';
import type { ProcessResponse } from './locating/response.js';
import {
  type NativeChangesPage,
  type NativeChangesQuery,
  type NativeCompactSummary,
  type NativeStats,
  native,
} from './native/binding.js';
import { NativeHandle } from './native/handle.js';
import type { RemoteAnswerHook, RemoteOptions, RemoteStatus } from './remote/index.js';
import { RemotePolicy } from './remote/policy.js';
import { SyncScheduler, type SyncState } from './sync/scheduler.js';

export type { EngineOptions } from './engine-options.js';

/** A query of {@link Engine.stationChanges}: stations with `since <= updated < until` (unix seconds). */
export type StationChangesQuery = NativeChangesQuery;
/** One page of {@link Engine.stationChanges}. */
export type StationChangesPage = NativeChangesPage;

/**
 * What an open engine holds: database counts and generation, the learned-station overlay
 * (`overlayCells`, `overlayWifi` waiting to be folded, `overlayBlocked` withdrawn as moved),
 * whether a compaction runs, and the last one (`lastCompaction`: unix seconds, or null).
 */
/** Three quantiles of a distribution. */
export interface Quantiles {
  p10: number;
  p50: number;
  p90: number;
}

/** One network's statistics ({@link Engine.networkStats}). */
export interface NetworkStats {
  radio: string;
  mcc: number;
  mnc: number;
  cells: number;
  /** Cells placed by the learner from GPS-tagged sightings. */
  learned: number;
  /** Stored ranges in metres of the cells that have one. */
  range_m: Quantiles | null;
  /** Sightings behind each cell's estimate. */
  samples: Quantiles | null;
  /** Sites whose mast the sibling sectors give. */
  sites: number;
  /** Metres from a mast to the nearest other mast of its LAC/TAC. */
  site_spacing_m: Quantiles | null;
  /** A site's sector estimates' mean distance from their mast over their mean range. */
  sector_offset: Quantiles | null;
  /**
   * Cells (not learned ones) at exactly the position of another cell of their LAC/TAC: a
   * publisher's sectors on their towers. 0 for statistics written before it was kept.
   */
  colocated: number;
  /** Learned cells (an export's exact rows, or our learner's) on another cell's position. */
  colocated_learned: number;
  /** Metres from each distinct cell position to the nearest other of its LAC/TAC. */
  position_spacing_m: Quantiles | null;
  /**
   * GSM and UMTS: how much tighter the crowd cells' groups by id decade are than by decades
   * shifted a few digits (well above 1: the decades are sites); null when not measured.
   */
  id_site_contrast: number | null;
  /**
   * How far a sector lies from the mean of its site's other sectors, each held out in turn:
   * the distance within which 68% of them lie (an unknown sector's site answer, `lacf`); null
   * when the network has no site of two sectors (or statistics written before it was kept).
   */
  site_holdout_m?: number | null;
  /** How many held-out sectors `site_holdout_m` was read from. */
  site_holdouts?: number;
  /** Site masts the learner fitted from timing advances (absent when none). */
  masts?: LearnedMast[];
  /** Learned cells' positions by received level (absent when none). */
  levels?: LearnedLevels[];
  /** Learned cells' positions by timing advance around their site's mast (absent when none). */
  advances?: LearnedAdvances[];
  /** How the solver reads the network from these statistics (docs/positioning.md). */
  read_as: NetworkReading;
}

/** How the solver reads a network from its statistics (`NetworkScale` in the core). */
export interface NetworkReading {
  /** The median range that stands in for a cell without one. */
  median_range_m: number | null;
  /** The median site spacing over the median range: the unit a crowd's ranges are read in. */
  spacing_per_range: number | null;
  /** The median sector offset the multi-cell radius reads. */
  sector_offset: number | null;
  /** Published at its masts: the masts' median spacing, which stands for its ranges. */
  published_spacing_m: number | null;
  /** For the same networks, the spacing's median over its 10% quantile: near 1 on a grid; the radius's layout factor. */
  published_spacing_spread: number | null;
  /** An export without sample counts: each cell read at a prior count. */
  uncounted: boolean;
  /** An export with one range for every cell: a lone cell's radius from the spacing. */
  unranged: boolean;
  /** False: GSM or UMTS ids numbered otherwise than by site decades; no sector siblings. */
  ids_name_sites: boolean;
  /** The network's averaged rows are a publisher's masts. */
  averaged_rows_published: boolean;
  /** The export's exact rows (`changeable` 0) share positions: a publisher's masts (not its crowd rows). */
  exact_rows_published: boolean;
  /** The held-out sector distance a site answer reads (20 held-out sectors or more), or null. */
  site_holdout_m: number | null;
}

/** Where a learned cell's sightings lay by received level (docs/learning.md). */
export interface LearnedLevels {
  /** The cell's store key. */
  cell: number;
  /**
   * Ascending by level, each `dbm/lat/lon/spread` (spread: metres holding 68% of the
   * sightings at that level), separated by `;`.
   */
  points: string;
}

/** Where a learned cell's sightings lay at each timing advance from its site's learned mast. */
export interface LearnedAdvances {
  /** The cell's store key. */
  cell: number;
  /**
   * Ascending by advance, each `steps/lat/lon/spread` (spread: metres holding 68% of the
   * sightings at that advance's distances from the mast), separated by `;`.
   */
  points: string;
}

/** A site's mast as the learner fitted it from the timing advances of its sightings. */
export interface LearnedMast {
  /** The site's first sector's cell id. */
  site: number;
  lat: number;
  lon: number;
  /** Sightings with an advance it was fitted from. */
  sightings: number;
}

/** The versioned statistics file of a database. */
export interface NetworkStatsFile {
  version: number;
  networks: NetworkStats[];
}

export type EngineStats = Omit<NativeStats, 'lastCompaction' | 'lastCompactionError'> & {
  lastCompaction: number | null;
  lastCompactionError: string | null;
};

/** The outcome of {@link Engine.compact}. */
export type CompactSummary = NativeCompactSummary;

/**
 * An offline location engine answering `/process` requests (spec 2.2 to 2.8).
 *
 * @example
 * ```ts
 * import { Engine } from 'whereabouts';
 * const engine = await Engine.open(); // the embedded demo data: simulated stations, mcc 1
 * const res = engine.process({
 *   token: 'x', radio: 'lte', mcc: 1, mnc: 1,
 *   cells: [{ lac: 3004, cid: 25613314, signal: -95, ta: 2 }],
 * });
 * if (res.status === 'ok') console.log(res.lat, res.lon, res.accuracy); // prints: 52.0799254 4.2844142 145
 * engine.close();
 * ```
 *
 * `process` and `processBatch` are synchronous: they never touch the network. `locate` is the
 * asynchronous form that applies the `remote` policy (docs/remote.md).
 */
export class Engine {
  readonly #handle: NativeHandle;
  readonly #locator: Locator;
  readonly #geocoder: Geocoder;
  readonly #learner: Learner;
  readonly #remote: RemotePolicy | undefined;
  #sync: SyncScheduler | undefined;

  private constructor(
    handle: NativeHandle,
    locator: Locator,
    geocoder: Geocoder,
    learner: Learner,
    remote: RemotePolicy | undefined,
  ) {
    this.#handle = handle;
    this.#locator = locator;
    this.#geocoder = geocoder;
    this.#learner = learner;
    this.#remote = remote;
  }

  /**
   * Opens a station database (memory-mapped: opening costs no work in proportion to its size).
   * Rejects with a clear message when the database is missing or corrupt, or a `remote`
   * setting is invalid. Opening makes no network connection.
   *
   * @example
   * ```ts
   * import { Engine } from 'whereabouts';
   * // a directory written by `whereabouts import --db ./stations cell_towers.csv.gz`
   * const engine = await Engine.open({ db: './stations', batchThreads: 2 });
   * console.log(engine.stats().cells > 0); // prints: true
   * engine.close();
   * await Engine.open({ db: './no-such-database' }).catch((e: Error) => console.log('refused')); // prints: refused
   * ```
   */
  static async open(options: EngineOptions = {}): Promise<Engine> {
    const resolved = resolveOptions(options);
    let learner: LearnBatcher | undefined;
    const remote =
      options.remote === undefined
        ? undefined
        : new RemotePolicy(
            learningFromRemote(options.remote, options.db !== undefined, (o) => learner?.submit(o)),
          );
    const handle = new NativeHandle(native().NativeEngine.open(resolved.native));
    const geocoder = new Geocoder(handle, resolved);
    const locator = new Locator(handle, resolved.parse, resolved.batchThreads, remote, geocoder.addressOf);
    const engine = new Engine(handle, locator, geocoder, new Learner(handle, resolved.parse), remote);
    if (remote !== undefined) learner = new LearnBatcher((batch) => engine.learnSubmissions(batch));
    if (options.sync) {
      try {
        if (options.db === undefined)
          throw new Error('the sync option needs a db directory to keep up to date');
        engine.#sync = new SyncScheduler(options.db, options.sync, () => engine.reload());
      } catch (err) {
        engine.close();
        throw err;
      }
      engine.#sync.start();
    }
    return engine;
  }

  /**
   * Answers one `/process` request object (spec 2.2) with the response object (spec 2.8).
   * Invalid requests get the spec's error message; this method never throws for bad input.
   *
   * @example
   * ```ts
   * import { Engine } from 'whereabouts';
   * const engine = await Engine.open();
   * const wifi = [
   *   { bssid: 'c0:92:92:f0:33:c4', signal: -75 },
   *   { bssid: '50-CB-4B-FA-01-3A', signal: -77 }, // any of the spec's BSSID spellings
   * ];
   * const res = engine.process({ token: 'x', radio: 'lte', mcc: 1, mnc: 1, wifi, address: 0 });
   * console.log(res.status, res.accuracy); // prints: ok 32
   * console.log(engine.process({ token: 'x', cells: [] })); // prints: { status: 'error', message: 'No network data provided' }
   * engine.close();
   * ```
   */
  process(request: unknown): ProcessResponse {
    return this.#locator.process(request);
  }

  /**
   * Answers many requests in one call into the core: the fast path for bulk work, solved on
   * up to `batchThreads` threads (see {@link Engine.open}). The answers are in the order of
   * the requests, exactly those {@link Engine.process} gives one at a time.
   *
   * @example
   * ```ts
   * import { Engine } from 'whereabouts';
   * const engine = await Engine.open();
   * const cell = { radio: 'lte', mcc: 1, mnc: 1, lac: 3004, cid: 25613314, signal: -95 };
   * const answers = engine.processBatch([{ cells: [cell] }, { cells: [{ ...cell, mcc: 1000 }] }]);
   * console.log(answers.map((a) => a.status === 'ok' ? 'ok' : a.message)); // prints: [ 'ok', 'Invalid country code (mcc)' ]
   * engine.close();
   * ```
   */
  processBatch(requests: readonly unknown[]): ProcessResponse[] {
    return this.#locator.processBatch(requests);
  }

  /**
   * Rows of a radius calibration (`whereabouts calibrate`, docs/positioning.md): each request
   * located without the database's radius model, with its class in that model and its error over
   * the radius, the device having been at `truths[i]`. An invalid or unanswered request has
   * class '' and ratio NaN. Synchronous, as {@link Engine.processBatch}.
   */
  radiusSamples(
    requests: readonly unknown[],
    truths: readonly { lat: number; lon: number }[],
  ): { classes: string[]; ratios: number[] } {
    return this.#locator.radiusSamples(requests, truths);
  }

  /**
   * Answers one `/process` request under the `remote` policy of {@link Engine.open}: may ask the
   * remote service (the only engine call that may touch the network). Without a remote, or in
   * `local` mode, it resolves the same answer as {@link Engine.process}. An invalid request gets
   * the spec's error and never goes out. Never rejects for bad input or a failing remote.
   *
   * @example
   * ```ts
   * import { Engine } from 'whereabouts';
   * // with `remote: { url, token, mode: 'fallback' }` a request the local data cannot answer
   * // is asked of that service (docs/remote.md); without it, the local answer
   * const engine = await Engine.open();
   * const res = await engine.locate({ cells: [{ radio: 'gsm', mcc: 1, mnc: 1, lac: 1, cid: 1 }] });
   * console.log(res); // prints: { status: 'error', message: 'No matches found' }
   * engine.close();
   * ```
   */
  async locate(request: unknown): Promise<ProcessResponse> {
    return this.#locator.locate(request);
  }

  /** {@link Engine.locate} for an already-validated request (the server validates once). */
  async locateParsed(request: LocateRequest): Promise<ProcessResponse> {
    return this.#locator.locateParsed(request);
  }

  /**
   * Answers one request of the Ichnaea (Google Geolocation API style) interface, `/v1/geolocate`:
   * `{ location: { lat, lng }, accuracy }` with `accuracy` a 95%-confidence radius (the 68% one of
   * {@link Engine.process} times `ACCURACY_95_FACTOR`) and `fallback` when `lacf` or `ipf` gave it;
   * or that interface's error body (`parseError`, `notFound`), whose `error.code` is its HTTP
   * status. The body is translated into a `/process` request and answered by the same
   * validation and solver (src/locating/ichnaea.ts). Synchronous; never throws for bad input.
   *
   * @example
   * ```ts
   * import { Engine } from 'whereabouts';
   * const engine = await Engine.open();
   * const res = engine.geolocate({
   *   cellTowers: [{ radioType: 'lte', mobileCountryCode: 1, mobileNetworkCode: 1,
   *     locationAreaCode: 3004, cellId: 25613314, signalStrength: -95, timingAdvance: 2 }],
   * });
   * console.log(res); // prints: { location: { lat: 52.0799254, lng: 4.2844142 }, accuracy: 316 }
   * const none = engine.geolocate({ cellTowers: [{ radioType: 'gsm', mobileCountryCode: 1,
   *   mobileNetworkCode: 1, locationAreaCode: 1, cellId: 1 }], fallbacks: { lacf: false } });
   * console.log('error' in none && none.error.code); // prints: 404
   * engine.close();
   * ```
   */
  geolocate(request: unknown): GeolocateResponse | IchnaeaError {
    const body = geolocateToProcess(request);
    if (body === undefined) return IchnaeaErrors.parse();
    return geolocateAnswer(this.#locator.process(body));
  }

  /**
   * Answers one `/v1/country` request of the Ichnaea interface (the body of
   * {@link Engine.geolocate}): `{ country_code, country_name }` of the country polygon holding
   * the located point, or that interface's error body (`notFound` at sea or without a location).
   *
   * @example
   * ```ts
   * import { Engine } from 'whereabouts';
   * const engine = await Engine.open();
   * const res = engine.country({ wifiAccessPoints: [
   *   { macAddress: 'c0:92:92:f0:33:c4', signalStrength: -75 },
   *   { macAddress: '50CB4BFA013A', signalStrength: -77 }, // any case, `:`, `-` or no separator
   * ] });
   * console.log(res); // prints: { country_code: 'NL', country_name: 'Netherlands' }
   * engine.close();
   * ```
   */
  country(request: unknown): CountryResponse | IchnaeaError {
    const body = geolocateToProcess(request);
    if (body === undefined) return IchnaeaErrors.parse();
    return countryAnswer(this.#locator.process(body), (lat, lon) => this.reverse({ lat, lon, zoom: 0 }));
  }

  /** The remote layer's mode, breaker, regions and cache; undefined without `remote`. */
  remoteStatus(): RemoteStatus | undefined {
    return this.#remote?.status();
  }

  /**
   * The timezone at a point (spec 4.4, 2.10): `{ status: 'ok', timezone }`, or
   * `{ status: 'error', message: 'INVALID_REQUEST' }` for a missing or out-of-range coordinate.
   * Synchronous; the body of `/v2/timezone` without `balance`.
   *
   * @example
   * ```ts
   * import { Engine } from 'whereabouts';
   * const engine = await Engine.open();
   * const res = engine.timezone({ lat: 52.52, lon: 13.405 });
   * if (res.status === 'ok') console.log(res.timezone.name); // prints: Europe/Berlin
   * engine.close();
   * ```
   */
  timezone(query: TimezoneQuery): TimezoneResponse {
    return this.#geocoder.timezone(query);
  }

  /**
   * The address at a point (spec 4.3, 2.9): `{ status: 'ok', address }` with the fields
   * `zoom` asks for that the data has (see src/reverse.ts), `NO_MATCHES` at sea more than
   * 5 km from every country, `INVALID_REQUEST` for a bad coordinate or zoom. Synchronous; the body of
   * `/v2/reverse` without `balance`.
   *
   * @example
   * ```ts
   * import { Engine } from 'whereabouts';
   * const engine = await Engine.open();
   * // the language names the country; places keep their GeoNames names
   * const res = engine.reverse({ lat: 52.08, lon: 4.28, acceptLanguage: 'de' });
   * if (res.status === 'ok') console.log(res.address.display_name); // prints: The Hague, Gemeente Den Haag, South Holland, Niederlande
   * engine.close();
   * ```
   */
  reverse(query: ReverseQuery): ReverseResponse {
    return this.#geocoder.reverse(query);
  }

  /**
   * Places matching free text (spec 4.2, 2.9): `{ status: 'ok', address: [...] }`, best first,
   * `NO_MATCHES` when nothing matches, `INVALID_REQUEST` for a missing `q` or a bad `limit`,
   * `countrycodes` or `viewbox` (formats in src/search.ts). Synchronous; the body of
   * `/v2/search` without `balance`.
   *
   * @example
   * ```ts
   * import { Engine } from 'whereabouts';
   * const engine = await Engine.open();
   * const res = engine.search({ q: 'lyon, france', limit: 1 });
   * if (res.status === 'ok') console.log(res.address[0]?.display_name); // prints: Lyon, Rhône, Auvergne-Rhône-Alpes, France
   * engine.close();
   * ```
   */
  search(query: SearchQuery): SearchResponse {
    return this.#geocoder.search(query);
  }

  /**
   * House-number search over the address file: `'10 Downing St, London'` gives matching
   * addresses, best first, each with a score in [0, 1] (see src/addresses.ts). Empty
   * without an address file. Synchronous.
   */
  searchAddresses(q: string, limit = 10): AddressMatch[] {
    return this.#geocoder.searchAddresses(q, limit);
  }

  /**
   * Reads and validates the timezone file and builds its cell tree now (6.4 MB; about 0.3 s of
   * this thread in all) instead of on the first {@link Engine.timezone}, which would otherwise
   * wait for them. The server calls this at start; a one-shot script need not. Throws when the
   * file is not sound; does nothing without timezone data.
   */
  prepareTimezones(): void {
    this.#geocoder.prepareTimezones();
  }

  /**
   * Reads and validates the places, country polygons and address file and builds the countries'
   * cell tree now instead of on the first {@link Engine.reverse} (about 0.1 s of this thread
   * without addresses). The server calls
   * this at start; a one-shot script need not. Throws when a file is not sound; does nothing
   * without places.
   */
  prepareReverse(): void {
    this.#geocoder.prepareReverse();
  }

  /**
   * Reads and validates the search file now (about 0.1 s of this thread) and starts building the
   * forward-search word index on a background thread, so that the first {@link Engine.search}
   * does not wait for them (a search before the index is ready waits only for the rest). The
   * server calls this at start; a one-shot script need not. Throws when the file is not sound.
   */
  prepareSearch(): void {
    this.#geocoder.prepareSearch();
  }

  /**
   * Learns from GPS-tagged `/process` requests (spec 2.2 with `gps`, spec 2.5): every cell and
   * access point of a request is a sighting at its most accurate fix. Learned stations overlay
   * the database at once: the promise resolves after the batch is committed to
   * `DIR/learned.sqlite`, and the next {@link Engine.process} uses them. Requests that fail
   * validation or carry no GPS fix are listed in `rejected`; access points whose `ssid` ends in
   * `_nomap` are never learned. Rejects when the engine was opened without `db`.
   *
   * @example
   * ```ts
   * import { Engine } from 'whereabouts';
   * const engine = await Engine.open({ db: './stations' });
   * const cell = { radio: 'lte', mcc: 1, mnc: 1, lac: 3004, cid: 999_001 }; // not in the data
   * console.log(engine.process({ cells: [cell], fallbacks: { lacf: 0, ipf: 0 } }).status); // prints: error
   * const gps = [{ lat: 52.07, lon: 4.3, accuracy: 10, timestamp: Date.now() }];
   * const summary = await engine.learn([{ cells: [cell], gps }]);
   * console.log(summary.accepted, summary.added); // prints: 1 1
   * console.log(engine.process({ cells: [cell], fallbacks: { lacf: 0, ipf: 0 } }).status); // prints: ok
   * engine.close();
   * ```
   */
  async learn(requests: readonly unknown[]): Promise<LearnSummary> {
    return this.#learner.learn(requests);
  }

  /** Learns submissions already validated and encoded (the server's batches); see {@link Engine.learn}. */
  async learnSubmissions(submissions: NativeSubmission[]): Promise<LearnCounts> {
    return this.#learner.learnSubmissions(submissions);
  }

  /**
   * Folds the learned stations into a new database generation now, off the event loop, and
   * switches to it; requests keep being answered meanwhile. Rejects if one is already running
   * or another process (an import) holds the database.
   *
   * @example
   * ```ts
   * import { Engine } from 'whereabouts';
   * const engine = await Engine.open({ db: './stations' });
   * const gps = [{ lat: 52.07, lon: 4.3, accuracy: 10, timestamp: Date.now() }];
   * await engine.learn([{ cells: [{ radio: 'lte', mcc: 1, mnc: 1, lac: 3004, cid: 999_002 }], gps }]);
   * const before = engine.stats();
   * await engine.compact();
   * const after = engine.stats();
   * console.log(before.overlayCells, after.overlayCells, after.cells - before.cells); // prints: 1 0 1
   * engine.close();
   * ```
   */
  async compact(): Promise<CompactSummary> {
    return this.#learner.compact();
  }

  /**
   * Switches to the newest database generation in `manifest.json` (after an external
   * `whereabouts import`, `learn` or sync) and reads what other processes learned; requests in
   * flight finish on the old generation. Cheap when nothing changed.
   */
  reload(): void {
    this.#learner.reload();
  }

  /**
   * One page of the stations changed in a window, as a gzip CSV in an import format (the body
   * of `GET /v2/sync`, docs/sync.md). Runs on a worker thread. Rejects for a bad cursor.
   */
  stationChanges(query: StationChangesQuery): Promise<StationChangesPage> {
    this.#handle.assertOpen();
    return this.#handle.track(this.#handle.native.changesPage(query));
  }

  /** The background sync's state (`sync` option of {@link Engine.open}); undefined without one. */
  syncState(): SyncState | undefined {
    return this.#sync?.state();
  }

  /**
   * Runs the background sync now (or waits for the one running) and resolves when it ends,
   * whatever its outcome: read it from {@link Engine.syncState}. Rejects without a `sync` option.
   */
  async syncNow(): Promise<void> {
    this.#handle.assertOpen();
    if (!this.#sync) throw new Error('this engine was opened without the sync option');
    await this.#sync.runNow();
  }

  /**
   * What each network's own data says of its scale (docs/positioning.md, "Each network's
   * scale"): stored ranges, sightings, site spacing and sector offsets, computed when the
   * database was written. Null for a database written before they existed (its networks answer
   * with the solver's priors).
   */
  networkStats(): NetworkStatsFile | null {
    this.#handle.assertOpen();
    const json = this.#handle.native.networkStats();
    return json == null ? null : (JSON.parse(json) as NetworkStatsFile);
  }

  /** Counts of the open database and which optional data is loaded. */
  stats(): EngineStats {
    this.#handle.assertOpen();
    const s = this.#handle.native.stats();
    return {
      ...s,
      lastCompaction: s.lastCompaction ?? null,
      lastCompactionError: s.lastCompactionError ?? null,
    };
  }

  /**
   * Releases the database; later calls throw. Work already running on a worker thread
   * (`learn`, `compact`, `stationChanges`) finishes first, and the data is released after it.
   */
  close(): void {
    if (this.#handle.closed) return;
    this.#remote?.close();
    this.#sync?.stop();
    this.#handle.close();
  }
}

/**
 * The remote options with the engine's learning put in front of the caller's own hook: fresh
 * located remote answers become low-weight observations (docs/remote.md) when the engine has a
 * database to learn into and `remote.learn` is not false. A failed learning batch costs nothing
 * but that batch: the answer has already been given.
 */
function learningFromRemote(
  options: RemoteOptions,
  hasDb: boolean,
  submit: (submission: NativeSubmission) => Promise<void> | undefined,
): RemoteOptions {
  if (!hasDb || options.learn === false) return options;
  const own = options.onRemoteAnswer;
  const hook: RemoteAnswerHook = (request, observation) => {
    submit(remoteSubmission(observation))?.catch(() => undefined);
    own?.(request, observation);
  };
  return { ...options, onRemoteAnswer: hook };
}
