/**
 * The native binding (crates/whereabouts-node): loading the addon, and the names the rest of
 * the library uses for the types napi-rs generates from the Rust side (`native/index.d.ts`,
 * written by `npm run build:native`; the documentation of each call is there, from the Rust
 * doc comments). The batch wire format it reads is in `wire.ts`, its numbers in `contracts.ts`.
 */
import { createRequire } from 'node:module';
import type * as Generated from '../../native/index.js';

/** The addon's exports, as napi-rs declares them. */
export type NativeBinding = typeof Generated;
/** The native engine handle (`NativeEngine` of crates/whereabouts-node/src/lib.rs). */
export type NativeEngine = Generated.NativeEngine;
/** Options of the native open call. */
export type NativeOpenOptions = Generated.OpenOptions;
/** The outcome of a compaction. */
export type NativeCompactSummary = Generated.CompactSummary;
/** A place as {@link NativeEngine.place} answers it. */
export type NativePlace = Generated.ReversePlace;
/** A place found by {@link NativeEngine.searchPlaces}, with its score in [0, 1]. */
export type NativeSearchPlace = Generated.SearchPlace;
/** An address from the address file (nearest or searched). */
export type NativeAddress = Generated.NativeAddress;
/** The nearest named road and the nearest point on it. */
export type NativeRoad = Generated.NativeRoad;
/** Counts reported by an open database. */
export type NativeStats = Generated.DbStats;
/** A query of {@link NativeEngine.changesPage}. */
export type NativeChangesQuery = Generated.ChangesQuery;
/** One page of changed stations: a gzip CSV in an import format (docs/sync.md). */
export type NativeChangesPage = Generated.ChangesPage;
/** whereabouts-core's `CellTree` of the timezones, walked by src/native/zone-lookup.ts. */
export type TimezoneCells = Generated.TimezoneCells;
/** Progress of a running import, as reported by the core. */
export type NativeImportProgress = Generated.FileProgress;
/** Options of a file learning run (`learnFiles`). */
export type NativeLearnOptions = Generated.LearnFileOptions;
/** What a file learning run reports. */
export type NativeLearnSummary = Generated.LearnSummary;
/** See {@link NativeEngine.locateFunction}. */
export type LocateFunction = ReturnType<NativeEngine['locateFunction']>;
/** The accepted rows of an observation file as columns, for `whereabouts eval`. */
export type NativeObservationColumns = Generated.ObservationColumns;
/** A vector tileset and its raster renderer (crates/whereabouts-node/src/maps.rs). */
export type NativeBasemapHandle = Generated.NativeBasemap;
/** What {@link NativeBasemapHandle.info} tells of a tileset. */
export type NativeBasemapInfo = ReturnType<NativeBasemapHandle['info']>;

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
