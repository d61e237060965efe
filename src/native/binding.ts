/**
 * The native binding (crates/whereabouts-node): loading the addon and the types of what it
 * exports. The batch wire format it reads is in `wire.ts`.
 */
import { createRequire } from 'node:module';
import type { LearnCounts, NativeSubmission } from '../learning/submissions.js';

/** Options of the native open call. */
export interface NativeOpenOptions {
  db: string;
  land?: string;
  ipDatabases?: string[];
  countries?: string;
  now?: number;
  timezones?: string;
  places?: string;
  /** Keep learned stations in DIR/learned.sqlite (needs a writable database directory). */
  learned?: boolean;
  /** Compaction thresholds; 0 disables the automatic compaction. */
  compactStations?: number;
  compactAgeSeconds?: number;
  /** Places for forward geocoding (data/search.bin). */
  search?: string;
  /** Street-level addresses and roads (an addresses.bin). */
  addresses?: string;
  /** Country polygons for reverse geocoding (data/countries.bin). */
  countryPolygons?: string;
}

/** The outcome of a compaction. */
export interface NativeCompactSummary {
  /** The generation read afterwards (unchanged when nothing waited). */
  generation: number;
  /** Overlay entries folded into it. */
  folded: number;
  cells: number;
  wifi: number;
  seconds: number;
}

/** A place as {@link NativeEngine.place} answers it; absent admin names may come as null. */
export interface NativePlace {
  lat: number;
  lon: number;
  name: string;
  state?: string | null;
  county?: string | null;
  /** ISO 3166-1 alpha-2, upper case. */
  countryCode: string;
  population: number;
}

/**
 * A place found by {@link NativeEngine.searchPlaces}; `score` in [0, 1] (see crates/whereabouts-core/src/search).
 * `level` is `state` or `country` when the query named one alone: `name` is then its name and the point its seat's.
 */
export type NativeSearchPlace = Omit<NativePlace, 'distanceM'> & {
  score: number;
  level: 'place' | 'state' | 'country';
};
/** An address from the address file (nearest or searched); absent parts may come as null. */
export interface NativeAddress {
  lat: number;
  lon: number;
  houseNumber: string;
  road: string;
  postcode?: string | null;
  city?: string | null;
  suburb?: string | null;
  /** Metres from the query point (0 for search results). */
  distanceM: number;
  /** Search results only: 0 to 1. */
  score?: number | null;
}

/** The nearest named road and the nearest point on it. */
export interface NativeRoad {
  name: string;
  lat: number;
  lon: number;
  distanceM: number;
}

/** Counts reported by an open database. */
export interface NativeStats {
  cells: number;
  wifi: number;
  areas: number;
  networks: number;
  shards: number;
  bytes: number;
  generation: number;
  simulated: boolean;
  hasLand: boolean;
  hasIp: boolean;
  overlayCells: number;
  overlayWifi: number;
  overlayBlocked: number;
  compacting: boolean;
  /** Unix seconds of the last compaction of this engine; absent before the first. */
  lastCompaction?: number | null;
  /** The last compaction's error, if it failed. */
  lastCompactionError?: string | null;
}

/** A query of {@link NativeEngine.changesPage}: stations with `since <= updated < until` (unix seconds). */
export interface NativeChangesQuery {
  since: number;
  until: number;
  /** The previous page's `next`. */
  cursor?: string;
  maxStations: number;
  maxScanned: number;
}

/** One page of changed stations: a gzip CSV in an import format (docs/sync.md). */
export interface NativeChangesPage {
  /** Empty when `stations` is 0. */
  body: Buffer;
  /** `cells`: the OpenCelliD export header; `wifi`: the WiFi station header; null when empty. */
  kind?: 'cells' | 'wifi' | null;
  stations: number;
  scanned: number;
  /** Where the next page starts; absent when the scan reached the end. */
  next?: string | null;
}

/**
 * whereabouts-core's `CellTree` of the timezones (crates/whereabouts-core/src/polygons/cell_tree.rs:
 * the layout and the rules), walked by src/geocoding/zone-lookup.ts.
 */
export interface TimezoneCells {
  /** Depth of the grid `entries` starts with (`2 ** topDepth` cells a row). */
  topDepth: number;
  /** Depth of the smallest cells. */
  maxDepth: number;
  /** Degrees from a cell's side within which a point must ask the core. */
  guard: number;
  /** The grid, then blocks of four children: low 2 bits a tag (0 zone, 1 nautical, 2 split, 3 ask the core), the rest a zone or entry index. */
  entries: Uint32Array;
}

/** See {@link NativeEngine.locateFunction}. */
export type LocateFunction = (
  buffer: Float64Array,
  length: number,
  ips: string[] | undefined,
  threads?: number,
) => number;

/** The native engine handle. */
export interface NativeEngine {
  /**
   * The locate call as a plain function over this engine's database (a call skips the class
   * method's receiver checks and argument conversion, about 0.5 us): it locates the requests
   * encoded in `buffer[0 .. length)` and writes {@link ANSWER} numbers per request into
   * `buffer` from `length` on, and returns the request count. `ips`: the IP addresses the
   * requests' headers index, undefined when there are none. `threads`: how many threads may
   * share a batch (0: the machine's parallelism; undefined: 1), each taking at least 256
   * requests, so smaller batches stay on the calling thread. After `close` it throws.
   */
  locateFunction(): LocateFunction;
  /**
   * Starts locating the requests encoded in `buffer[0 .. length)` on up to `threads - 1` of
   * the process's batch threads (0: the machine's parallelism) and returns at once with a
   * ticket for {@link NativeEngine.locateJoin}. The requests are copied: the caller may
   * encode its next batch into the same buffer meanwhile. Throws for a malformed batch.
   */
  locateStart(buffer: Float64Array, length: number, ips: string[] | undefined, threads: number): number;
  /**
   * Waits for the batch of a `locateStart` ticket, solving what no batch thread has taken yet
   * on the calling thread, and writes {@link ANSWER} numbers per request from `answers[0]`
   * on; returns the request count. Throws for an unknown ticket.
   */
  locateJoin(ticket: number, answers: Float64Array): number;
  /** Every zone name {@link NativeEngine.timezoneIndexAt} answers, by index. */
  timezoneNames(): string[];
  /** The zones that need no geometry, as a grid at `topDepth` split down to `maxDepth`: see {@link TimezoneCells}. Built on each call. */
  timezoneCells(topDepth: number, maxDepth: number): TimezoneCells;
  /** The timezone at a point as an index into `timezoneNames()` (nautical Etc/GMT zones at sea); -1 for an invalid coordinate. */
  timezoneIndexAt(lat: number, lon: number): number;
  /**
   * The country and place a reverse lookup at `zoom` answers, as one number (the reverse key):
   * `code * 2^24 + placeId + 1`, with `code` the country code's ASCII bytes as
   * `256 * first + second` and `placeId + 1` zero when that country has no place within 50 km;
   * -1 for a bad coordinate or no country (at sea beyond 5 km of every coast; without country
   * polygons, 50 km or more from every place). See src/geocoding/reverse-lookup.ts.
   */
  reverseKey(lat: number, lon: number, zoom: number): number;
  /**
   * {@link NativeEngine.reverseKey} as a plain function over this engine's places: a call
   * skips the class method's receiver checks (about 0.3 us). It keeps the data it needs alive
   * after `close`. Throws when no places were opened.
   */
  reverseKeyFunction(): (lat: number, lon: number, zoom: number) => number;
  /** The place with an id from `reverseKey` or `nearestPlaceId`. */
  place(id: number): NativePlace;
  /** The id of the nearest place within 50 km by distance alone, or -1 (the baseline of bench/reverse.ts). */
  nearestPlaceId(lat: number, lon: number): number;
  /** Places matching free text, best first; `countries` upper-case alpha-2 codes restrict, `viewbox` [left, right, top, bottom] prefers. */
  searchPlaces(
    query: string,
    limit: number,
    countries: string[],
    viewbox: number[] | null,
  ): NativeSearchPlace[];
  /** Whether an address file is loaded. */
  hasAddresses(): boolean;
  addressStats(): { addresses: number; roads: number; bytes: number };
  /** The nearest address within `radiusM` metres; null if none (or a bad coordinate). */
  nearestAddress(lat: number, lon: number, radiusM: number): NativeAddress | null;
  /** The nearest named road within `radiusM` metres; null if none (or a bad coordinate). */
  nearestRoad(lat: number, lon: number, radiusM: number): NativeRoad | null;
  /** Addresses matching a number, street and city (free text), best first, at most `limit`. */
  searchAddresses(number: string, street: string, city: string, limit: number): NativeAddress[];
  stats(): NativeStats;
  /** Learns a batch of submissions into the overlay; resolves after its commit. */
  learn(submissions: NativeSubmission[]): Promise<LearnCounts>;
  /** Folds the overlay into a new generation off the event loop. */
  compact(): Promise<NativeCompactSummary>;
  /** Switches to the newest generation; true when it changed. */
  reload(): boolean;
  /** One page of changed stations, built on a worker thread; rejects for a bad cursor. */
  changesPage(query: NativeChangesQuery): Promise<NativeChangesPage>;
  /** Reads and validates the search file (throws when it is not sound), then starts building the word index on a background thread. */
  prepareSearch(): void;
  /** Reads and validates the places, country polygons and address file (throws when one is not sound) and builds the countries' cell tree. */
  prepareReverse(): void;
  close(): void;
}

/** Progress of a running import, as reported by the core. */
export interface NativeImportProgress {
  file: string;
  bytesDone: number;
  bytesTotal: number;
  rows: number;
  phase: string;
}

/** What {@link NativeBasemapHandle.info} tells of a tileset. */
export interface NativeBasemapInfo {
  minzoom: number;
  maxzoom: number;
  tiles: number;
  /** The MBTiles metadata table as a JSON object of strings. */
  metadata: string;
  fontstacks: string[];
}

/** A vector tileset and its raster renderer (crates/whereabouts-node/src/maps.rs). */
export interface NativeBasemapHandle {
  info(): NativeBasemapInfo;
  tile(z: number, x: number, y: number): Buffer | null;
  /** Any zoom: past the deepest, cut from the ancestor on a worker thread. */
  vectorTile(z: number, x: number, y: number): Promise<Buffer | null>;
  glyphs(fontstack: string, range: string): Buffer | null;
  /** `iconColor`: rasterize the basemap's icons in this colour as the style's sprite. */
  setStyle(name: string, json: string, iconColor?: string): void;
  /** The sprite sheet of a style at pixel ratio 1 or 2; null when the style has none. */
  sprite(name: string, ratio: number): { json: string; png: Buffer } | null;
  /** A PNG of 256 x ratio pixels a side, rendered on a worker thread; null for no such tile. */
  render(name: string, z: number, x: number, y: number, ratio: number): Promise<Buffer | null>;
}

interface NativeBinding {
  NativeEngine: { open(options: NativeOpenOptions): NativeEngine };
  NativeBasemap: { open(path: string): NativeBasemapHandle };
  importFiles?: (
    db: string,
    files: string[],
    options: Record<string, unknown>,
    progress: (p: NativeImportProgress) => void,
  ) => Promise<unknown>;
  importAddresses?: (
    out: string,
    files: string[],
    options: { replace?: boolean },
    progress: (p: NativeImportProgress) => void,
  ) => Promise<unknown>;
  /** `OpenAddressesCsv` or `OsmPbf` for an address file, null for any other file. */
  addressFileKind?: (path: string) => string | null;
  /** Writes a database of store format 5, 6 or 7 again in the current one (`whereabouts upgrade`). */
  upgradeDatabase?: (db: string, progress: (p: NativeImportProgress) => void) => Promise<unknown>;
}

let binding: NativeBinding | undefined;

/** Loads the addon built by `npm run build:native` (napi-rs) on first use. */
export function native(): NativeBinding {
  if (!binding) {
    const require = createRequire(import.meta.url);
    try {
      binding = require('../../native/index.cjs') as NativeBinding;
    } catch (err) {
      throw new Error(
        `the whereabouts native addon is not built (${(err as Error).message.split('\n')[0]}); run \`npm run build:native\``,
      );
    }
  }
  return binding;
}
