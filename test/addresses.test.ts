/**
 * Street-level addresses: `whereabouts import` routing OpenAddresses and OSM files to the
 * address file, `engine.reverse` at zoom 18, 16 and 15 with it, and the address search.
 * The OSM fixture (test/fixtures/streets.osm.pbf) is written by the core's test PBF writer.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../src/engine.js';
import { parseAddressQuery } from '../src/geocoding/addresses.js';
import { cli, fixtures, startTestServer } from './helpers.js';
import { tempDir } from './temp-dirs.js';

const OA = [
  'LON,LAT,NUMBER,STREET,UNIT,CITY,DISTRICT,REGION,POSTCODE,ID,HASH',
  '-0.1278700,51.5034600,11,Downing St,,London,,,SW1A 2AB,2,b',
  '-0.1276400,51.5033960,10,Downing Street,,London,,,SW1A 2AA,1,a',
  'x,51.5,5,Whitehall,,London,,,,4,d',
  '-0.1400000,51.5010000,1,Buckingham Gate,,London,,,SW1E 6JP,5,e',
].join('\n');

describe('whereabouts import with address files', () => {
  let db: string;
  let result: ReturnType<typeof cli>;
  beforeAll(() => {
    const dir = tempDir('wb-addr-');
    db = join(dir, 'db');
    const oa = join(dir, 'london.csv');
    writeFileSync(oa, OA);
    result = cli([
      'import',
      '--quiet',
      '--db',
      db,
      join(fixtures, 'cells.csv'),
      oa,
      join(fixtures, 'streets.osm.pbf'),
    ]);
  });

  it('sends station files to the database and address files to DIR/addresses.bin, reporting bad rows', () => {
    expect(result.code, result.stderr).toBe(0);
    expect(existsSync(join(db, 'manifest.json'))).toBe(true);
    expect(existsSync(join(db, 'addresses.bin'))).toBe(true);
    expect(result.stderr).toMatch(/london\.csv: OpenAddressesCsv, 4 rows, 3 accepted, 1 rejected/);
    expect(result.stderr).toMatch(/line 4: lon: not a number "x"/);
    expect(result.stderr).toMatch(/streets\.osm\.pbf: OsmPbf, 5 rows, 4 accepted, 1 rejected/);
    expect(result.stderr).toMatch(/way 103: node 999 is not in the file/);
    // 3 CSV + 2 OSM addresses, the two "10 Downing Street" folded into one
    expect(result.stderr).toMatch(/addresses .*addresses\.bin: 4 addresses, 2 roads, 1 duplicates merged/);
  });

  it('is opened by Engine.open from the db directory without being named', async () => {
    const engine = await Engine.open({ db });
    try {
      const r = engine.reverse({ lat: 51.50339, lon: -0.12765, zoom: 18 });
      expect(r.status === 'ok' && r.address.house_number).toBe('10');
    } finally {
      engine.close();
    }
    const without = await Engine.open({ db, addresses: false });
    try {
      const r = without.reverse({ lat: 51.50339, lon: -0.12765, zoom: 18 });
      expect(r.status === 'ok' && r.address.house_number).toBeUndefined();
    } finally {
      without.close();
    }
  });

  it('is read on first use: a damaged body opens, and the first street lookup or prepareReverse fails clearly', async () => {
    const bytes = readFileSync(join(db, 'addresses.bin'));
    bytes[bytes.length >> 1] = (bytes[bytes.length >> 1] as number) ^ 0x10;
    const damaged = join(db, 'damaged-addresses.bin');
    writeFileSync(damaged, bytes);
    const engine = await Engine.open({ addresses: damaged });
    try {
      const message = /address file is corrupt: checksum mismatch \(.*damaged-addresses\.bin\)/;
      expect(() => engine.reverse({ lat: 51.50339, lon: -0.12765, zoom: 18 })).toThrow(message);
      expect(() => engine.prepareReverse()).toThrow(message);
      // below zoom 16 no street is asked for
      expect(engine.reverse({ lat: 51.50339, lon: -0.12765, zoom: 10 }).status).toBe('ok');
    } finally {
      engine.close();
    }
    await expect(Engine.open({ addresses: join(db, 'manifest.json') })).rejects.toThrow(/address file/);
  });
});

describe('engine.reverse and searchAddresses with an address file', () => {
  let engine: Engine;
  beforeAll(async () => {
    const dir = tempDir('wb-addr-');
    const db = join(dir, 'db');
    const r = cli(['import', '--quiet', '--db', db, join(fixtures, 'streets.osm.pbf')]);
    if (r.code !== 0) throw new Error(r.stderr);
    engine = await Engine.open({ addresses: join(db, 'addresses.bin') });
  });
  afterAll(() => engine?.close());

  it('names the house, road, suburb and postcode at zoom 18, at the house', () => {
    const r = engine.reverse({ lat: 51.5034, lon: -0.1277, zoom: 18 });
    expect(r.status).toBe('ok');
    if (r.status !== 'ok') return;
    expect(r.address).toMatchObject({
      lat: '51.5034',
      lon: '-0.12764',
      house_number: '10',
      road: 'Downing Street',
      suburb: 'Westminster',
      city: 'London',
      postcode: 'SW1A 2AA',
      country_code: 'gb',
    });
    expect(r.address.display_name).toMatch(
      /^10 Downing Street, Westminster, London, .*SW1A 2AA, United Kingdom$/,
    );
  });

  it('names only the nearest road at zoom 16, and none at zoom 15', () => {
    // on Whitehall, 100 m and more from both houses
    const at = { lat: 51.5039, lon: -0.12606 };
    const z16 = engine.reverse({ ...at, zoom: 16 });
    expect(z16.status === 'ok' && z16.address.road).toBe('Whitehall');
    expect(z16.status === 'ok' && z16.address.house_number).toBeUndefined();
    expect(z16.status === 'ok' && z16.address.display_name.startsWith('Whitehall, ')).toBe(true);
    // the answer stands at the nearest point of the road, about 20 m west of the query
    if (z16.status !== 'ok') return;
    expect(Number(z16.address.lat)).toBeCloseTo(51.50388, 4);
    expect(Number(z16.address.lon)).toBeCloseTo(-0.12636, 4);
    // zoom 18 with no house within reach falls back to the road
    const z18 = engine.reverse({ ...at, zoom: 18 });
    expect(z18.status === 'ok' && z18.address.road).toBe('Whitehall');
    const z15 = engine.reverse({ ...at, zoom: 15 });
    expect(z15.status === 'ok' && z15.address.road).toBeUndefined();
  });

  it('finds house numbers through abbreviations, best first, with a score', () => {
    const hits = engine.searchAddresses('10 Downing St, London');
    expect(hits[0]).toEqual({
      address: {
        lat: '51.503396',
        lon: '-0.12764',
        display_name: '10 Downing Street, Westminster, London, SW1A 2AA',
        house_number: '10',
        road: 'Downing Street',
        suburb: 'Westminster',
        city: 'London',
        postcode: 'SW1A 2AA',
      },
      score: 1,
    });
    expect(hits).toHaveLength(1);
    expect(
      engine
        .searchAddresses('Downing Street')
        .map((h) => h.address.house_number)
        .sort(),
    ).toEqual(['10', '11']);
    expect(engine.searchAddresses('10 Abbey Road')).toEqual([]);
    expect(engine.searchAddresses('10 Downing St', 0)).toEqual([]);
  });

  it('puts a matching house first in engine.search, with the place data around it', () => {
    const r = engine.search({ q: '10 Downing St, London', limit: 3 });
    if (r.status !== 'ok') throw new Error(`search failed: ${r.message}`);
    const [first, ...rest] = r.address;
    expect(first).toMatchObject({
      house_number: '10',
      road: 'Downing Street',
      postcode: 'SW1A 2AA',
      country_code: 'gb',
      country: 'United Kingdom',
    });
    expect(first?.display_name).toMatch(/^10 Downing Street, .*London.*United Kingdom$/);
    // a country restriction applies to houses too; places still answer without houses
    const fr = engine.search({ q: '10 Downing St, London', countrycodes: 'fr' });
    if (fr.status === 'ok') expect(fr.address.every((a) => a.country_code === 'fr')).toBe(true);
    expect(rest.every((a) => a.house_number === undefined)).toBe(true);
    const plain = engine.search({ q: 'London', limit: 1 });
    expect(plain).toMatchObject({ status: 'ok', address: [{ city: 'London', country_code: 'gb' }] });
  });
});

describe('GET /v2/reverse with an address file', () => {
  it('answers the house at zoom 18 over HTTP', async () => {
    const dir = tempDir('wb-addr-');
    const db = join(dir, 'db');
    const r = cli(['import', '--quiet', '--db', db, join(fixtures, 'streets.osm.pbf')]);
    expect(r.code, r.stderr).toBe(0);
    const server = await startTestServer({ engine: { addresses: join(db, 'addresses.bin') } });
    try {
      const token = server.tokens.create({ geocodingPerDay: 10, scopes: ['geocoding:reverse'] }).token;
      const res = await fetch(`${server.base}/v2/reverse?token=${token}&lat=51.5034&lon=-0.1277&zoom=18`);
      const body = (await res.json()) as { status: string; address: Record<string, string> };
      expect(res.status).toBe(200);
      expect(body.status).toBe('ok');
      expect(body.address).toMatchObject({
        house_number: '10',
        road: 'Downing Street',
        postcode: 'SW1A 2AA',
      });
    } finally {
      await server.close();
    }
  });
});

describe('parseAddressQuery', () => {
  it('splits number, street and city in the common orders', () => {
    expect(parseAddressQuery('10 Downing St, London')).toEqual({
      number: '10',
      street: 'Downing St',
      city: 'London',
    });
    expect(parseAddressQuery('Hauptstraße 5, 10117 Berlin')).toEqual({
      number: '5',
      street: 'Hauptstraße',
      city: '10117 Berlin',
    });
    expect(parseAddressQuery('10, Downing Street, London')).toEqual({
      number: '10',
      street: 'Downing Street',
      city: 'London',
    });
    expect(parseAddressQuery('Downing Street')).toEqual({ number: '', street: 'Downing Street', city: '' });
    expect(parseAddressQuery('')).toEqual({ number: '', street: '', city: '' });
  });
});
