/**
 * Raster tile rendering: time per tile (p50, p99) by zoom over a fixed set of tiles, each
 * rendered without the cache (a fresh style name per round, so nothing is served from memory),
 * one render at a time; plus the size of the embedded basemap and of the PNGs.
 *
 *   npx tsx bench/tiles.ts [--rounds N] [--ratio 1|2] [--theme streets|dark|light]
 *
 * The tiles: at every zoom from 0 to 12, up to 16 tiles around a fixed set of points on
 * land, sea and coasts (Europe, the Americas, Asia, Africa, Oceania).
 */
import { statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Basemap, basemapFile } from '../src/maps/basemap.js';
import { iconColor, renderStyle, THEMES, type Theme } from '../src/maps/styles.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    ratio: { type: 'string', default: '1' },
    theme: { type: 'string', default: 'streets' },
  },
});
const rounds = Number(values.rounds);
const ratio = Number(values.ratio);
const theme = values.theme as Theme;
if (!(THEMES as readonly string[]).includes(theme)) throw new Error(`unknown theme ${theme}`);

const POINTS: [number, number][] = [
  [4.3, 52.08],
  [2.35, 48.86],
  [13.4, 52.52],
  [-74.0, 40.7],
  [-43.2, -22.9],
  [139.7, 35.7],
  [77.2, 28.6],
  [31.2, 30.0],
  [151.2, -33.9],
  [18.4, -33.9],
  [-122.4, 37.8],
  [0, 0],
  [-30, 40],
  [100.5, 13.7],
  [37.6, 55.75],
  [-99.1, 19.4],
];

function tileOf(lon: number, lat: number, z: number): [number, number] {
  const n = 2 ** z;
  const s = Math.sin((lat * Math.PI) / 180);
  const x = Math.floor(((lon + 180) / 360) * n);
  const y = Math.floor((0.5 - Math.log((1 + s) / (1 - s)) / (4 * Math.PI)) * n);
  return [Math.min(n - 1, x), Math.min(n - 1, Math.max(0, y))];
}

const basemap = Basemap.open(basemapFile, { rasterCacheBytes: 0 });
const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;

console.log(
  `basemap ${basemapFile}: ${(statSync(basemapFile).size / 1e6).toFixed(2)} MB, ${basemap.tileCount} tiles z${basemap.minzoom}-${basemap.maxzoom}`,
);
console.log(`theme ${theme}, ${256 * ratio} px tiles, ${rounds} rounds, one render at a time\n`);
console.log('zoom  tiles  p50 ms  p99 ms  mean PNG KB');
for (let z = 0; z <= 12; z++) {
  const tiles = new Map<string, [number, number]>();
  for (const [lon, lat] of POINTS) {
    const [x, y] = tileOf(lon, lat, z);
    tiles.set(`${x}/${y}`, [x, y]);
  }
  const times: number[] = [];
  let bytes = 0;
  let count = 0;
  for (let r = 0; r < rounds; r++) {
    // A style name per round and zoom: the renderer keeps no tiles, so every call draws.
    const name = `${theme}-${z}-${r}`;
    basemap.setStyle(name, renderStyle(theme, basemap), iconColor(theme));
    for (const [x, y] of tiles.values()) {
      const t0 = process.hrtime.bigint();
      const png = await basemap.rasterTile(name, z, x, y, ratio);
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      bytes += png?.length ?? 0;
      count++;
    }
  }
  times.sort((a, b) => a - b);
  console.log(
    `${String(z).padStart(4)}  ${String(tiles.size).padStart(5)}  ${quantile(times, 0.5).toFixed(1).padStart(6)}  ${quantile(times, 0.99).toFixed(1).padStart(6)}  ${(bytes / count / 1024).toFixed(1).padStart(11)}`,
  );
}
