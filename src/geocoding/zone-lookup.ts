/**
 * Timezone lookups answered in JavaScript where the core's grid allows: a call into the core
 * costs more than the lookup itself, and most of the sphere (open sea, the inside of large
 * zones) has one zone over a whole grid cell. Other points go to the core.
 */
import type { NativeEngine } from '../native.js';

/** geo-tz's query box (crates/whereabouts-core/src/polygons.rs); points outside it go to the core. */
const LAT_EDGE = 89.9999;
const LON_EDGE = 179.9999;
/** A grid cell whose points do not all share one zone. */
const MIXED = 0xffff;
/** Closer than this (in cells) to a cell edge, a point takes the core's side of the edge. */
const EDGE_GUARD = 1e-6;

/** The zone at a point as an index into `timezoneNames()`, -1 for an invalid coordinate. */
export class ZoneLookup {
  readonly #native: Pick<NativeEngine, 'timezoneIndexAt'>;
  readonly #grid: Uint16Array;
  readonly #n: number;

  constructor(native: Pick<NativeEngine, 'timezoneIndexAt' | 'timezoneGrid'>) {
    this.#native = native;
    this.#grid = native.timezoneGrid();
    this.#n = Math.round(Math.sqrt(this.#grid.length));
  }

  indexAt(lat: number, lon: number): number {
    // false for NaN too: such points, the poles' rims and the antimeridian go to the core
    if (lat > -LAT_EDGE && lat < LAT_EDGE && lon > -LON_EDGE && lon < LON_EDGE) {
      const n = this.#n;
      const fx = ((lon + LON_EDGE) / (2 * LON_EDGE)) * n;
      const fy = ((LAT_EDGE - lat) / (2 * LAT_EDGE)) * n;
      const x = Math.floor(fx);
      const y = Math.floor(fy);
      if (fx - x > EDGE_GUARD && x + 1 - fx > EDGE_GUARD && fy - y > EDGE_GUARD && y + 1 - fy > EDGE_GUARD) {
        const zone = this.#grid[y * n + x] as number;
        if (zone !== MIXED) return zone;
      }
    }
    return this.#native.timezoneIndexAt(lat, lon);
  }
}
