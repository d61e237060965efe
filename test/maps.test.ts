/**
 * The maps routes (src/server/maps.ts) over the embedded basemap: styles valid under the
 * MapLibre style spec, vector tiles that decode, raster tiles with sea and land where they are,
 * every error of spec 7.4 with its status, caching, and a tileset that cannot be opened.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { VectorTile } from '@mapbox/vector-tile';
import { validateStyleMin } from '@maplibre/maplibre-gl-style-spec';
import { PbfReader } from 'pbf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Basemap } from '../src/maps/basemap.js';
import { THEMES } from '../src/maps/styles.js';
import { DEFAULT_SUPPORT_EMAIL, mapMessages } from '../src/server/maps.js';
import type { TokenInput, TokenStore } from '../src/tokens/index.js';
import { fixtureDb, startTestServer, type TestServer } from './helpers.js';
import { decodePng, pixelAt } from './png.js';
import { tempDir } from './temp-dirs.js';

const M = mapMessages(DEFAULT_SUPPORT_EMAIL);
let server: TestServer;
let meteredServer: TestServer;
let tokens: TokenStore;
let basemap: Basemap;
let key: string;

beforeAll(async () => {
  basemap = Basemap.open();
  const db = fixtureDb();
  server = await startTestServer({ engine: { db }, tokens: { cacheMs: 0 }, maps: { basemap } });
  tokens = server.tokens;
  key = tokens.create({}).token;
  meteredServer = await startTestServer({
    engine: { db },
    tokens: { cacheMs: 0 },
    maps: {
      basemap,
      metering: 'style',
      publicUrl: 'https://maps.example.com/',
      tileUrl: 'https://{s}.tiles.example.com',
      subdomains: ['a', 'b'],
      supportEmail: 'help@example.org',
    },
  });
});

afterAll(async () => {
  await server?.close();
  await meteredServer?.close();
});

async function get(path: string, headers: Record<string, string> = {}, base = server.base) {
  const res = await fetch(`${base}${path}`, { headers });
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, body };
}

const json = (b: Buffer) => JSON.parse(b.toString('utf8')) as Record<string, unknown>;
const newKey = (input: TokenInput = {}) => tokens.create(input).token;

describe('styles', () => {
  for (const theme of THEMES) {
    for (const type of ['vector', 'raster']) {
      it(`${theme}/${type}.json is a valid MapLibre style pointing at this server with the key`, async () => {
        const r = await get(`/v3/${theme}/${type}.json?key=${key}`);
        expect(r.status).toBe(200);
        expect(r.headers.get('content-type')).toMatch(/^application\/json/);
        const style = json(r.body);
        expect(validateStyleMin(style as never)).toEqual([]);
        const source = (style.sources as Record<string, { tiles: string[]; attribution: string }>).basemap;
        expect(source?.tiles).toEqual([
          `${server.base}/v3/${theme}/${type === 'vector' ? 'v' : 'r'}/{z}/{x}/{y}.${type === 'vector' ? 'pbf' : 'png'}?key=${key}`,
        ]);
        expect(source?.attribution).toMatch(/Natural Earth/);
        expect(source?.attribution).toMatch(/GeoNames/);
        if (type === 'vector')
          expect(style.glyphs).toBe(`${server.base}/v3/${theme}/glyphs/{fontstack}/{range}.pbf?key=${key}`);
      });
    }
  }

  it('writes the public and tile URLs with their subdomains when configured', async () => {
    const meteredKey = meteredServer.tokens.create({}).token;
    const r = await get(`/v3/streets/vector.json?key=${meteredKey}`, {}, meteredServer.base);
    expect(r.status).toBe(200);
    const style = json(r.body);
    const tiles = (style.sources as Record<string, { tiles: string[] }>).basemap?.tiles;
    expect(tiles).toEqual([
      `https://a.tiles.example.com/v3/streets/v/{z}/{x}/{y}.pbf?key=${meteredKey}`,
      `https://b.tiles.example.com/v3/streets/v/{z}/{x}/{y}.pbf?key=${meteredKey}`,
    ]);
    expect(style.glyphs).toBe(
      `https://maps.example.com/v3/streets/glyphs/{fontstack}/{range}.pbf?key=${meteredKey}`,
    );
  });
});

describe('vector tiles and glyphs', () => {
  it('serves tiles in the OpenMapTiles layers that decode', async () => {
    const r = await get(`/v3/streets/v/4/8/5.pbf?key=${key}`, { 'accept-encoding': 'identity' });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/x-protobuf');
    const tile = new VectorTile(new PbfReader(r.body));
    expect(Object.keys(tile.layers).sort()).toEqual(['boundary', 'place', 'water', 'waterway']);
    const names = [];
    for (let i = 0; i < (tile.layers.place?.length ?? 0); i++) {
      const f = tile.layers.place?.feature(i);
      names.push(f?.properties.name);
      expect(['country', 'city', 'town', 'village']).toContain(f?.properties.class);
      expect(typeof f?.properties.rank).toBe('number');
    }
    expect(names).toContain('Germany');
    expect(names).toContain('Berlin');
    expect(tile.layers.boundary?.feature(0).properties.admin_level).toBe(2);
    const classes = new Set<unknown>();
    for (let i = 0; i < (tile.layers.water?.length ?? 0); i++)
      classes.add(tile.layers.water?.feature(i).properties.class);
    expect(classes).toEqual(new Set(['ocean', 'lake']));
  });

  it('sends gzip to clients that accept it', async () => {
    const r = await fetch(`${server.base}/v3/dark/v/0/0/0.pbf?key=${key}`, {
      headers: { 'accept-encoding': 'gzip' },
    });
    expect(r.status).toBe(200);
    // fetch inflates it; the header says it travelled compressed.
    expect(r.headers.get('content-encoding')).toBe('gzip');
    const tile = new VectorTile(new PbfReader(Buffer.from(await r.arrayBuffer())));
    expect(tile.layers.water?.length).toBeGreaterThan(0);
  });

  it('has every tile from zoom 0 to 7, and cuts deeper ones to z18 from their z7 ancestor', async () => {
    expect(basemap.maxzoom).toBe(7);
    expect(basemap.tileCount).toBe(21845);
    expect(gunzipSync((await basemap.vectorTile(7, 127, 127)) as Buffer).length).toBeGreaterThan(0);
    // z10 over The Hague: the sea, the coast, the city's label.
    const r = await get(`/v3/streets/v/10/524/337.pbf?key=${key}`, { 'accept-encoding': 'identity' });
    expect(r.status).toBe(200);
    const tile = new VectorTile(new PbfReader(r.body));
    expect(tile.layers.water?.feature(0).properties.class).toBe('ocean');
    for (let i = 0; i < (tile.layers.water?.length ?? 0); i++) {
      for (const ring of tile.layers.water?.feature(i).loadGeometry() ?? []) {
        for (const p of ring)
          expect(Math.max(Math.abs(p.x - 2048), Math.abs(p.y - 2048))).toBeLessThanOrEqual(2048 + 64);
      }
    }
    expect((await get(`/v3/streets/v/18/134217/86337.pbf?key=${key}`)).status).toBe(200);
    expect((await get(`/v3/streets/v/19/0/0.pbf?key=${key}`)).status).toBe(404);
  });

  it('serves the sprite the vector styles name, at 1x and 2x', async () => {
    const style = json((await get(`/v3/dark/vector.json?key=${key}`)).body);
    expect(style.sprite).toBe(`${server.base}/v3/dark/sprite?key=${key}`);
    for (const [suffix, ratio] of [
      ['', 1],
      ['@2x', 2],
    ] as const) {
      const index = json((await get(`/v3/dark/sprite${suffix}.json?key=${key}`)).body);
      expect(Object.keys(index).length).toBe(215);
      expect(index.star).toMatchObject({ width: 15 * ratio, height: 15 * ratio, pixelRatio: ratio });
      const png = await get(`/v3/dark/sprite${suffix}.png?key=${key}`);
      expect(png.status).toBe(200);
      expect(png.headers.get('content-type')).toBe('image/png');
      const img = decodePng(png.body);
      const star = index.star as { x: number; y: number };
      expect(img.width).toBeGreaterThanOrEqual(star.x + 15 * ratio);
    }
    expect((await get(`/v3/dark/sprite@3x.png?key=${key}`)).status).toBe(404);
    expect((await get('/v3/dark/sprite.json')).status).toBe(400);
  });

  it('serves the glyph ranges the styles name', async () => {
    const r = await get(`/v3/streets/glyphs/Noto%20Sans%20Regular/0-255.pbf?key=${key}`);
    expect(r.status).toBe(200);
    expect(r.body.length).toBeGreaterThan(10_000);
    expect((await get(`/v3/streets/glyphs/Noto%20Sans%20Regular/99-1.pbf?key=${key}`)).status).toBe(404);
  });
});

describe('raster tiles', () => {
  it('renders 256 px tiles with sea and land at fixed places', async () => {
    const r = await get(`/v3/streets/r/3/4/2.png?key=${key}`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('image/png');
    const img = decodePng(r.body);
    expect([img.width, img.height]).toEqual([256, 256]);
    // The North Sea and inland Karelia, in the streets palette.
    expect(pixelAt(img, 3, 4, 2, 3.0, 56.0)).toEqual([0xaa, 0xd3, 0xdf]);
    expect(pixelAt(img, 3, 4, 2, 30, 62.5)).toEqual([0xf2, 0xef, 0xe9]);
  });

  it('renders @2x tiles of 512 px, overzoomed past the basemap, in each theme', async () => {
    const sea: Record<string, number[]> = {
      streets: [0xaa, 0xd3, 0xdf],
      light: [0xd5, 0xdd, 0xe2],
      dark: [0x0f, 0x1a, 0x29],
    };
    for (const theme of THEMES) {
      const r = await get(`/v3/${theme}/r/12/2095/1351@2x.png?key=${key}`);
      expect(r.status).toBe(200);
      const img = decodePng(r.body);
      expect([img.width, img.height]).toEqual([512, 512]);
      expect(pixelAt(img, 12, 2095, 1351, 4.15, 52.09)).toEqual(sea[theme]);
    }
  });

  it('renders a tile once for concurrent requests and answers again from the cache', async () => {
    const before = basemap.renders;
    const rs = await Promise.all([1, 2, 3, 4].map(() => get(`/v3/light/r/5/16/10.png?key=${key}`)));
    expect(rs.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(basemap.renders - before).toBe(1);
    await get(`/v3/light/r/5/16/10.png?key=${key}`);
    expect(basemap.renders - before).toBe(1);
  });

  it('answers a repeated request with 304 to a matching If-None-Match', async () => {
    const r = await get(`/v3/streets/r/2/2/1.png?key=${key}`);
    const etag = r.headers.get('etag') as string;
    expect(etag).toMatch(/^".+"$/);
    expect(r.headers.get('cache-control')).toMatch(/max-age=\d+/);
    const again = await get(`/v3/streets/r/2/2/1.png?key=${key}`, { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
  });
});

describe('errors (spec 7.4)', () => {
  const cases: [string, () => string, number, string][] = [
    ['no key', () => '/v3/streets/vector.json', 400, M.invalidRequest],
    ['a malformed tile number', () => `/v3/streets/r/1/x/0.png?key=${key}`, 400, M.invalidRequest],
    ['an unknown key', () => '/v3/streets/vector.json?key=nope', 401, M.invalidKey],
    [
      'a revoked key',
      () => {
        const k = newKey();
        tokens.revoke(k);
        return `/v3/streets/vector.json?key=${k}`;
      },
      401,
      M.inactiveKey,
    ],
    [
      'a key without maps',
      () => `/v3/streets/r/0/0/0.png?key=${newKey({ services: ['static'] })}`,
      403,
      M.serviceNotEnabled,
    ],
    [
      'a key restricted to other IPs',
      () => `/v3/streets/v/0/0/0.pbf?key=${newKey({ ips: ['10.0.0.0/8'] })}`,
      403,
      M.accessRestricted,
    ],
    ['an unknown theme', () => `/v3/satellite/vector.json?key=${key}`, 404, M.notFound],
    ['an unknown type', () => `/v3/streets/hybrid.json?key=${key}`, 404, M.notFound],
    ['a tile outside its zoom level', () => `/v3/streets/r/2/4/0.png?key=${key}`, 404, M.notFound],
    ['a zoom past 18', () => `/v3/streets/r/19/0/0.png?key=${key}`, 404, M.notFound],
    ['an unknown path', () => `/v3/streets/other/thing?key=${key}`, 404, M.notFound],
  ];
  for (const [what, path, status, message] of cases) {
    it(`${what}: ${status} ${message}`, async () => {
      const r = await get(path());
      expect(r.status).toBe(status);
      expect(json(r.body)).toEqual({ error: message });
    });
  }

  it('referrer rules apply', async () => {
    const k = newKey({ referrers: ['https://ok.example/*'] });
    expect((await get(`/v3/streets/vector.json?key=${k}`, { referer: 'https://evil.example/' })).status).toBe(
      403,
    );
    expect(
      (await get(`/v3/streets/vector.json?key=${k}`, { referer: 'https://ok.example/map' })).status,
    ).toBe(200);
  });

  it('names the configured support address', async () => {
    const k = meteredServer.tokens.create({ services: [] }).token;
    const r = await get(`/v3/streets/vector.json?key=${k}`, {}, meteredServer.base);
    expect(json(r.body)).toEqual({
      error: 'Service not enabled - Please write to help@example.org to enable it',
    });
  });

  it('a server-side failure is 500 Unknown error', async () => {
    const broken = await startTestServer({
      engine: { db: fixtureDb() },
      maps: {
        basemap: {
          ...basemap,
          setStyle() {},
          minzoom: 0,
          maxzoom: 7,
          rasterTile: () => Promise.reject(new Error('boom')),
        } as unknown as Basemap,
      },
    });
    try {
      const k = broken.tokens.create({}).token;
      const r = await get(`/v3/streets/r/1/0/0.png?key=${k}`, {}, broken.base);
      expect(r.status).toBe(500);
      expect(json(r.body)).toEqual({ error: M.unknown });
    } finally {
      await broken.close();
    }
  });
});

describe('metering', () => {
  it('charges a style load against the geocoding balance when metering is style, and not tiles', async () => {
    const t = meteredServer.tokens;
    const k = t.create({ geocodingPerDay: 2 }).token;
    expect((await get(`/v3/streets/vector.json?key=${k}`, {}, meteredServer.base)).status).toBe(200);
    expect(t.balance(k, 'geocoding')).toBe(1);
    expect((await get(`/v3/streets/r/0/0/0.png?key=${k}`, {}, meteredServer.base)).status).toBe(200);
    expect(t.balance(k, 'geocoding')).toBe(1);
    await get(`/v3/streets/raster.json?key=${k}`, {}, meteredServer.base);
    const over = await get(`/v3/streets/vector.json?key=${k}`, {}, meteredServer.base);
    expect(over.status).toBe(403);
    expect(json(over.body)).toEqual({ error: M.accessRestricted });
  });

  it('charges nothing by default', async () => {
    const k = newKey({ geocodingPerDay: 1 });
    for (let i = 0; i < 3; i++) expect((await get(`/v3/streets/vector.json?key=${k}`)).status).toBe(200);
    expect(tokens.balance(k, 'geocoding')).toBe(1);
  });
});

describe('a server without maps', () => {
  it('answers every /v3 path with Imagery not found', async () => {
    const plain = await startTestServer({ engine: { db: fixtureDb() } });
    try {
      const k = plain.tokens.create({}).token;
      const r = await get(`/v3/streets/vector.json?key=${k}`, {}, plain.base);
      expect(r.status).toBe(404);
      expect(json(r.body)).toEqual({ error: M.notFound });
    } finally {
      await plain.close();
    }
  });
});

describe('opening a tileset', () => {
  it('fails at once with the file and the reason when missing or corrupt', () => {
    const dir = tempDir('wb-maps-');
    expect(() => Basemap.open(join(dir, 'none.mbtiles'))).toThrow(/none\.mbtiles: no such file/);
    const junk = join(dir, 'junk.mbtiles');
    writeFileSync(junk, 'this is not a database');
    expect(() => Basemap.open(junk)).toThrow(/junk\.mbtiles/);
  });
});

describe('the raster tile cache on disk (--raster-cache-dir)', () => {
  it('keeps rendered tiles across basemaps, under a folder per style version', async () => {
    const dir = tempDir('wb-tile-cache-');
    const first = Basemap.open(undefined, { rasterCacheDir: dir, rasterCacheBytes: 0 });
    first.setStyle('streets', {
      version: 8,
      sources: {},
      layers: [{ id: 'bg', type: 'background', paint: { 'background-color': '#123456' } }],
    });
    const png = (await first.rasterTile('streets', 3, 4, 2, 1)) as Buffer;
    expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
    const folders = readdirSync(dir);
    expect(folders).toHaveLength(1);
    const file = join(dir, folders[0] as string, '3', '4', '2@1.png');
    expect(readFileSync(file).equals(png)).toBe(true);

    // another basemap (a restarted server, another worker) reads the kept file, not a render
    writeFileSync(file, Buffer.from('kept'));
    const second = Basemap.open(undefined, { rasterCacheDir: dir, rasterCacheBytes: 0 });
    second.setStyle('streets', {
      version: 8,
      sources: {},
      layers: [{ id: 'bg', type: 'background', paint: { 'background-color': '#123456' } }],
    });
    expect((await second.rasterTile('streets', 3, 4, 2, 1))?.toString()).toBe('kept');

    // a changed style is another folder: the old picture is never served for it
    second.setStyle('streets', {
      version: 8,
      sources: {},
      layers: [{ id: 'bg', type: 'background', paint: { 'background-color': '#654321' } }],
    });
    const fresh = (await second.rasterTile('streets', 3, 4, 2, 1)) as Buffer;
    expect(fresh.subarray(1, 4).toString('latin1')).toBe('PNG');
    expect(readdirSync(dir)).toHaveLength(2);
  });
});
