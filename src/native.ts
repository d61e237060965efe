/**
 * The native binding (crates/whereabouts-node) and the batch wire format it shares with
 * `crates/whereabouts-node/src/wire.rs`: requests go down as one flat Float64Array, answers
 * come back as six numbers each. NaN marks an absent optional value.
 */
import { createRequire } from 'node:module';
import type { LocateRequest } from './request.js';

/** Options of the native open call. */
export interface NativeOpenOptions {
  db: string;
  land?: string;
  ipDatabases?: string[];
  countries?: string;
  now?: number;
  timezones?: string;
  places?: string;
  countryPolygons?: string;
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
}

/** The native engine handle. */
export interface NativeEngine {
  /** Writes {@link ANSWER} numbers per request of `input` into `output`; returns the request count. */
  locateInto(input: Float64Array, ips: string[], output: Float64Array): number;
  /** Every zone name {@link NativeEngine.timezoneIndexAt} answers, by index. */
  timezoneNames(): string[];
  /** The timezone at a point as an index into `timezoneNames()` (nautical Etc/GMT zones at sea); -1 for an invalid coordinate. */
  timezoneIndexAt(lat: number, lon: number): number;
  /**
   * The country and place a reverse lookup at `zoom` answers, as three numbers in `out`: the
   * country code's ASCII bytes as `256 * first + second`, the place id or -1 (no place of that
   * country within 50 km), its distance in metres. False for a bad coordinate or no country
   * (at sea beyond 5 km of every coast; without country polygons, 50 km or more from every
   * place). See src/geocoding/reverse-lookup.ts.
   */
  reverseInto(lat: number, lon: number, zoom: number, out: Float64Array): boolean;
  /** The place with an id from `reverseInto` or `nearestPlaceId`. */
  place(id: number): NativePlace;
  /** The id of the nearest place within 50 km by distance alone, or -1 (the baseline of bench/reverse.ts). */
  nearestPlaceId(lat: number, lon: number): number;
  stats(): NativeStats;
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

interface NativeBinding {
  NativeEngine: { open(options: NativeOpenOptions): NativeEngine };
  importFiles?: (
    db: string,
    files: string[],
    options: Record<string, unknown>,
    progress: (p: NativeImportProgress) => void,
  ) => Promise<unknown>;
}

let binding: NativeBinding | undefined;

/** Loads the addon built by `npm run build:native` (napi-rs) on first use. */
export function native(): NativeBinding {
  if (!binding) {
    const require = createRequire(import.meta.url);
    try {
      binding = require('../native/index.cjs') as NativeBinding;
    } catch (err) {
      throw new Error(
        `the whereabouts native addon is not built (${(err as Error).message.split('\n')[0]}); run \`npm run build:native\``,
      );
    }
  }
  return binding;
}

const HEADER = 7;
const CELL = 9;
const WIFI = 3;
/** Numbers per answer. */
export const ANSWER = 6;

/** Answer field `fallback` codes of the core. */
export const FALLBACK_NAMES = [undefined, 'lacf', 'scf', 'ipf'] as const;

function sizeOf(r: LocateRequest): number {
  return HEADER + r.cells.length * CELL + r.wifi.length * WIFI;
}

/**
 * Reusable request and answer buffers: one engine call then allocates nothing but the
 * two views it hands to the core.
 */
export class WireBuffers {
  input = new Float64Array(1024);
  output = new Float64Array(64 * ANSWER);

  /** Encodes validated requests; their IP addresses go in `ips`, referenced by index. */
  encode(requests: readonly LocateRequest[]): { input: Float64Array; output: Float64Array; ips: string[] } {
    let size = 0;
    for (const r of requests) size += sizeOf(r);
    if (this.input.length < size) this.input = new Float64Array(Math.max(size, this.input.length * 2));
    const answers = requests.length * ANSWER;
    if (this.output.length < answers)
      this.output = new Float64Array(Math.max(answers, this.output.length * 2));
    const input = this.input;
    const ips: string[] = [];
    let at = 0;
    for (const r of requests) {
      let ipIndex = -1;
      if (r.fallbacks.ipf === 1 && r.ip !== undefined) {
        ipIndex = ips.length;
        ips.push(r.ip);
      }
      input[at++] = r.cells.length;
      input[at++] = r.wifi.length;
      input[at++] = r.fallbacks.lacf;
      input[at++] = r.fallbacks.scf;
      input[at++] = r.fallbacks.ipf;
      input[at++] = r.bt;
      input[at++] = ipIndex;
      for (const c of r.cells) {
        input[at++] = c.radio;
        input[at++] = c.mcc;
        input[at++] = c.mnc;
        input[at++] = c.lac;
        input[at++] = c.cid;
        input[at++] = c.signal ?? Number.NaN;
        input[at++] = c.asu ?? Number.NaN;
        input[at++] = c.ta ?? Number.NaN;
        input[at++] = c.psc ?? Number.NaN;
      }
      for (const w of r.wifi) {
        input[at++] = w.bssid;
        input[at++] = w.signal ?? Number.NaN;
        input[at++] = w.frequency ?? Number.NaN;
      }
    }
    return { input: input.subarray(0, size), output: this.output.subarray(0, answers), ips };
  }
}
