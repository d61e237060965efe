/**
 * The basemap of the map routes: an MBTiles file of vector tiles (data/basemap.mbtiles by
 * default) opened and checked by the native core, with raster tiles rendered off the event loop,
 * kept in a bounded in-memory cache, and rendered once when several requests ask for the same
 * tile at the same time (single flight). See docs/maps.md.
 */
import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { packageRoot } from '../data-files.js';
import { type NativeBasemapHandle, native } from '../native/binding.js';

/** The embedded world basemap (scripts/build-basemap.mjs). */
export const basemapFile = join(packageRoot, 'data', 'basemap.mbtiles');

/** Default size of the cache of made tiles (raster, and vector past the deepest zoom), in bytes. */
export const DEFAULT_RASTER_CACHE_BYTES = 64 * 1024 * 1024;

/** Options of {@link Basemap.open}. */
export interface BasemapOptions {
  /** Bytes of made tiles kept in memory; 0 keeps none. Default {@link DEFAULT_RASTER_CACHE_BYTES}. */
  rasterCacheBytes?: number;
  /**
   * A directory where rendered raster tiles are also kept, across restarts and shared by the
   * workers of a server: under a folder named by a hash of the tileset and each style, so a
   * changed style or tileset never serves an old picture. Not bounded: the operator clears it.
   */
  rasterCacheDir?: string;
}

/** A tileset and its raster renderer. */
export class Basemap {
  readonly minzoom: number;
  readonly maxzoom: number;
  readonly tileCount: number;
  readonly metadata: Record<string, string>;
  readonly fontstacks: string[];
  private readonly cache = new Map<string, Buffer>();
  private cachedBytes = 0;
  private readonly inFlight = new Map<string, Promise<Buffer | null>>();
  private readonly cacheLimit: number;
  private readonly sprites = new Map<string, { json: string; png: Buffer } | null>();
  private readonly diskDir: string | undefined;
  /** Per style name, the folder of its tiles under {@link diskDir}. */
  private readonly diskStyles = new Map<string, string>();
  private readonly styles = new Set<string>();
  /** Tiles made (cache misses that were not joined to one in flight): renders and overzooms. */
  renders = 0;

  private constructor(
    private readonly handle: NativeBasemapHandle,
    readonly path: string,
    options: BasemapOptions,
  ) {
    const info = handle.info();
    this.minzoom = info.minzoom;
    this.maxzoom = info.maxzoom;
    this.tileCount = info.tiles;
    this.metadata = JSON.parse(info.metadata) as Record<string, string>;
    this.fontstacks = info.fontstacks;
    this.cacheLimit = options.rasterCacheBytes ?? DEFAULT_RASTER_CACHE_BYTES;
    this.diskDir = options.rasterCacheDir;
  }

  /**
   * Opens an MBTiles file of vector tiles; throws `Error` naming the file and the reason when
   * it is missing, not SQLite, not vector tiles, or its tiles do not decode.
   */
  static open(path: string = basemapFile, options: BasemapOptions = {}): Basemap {
    return new Basemap(native().NativeBasemap.open(path), path, options);
  }

  /** The attribution of the tileset's metadata. */
  get attribution(): string {
    return this.metadata.attribution ?? '';
  }

  /**
   * Vector tile z/x/y as gzip-compressed MVT (or empty); null when there is no such tile.
   * Stored tiles are answered as they are; deeper ones are cut from their ancestor at the
   * deepest zoom on a worker thread, cached like raster tiles.
   */
  vectorTile(z: number, x: number, y: number): Promise<Buffer | null> {
    if (z <= this.maxzoom) return Promise.resolve(this.handle.tile(z, x, y));
    return this.cached(`v/${z}/${x}/${y}`, () => this.handle.vectorTile(z, x, y));
  }

  /** A glyph range (`0-255`) of a fontstack, null when absent. */
  glyphs(fontstack: string, range: string): Buffer | null {
    return this.handle.glyphs(fontstack, range);
  }

  /**
   * Registers the style JSON that {@link rasterTile} draws under `name`, with the basemap's
   * icons rasterized in `iconColor` as its sprite (none without a colour).
   */
  setStyle(name: string, style: object, iconColor?: string): void {
    const json = JSON.stringify(style);
    this.handle.setStyle(name, json, iconColor);
    this.styles.add(name);
    if (this.diskDir !== undefined) {
      const stat = statSync(this.path);
      const version = createHash('sha256')
        .update(`${this.path}\0${stat.size}\0${stat.mtimeMs}\0${iconColor ?? ''}\0${json}`)
        .digest('hex')
        .slice(0, 16);
      this.diskStyles.set(name, join(this.diskDir, `${name}-${version}`));
    }
    this.sprites.delete(`${name}@1`);
    this.sprites.delete(`${name}@2`);
  }

  /** Whether a style is registered under `name`. */
  hasStyle(name: string): boolean {
    return this.styles.has(name);
  }

  /**
   * A static map of style `name` (its parameters parsed: see `maps/staticmap.ts`), drawn on a
   * worker thread at its centre, zoom and size; the PNG or JPEG bytes. Not cached.
   */
  staticMap(name: string, spec: object): Promise<Buffer> {
    return this.handle.staticMap(name, JSON.stringify(spec));
  }

  /** The sprite sheet of style `name` at pixel ratio 1 or 2 (index JSON and PNG); null when none. */
  sprite(name: string, ratio: 1 | 2): { json: string; png: Buffer } | null {
    const key = `${name}@${ratio}`;
    let sheet = this.sprites.get(key);
    if (sheet === undefined) {
      sheet = this.handle.sprite(name, ratio);
      this.sprites.set(key, sheet);
    }
    return sheet;
  }

  /**
   * Tile z/x/y of style `name` as a PNG of 256 x `ratio` pixels a side; null when there is no
   * such tile. Cached, and rendered once for concurrent requests of the same tile.
   */
  rasterTile(name: string, z: number, x: number, y: number, ratio: number): Promise<Buffer | null> {
    const render = () => this.handle.render(name, z, x, y, ratio);
    const folder = this.diskStyles.get(name);
    return this.cached(
      `r/${name}/${z}/${x}/${y}@${ratio}`,
      folder === undefined ? render : () => onDisk(join(folder, `${z}`, `${x}`, `${y}@${ratio}.png`), render),
    );
  }

  /** What `produce` makes for `key`, from the cache, or made once for concurrent callers. */
  private cached(key: string, produce: () => Promise<Buffer | null>): Promise<Buffer | null> {
    const hit = this.cache.get(key);
    if (hit) {
      // Refresh its place in the least-recently-used order.
      this.cache.delete(key);
      this.cache.set(key, hit);
      return Promise.resolve(hit);
    }
    const pending = this.inFlight.get(key);
    if (pending) return pending;
    this.renders++;
    const render = produce()
      .then((tile) => {
        if (tile) this.remember(key, tile);
        return tile;
      })
      .finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, render);
    return render;
  }

  private remember(key: string, png: Buffer): void {
    if (png.length > this.cacheLimit) return;
    this.cache.set(key, png);
    this.cachedBytes += png.length;
    for (const [k, v] of this.cache) {
      if (this.cachedBytes <= this.cacheLimit) break;
      this.cache.delete(k);
      this.cachedBytes -= v.length;
    }
  }

  /** Bytes and entries of the raster cache. */
  cacheStats(): { bytes: number; entries: number } {
    return { bytes: this.cachedBytes, entries: this.cache.size };
  }
}

/**
 * The tile kept at `file`, else the one `render` makes, written there (aside, then renamed
 * into place, so a reader never sees half a file). A disk that fails costs the cache, not the
 * tile.
 */
async function onDisk(file: string, render: () => Promise<Buffer | null>): Promise<Buffer | null> {
  try {
    return await readFile(file);
  } catch {
    // not kept yet
  }
  const tile = await render();
  if (tile) {
    const aside = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}`;
    try {
      await mkdir(dirname(file), { recursive: true });
      await writeFile(aside, tile);
      await rename(aside, file);
    } catch {
      await rm(aside, { force: true }).catch(() => undefined);
    }
  }
  return tile;
}
