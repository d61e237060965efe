/**
 * The engine facade: the public library API over the native core.
 */

import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { ADDRESS_FILE_NAME, type AddressMatch, searchAddresses, streetFields } from './addresses.js';
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
import { ReverseLookup } from './geocoding/reverse-lookup.js';
import { ZoneLookup } from './geocoding/zone-lookup.js';
import {
  LearnBatcher,
  type LearnCounts,
  type LearnSummary,
  type NativeSubmission,
  remoteSubmission,
  toSubmission,
  withoutOptedOut,
} from './learning.js';
import {
  ANSWER,
  type LocateFunction,
  type NativeChangesPage,
  type NativeChangesQuery,
  type NativeCompactSummary,
  type NativeEngine,
  type NativeStats,
  native,
  WireBuffers,
} from './native.js';
import {
  type RemoteAnswerHook,
  type RemoteOptions,
  RemotePolicy,
  type RemoteStatus,
} from './remote/index.js';
import { type LocateRequest, type ParseOptions, parseRequest, RequestReader } from './request.js';
import { type AddressLookup, errorResponse, type ProcessResponse, shapeAnswer } from './response.js';
import { answerReverse, type ReverseQuery, type ReverseResponse, ShapedAddresses } from './reverse.js';
import {
  answerSearch,
  type ParsedSearch,
  type ScoredAddress,
  type SearchQuery,
  type SearchResponse,
} from './search.js';
import { type BackgroundSyncOptions, SyncScheduler, type SyncState } from './sync/scheduler.js';
import { answerTimezone, type TimezoneQuery, type TimezoneResponse } from './timezone.js';

/** Requests parsed and solved together inside one `processBatch` call on one thread. */
const BATCH_CHUNK = 64;

/**
 * Requests read at a time by a threaded `processBatch`: each chunk is solved on the batch
 * threads while the next is read. Batches of 1,000 (paired runs, docs/positioning.md): chunks
 * of 128 and 256 both 1.19x the unpipelined speed, 512 1.12x (less of the batch overlaps).
 */
const PIPELINE_CHUNK = 256;

/**
 * The first chunk of a threaded `processBatch`, read while the batch threads have nothing to
 * solve yet (bench/batch.ts, batches of 1,000, three runs: first chunks of 256 1.18x, 1.23x
 * and 1.18x the unpipelined speed; of 64 1.23x, 1.25x and 1.25x; of 16 1.24x and 1.22x).
 */
const FIRST_PIPELINE_CHUNK = 64;

/**
 * Batches of at most this many stay on the calling thread even when `batchThreads` allows
 * more (bench/batch.ts, against one thread: 100 requests pipelined 0.90x and 0.91x, 150
 * 1.09x, 200 1.16x and 1.17x).
 */
const SOLO_BATCH = 128;

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

/** A query of {@link Engine.stationChanges}: stations with `since <= updated < until` (unix seconds). */
export type StationChangesQuery = NativeChangesQuery;
/** One page of {@link Engine.stationChanges}. */
export type StationChangesPage = NativeChangesPage;

/** The valid requests of a `processBatch` chunk: where each answer goes and how it is shaped. */
class ChunkRequests {
  /** Index in the batch of each valid request. */
  readonly slots: number[] = [];
  readonly geolocations: (0 | 1)[] = [];
  readonly addresses: (0 | 1 | 2)[] = [];
  readonly languages: (string | undefined)[] = [];
  valid = 0;
  /** The chunk's `locateStart` ticket while it is being solved. */
  ticket = 0;

  /** Shapes the answers, {@link ANSWER} numbers each from `buffer[at]` on, into `out`. */
  shape(out: ProcessResponse[], buffer: Float64Array, at: number, addressOf: AddressLookup): void {
    for (let k = 0; k < this.valid; k++) {
      out[this.slots[k] as number] = shapeAnswer(
        this.geolocations[k] as 0 | 1,
        this.addresses[k] as 0 | 1 | 2,
        this.languages[k],
        buffer,
        at + k * ANSWER,
        addressOf,
      );
    }
  }
}

/**
 * What an open engine holds: database counts and generation, the learned-station overlay
 * (`overlayCells`, `overlayWifi` waiting to be folded, `overlayBlocked` withdrawn as moved),
 * whether a compaction runs, and the last one (`lastCompaction`: unix seconds, or null).
 */
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
 * if (res.status === 'ok') console.log(res.lat, res.lon, res.accuracy); // prints: 52.0800171 4.2846786 150
 * engine.close();
 * ```
 *
 * `process` and `processBatch` are synchronous: they never touch the network. `locate` is the
 * asynchronous form that applies the `remote` policy (docs/remote.md).
 */
export class Engine {
  readonly #native: NativeEngine;
  /** The native locate call, bound to the database (`NativeEngine.locateFunction`). */
  readonly #locate: LocateFunction;
  /** Threads a `processBatch` chunk may be solved on ({@link EngineOptions.batchThreads}). */
  readonly #batchThreads: number;
  readonly #parse: ParseOptions;
  readonly #wire = new WireBuffers();
  /** The validator of process and processBatch (one request at a time). */
  readonly #reader = new RequestReader();
  /** Whether process or processBatch is using the reader and the wire. */
  #busy = false;
  /**
   * Per valid request of a processBatch chunk: its index, and what shaping its answer needs.
   * Two: a threaded batch reads a chunk into one while the other's is being solved.
   */
  readonly #chunks = [new ChunkRequests(), new ChunkRequests()] as const;
  /** Where a threaded batch's answers are written (`locateJoin`). */
  #answers = new Float64Array(PIPELINE_CHUNK * ANSWER);
  readonly #hasTimezones: boolean;
  /** The zone names and cell tree, made on the first timezone lookup (or by prepareTimezones). */
  #zones: ZoneLookup | undefined;
  readonly #hasPlaces: boolean;
  readonly #remote: RemotePolicy | undefined;
  #sync: SyncScheduler | undefined;
  readonly #hasSearch: boolean;
  readonly #reverseLookup: ReverseLookup;
  /** Whether an address file is loaded: fixed for the engine's life, asked once (a napi call costs). */
  readonly #hasAddresses: boolean;
  readonly #shapedAddresses = new ShapedAddresses();
  #closed = false;
  /** Native calls still running on worker threads; the native engine is released after the last. */
  #inflight = 0;

  private constructor(
    nativeEngine: NativeEngine,
    parse: ParseOptions,
    hasTimezones: boolean,
    hasPlaces: boolean,
    remote: RemotePolicy | undefined,
    hasSearch: boolean,
    batchThreads: number,
  ) {
    this.#native = nativeEngine;
    this.#batchThreads = batchThreads;
    this.#locate = nativeEngine.locateFunction();
    this.#parse = parse;
    this.#hasTimezones = hasTimezones;
    this.#hasPlaces = hasPlaces;
    this.#remote = remote;
    this.#hasSearch = hasSearch;
    this.#reverseLookup = new ReverseLookup(nativeEngine);
    this.#hasAddresses = nativeEngine.hasAddresses();
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
    // Checked first: a bad setting should not cost a database mapping.
    const batchThreads = options.batchThreads ?? availableParallelism();
    if (!Number.isInteger(batchThreads) || batchThreads < 1 || batchThreads > MAX_BATCH_THREADS) {
      throw new Error(
        `batchThreads must be a whole number from 1 to ${MAX_BATCH_THREADS}, got ${String(options.batchThreads)}`,
      );
    }
    let learner: LearnBatcher | undefined;
    const remote =
      options.remote === undefined
        ? undefined
        : new RemotePolicy(
            learningFromRemote(options.remote, options.db !== undefined, (o) => learner?.submit(o)),
          );
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
    const search =
      options.search === false
        ? undefined
        : (options.search ?? (existsSync(searchFile) ? searchFile : undefined));
    const defaultAddresses = options.db === undefined ? undefined : join(options.db, ADDRESS_FILE_NAME);
    const addresses =
      options.addresses === false
        ? undefined
        : (options.addresses ??
          (defaultAddresses !== undefined && existsSync(defaultAddresses) ? defaultAddresses : undefined));
    const handle = native().NativeEngine.open({
      db: options.db ?? defaultDbDir,
      land,
      ipDatabases,
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
    });
    const engine = new Engine(
      handle,
      { maxCells: options.maxCells },
      timezones !== undefined,
      places !== undefined,
      remote,
      search !== undefined,
      batchThreads,
    );
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
   * One page of the stations changed in a window, as a gzip CSV in an import format (the body
   * of `GET /v2/sync`, docs/sync.md). Runs on a worker thread. Rejects for a bad cursor.
   */
  stationChanges(query: StationChangesQuery): Promise<StationChangesPage> {
    this.#assertOpen();
    return this.#track(this.#native.changesPage(query));
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
    this.#assertOpen();
    if (!this.#sync) throw new Error('this engine was opened without the sync option');
    await this.#sync.runNow();
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
    this.#assertOpen();
    // A getter of the request may call back into the engine while the reader and the wire
    // are in use: such a call takes the way that shares neither.
    if (this.#busy) return this.#processAside(request);
    this.#busy = true;
    try {
      const reader = this.#reader;
      const message = reader.read(request, this.#parse);
      if (message !== undefined) return errorResponse(message);
      const wire = this.#wire;
      wire.clear();
      wire.appendRead(reader);
      return this.#answerOne(wire, reader.geolocation, reader.address, reader.acceptLanguage);
    } finally {
      this.#busy = false;
    }
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
    this.#assertOpen();
    if (this.#busy) return requests.map((r) => this.#processAside(r));
    this.#busy = true;
    try {
      return this.#processBatch(requests);
    } finally {
      this.#busy = false;
    }
  }

  #processBatch(requests: readonly unknown[]): ProcessResponse[] {
    const out: ProcessResponse[] = new Array(requests.length);
    const wire = this.#wire;
    // A small batch stays here: the batch threads would wake when the calling thread had
    // solved most of it.
    if (this.#batchThreads === 1 || requests.length <= SOLO_BATCH) {
      const c = this.#chunks[0];
      for (let start = 0; start < requests.length; start += BATCH_CHUNK) {
        // Read, solve and shape a chunk at a time: the wire buffer then stays small (a chunk
        // of requests fits its first 4,096 numbers) and so do the per-request arrays.
        this.#readChunk(requests, start, Math.min(requests.length, start + BATCH_CHUNK), c, out);
        if (c.valid === 0) continue;
        wire.reserveAnswers(c.valid);
        this.#locate(wire.buffer, wire.length, wire.ipsArgument());
        c.shape(out, wire.buffer, wire.length, this.#addressOf);
      }
      return out;
    }
    // Threaded: a chunk is started on the batch threads, then the next one is read here while
    // they solve it, then the first is joined (this thread solving what they have not taken)
    // and shaped. Reading and shaping are nearly half of a request's time in a batch (0.95 of
    // 2.07 us on one thread): overlapped, they no longer idle the other cores.
    let pending: ChunkRequests | undefined;
    let turn = 0;
    try {
      // The batch threads idle while the first chunk is read, so the chunks start small and
      // double up to PIPELINE_CHUNK.
      let size = FIRST_PIPELINE_CHUNK;
      for (let start = 0; start < requests.length; start += size, size = Math.min(PIPELINE_CHUNK, size * 2)) {
        const c = this.#chunks[turn] as ChunkRequests;
        turn ^= 1;
        this.#readChunk(requests, start, Math.min(requests.length, start + size), c, out);
        if (c.valid > 0) {
          c.ticket = this.#native.locateStart(
            wire.buffer,
            wire.length,
            wire.ipsArgument(),
            this.#batchThreads,
          );
        }
        const previous = pending;
        pending = c.valid > 0 ? c : undefined;
        if (previous !== undefined) this.#joinChunk(previous, out);
      }
      const last = pending;
      pending = undefined;
      if (last !== undefined) this.#joinChunk(last, out);
    } finally {
      // Thrown out of the loop (a native error): the chunk started last is still joined, so
      // that no batch is left pending (a failed join has taken its own).
      if (pending !== undefined) {
        try {
          this.#native.locateJoin(pending.ticket, this.#answers);
        } catch {
          // the error already thrown is the one to report
        }
      }
    }
    return out;
  }

  /** Reads `requests[start..end)` into the wire (cleared first) and `c`; invalid ones are answered in `out`. */
  #readChunk(
    requests: readonly unknown[],
    start: number,
    end: number,
    c: ChunkRequests,
    out: ProcessResponse[],
  ): void {
    const reader = this.#reader;
    const wire = this.#wire;
    wire.clear();
    let valid = 0;
    for (let i = start; i < end; i++) {
      const message = reader.read(requests[i], this.#parse);
      if (message !== undefined) {
        out[i] = errorResponse(message);
        continue;
      }
      wire.appendRead(reader);
      c.slots[valid] = i;
      c.geolocations[valid] = reader.geolocation;
      c.addresses[valid] = reader.address;
      c.languages[valid] = reader.acceptLanguage;
      valid++;
    }
    c.valid = valid;
  }

  /** Waits for chunk `c`, started with `locateStart`, and shapes its answers into `out`. */
  #joinChunk(c: ChunkRequests, out: ProcessResponse[]): void {
    if (this.#answers.length < c.valid * ANSWER) this.#answers = new Float64Array(c.valid * ANSWER);
    this.#native.locateJoin(c.ticket, this.#answers);
    c.shape(out, this.#answers, 0, this.#addressOf);
  }

  /** {@link Engine.process} for a call made while another holds the reader and the wire. */
  #processAside(request: unknown): ProcessResponse {
    const parsed = parseRequest(request, this.#parse);
    return parsed.ok ? this.#solveOne(parsed.request) : errorResponse(parsed.message);
  }

  /**
   * Answers already-validated requests ({@link parseRequest}'s results) in one call into the
   * core, on up to `batchThreads` threads as {@link Engine.processBatch}: for a caller that
   * validated the requests already and keeps them.
   */
  processParsed(requests: readonly LocateRequest[]): ProcessResponse[] {
    this.#assertOpen();
    const wire = this.#busy ? new WireBuffers() : this.#wire;
    const out: ProcessResponse[] = new Array(requests.length);
    if (requests.length === 0) return out;
    wire.encode(requests);
    wire.reserveAnswers(requests.length);
    this.#locate(wire.buffer, wire.length, wire.ipsArgument(), this.#batchThreads);
    for (let k = 0; k < requests.length; k++) {
      const r = requests[k] as LocateRequest;
      out[k] = shapeAnswer(
        r.geolocation,
        r.address,
        r.acceptLanguage,
        wire.buffer,
        wire.answerAt(k),
        this.#addressOf,
      );
    }
    return out;
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
    this.#assertOpen();
    const parsed = parseRequest(request, this.#parse);
    if (!parsed.ok) return errorResponse(parsed.message);
    return this.locateParsed(parsed.request);
  }

  /** {@link Engine.locate} for an already-validated request (the server validates once). */
  async locateParsed(request: LocateRequest): Promise<ProcessResponse> {
    this.#assertOpen();
    const local = () => {
      // The remote layer may call this after an await, when the engine may have closed.
      this.#assertOpen();
      return this.#solveOne(request);
    };
    return this.#remote === undefined ? local() : this.#remote.answer(request, local);
  }

  /** The remote layer's mode, breaker, regions and cache; undefined without `remote`. */
  remoteStatus(): RemoteStatus | undefined {
    return this.#remote?.status();
  }

  /** Answers one validated request object. */
  #solveOne(request: LocateRequest): ProcessResponse {
    // Outside a call of process or processBatch, as the remote layer's may be: the wire
    // is free unless a getter of theirs brought us here.
    const wire = this.#busy ? new WireBuffers() : this.#wire;
    wire.encodeOne(request);
    return this.#answerOne(wire, request.geolocation, request.address, request.acceptLanguage);
  }

  /** Locates the one request encoded in `wire` and shapes its response. */
  #answerOne(
    wire: WireBuffers,
    geolocation: LocateRequest['geolocation'],
    address: LocateRequest['address'],
    acceptLanguage: string | undefined,
  ): ProcessResponse {
    wire.reserveAnswers(1);
    this.#locate(wire.buffer, wire.length, wire.ipsArgument());
    return shapeAnswer(geolocation, address, acceptLanguage, wire.buffer, wire.answerAt(0), this.#addressOf);
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
    this.#assertOpen();
    if (!this.#hasTimezones) return { status: 'error', message: 'UNKNOWN_ERROR' };
    // the file is read and the cell tree built on the first lookup (or by prepareTimezones):
    // they are for engines that answer timezones
    this.#zones ??= new ZoneLookup(this.#native);
    const zones = this.#zones;
    const names = zones.names;
    return answerTimezone(query, (lat, lon) => names[zones.indexAt(lat, lon)] ?? null);
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
    this.#assertOpen();
    if (!this.#hasPlaces) return { status: 'error', message: 'UNKNOWN_ERROR' };
    const native = this.#native;
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
    this.#assertOpen();
    if (!this.#hasSearch) return { status: 'error', message: 'UNKNOWN_ERROR' };
    return answerSearch(
      query,
      (p) => this.#native.searchPlaces(p.q, p.limit, p.countries, p.viewbox),
      this.#native.hasAddresses() ? (p) => this.#streetHits(p, query.acceptLanguage) : undefined,
    );
  }

  /**
   * Reads and validates the search file now (about 0.1 s of this thread) and starts building the
   * forward-search word index on a background thread, so that the first {@link Engine.search}
   * does not wait for them (a search before the index is ready waits only for the rest). The
   * server calls this at start; a one-shot script need not. Throws when the file is not sound.
   */
  prepareSearch(): void {
    this.#assertOpen();
    if (this.#hasSearch) this.#native.prepareSearch();
  }

  /**
   * Reads and validates the timezone file and builds its cell tree now (6.4 MB; about 0.3 s of
   * this thread in all) instead of on the first {@link Engine.timezone}, which would otherwise
   * wait for them. The server calls this at start; a one-shot script need not. Throws when the
   * file is not sound; does nothing without timezone data.
   */
  prepareTimezones(): void {
    this.#assertOpen();
    if (this.#hasTimezones) this.#zones ??= new ZoneLookup(this.#native);
  }

  /**
   * Reads and validates the places, country polygons and address file and builds the countries'
   * cell tree now instead of on the first {@link Engine.reverse} (about 0.1 s of this thread
   * without addresses). The server calls
   * this at start; a one-shot script need not. Throws when a file is not sound; does nothing
   * without places.
   */
  prepareReverse(): void {
    this.#assertOpen();
    if (this.#hasPlaces) this.#native.prepareReverse();
  }

  /**
   * House-number hits of a search as whole Address objects: each house is reverse geocoded at
   * zoom 18, which names the house itself (it is the nearest address to its own point) and adds
   * the city, state and country that the address file lacks.
   */
  #streetHits(p: ParsedSearch, acceptLanguage: string | undefined): ScoredAddress[] {
    const hits: ScoredAddress[] = [];
    for (const m of searchAddresses(this.#native, p.q, p.limit)) {
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
   * addresses, best first, each with a score in [0, 1] (see src/addresses.ts). Empty
   * without an address file. Synchronous.
   */
  searchAddresses(q: string, limit = 10): AddressMatch[] {
    this.#assertOpen();
    if (typeof q !== 'string' || !this.#native.hasAddresses()) return [];
    return searchAddresses(this.#native, q, Number.isFinite(limit) ? limit : 10);
  }

  /** The address of a located point, from the same places as {@link Engine.reverse}. */
  readonly #addressOf: AddressLookup = (lat, lon, zoom, acceptLanguage) => {
    if (!this.#hasPlaces) return undefined;
    const r = this.reverse({ lat, lon, zoom, acceptLanguage });
    if (r.status !== 'ok') return undefined;
    const { lat: _lat, lon: _lon, display_name, ...details } = r.address;
    return { text: display_name, details };
  };

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
    this.#assertOpen();
    const rejected: LearnSummary['rejected'] = [];
    const submissions: NativeSubmission[] = [];
    const now = Date.now();
    requests.forEach((value, index) => {
      const parsed = parseRequest(withoutOptedOut(value), this.#parse);
      if (!parsed.ok) rejected.push({ index, message: parsed.message });
      else if (parsed.request.gps.length === 0) rejected.push({ index, message: 'no gps fix' });
      else submissions.push(toSubmission(parsed.request, now));
    });
    const counts = await this.learnSubmissions(submissions);
    return { accepted: submissions.length, rejected, ...counts };
  }

  /** Learns submissions already validated and encoded (the server's batches); see {@link Engine.learn}. */
  async learnSubmissions(submissions: NativeSubmission[]): Promise<LearnCounts> {
    this.#assertOpen();
    return this.#track(this.#native.learn(submissions));
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
    this.#assertOpen();
    return this.#track(this.#native.compact());
  }

  /**
   * Switches to the newest database generation in `manifest.json` (after an external
   * `whereabouts import`, `learn` or sync) and reads what other processes learned; requests in
   * flight finish on the old generation. Cheap when nothing changed.
   */
  reload(): void {
    this.#assertOpen();
    this.#native.reload();
  }

  /** Counts of the open database and which optional data is loaded. */
  stats(): EngineStats {
    this.#assertOpen();
    const s = this.#native.stats();
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
    if (!this.#closed) {
      this.#closed = true;
      this.#remote?.close();
      this.#sync?.stop();
      if (this.#inflight === 0) this.#native.close();
    }
  }

  /**
   * Counts a native call that runs on a worker thread. Such a call keeps the native engine
   * borrowed until it settles, so `close` during one would fail: the release waits for the last.
   */
  async #track<T>(call: Promise<T>): Promise<T> {
    this.#inflight++;
    try {
      return await call;
    } finally {
      if (--this.#inflight === 0 && this.#closed) this.#native.close();
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error('the engine is closed');
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
