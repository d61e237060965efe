/**
 * Static maps (spec 4.8, 7.3, 7.4): parsing of every parameter, encoded polylines, fitting,
 * sizes, scales and formats of the images `GET /v3/staticmap` draws, and every error with its
 * status and the dimensions of its blank image.
 */

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Basemap } from '../src/maps/basemap.js';
import {
  decodePolyline,
  fitView,
  parseColor,
  parseMarkers,
  parsePath,
  parseStaticMap,
  renderStaticMap,
  StaticMapError,
} from '../src/maps/staticmap.js';
import { DEFAULT_SUPPORT_EMAIL, mapMessages } from '../src/server/maps.js';
import type { TokenInput, TokenStore } from '../src/tokens/index.js';
import { cli, fixtureDb, startTestServer, type TestServer } from './helpers.js';
import { decodePng, type Image } from './png.js';
import { tempDir } from './temp-dirs.js';

/** The RGBA of pixel x, y. */
function pixelAt(img: Image, x: number, y: number): number[] {
  const i = (y * img.width + x) * 4;
  return Array.from(img.rgba.subarray(i, i + 4));
}

const M = mapMessages(DEFAULT_SUPPORT_EMAIL);
let server: TestServer;
let metered: TestServer;
let tokens: TokenStore;
let basemap: Basemap;
let key: string;

beforeAll(async () => {
  basemap = Basemap.open();
  server = await startTestServer({ engine: { db: fixtureDb() }, tokens: { cacheMs: 0 }, maps: { basemap } });
  metered = await startTestServer({
    engine: { db: fixtureDb() },
    tokens: { cacheMs: 0 },
    maps: { basemap, metering: 'style' },
  });
  tokens = server.tokens;
  key = tokens.create({}).token;
});

afterAll(async () => {
  await server?.close();
  await metered?.close();
});

async function get(path: string, base = server.base) {
  const res = await fetch(`${base}${path}`);
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    body: Buffer.from(await res.arrayBuffer()),
  };
}

/** Width and height of a PNG or a baseline JPEG. */
function dims(b: Buffer): [number, number] {
  if (b[0] === 0x89) return [b.readUInt32BE(16), b.readUInt32BE(20)];
  expect([b[0], b[1]]).toEqual([0xff, 0xd8]);
  let pos = 2;
  while (pos < b.length) {
    const marker = b[pos + 1] as number;
    const len = b.readUInt16BE(pos + 2);
    if (marker === 0xc0 || marker === 0xc2) return [b.readUInt16BE(pos + 7), b.readUInt16BE(pos + 5)];
    pos += 2 + len;
  }
  throw new Error('no SOF');
}

const newKey = (input: TokenInput = {}) => tokens.create(input).token;

describe('parsing', () => {
  it('decodes encoded polylines (the example of the format)', () => {
    const pts = decodePolyline('_p~iF~ps|U_ulLnnqC_mqNvxq`@');
    expect(pts).toEqual([
      [38.5, -120.2],
      [40.7, -120.95],
      [43.252, -126.453],
    ]);
    expect(() => decodePolyline('_p~iF~ps|U_')).toThrow(StaticMapError);
  });

  it('reads colours in every notation', () => {
    expect(parseColor('red')).toEqual([0xea, 0x43, 0x35, 255]);
    expect(parseColor('0xff0000')).toEqual([255, 0, 0, 255]);
    expect(parseColor('0xFF000080')).toEqual([255, 0, 0, 128]);
    expect(parseColor('#00ff00')).toEqual([0, 255, 0, 255]);
    expect(parseColor('rgba(0,0,255,0.5)')).toEqual([0, 0, 255, 128]);
    expect(parseColor('rgba(300,0,0,1)')).toBeNull();
    expect(parseColor('chartreuse')).toBeNull();
  });

  it('reads markers: icons, styles, several locations, invalid icons not drawn', () => {
    const a = parseMarkers('icon:large-blue-blank|48.1,11.5|52.5,13.4');
    expect(a.drawn).toBe(true);
    expect(a.markers).toHaveLength(2);
    expect(a.markers[0]).toMatchObject({ size: 'large', cutout: false, at: [48.1, 11.5] });
    const b = parseMarkers('size:tiny|color:green|1,2');
    expect(b.markers[0]).toMatchObject({ size: 'tiny', color: [0x34, 0xa8, 0x53, 255], cutout: true });
    const c = parseMarkers('1,2');
    expect(c.markers[0]).toMatchObject({ size: 'small', color: [0xea, 0x43, 0x35, 255] });
    expect(parseMarkers('icon:huge-red-cutout|1,2').drawn).toBe(false);
    expect(parseMarkers('icon:small-pink-cutout|1,2').drawn).toBe(false);
    expect(() => parseMarkers('size:huge|1,2')).toThrow(StaticMapError);
    expect(() => parseMarkers('icon:small-red-cutout')).toThrow(StaticMapError);
    expect(() => parseMarkers('91,0')).toThrow(StaticMapError);
  });

  it('reads paths: styles, points, encoded points, fill', () => {
    const p = parsePath('weight:3|color:0x00ff00|fillcolor:#ff000080|1,2|3,4|5,6');
    expect(p).toMatchObject({ weight: 3, color: [0, 255, 0, 255], fill: [255, 0, 0, 128] });
    expect(p.points).toHaveLength(3);
    expect(parsePath('enc:_p~iF~ps|U_ulLnnqC').points).toEqual([
      [38.5, -120.2],
      [40.7, -120.95],
    ]);
    expect(parsePath('1,2|3,4')).toMatchObject({ weight: 5, fill: null });
    expect(() => parsePath('1,2')).toThrow(StaticMapError);
    expect(() => parsePath('weight:x|1,2|3,4')).toThrow(StaticMapError);
    expect(() => parsePath('color:nope|1,2|3,4')).toThrow(StaticMapError);
  });

  it('defaults: 300x300, scale 1, png, zoom 18', () => {
    expect(parseStaticMap({ center: '52.5,13.4' })).toMatchObject({
      width: 300,
      height: 300,
      scale: 1,
      format: 'png',
      zoom: 18,
      lat: 52.5,
      lon: 13.4,
    });
    expect(
      parseStaticMap({ center: '0,0', zoom: '3', format: 'jpg', size: '640x480', scale: '2' }),
    ).toMatchObject({ width: 640, height: 480, scale: 2, format: 'jpeg', zoom: 3 });
  });

  it('fits markers and paths when there is no centre or zoom', () => {
    const v = parseStaticMap({ markers: ['48.85,2.35|52.52,13.40'], size: '400x400' });
    expect(v.lat).toBeGreaterThan(48.85);
    expect(v.lat).toBeLessThan(52.52);
    expect(v.lon).toBeCloseTo((2.35 + 13.4) / 2, 5);
    expect(v.zoom).toBe(5);
    // Across the antimeridian: the short way, centred near 180.
    const f = fitView(
      [
        [0, 179],
        [0, -179],
      ],
      300,
      300,
    );
    expect(Math.abs(f.lon)).toBeCloseTo(180, 5);
    expect(f.zoom).toBeGreaterThan(5);
    // One marker: the deepest zoom.
    expect(parseStaticMap({ markers: '1,2' }).zoom).toBe(18);
    // A given zoom is kept, a given centre too.
    expect(parseStaticMap({ markers: '1,2|3,4', zoom: '2' })).toMatchObject({ zoom: 2 });
    expect(parseStaticMap({ markers: '1,2|3,4', center: '0,0' })).toMatchObject({ lat: 0, lon: 0 });
    expect(parseStaticMap({ center: '0,0', path: '1,2|3,4' }).zoom).toBeLessThan(18);
  });

  it('rejects what spec 4.8 does not allow', () => {
    const bad = [
      {},
      { zoom: '3' },
      { center: '91,0' },
      { center: '0,181' },
      { center: 'x' },
      { center: '0,0', zoom: '19' },
      { center: '0,0', size: '1281x10' },
      { center: '0,0', size: '0x10' },
      { center: '0,0', size: '10' },
      { center: '0,0', scale: '3' },
      { center: '0,0', format: 'gif' },
      { center: '0,0', maptype: 'satellite' },
    ];
    for (const params of bad)
      expect(() => parseStaticMap(params), JSON.stringify(params)).toThrow(StaticMapError);
    expect(parseStaticMap({ center: '0,0', maptype: 'roadmap', size: '1280x1280' }).width).toBe(1280);
  });
});

describe('GET /v3/staticmap', () => {
  it('draws a PNG of the requested size, and twice it at scale 2', async () => {
    let r = await get(`/v3/staticmap?key=${key}&center=52.09,5.12&zoom=6&size=200x100`);
    expect(r.status).toBe(200);
    expect(r.type).toBe('image/png');
    expect(dims(r.body)).toEqual([200, 100]);
    r = await get(`/v3/staticmap?key=${key}&center=52.09,5.12&zoom=6&size=200x100&scale=2`);
    expect(dims(r.body)).toEqual([400, 200]);
    r = await get(`/v3/staticmap?key=${key}&center=52.09,5.12&zoom=6`);
    expect(dims(r.body)).toEqual([300, 300]);
  });

  it('draws JPEG for jpg and jpeg', async () => {
    for (const format of ['jpg', 'jpeg']) {
      const r = await get(`/v3/staticmap?key=${key}&center=0,0&zoom=2&size=120x80&format=${format}`);
      expect(r.status).toBe(200);
      expect(r.type).toBe('image/jpeg');
      expect(dims(r.body)).toEqual([120, 80]);
    }
  });

  it('draws markers and paths; an invalid icon leaves the image', async () => {
    const base = `/v3/staticmap?key=${key}&center=0,0&zoom=4&size=100x100`;
    const plain = decodePng((await get(base)).body);
    const marked = decodePng((await get(`${base}&markers=icon:large-black-blank|0,0`)).body);
    expect(pixelAt(marked, 50, 40)).toEqual([0x21, 0x21, 0x21, 255]);
    expect(pixelAt(plain, 50, 40)).not.toEqual([0x21, 0x21, 0x21, 255]);
    const invalid = await get(`${base}&markers=icon:huge-black-blank|0,0`);
    expect(invalid.status).toBe(200);
    expect(decodePng(invalid.body).rgba).toEqual(plain.rgba);
    const path = decodePng((await get(`${base}&path=weight:6|color:0xff0000ff|0,-10|0,10`)).body);
    expect(pixelAt(path, 50, 50)).toEqual([255, 0, 0, 255]);
    const filled = decodePng(
      (await get(`${base}&path=color:0x00000000|fillcolor:%2300ff00|5,-5|5,5|-5,5|-5,-5`)).body,
    );
    expect(pixelAt(filled, 50, 50)).toEqual([0, 255, 0, 255]);
  });

  it('fits markers without centre and zoom', async () => {
    const r = await get(`/v3/staticmap?key=${key}&markers=48.85,2.35&markers=color:blue|52.52,13.40`);
    expect(r.status).toBe(200);
    expect(dims(r.body)).toEqual([300, 300]);
  });

  it('the library function draws the same image', async () => {
    const lib = await renderStaticMap({ center: '52.09,5.12', zoom: '6', size: '200x100' }, { basemap });
    const served = await get(`/v3/staticmap?key=${key}&center=52.09,5.12&zoom=6&size=200x100`);
    expect(lib.type).toBe('image/png');
    expect(lib.body.equals(served.body)).toBe(true);
  });

  const imageErrors: [string, string, number, [number, number], string][] = [
    ['no centre and no markers', 'zoom=3', 400, [300, 300], 'image/png'],
    ['a latitude out of range', 'center=95,0&zoom=3&size=100x50', 400, [100, 50], 'image/png'],
    ['a zoom past 18', 'center=0,0&zoom=19&size=100x50&format=jpg', 400, [100, 50], 'image/jpeg'],
    ['a size past 1280', 'center=0,0&size=1300x50', 400, [300, 300], 'image/png'],
    ['a malformed size at scale 2', 'center=0,0&size=big&scale=2', 400, [600, 600], 'image/png'],
    ['scale 3', 'center=0,0&scale=3&size=40x30', 400, [40, 30], 'image/png'],
    ['an unknown format', 'center=0,0&format=gif&size=40x30', 400, [40, 30], 'image/png'],
    ['an unknown maptype', 'center=0,0&maptype=hybrid&size=40x30&scale=2', 400, [80, 60], 'image/png'],
    ['a bad marker', 'markers=size:huge|1,2&size=40x30', 400, [40, 30], 'image/png'],
    ['a bad path', 'center=0,0&path=enc:~&size=40x30&format=jpeg', 400, [40, 30], 'image/jpeg'],
  ];
  for (const [what, query, status, size, type] of imageErrors) {
    it(`${what}: ${status}, a blank ${size.join('x')} ${type}`, async () => {
      const r = await get(`/v3/staticmap?key=${key}&${query}`);
      expect(r.status).toBe(status);
      expect(r.type).toBe(type);
      expect(dims(r.body)).toEqual(size);
      if (type === 'image/png') {
        const img = decodePng(r.body);
        expect(new Set(Array.from({ length: 20 }, (_, i) => pixelAt(img, i, i).join()))).toEqual(
          new Set(['229,227,223,255']),
        );
      }
    });
  }

  it('authentication errors are JSON with their status', async () => {
    const cases: [string, number, string][] = [
      ['', 400, M.invalidRequest],
      ['key=nope', 401, M.invalidKey],
      [`key=${newKey({ services: ['maps'] })}`, 403, M.serviceNotEnabled],
      [`key=${newKey({ referrers: ['https://ok.example/*'] })}`, 403, M.accessRestricted],
    ];
    const revoked = newKey();
    tokens.revoke(revoked);
    cases.push([`key=${revoked}`, 401, M.inactiveKey]);
    for (const [q, status, error] of cases) {
      const r = await get(`/v3/staticmap?${q}&center=0,0&zoom=3`);
      expect(r.status, q).toBe(status);
      expect(JSON.parse(r.body.toString('utf8')), q).toEqual({ error });
    }
  });

  it('is one call of the balance per image whatever the tile metering says', async () => {
    const k = tokens.create({ geocodingPerDay: 1 }).token;
    expect((await get(`/v3/staticmap?key=${k}&center=0,0&zoom=3&size=20x20`)).status).toBe(200);
    const r = await get(`/v3/staticmap?key=${k}&center=0,0&zoom=3&size=20x20`);
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body.toString('utf8'))).toEqual({ error: M.accessRestricted });
  });

  it('is one call of the balance per image when metered; invalid requests are free', async () => {
    const k = metered.tokens.create({ geocodingPerDay: 1 }).token;
    expect((await get(`/v3/staticmap?key=${k}&center=0,0&zoom=30`, metered.base)).status).toBe(400);
    expect((await get(`/v3/staticmap?key=${k}&center=0,0&zoom=3&size=20x20`, metered.base)).status).toBe(200);
    const r = await get(`/v3/staticmap?key=${k}&center=0,0&zoom=3&size=20x20`, metered.base);
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body.toString('utf8'))).toEqual({ error: M.accessRestricted });
  });

  it('a rendering failure is a blank 500 image', async () => {
    const broken = await startTestServer({
      engine: { db: fixtureDb() },
      maps: {
        basemap: {
          ...basemap,
          setStyle() {},
          minzoom: 0,
          maxzoom: 7,
          staticMap: () => Promise.reject(new Error('boom')),
        } as unknown as Basemap,
      },
    });
    try {
      const k = broken.tokens.create({}).token;
      const r = await get(`/v3/staticmap?key=${k}&center=0,0&zoom=3&size=50x40`, broken.base);
      expect(r.status).toBe(500);
      expect(dims(r.body)).toEqual([50, 40]);
    } finally {
      await broken.close();
    }
  });
});

describe('whereabouts staticmap', () => {
  it('writes the image named by --out, JPEG by its extension', () => {
    const dir = tempDir('wb-static-');
    const png = join(dir, 'map.png');
    let r = cli(['staticmap', '--center', '-33.9,18.4', '--zoom', '5', '--size', '120x90', '--out', png]);
    expect(r.code, r.stderr).toBe(0);
    expect(dims(readFileSync(png))).toEqual([120, 90]);
    const jpg = join(dir, 'map.jpg');
    r = cli([
      'staticmap',
      '--markers',
      '48.85,2.35',
      '--markers',
      'color:blue|52.5,13.4',
      '--scale',
      '2',
      '--out',
      jpg,
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(dims(readFileSync(jpg))).toEqual([600, 600]);
    r = cli(['staticmap', '--zoom', '5', '--out', png]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/Invalid Request/);
  });
});
