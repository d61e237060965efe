/**
 * Reverse geocoding: Accept-Language parsing, `engine.reverse` over the embedded places
 * (zoom levels, languages, the sea, bad input), the CLI and `GET /v2/reverse` with tokens,
 * the `geocoding:reverse` scope and the geocoding balance.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countryPolygonsFile, defaultDbDir, placesFile } from '../src/data-files.js';
import { Engine } from '../src/engine.js';
import {
  countryName,
  hasCountryNames,
  pickLanguage,
  preferredLanguages,
} from '../src/geocoding/languages.js';
import { shapeAddress } from '../src/geocoding/reverse.js';
import { native } from '../src/native/binding.js';
import { ReverseLookup } from '../src/native/reverse-lookup.js';
import { cli, serverForSuite } from './helpers.js';

const PARIS = { lat: 48.8566, lon: 2.3522 };
/** What PARIS answers from the places alone (no address file), at zoom 10 as at full detail. */
const PARIS_ADDRESS = {
  lat: '48.85341',
  lon: '2.3488',
  display_name: 'Paris, Île-de-France, France',
  city: 'Paris',
  county: 'Paris',
  state: 'Île-de-France',
  country: 'France',
  country_code: 'fr',
};

describe('accept-language', () => {
  it('orders by q-value, keeps the given order on ties and drops q=0 and junk', () => {
    expect(preferredLanguages('fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5')).toEqual([
      'fr',
      'fr',
      'en',
      'de',
    ]);
    expect(preferredLanguages('en;q=0.2,de,ru')).toEqual(['de', 'ru', 'en']);
    expect(preferredLanguages('de;q=0, it')).toEqual(['it']);
    expect(preferredLanguages('')).toEqual([]);
    expect(preferredLanguages(undefined)).toEqual([]);
  });

  it('picks the first preferred language with names, else en', () => {
    const have = (c: string) => ['en', 'de', 'fr', 'haw'].includes(c);
    expect(pickLanguage('xx, de', have)).toBe('de');
    expect(pickLanguage('xyz, fr', have)).toBe('fr');
    expect(pickLanguage('haw, fr', have)).toBe('haw');
    expect(pickLanguage('xx', have)).toBe('en');
    expect(pickLanguage(undefined, have)).toBe('en');
  });

  it('reads 3-letter ISO 639-2 codes, as the 2-letter code where the language has one, and native', () => {
    expect(preferredLanguages('deu, ger;q=0.5, fre, haw')).toEqual(['de', 'fr', 'haw', 'de']);
    expect(preferredLanguages('Native, en;q=0.1')).toEqual(['native', 'en']);
  });
});

describe('engine.reverse', () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await Engine.open();
  });
  afterAll(() => engine?.close());

  it('answers central Paris with the city and its admin names at full detail', () => {
    expect(engine.reverse(PARIS)).toEqual({
      status: 'ok',
      address: PARIS_ADDRESS,
    });
  });

  it('shows country, state, county, city as zoom rises, at the query point below city level', () => {
    const at = (zoom: number) => {
      const r = engine.reverse({ ...PARIS, zoom });
      if (r.status !== 'ok') throw new Error(r.message);
      return r.address;
    };
    expect(at(0)).toEqual({
      lat: '48.8566',
      lon: '2.3522',
      display_name: 'France',
      country: 'France',
      country_code: 'fr',
    });
    expect(Object.keys(at(4)).sort()).toEqual(['country', 'country_code', 'display_name', 'lat', 'lon']);
    expect(at(5)).toMatchObject({ state: 'Île-de-France', display_name: 'Île-de-France, France' });
    expect(at(7).county).toBeUndefined();
    expect(at(8)).toMatchObject({ county: 'Paris', state: 'Île-de-France' });
    expect(at(9).city).toBeUndefined();
    expect(at(10)).toMatchObject({ city: 'Paris', lat: '48.85341' });
    expect(engine.reverse({ ...PARIS, zoom: '12' })).toMatchObject({ address: { city: 'Paris' } });
  });

  it('names the country in the requested language, English by default', () => {
    const berlin = { lat: 52.52, lon: 13.405, zoom: 3 };
    expect(engine.reverse({ ...berlin, acceptLanguage: 'de-DE,de;q=0.9' })).toMatchObject({
      address: { country: 'Deutschland', country_code: 'de' },
    });
    expect(engine.reverse({ ...berlin, acceptLanguage: 'fr;q=0.5, es' })).toMatchObject({
      address: { country: 'Alemania' },
    });
    expect(engine.reverse({ ...berlin, acceptLanguage: 'tlh' })).toMatchObject({
      address: { country: 'Germany' },
    });
    expect(engine.reverse(berlin)).toMatchObject({ address: { country: 'Germany' } });
  });

  it('names the country in its own language for native, and in 3-letter-code languages', () => {
    const at = (lat: number, lon: number, acceptLanguage: string) => {
      const r = engine.reverse({ lat, lon, zoom: 10, acceptLanguage });
      if (r.status !== 'ok') throw new Error(r.message);
      return r.address;
    };
    // place names stay GeoNames' names; the country is named in the country's language
    expect(at(52.52, 13.405, 'native')).toMatchObject({
      city: 'Berlin',
      country: 'Deutschland',
      country_code: 'de',
    });
    expect(at(52.52, 13.405, 'native').display_name).toMatch(/^Berlin, .*Deutschland$/);
    expect(at(35.6895, 139.6917, 'native')).toMatchObject({ country: '日本', country_code: 'jp' });
    expect(at(50.8503, 4.3517, 'native')).toMatchObject({ country: 'België', country_code: 'be' });
    expect(at(48.8566, 2.3522, 'native, de')).toMatchObject({ country: 'France' });
    // Hawaiian and Asturian have no 2-letter code; deu is German's 3-letter code
    expect(at(52.52, 13.405, 'haw')).toMatchObject({ country: 'Kelemānia' });
    expect(at(52.52, 13.405, 'ast,en')).toMatchObject({ country: 'Alemaña' });
    expect(at(48.8566, 2.3522, 'deu')).toMatchObject({ country: 'Frankreich' });
    expect(at(48.8566, 2.3522, 'tlh, ita')).toMatchObject({ country: 'Francia' });
  });

  it('takes the country from its polygon: the city across a border is not answered', () => {
    // north of Kehl the nearest place is in France, across the Rhine
    expect(engine.reverse({ lat: 48.62, lon: 7.85, zoom: 10 })).toMatchObject({
      address: { city: 'Kehl', country: 'Germany', country_code: 'de' },
    });
    expect(engine.reverse({ lat: 48.55, lon: 7.79, zoom: 10 })).toMatchObject({
      address: { city: 'Strasbourg', country: 'France', country_code: 'fr' },
    });
  });

  it('finds cities worldwide from decimal strings', () => {
    expect(engine.reverse({ lat: '-33.8688', lon: '151.2093' })).toMatchObject({
      address: { city: 'Sydney', state: 'New South Wales', country_code: 'au' },
    });
    expect(engine.reverse({ lat: 35.6895, lon: 139.6917, zoom: 10 })).toMatchObject({
      address: { city: 'Tokyo', country_code: 'jp' },
    });
  });

  it('says NO_MATCHES at sea more than 5 km from every country', () => {
    expect(engine.reverse({ lat: 30, lon: -40 })).toEqual({ status: 'error', message: 'NO_MATCHES' });
    // 20 km off the Dutch coast, and 2 km off it
    expect(engine.reverse({ lat: 52.23, lon: 4.0 })).toEqual({ status: 'error', message: 'NO_MATCHES' });
    expect(engine.reverse({ lat: 52.117, lon: 4.237, zoom: 3 })).toMatchObject({
      address: { country: 'Netherlands', country_code: 'nl' },
    });
  });

  it('answers the country alone where no place lies within 50 km', () => {
    expect(engine.reverse({ lat: -80, lon: 0 })).toEqual({
      status: 'ok',
      address: {
        lat: '-80',
        lon: '0',
        display_name: 'Antarctica',
        country: 'Antarctica',
        country_code: 'aq',
      },
    });
    expect(engine.reverse({ lat: 24, lon: 2, zoom: 18, acceptLanguage: 'fr' })).toMatchObject({
      address: { display_name: 'Algérie', country_code: 'dz' },
    });
  });

  it.each([
    ['missing lon', { lat: 1 }],
    ['latitude out of range', { lat: 91, lon: 0 }],
    ['longitude out of range', { lat: 0, lon: 181 }],
    ['not a number', { lat: 'x', lon: 1 }],
    ['zoom above 18', { ...PARIS, zoom: 19 }],
    ['negative zoom', { ...PARIS, zoom: -1 }],
    ['fractional zoom', { ...PARIS, zoom: 10.5 }],
    ['zoom not a number', { ...PARIS, zoom: 'city' }],
  ])('refuses %s with INVALID_REQUEST', (_name, query) => {
    expect(engine.reverse(query as never)).toEqual({ status: 'error', message: 'INVALID_REQUEST' });
  });

  it('answers from its shaped-address memo as shaping afresh does, with a copy each time', () => {
    const handle = native().NativeEngine.open({
      db: defaultDbDir,
      places: placesFile,
      countryPolygons: countryPolygonsFile,
    });
    const lookup = new ReverseLookup(handle);
    // a fixed LCG: points uniform over the sphere, asked twice (the second from the memo)
    let seed = 12345;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    let answered = 0;
    for (let i = 0; i < 6000; i++) {
      const lat = (Math.asin(2 * random() - 1) * 180) / Math.PI;
      const lon = random() * 360 - 180;
      const zoom = i % 19;
      const acceptLanguage = [undefined, 'de', 'native', 'fr;q=0.5, ja'][i % 4];
      const found = lookup.find(lat, lon, zoom);
      const lang = pickLanguage(acceptLanguage, hasCountryNames);
      const address = found && shapeAddress(found, { lat, lon }, zoom, countryName(found.countryCode, lang));
      const want = address ? { status: 'ok', address } : { status: 'error', message: 'NO_MATCHES' };
      const first = engine.reverse({ lat, lon, zoom, acceptLanguage });
      expect(first).toStrictEqual(want);
      if (first.status === 'ok' && address) {
        // the JSON answer keeps its field order
        expect(Object.keys(first.address)).toEqual(Object.keys(address));
        answered++;
        first.address.display_name = 'changed by the caller';
      }
      // the same point again comes from the memo, unchanged by what the caller did
      expect(engine.reverse({ lat, lon, zoom, acceptLanguage })).toStrictEqual(want);
    }
    expect(answered).toBeGreaterThan(1000);
    handle.close();
  });

  it('answers through the plain reverse function as through the method, and refuses bad arguments', () => {
    const handle = native().NativeEngine.open({
      db: defaultDbDir,
      places: placesFile,
      countryPolygons: countryPolygonsFile,
    });
    const reverseKey = handle.reverseKeyFunction();
    let seed = 777;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    let withPlace = 0;
    for (let i = 0; i < 3000; i++) {
      const lat = (Math.asin(2 * random() - 1) * 180) / Math.PI;
      const lon = random() * 360 - 180;
      const key = reverseKey(lat, lon, i % 19);
      expect(key).toBe(handle.reverseKey(lat, lon, i % 19));
      if (key >= 0 && key % 2 ** 24 > 0) withPlace++;
    }
    expect(withPlace).toBeGreaterThan(300);
    // Paris: FR (70 * 256 + 82) and a place
    const paris = reverseKey(PARIS.lat, PARIS.lon, 18);
    expect(Math.floor(paris / 2 ** 24)).toBe(70 * 256 + 82);
    expect(handle.place((paris % 2 ** 24) - 1).name).toBe('Paris');
    expect(reverseKey(Number.NaN, 0, 18)).toBe(-1);
    expect(reverseKey(0, -150, 18)).toBe(-1); // the Pacific
    expect(() => (reverseKey as (...a: unknown[]) => number)('48', 2, 18)).toThrow(/reverseKey takes/);
    expect(() => (reverseKey as (...a: unknown[]) => number)(48, 2)).toThrow(/reverseKey takes/);
    handle.close();
    // the function keeps its own data: it outlives the engine's close
    expect(reverseKey(PARIS.lat, PARIS.lon, 18)).toBe(paris);
    const noPlaces = native().NativeEngine.open({ db: defaultDbDir });
    expect(() => noPlaces.reverseKeyFunction()).toThrow(/no places/);
    noPlaces.close();
  });

  it('says UNKNOWN_ERROR when opened without places', async () => {
    const e = await Engine.open({ places: false, timezones: false });
    expect(e.reverse(PARIS)).toEqual({ status: 'error', message: 'UNKNOWN_ERROR' });
    e.close();
  });

  it('refuses to open a corrupt places file', async () => {
    await expect(Engine.open({ places: join(import.meta.dirname, 'reverse.test.ts') })).rejects.toThrow(
      /corrupt/,
    );
  });
});

describe('whereabouts reverse', () => {
  it('prints the address, negative coordinates and zoom included', () => {
    const r = cli(['reverse', '--lat', '-22.9068', '--lon', '-43.1729', '--zoom', '5']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      status: 'ok',
      address: {
        lat: '-22.9068',
        lon: '-43.1729',
        display_name: 'Rio de Janeiro, Brazil',
        state: 'Rio de Janeiro',
        country: 'Brazil',
        country_code: 'br',
      },
    });
  });

  it('exits 1 with NO_MATCHES at sea, 2 without --lon', () => {
    const sea = cli(['reverse', '--lat', '0', '--lon', '-30']);
    expect(sea.code).toBe(1);
    expect(JSON.parse(sea.stdout)).toEqual({ status: 'error', message: 'NO_MATCHES' });
    expect(cli(['reverse', '--lat', '1']).code).toBe(2);
  });
});

describe('GET /v2/reverse', () => {
  const server = serverForSuite();
  const { get } = server;

  it('answers with the address and the balance after the charge, at both paths', async () => {
    const token = server.tokens.create({ geocodingPerDay: 10, scopes: ['geocoding:reverse'] }).token;
    const r = await get(`/v2/reverse?token=${token}&lat=48.8566&lon=2.3522&zoom=10`);
    expect(r).toEqual({
      status: 200,
      body: {
        status: 'ok',
        balance: 9,
        address: PARIS_ADDRESS,
      },
    });
    const php = await get(`/v2/reverse.php?token=${token}&lat=52.52&lon=13.405&zoom=3`);
    expect(php.body).toMatchObject({ status: 'ok', balance: 8, address: { country: 'Germany' } });
    expect(server.tokens.balance(token, 'geocoding')).toBe(8);
  });

  it('takes the language from the header, and the parameter over the header', async () => {
    const token = server.tokens.create({ geocodingPerDay: 10 }).token;
    const q = `/v2/reverse?token=${token}&lat=52.52&lon=13.405&zoom=0`;
    expect((await get(q, { 'accept-language': 'fr-FR,fr;q=0.9' })).body).toMatchObject({
      address: { country: 'Allemagne' },
    });
    expect((await get(`${q}&accept-language=de`, { 'accept-language': 'fr' })).body).toMatchObject({
      address: { country: 'Deutschland' },
    });
    const tokyo = `/v2/reverse?token=${token}&lat=35.6895&lon=139.6917&zoom=10`;
    expect((await get(`${tokyo}&accept-language=native`)).body).toMatchObject({
      address: { city: 'Tokyo', country: '日本', country_code: 'jp' },
    });
    expect((await get(tokyo, { 'accept-language': 'haw, en;q=0.5' })).body).toMatchObject({
      address: { country: 'Iāpana' },
    });
  });

  it('refuses bad input with INVALID_REQUEST and no match with NO_MATCHES, HTTP 200, uncharged', async () => {
    const token = server.tokens.create({ geocodingPerDay: 10 }).token;
    for (const q of ['lat=1', 'lat=1&lon=x', 'lat=95&lon=0', 'lat=1&lon=1&zoom=20', 'lat=1&lon=1&zoom=a']) {
      const r = await get(`/v2/reverse?token=${token}&${q}`);
      expect(r).toEqual({ status: 200, body: { status: 'error', message: 'INVALID_REQUEST' } });
    }
    expect(await get(`/v2/reverse?token=${token}&lat=30&lon=-40`)).toEqual({
      status: 200,
      body: { status: 'error', message: 'NO_MATCHES' },
    });
    expect(server.tokens.balance(token, 'geocoding')).toBe(10);
  });

  it('needs the geocoding:reverse scope: 403 ACCESS_RESTRICTED, uncharged', async () => {
    const forwardOnly = server.tokens.create({ geocodingPerDay: 10, scopes: ['geocoding:forward'] }).token;
    expect(await get(`/v2/reverse?token=${forwardOnly}&lat=48.8566&lon=2.3522`)).toEqual({
      status: 403,
      body: { status: 'error', message: 'ACCESS_RESTRICTED' },
    });
    const none = server.tokens.create({ scopes: [] }).token;
    expect((await get(`/v2/reverse.php?token=${none}&lat=1&lon=1`)).status).toBe(403);
    expect(server.tokens.balance(forwardOnly, 'geocoding')).toBe(10);
  });

  it('answers token errors with the 7.2 codes', async () => {
    expect((await get('/v2/reverse?lat=1&lon=1')).body).toEqual({
      status: 'error',
      message: 'INVALID_TOKEN',
    });
    const revoked = server.tokens.create({}).token;
    server.tokens.revoke(revoked);
    expect((await get(`/v2/reverse?token=${revoked}&lat=1&lon=1`)).body.message).toBe('INACTIVE_TOKEN');
    const spent = server.tokens.create({ geocodingPerDay: 1 }).token;
    expect((await get(`/v2/reverse?token=${spent}&lat=48.85&lon=2.35`)).body.status).toBe('ok');
    expect((await get(`/v2/reverse?token=${spent}&lat=48.85&lon=2.35`)).body).toEqual({
      status: 'error',
      message: 'RATELIMITED_DAY',
    });
  });
});
