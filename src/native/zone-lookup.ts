/**
 * Timezone lookups answered in JavaScript where the core's cell tree allows: a call into the
 * core costs more than the lookup itself, and most of the sphere (open sea, the inside of
 * zones) has one zone over a whole cell of it. Other points go to the core.
 *
 * The cell tree (whereabouts-core's `CellTree`, polygons/cell_tree.rs: the layout and its rules) is a
 * grid of the polygon tree's quads at `topDepth` whose cells crossed by a border are split
 * into four, and so on down to `maxDepth`. A point finds its cell from its column and row at
 * `maxDepth`, whose bits from the top pick the child at each level.
 */
import type { NativeEngine } from './binding.js';

/** geo-tz's query box (crates/whereabouts-core/src/polygons.rs); points outside it go to the core. */
const LAT_EDGE = 89.9999;
const LON_EDGE = 179.9999;
/**
 * The depths of the cell tree: a grid of 512 x 512 cells of 0.70 x 0.35 degrees (1 MB), split
 * where borders cross down to cells of 0.044 x 0.022 degrees (6.4 MB in all, built in about
 * 0.2 s; 0.67 % of uniform points reach the core). Depth 14 (12.5 MB) sends 0.39 % to the core
 * but took longer to build for no speed that the bench could tell apart.
 */
const TOP_DEPTH = 9;
const MAX_DEPTH = 13;
/** Entry tags: the zone in the payload, outside every polygon (the nautical zone), split. */
const ZONE = 0;
const NAUTICAL = 1;
const SPLIT = 2;
/**
 * A guard of at least a millionth of a smallest cell: the tree's midpoints differ from this
 * file's arithmetic by far less. The core's guard (two lattice steps, 2e-6 degree, about 46
 * millionths of a depth-13 cell) is larger and the one that counts: with this one alone, the
 * test on cell sides finds points answered wrongly.
 */
const MIN_GUARD_CELLS = 1e-6;
/**
 * A coarse grid in front of the top grid: each of its cells covers 2^COARSE_BITS x
 * 2^COARSE_BITS top cells and holds their entry when they all hold the same zone (open sea, the
 * inside of large zones), else a split tag. 64 x 64 cells, 16 KB: it stays in cache where the
 * 1 MB top grid does not, so such points skip one cache miss.
 */
const COARSE_BITS = 3;

/** The zone at a point as an index into `timezoneNames()`, -1 for an invalid coordinate. */
export class ZoneLookup {
  readonly #native: Pick<NativeEngine, 'timezoneIndexAt'>;
  /** Every zone name, by the index {@link ZoneLookup.indexAt} answers (`timezoneNames()`). */
  readonly names: readonly string[];
  readonly #entries: Int32Array;
  /** The coarse grid ({@link COARSE_BITS}). */
  readonly #coarse: Int32Array;
  /** Cells a row of the coarse grid. */
  readonly #coarseN: number;
  /** A point's coarse cell is its column and row at the smallest depth shifted by this. */
  readonly #coarseShift: number;
  /** Cells a row of the grid at the top. */
  readonly #n: number;
  /** Cells a row at the smallest cells' depth. */
  readonly #cells: number;
  /** The top grid's cell of a point is its column and row at the smallest depth shifted by this. */
  readonly #topShift: number;
  /** The guard in smallest cells, across and along. */
  readonly #guardX: number;
  readonly #guardY: number;
  /** Index of the first nautical zone (`Etc/GMT+12`) in `timezoneNames()`. */
  readonly #nauticalBase: number;

  constructor(
    native: Pick<NativeEngine, 'timezoneIndexAt' | 'timezoneCells' | 'timezoneNames'>,
    depths: { top: number; max: number } = { top: TOP_DEPTH, max: MAX_DEPTH },
  ) {
    this.#native = native;
    const tree = native.timezoneCells(depths.top, depths.max);
    // payloads stay below 2^30: as signed 32-bit integers the entries stay small integers for V8
    this.#entries = new Int32Array(tree.entries.buffer, tree.entries.byteOffset, tree.entries.length);
    this.#n = 2 ** tree.topDepth;
    this.#cells = 2 ** tree.maxDepth;
    this.#topShift = tree.maxDepth - tree.topDepth;
    this.#guardX = Math.max(MIN_GUARD_CELLS, (tree.guard / (2 * LON_EDGE)) * this.#cells);
    this.#guardY = Math.max(MIN_GUARD_CELLS, (tree.guard / (2 * LAT_EDGE)) * this.#cells);
    this.names = native.timezoneNames();
    const coarseBits = Math.min(COARSE_BITS, tree.topDepth);
    this.#coarseN = this.#n >> coarseBits;
    this.#coarseShift = this.#topShift + coarseBits;
    this.#coarse = coarseGrid(this.#entries, this.#n, this.#coarseN);
    this.#nauticalBase = this.names.length - 25;
  }

  /** Bytes of the cell tree. */
  get bytes(): number {
    return this.#entries.byteLength;
  }

  indexAt(lat: number, lon: number): number {
    // false for NaN too: such points, the poles' rims and the antimeridian go to the core
    if (lat > -LAT_EDGE && lat < LAT_EDGE && lon > -LON_EDGE && lon < LON_EDGE) {
      const cells = this.#cells;
      const fx = ((lon + LON_EDGE) / (2 * LON_EDGE)) * cells;
      const fy = ((LAT_EDGE - lat) / (2 * LAT_EDGE)) * cells;
      const x = Math.floor(fx);
      const y = Math.floor(fy);
      const gx = this.#guardX;
      const gy = this.#guardY;
      // a point near the side of its smallest cell is near no side of a larger one either
      if (fx - x > gx && x + 1 - fx > gx && fy - y > gy && y + 1 - fy > gy) {
        const entries = this.#entries;
        let shift = this.#topShift;
        const cs = this.#coarseShift;
        let e = this.#coarse[(y >> cs) * this.#coarseN + (x >> cs)] as number;
        if ((e & 3) === SPLIT) {
          e = entries[(y >> shift) * this.#n + (x >> shift)] as number;
          while ((e & 3) === SPLIT) {
            shift--;
            e = entries[(e >> 2) + (((y >> shift) & 1) << 1) + ((x >> shift) & 1)] as number;
          }
        }
        const tag = e & 3;
        if (tag === ZONE) return e >> 2;
        // the core's nautical bands (timezone.rs, nautical_zone), with its arithmetic
        if (tag === NAUTICAL) return this.#nauticalBase + Math.floor((lon + 7.5) / 15) + 12;
      }
    }
    return this.#native.timezoneIndexAt(lat, lon);
  }
}

/** The coarse grid over a top grid of `n` x `n` entries: a shared entry, or {@link SPLIT}. */
function coarseGrid(entries: Int32Array, n: number, coarseN: number): Int32Array {
  const coarse = new Int32Array(coarseN * coarseN).fill(SPLIT);
  const side = n / coarseN;
  for (let cy = 0; cy < coarseN; cy++) {
    for (let cx = 0; cx < coarseN; cx++) {
      const first = entries[cy * side * n + cx * side] as number;
      if ((first & 3) === SPLIT) continue;
      let same = true;
      for (let y = cy * side; same && y < (cy + 1) * side; y++) {
        for (let x = cx * side; x < (cx + 1) * side; x++) {
          if (entries[y * n + x] !== first) {
            same = false;
            break;
          }
        }
      }
      if (same) coarse[cy * coarseN + cx] = first;
    }
  }
  return coarse;
}
