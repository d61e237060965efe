/**
 * `whereabouts tiles build`: an OpenStreetMap extract the test writes (OSM XML turned into PBF
 * by Debian's osmium-tool) made into vector tiles by Debian's tilemaker, then served and drawn
 * as the user's own tileset. Needs `tilemaker` and `osmium` (.ci/run installs both): without
 * them the test fails and says so.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { VectorTile } from '@mapbox/vector-tile';
import Database from 'better-sqlite3';
import { PbfReader } from 'pbf';
import { describe, expect, it } from 'vitest';
import { buildConfig } from '../src/cli/tiles.js';
import { Basemap } from '../src/maps/basemap.js';
import { cli, fixtureDb, startTestServer } from './helpers.js';
import { decodePng, pixelAt } from './png.js';
import { tempDir } from './temp-dirs.js';

function have(command: string): boolean {
  return spawnSync(command, ['--help'], { encoding: 'utf8' }).error === undefined;
}

/** A few streets of a town: a primary road with a name, a building, a city node. */
const OSM = `<?xml version="1.0" encoding="UTF-8"?>
<osm version="0.6" generator="whereabouts-test">
  <bounds minlat="60.160" minlon="24.930" maxlat="60.175" maxlon="24.960"/>
  <node id="1" version="1" lat="60.1650" lon="24.9400"/>
  <node id="2" version="1" lat="60.1660" lon="24.9500"/>
  <node id="3" version="1" lat="60.1670" lon="24.9550"/>
  <node id="10" version="1" lat="60.1690" lon="24.9380">
    <tag k="place" v="city"/><tag k="name" v="Testtown"/><tag k="population" v="600000"/>
  </node>
  <node id="20" version="1" lat="60.1640" lon="24.9420"/>
  <node id="21" version="1" lat="60.1640" lon="24.9440"/>
  <node id="22" version="1" lat="60.1630" lon="24.9440"/>
  <node id="23" version="1" lat="60.1630" lon="24.9420"/>
  <way id="100" version="1"><nd ref="1"/><nd ref="2"/><nd ref="3"/>
    <tag k="highway" v="primary"/><tag k="name" v="Testikatu"/></way>
  <way id="101" version="1"><nd ref="20"/><nd ref="21"/><nd ref="22"/><nd ref="23"/><nd ref="20"/>
    <tag k="building" v="yes"/></way>
</osm>
`;

/** Tile x/y at zoom z of a point (Web Mercator, XYZ). */
function tileOf(lat: number, lon: number, z: number): { x: number; y: number } {
  const n = 2 ** z;
  const r = (lat * Math.PI) / 180;
  return {
    x: Math.floor(((lon + 180) / 360) * n),
    y: Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n),
  };
}

describe('whereabouts tiles build', () => {
  it('leaves out the layers whose shapefiles are missing, and the example tile URL', () => {
    const { config, dropped } = buildConfig(
      {
        layers: { place: { minzoom: 0 }, ocean: { source: 'coastline/water_polygons.shp' } },
        settings: {
          name: 'x',
          filemetadata: { tiles: ['https://example.com/{z}/{x}/{y}.pbf'], format: 'pbf' },
        },
      },
      undefined,
      'helsinki',
    );
    expect(Object.keys(config.layers)).toEqual(['place']);
    expect(dropped).toEqual(['ocean']);
    expect(config.settings.name).toBe('helsinki');
    expect(config.settings.filemetadata).toEqual({ format: 'pbf' });
  });

  it('turns an OSM extract into street-level tiles that the server serves and draws', async () => {
    expect(have('tilemaker'), 'tilemaker is not installed (apt-get install tilemaker)').toBe(true);
    expect(have('osmium'), 'osmium is not installed (apt-get install osmium-tool)').toBe(true);
    const dir = tempDir('wb-tiles-');
    writeFileSync(join(dir, 'town.osm'), OSM);
    const conv = spawnSync('osmium', ['cat', join(dir, 'town.osm'), '-o', join(dir, 'town.osm.pbf')], {
      encoding: 'utf8',
    });
    expect(conv.status, conv.stderr).toBe(0);

    const out = join(dir, 'town.mbtiles');
    const r = cli(['tiles', 'build', '--from', join(dir, 'town.osm.pbf'), '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout) as { tiles: number; maxzoom: number };
    expect(summary.maxzoom).toBe(14);
    expect(summary.tiles).toBeGreaterThan(10);

    // the z14 tile of the road holds it in the OpenMapTiles layers, with its name
    const { x, y } = tileOf(60.166, 24.95, 14);
    const db = new Database(out, { readonly: true });
    const row = db
      .prepare('SELECT tile_data FROM tiles WHERE zoom_level = 14 AND tile_column = ? AND tile_row = ?')
      .get(x, 2 ** 14 - 1 - y) as { tile_data: Buffer } | undefined;
    db.close();
    expect(row).toBeDefined();
    const raw = row?.tile_data as Buffer;
    const tile = new VectorTile(new PbfReader(raw[0] === 0x1f ? gunzipSync(raw) : raw));
    expect(Object.keys(tile.layers)).toEqual(expect.arrayContaining(['transportation', 'building']));
    const names = tile.layers.transportation_name;
    const roadNames = names
      ? Array.from({ length: names.length }, (_, i) => names.feature(i).properties['name:latin'])
      : [];
    expect(roadNames).toContain('Testikatu');

    // served as the user's own tileset: its vector tile as stored, its raster tile drawn
    const server = await startTestServer({
      engine: { db: fixtureDb() },
      maps: { basemap: Basemap.open(out) },
    });
    try {
      const key = server.tokens.create({}).token;
      const v = await fetch(`${server.base}/v3/streets/v/14/${x}/${y}.pbf?key=${key}`);
      expect(v.status).toBe(200);
      const png = await fetch(`${server.base}/v3/streets/r/14/${x}/${y}.png?key=${key}`);
      expect(png.status).toBe(200);
      expect(png.headers.get('content-type')).toMatch(/image\/png/);
      // the primary road is drawn in the streets theme's major-road colour (#f7c873)
      const img = decodePng(Buffer.from(await png.arrayBuffer()));
      const [r, g, b] = pixelAt(img, 14, x, y, 24.95, 60.166);
      expect([r, g, b]).toEqual([0xf7, 0xc8, 0x73]);
    } finally {
      await server.close();
    }
  });

  it('refuses bad arguments clearly, and writes nothing when the extract is not OSM', () => {
    expect(cli(['tiles', 'build', '--from', 'x.osm.pbf']).code).toBe(2);
    expect(cli(['tiles', 'make']).code).toBe(2);
    const dir = tempDir('wb-tiles-');
    writeFileSync(join(dir, 'bad.osm.pbf'), 'not a PBF');
    const out = join(dir, 'bad.mbtiles');
    const r = cli(['tiles', 'build', '--from', join(dir, 'bad.osm.pbf'), '--out', out]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/tilemaker failed|whereabouts:/);
    expect(existsSync(out)).toBe(false);
  });
});
