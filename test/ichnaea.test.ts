/**
 * The Ichnaea (Google Geolocation API style) interface: `engine.geolocate` and `engine.country`,
 * and `/v1/geolocate`, `/v1/country`, `/v2/geosubmit` on a real socket over the fixture
 * database (GSM 262/1 LAC 10 cids 1 and 2 and three access points in Berlin). Request bodies
 * follow the examples of the interface's published documentation, with this fixture's networks.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/engine.js';
import { ACCURACY_95_FACTOR } from '../src/locating/ichnaea.js';
import type { ObservationStore } from '../src/observations/index.js';
import { buildServer } from '../src/server/app.js';
import type { TokenInput, TokenStore } from '../src/tokens/index.js';
import { fixtureDb, startTestServer, type TestServer } from './helpers.js';

let engine: Engine;
let tokens: TokenStore;
let observations: ObservationStore;
let base: string;
let server: TestServer;
/** The token store's clock: tests step it past rate-limit windows. */
let clock = Date.UTC(2030, 0, 1, 12, 0, 0);

beforeAll(async () => {
  server = await startTestServer({
    engine: { db: fixtureDb(), now: 1_700_000_000 },
    tokens: { now: () => clock, cacheMs: 0 },
    bodyLimit: 64 * 1024,
    learn: true,
  });
  ({ engine, tokens, observations, base } = server);
});

afterAll(() => server?.close());

function newKey(input: TokenInput = {}): string {
  return tokens.create({ geolocationPerDay: 100, ...input }).token;
}

const balanceOf = (key: string) => tokens.balance(key, 'geolocation');

interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

async function post(
  path: string,
  key: string | undefined,
  body: unknown,
  headers: Record<string, string> = {},
) {
  const query = key === undefined ? '' : `?key=${encodeURIComponent(key)}`;
  const res = await fetch(`${base}${path}${query}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return {
    status: res.status,
    body: (await res.json()) as Record<string, unknown>,
    headers: res.headers,
  } as Answer;
}

const geolocate = (key: string | undefined, body: unknown, headers?: Record<string, string>) =>
  post('/v1/geolocate', key, body, headers);

/** A fixture cell as this interface names it. */
const tower = (cellId: number, extra: Record<string, unknown> = {}) => ({
  radioType: 'gsm',
  mobileCountryCode: 262,
  mobileNetworkCode: 1,
  locationAreaCode: 10,
  cellId,
  ...extra,
});

/** The fixture's access points, spelled three ways (the interface takes any case and separator). */
const fixtureAps = () => [
  { macAddress: '00:11:22:33:44:01', signalStrength: -51 },
  { macAddress: '00-11-22-33-44-02', signalStrength: -60 },
  { macAddress: '001122334403', signalStrength: -70 },
];

const error = (code: number, domain: string, reason: string, message: string, top = message) => ({
  error: { errors: [{ domain, reason, message }], code, message: top },
});
const NOT_FOUND = error(404, 'geolocation', 'notFound', 'Not found');
const PARSE_ERROR = error(400, 'global', 'parseError', 'Parse Error');
const KEY_INVALID = error(400, 'usageLimits', 'keyInvalid', 'Missing or invalid API key.', 'Invalid API key');
const DAILY_LIMIT = error(403, 'usageLimits', 'dailyLimitExceeded', 'You have exceeded your daily limit.');

describe('engine.geolocate and engine.country', () => {
  it('answers what process answers, with a 95% radius and lat/lng', () => {
    const p = engine.process({
      cells: [{ radio: 'gsm', mcc: 262, mnc: 1, lac: 10, cid: 1, signal: -60 }],
      address: 0,
    });
    const g = engine.geolocate({ cellTowers: [tower(1, { signalStrength: -60 })] });
    expect(p.status).toBe('ok');
    expect(g).toEqual({
      location: { lat: p.lat, lng: p.lon },
      accuracy: Math.round((p.accuracy as number) * ACCURACY_95_FACTOR),
    });
  });

  it('answers WiFi, and names the fallback that located', () => {
    const wifi = engine.geolocate({ wifiAccessPoints: fixtureAps() });
    const p = engine.process({
      wifi: fixtureAps().map((a) => ({ bssid: a.macAddress, signal: a.signalStrength })),
      address: 0,
    });
    expect(wifi).toEqual({
      location: { lat: p.lat, lng: p.lon },
      accuracy: Math.round((p.accuracy as number) * ACCURACY_95_FACTOR),
    });
    const area = engine.geolocate({ cellTowers: [tower(999)] });
    expect(area).toMatchObject({ fallback: 'lacf' });
    expect(engine.geolocate({ cellTowers: [tower(999)], fallbacks: { lacf: false } })).toEqual(NOT_FOUND);
  });

  it('gives the parse and not-found errors', () => {
    for (const bad of [null, 'text', [1], { fallbacks: 'all' }, { bluetoothBeacons: {} }]) {
      expect(engine.geolocate(bad)).toEqual(PARSE_ERROR);
    }
    expect(engine.geolocate({ cellTowers: [tower(1, { mobileCountryCode: 'x' })] })).toEqual(PARSE_ERROR);
    expect(engine.geolocate({ cellTowers: 'none' })).toEqual(PARSE_ERROR);
    expect(
      engine.geolocate({ radioType: 'carrier-pigeon', cellTowers: [tower(1, { radioType: undefined })] }),
    ).toEqual(PARSE_ERROR);
    expect(engine.geolocate({})).toEqual(NOT_FOUND);
    expect(engine.geolocate({ considerIp: false })).toEqual(NOT_FOUND);
  });

  it('answers the country of the located point', () => {
    expect(engine.country({ cellTowers: [tower(1)] })).toEqual({
      country_code: 'DE',
      country_name: 'Germany',
    });
    expect(engine.country({ cellTowers: [tower(999)] })).toEqual({
      country_code: 'DE',
      country_name: 'Germany',
      fallback: 'lacf',
    });
    expect(engine.country({ considerIp: false })).toEqual(NOT_FOUND);
  });
});

describe('POST /v1/geolocate', () => {
  it('answers the documented minimal cell request, charging once', async () => {
    const key = newKey();
    const r = await geolocate(key, { cellTowers: [tower(1, { signalStrength: -60 })] });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(r.body).toEqual(engine.geolocate({ cellTowers: [tower(1, { signalStrength: -60 })] }));
    expect(balanceOf(key)).toBe(99);
  });

  it('takes every field of the documented complete request', async () => {
    const key = newKey();
    const r = await geolocate(key, {
      carrier: 'Fixture Telecom',
      considerIp: true,
      homeMobileCountryCode: 262,
      homeMobileNetworkCode: 2,
      radioType: 'gsm',
      bluetoothBeacons: [
        { macAddress: 'ff:23:45:67:89:ab', age: 2000, name: 'beacon', signalStrength: -110 },
      ],
      cellTowers: [
        {
          mobileCountryCode: 262,
          mobileNetworkCode: 1,
          locationAreaCode: 10,
          cellId: 1,
          age: 1,
          psc: 3,
          signalStrength: -60,
          timingAdvance: 1,
        },
      ],
      wifiAccessPoints: fixtureAps().map((ap, i) => ({
        ...ap,
        age: 3,
        channel: 11,
        frequency: 2462,
        signalToNoiseRatio: 13 + i,
        ssid: `net${i}`,
      })),
      fallbacks: { lacf: true, ipf: true },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ location: { lat: expect.any(Number), lng: expect.any(Number) } });
    expect(r.body.fallback).toBeUndefined();
    expect(balanceOf(key)).toBe(99);
  });

  it('takes radioType per cell or at the top, including nr and wcdma', async () => {
    const key = newKey();
    const top = await geolocate(key, {
      radioType: 'gsm',
      cellTowers: [{ ...tower(1), radioType: undefined }],
    });
    expect(top.status).toBe(200);
    const nr = { ...tower(5), radioType: 'nr', locationAreaCode: 100_000, cellId: 68_000_000_000 };
    const mixed = await geolocate(key, { cellTowers: [tower(1), nr, { ...tower(6), radioType: 'wcdma' }] });
    expect(mixed.status).toBe(200);
    expect(mixed.body.location).toEqual(top.body.location);
  });

  it('takes MAC addresses in any case and separator, and ignores _nomap and hidden networks', async () => {
    const key = newKey();
    const upper = fixtureAps().map((ap) => ({ ...ap, macAddress: ap.macAddress.toUpperCase() }));
    expect((await geolocate(key, { wifiAccessPoints: upper })).status).toBe(200);
    const twoOptedOut = fixtureAps().map((ap, i) =>
      i === 0 ? ap : { ...ap, ssid: i === 1 ? 'home_nomap' : '' },
    );
    // One usable access point is not enough to locate by: with the fallbacks off, nothing.
    const r = await geolocate(key, {
      wifiAccessPoints: twoOptedOut,
      considerIp: false,
      fallbacks: { lacf: false },
    });
    expect(r).toMatchObject({ status: 404, body: NOT_FOUND });
    expect(balanceOf(key)).toBe(99);
  });

  it('keeps the 15 strongest access points of a longer scan', async () => {
    const key = newKey();
    const unknown = Array.from({ length: 17 }, (_, i) => ({
      macAddress: `00:aa:bb:cc:dd:${(i + 16).toString(16)}`,
      signalStrength: -80,
    }));
    const strong = await geolocate(key, {
      wifiAccessPoints: [...unknown, ...fixtureAps()],
      considerIp: false,
    });
    expect(strong.status).toBe(200);
    const weak = fixtureAps().map((ap) => ({ ...ap, signalStrength: -95 }));
    const dropped = await geolocate(key, { wifiAccessPoints: [...unknown, ...weak], considerIp: false });
    expect(dropped.status).toBe(404);
  });

  it('reports the lacf fallback, and honours fallbacks over considerIp', async () => {
    const key = newKey();
    const area = await geolocate(key, { cellTowers: [tower(999)] });
    expect(area.status).toBe(200);
    expect(area.body.fallback).toBe('lacf');
    const off = await geolocate(key, { cellTowers: [tower(999)], fallbacks: { lacf: false } });
    expect(off).toMatchObject({ status: 404, body: NOT_FOUND });
    // The caller is on loopback, which no IP database places: the IP fallback finds nothing.
    const ipOnly = await geolocate(key, { considerIp: false, fallbacks: { ipf: true } });
    expect(ipOnly.status).toBe(404);
    expect(balanceOf(key)).toBe(99);
  });

  it('uses the caller address for the IP fallback (considerIp, fallbacks.ipf first)', async () => {
    if (!engine.stats().hasIp) return;
    const key = newKey();
    const app = server.app;
    const ask = async (body: unknown) =>
      app.inject({
        method: 'POST',
        url: `/v1/geolocate?key=${key}`,
        payload: JSON.stringify(body),
        remoteAddress: '8.8.8.8',
      });
    const byDefault = await ask({});
    expect(byDefault.statusCode).toBe(200);
    expect(byDefault.json()).toMatchObject({ fallback: 'ipf' });
    expect((await ask({ considerIp: false })).statusCode).toBe(404);
    expect((await ask({ considerIp: false, fallbacks: { ipf: true } })).statusCode).toBe(200);
    expect((await ask({ considerIp: true, fallbacks: { ipf: false } })).statusCode).toBe(404);
    const country = await app.inject({
      method: 'POST',
      url: `/v1/country?key=${key}`,
      payload: '{}',
      remoteAddress: '8.8.8.8',
    });
    expect(country.json()).toMatchObject({ country_code: 'US', fallback: 'ipf' });
  });

  it('answers parseError (400) for a body that is not JSON or not an object, charging nothing', async () => {
    const key = newKey();
    for (const body of ['{"cellTowers": [', 'null', '[]', '"x"', '{"mcc": 0262}', '']) {
      const r = await geolocate(key, body);
      expect(r.status).toBe(400);
      expect(r.body).toEqual(PARSE_ERROR);
    }
    const badCell = await geolocate(key, { cellTowers: [tower(1, { mobileCountryCode: 'DE' })] });
    expect(badCell).toMatchObject({ status: 400, body: PARSE_ERROR });
    // The /process rules drop a cell whose id is not a number, as they would for /v2/process.
    const dropped = await geolocate(key, { cellTowers: [tower(1, { cellId: 'one' })], considerIp: false });
    expect(dropped).toMatchObject({ status: 404, body: NOT_FOUND });
    expect(balanceOf(key)).toBe(100);
  });

  it('answers keyInvalid (400) for a missing, unknown or revoked key, before reading the body', async () => {
    const revoked = newKey();
    tokens.revoke(revoked);
    for (const key of [undefined, '', 'no-such-key', revoked]) {
      const r = await geolocate(key, '{not json');
      expect(r.status).toBe(400);
      expect(r.body).toEqual(KEY_INVALID);
    }
  });

  it('answers 403 outside the key restrictions, charging nothing', async () => {
    const key = newKey({ referrers: ['https://example.com/*'] });
    const r = await geolocate(key, { cellTowers: [tower(1)] });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ error: { code: 403, errors: [{ reason: 'ipRefererBlocked' }] } });
    const ok = await geolocate(key, { cellTowers: [tower(1)] }, { referer: 'https://example.com/map' });
    expect(ok.status).toBe(200);
    expect(balanceOf(key)).toBe(99);
  });

  it('answers dailyLimitExceeded (403) once the balance is used up, and 429 over the rate limits', async () => {
    const key = newKey({ geolocationPerDay: 1 });
    expect((await geolocate(key, { cellTowers: [tower(1)] })).status).toBe(200);
    const over = await geolocate(key, { cellTowers: [tower(1)] });
    expect(over).toMatchObject({ status: 403, body: DAILY_LIMIT });
    clock = Math.ceil(clock / 60_000) * 60_000 + 24 * 3600 * 1000;
    const limited = newKey({ perSecond: 1 });
    expect((await geolocate(limited, { cellTowers: [tower(1)] })).status).toBe(200);
    const fast = await geolocate(limited, { cellTowers: [tower(1)] });
    expect(fast.status).toBe(429);
    expect(fast.headers.get('retry-after')).toBe('1');
    expect(fast.body).toMatchObject({ error: { code: 429, errors: [{ reason: 'userRateLimitExceeded' }] } });
    expect(balanceOf(limited)).toBe(99);
  });

  it('answers a body over the limit with 413 in the interface shape', async () => {
    const key = newKey();
    const r = await geolocate(key, JSON.stringify({ carrier: 'x'.repeat(70 * 1024) }));
    expect(r.status).toBe(413);
    expect(r.body).toMatchObject({ error: { code: 413, errors: [{ reason: 'requestTooLarge' }] } });
  });

  it('answers server faults with 500, charging nothing', async () => {
    const broken = { locateParsed: () => Promise.reject(new Error('boom')) } as unknown as Engine;
    const other = buildServer({ engine: broken, tokens, observations });
    try {
      const key = newKey();
      const r = await other.inject({
        method: 'POST',
        url: `/v1/geolocate?key=${key}`,
        payload: JSON.stringify({ cellTowers: [tower(1)] }),
      });
      expect(r.statusCode).toBe(500);
      expect(r.json()).toMatchObject({ error: { code: 500, errors: [{ reason: 'backendError' }] } });
      expect(balanceOf(key)).toBe(100);
    } finally {
      await other.close();
    }
  });
});

describe('POST /v1/country', () => {
  it('answers the country of the located point, charging the geolocation balance', async () => {
    const key = newKey();
    const r = await post('/v1/country', key, { cellTowers: [tower(1)] });
    expect(r).toMatchObject({ status: 200, body: { country_code: 'DE', country_name: 'Germany' } });
    expect(balanceOf(key)).toBe(99);
    const none = await post('/v1/country', key, {});
    expect(none).toMatchObject({ status: 404, body: NOT_FOUND });
    expect((await post('/v1/country', undefined, {})).body).toEqual(KEY_INVALID);
    expect(balanceOf(key)).toBe(99);
  });
});

describe('POST /v1/search (the older shape)', () => {
  it('answers status ok with a 95% radius, or not_found, charging located answers', async () => {
    const key = newKey();
    const body = {
      radio: 'gsm',
      cell: [{ radio: 'gsm', mcc: 262, mnc: 1, lac: 10, cid: 1, signal: -61, asu: 26 }],
      wifi: [
        { key: '00:11:22:33:44:01', channel: 11, frequency: 2462, signal: -50 },
        { key: '00:11:22:33:44:02' },
      ],
    };
    const r = await post('/v1/search', key, body);
    const g = engine.geolocate({
      radioType: 'gsm',
      cellTowers: [tower(1, { signalStrength: -61, asu: 26 })],
      wifiAccessPoints: [
        { macAddress: '00:11:22:33:44:01', channel: 11, frequency: 2462, signalStrength: -50 },
        { macAddress: '00:11:22:33:44:02' },
      ],
      considerIp: false,
    }) as { location: { lat: number; lng: number }; accuracy: number };
    expect(r).toMatchObject({
      status: 200,
      body: { status: 'ok', lat: g.location.lat, lon: g.location.lng, accuracy: g.accuracy },
    });
    const none = await post('/v1/search', key, {
      cell: [{ radio: 'gsm', mcc: 262, mnc: 9, lac: 1, cid: 1 }],
    });
    expect(none).toMatchObject({ status: 200, body: { status: 'not_found' } });
    expect((await post('/v1/search', key, {})).body).toEqual({ status: 'not_found' });
    const bad = await post('/v1/search', key, { cell: [{ radio: 'gsm', mnc: 1, lac: 1, cid: 1 }] });
    expect(bad).toMatchObject({ status: 400, body: { errors: { body: 'No country code provided' } } });
    expect((await post('/v1/search', key, '{')).status).toBe(400);
    expect((await post('/v1/search', 'nope', body)).body).toEqual(KEY_INVALID);
    expect(balanceOf(key)).toBe(99);
  });
});

describe('POST /v2/geosubmit', () => {
  const item = (cellId: number, extra: Record<string, unknown> = {}) => ({
    timestamp: 1_700_000_000_000,
    position: {
      latitude: 52.52,
      longitude: 13.45,
      accuracy: 10,
      age: 1000,
      altitude: 40,
      altitudeAccuracy: 5,
      heading: 45,
      pressure: 1013.25,
      speed: 3.6,
      source: 'gps',
    },
    bluetoothBeacons: [{ macAddress: 'ff:74:27:89:5a:77', age: 2000, name: 'beacon', signalStrength: -110 }],
    cellTowers: [
      { ...tower(cellId), age: 3000, asu: 31, primaryScramblingCode: 5, serving: 1, signalStrength: -51 },
    ],
    wifiAccessPoints: [
      { macAddress: '00:11:22:33:55:01', age: 5000, channel: 6, frequency: 2437, signalStrength: -77 },
      { macAddress: '00:11:22:33:55:02', radioType: '802.11n', ssid: 'cafe' },
      { macAddress: '00:11:22:33:55:03', ssid: 'private_nomap' },
    ],
    ...extra,
  });

  it('needs a key with submissions (the gps feature)', async () => {
    expect((await post('/v2/geosubmit', undefined, { items: [item(500)] })).body).toEqual(KEY_INVALID);
    const r = await post('/v2/geosubmit', newKey(), { items: [item(500)] });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ error: { code: 403, errors: [{ reason: 'accessNotConfigured' }] } });
  });

  it('stores every item durably and answers {}, charging nothing', async () => {
    const key = newKey({ gps: true });
    const before = observations.count();
    const r = await post('/v2/geosubmit', key, {
      items: [item(501), item(502), { ...item(503), bluetoothBeacons: [] }],
    });
    expect(r).toMatchObject({ status: 200, body: {} });
    expect(observations.count()).toBe(before + 3);
    expect(balanceOf(key)).toBe(100);
    // Beacons only: nothing this engine learns; accepted, not stored.
    const beacons = { ...item(504), cellTowers: undefined, wifiAccessPoints: undefined };
    expect((await post('/v2/geosubmit', key, { items: [beacons] })).status).toBe(200);
    expect(observations.count()).toBe(before + 3);
  });

  it('refuses the whole batch when any item is malformed or oversized, storing nothing', async () => {
    const key = newKey({ gps: true });
    const before = observations.count();
    const oversized = { ...item(601), cellTowers: Array.from({ length: 33 }, (_, i) => tower(700 + i)) };
    const cases = [
      [item(600), { ...item(602), position: { latitude: 95, longitude: 13.4 } }, item(603)],
      [item(604), { ...item(605), position: undefined }],
      [item(606), oversized],
      [item(607), { ...item(608), cellTowers: [tower(1, { mobileCountryCode: 1000 })] }],
      [item(609), 'not an item'],
    ];
    for (const items of cases) {
      const r = await post('/v2/geosubmit', key, { items });
      expect(r.status).toBe(400);
      const e = r.body.error as {
        code: number;
        message: string;
        errors: { reason: string; message: string }[];
      };
      expect(e.code).toBe(400);
      expect(e.message).toBe(`Parse Error: 1 of ${items.length} items refused; nothing was stored`);
      expect(e.errors[0]?.reason).toBe('parseError');
      expect(e.errors[0]?.message).toMatch(/^items\[1\]: /);
    }
    expect(observations.count()).toBe(before);
    for (const body of [
      '{"items": [',
      '[]',
      '{}',
      '{"items": {}}',
      JSON.stringify({ items: new Array(1001).fill(1) }),
    ]) {
      const r = await post('/v2/geosubmit', key, body);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ error: { code: 400, errors: [{ reason: 'parseError' }] } });
    }
    expect(observations.count()).toBe(before);
  });

  it('round trip: a geosubmitted unknown cell is found by geolocate once learned', async () => {
    const key = newKey({ gps: true });
    const unknownCell = {
      radioType: 'lte',
      mobileCountryCode: 262,
      mobileNetworkCode: 3,
      locationAreaCode: 4242,
      cellId: 9_999_001,
    };
    const query = { cellTowers: [unknownCell], considerIp: false };
    expect((await geolocate(key, query)).status).toBe(404);
    const position = { latitude: 52.3, longitude: 13.1, accuracy: 8 };
    const items = [0, 1].map((i) => ({
      timestamp: Date.now() - i * 60_000,
      position,
      cellTowers: [{ ...unknownCell, signalStrength: -80 }],
    }));
    expect((await post('/v2/geosubmit', key, { items })).status).toBe(200);
    const found = await geolocate(key, query);
    expect(found.status).toBe(200);
    const location = found.body.location as { lat: number; lng: number };
    expect(location.lat).toBeCloseTo(52.3, 2);
    expect(location.lng).toBeCloseTo(13.1, 2);
    expect(found.body.fallback).toBeUndefined();
  });
});
