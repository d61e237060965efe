/**
 * Timezone lookup: the tzdb shaping (src/timezone.ts), `engine.timezone`, the CLI and
 * `GET /v2/timezone` with tokens and the geocoding balance.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../bench/random.js';
import { defaultDbDir, timezonesFile } from '../src/data-files.js';
import { Engine } from '../src/engine.js';
import {
  describeZone,
  describeZoneUncached,
  numericAbbreviation,
  parsePosixTz,
  ZoneAnswers,
} from '../src/geocoding/timezone.js';
import { native } from '../src/native/binding.js';
import { ZoneLookup } from '../src/native/zone-lookup.js';
import { cli, serverForSuite } from './helpers.js';

const WINTER = new Date(Date.UTC(2026, 0, 15, 12));
const SUMMER = new Date(Date.UTC(2026, 6, 15, 12));

describe('tzdb data for a zone', () => {
  it('gives tzdb letters, the offset with DST, and whether DST is on', () => {
    expect(describeZone('Europe/Berlin', WINTER)).toEqual({
      name: 'Europe/Berlin',
      short_name: 'CET',
      offset_sec: 3600,
      now_in_dst: 0,
    });
    expect(describeZone('Europe/Berlin', SUMMER)).toMatchObject({
      short_name: 'CEST',
      offset_sec: 7200,
      now_in_dst: 1,
    });
    expect(describeZone('America/Los_Angeles', WINTER)).toMatchObject({
      short_name: 'PST',
      offset_sec: -28800,
    });
    expect(describeZone('America/Los_Angeles', SUMMER)).toMatchObject({ short_name: 'PDT', now_in_dst: 1 });
  });

  it('uses the numeric forms of tzdb where it has no letters', () => {
    expect(describeZone('America/Sao_Paulo', WINTER)).toMatchObject({
      short_name: '-03',
      offset_sec: -10800,
      now_in_dst: 0,
    });
    expect(describeZone('Asia/Kathmandu', WINTER)).toMatchObject({ short_name: '+0545', offset_sec: 20700 });
    expect(describeZone('Etc/GMT-3', WINTER)).toMatchObject({ short_name: '+03', offset_sec: 10800 });
    expect(numericAbbreviation(-9000)).toBe('-0230');
  });

  it('knows the southern summer and negative DST rules', () => {
    expect(describeZone('Australia/Sydney', WINTER)).toMatchObject({ offset_sec: 39600, now_in_dst: 1 });
    expect(describeZone('Australia/Sydney', SUMMER)).toMatchObject({ offset_sec: 36000, now_in_dst: 0 });
    // Ireland's tzdb rule is IST in summer, GMT in winter ("negative DST")
    expect(describeZone('Europe/Dublin', SUMMER).offset_sec).toBe(3600);
    expect(describeZone('Europe/Dublin', SUMMER).now_in_dst).toBe(1);
    expect(describeZone('Europe/Dublin', WINTER)).toMatchObject({ offset_sec: 0, now_in_dst: 0 });
  });

  it('parses POSIX TZ strings', () => {
    expect(parsePosixTz('CET-1CEST,M3.5.0,M10.5.0/3')).toEqual({
      std: { name: 'CET', offset: 3600 },
      dst: { name: 'CEST', offset: 7200 },
    });
    expect(parsePosixTz('<-03>3')).toEqual({ std: { name: '-03', offset: -10800 } });
    expect(parsePosixTz('NST3:30NDT,M3.2.0,M11.1.0')?.std.offset).toBe(-12600);
    expect(parsePosixTz('IST-1GMT0,M10.5.0,M3.5.0/1')?.dst).toEqual({ name: 'GMT', offset: 0 });
  });
});

describe('the per-zone answer cache', () => {
  const at = (iso: string) => new Date(iso);
  const BERLIN_CET = { name: 'Europe/Berlin', short_name: 'CET', offset_sec: 3600, now_in_dst: 0 };
  const BERLIN_CEST = { name: 'Europe/Berlin', short_name: 'CEST', offset_sec: 7200, now_in_dst: 1 };

  it('answers the last millisecond before a transition and the first after it', () => {
    // the window computed hours before ends at the transition, found by its binary search
    expect(describeZone('Europe/Berlin', at('2026-03-28T12:00:00Z'))).toEqual(BERLIN_CET);
    expect(describeZone('Europe/Berlin', at('2026-03-29T00:59:59.999Z'))).toEqual(BERLIN_CET);
    expect(describeZone('Europe/Berlin', at('2026-03-29T01:00:00Z'))).toEqual(BERLIN_CEST);
    expect(describeZone('Europe/Berlin', at('2026-03-29T00:59:59Z'))).toEqual(BERLIN_CET);
    // and in autumn, back to standard time
    expect(describeZone('Europe/Berlin', at('2026-10-25T00:59:59.999Z'))).toEqual(BERLIN_CEST);
    expect(describeZone('Europe/Berlin', at('2026-10-25T01:00:00Z'))).toEqual(BERLIN_CET);
  });

  it('stays right for moments alternating across a transition', () => {
    const sides: [string, object][] = [
      ['2026-03-29T00:59:59Z', BERLIN_CET],
      ['2026-03-29T01:00:00Z', BERLIN_CEST],
    ];
    for (let i = 0; i < 20; i++) {
      const [iso, expected] = sides[i % 2] as [string, object];
      expect(describeZone('Europe/Berlin', at(iso)), iso).toEqual(expected);
    }
  });

  it('knows the southern hemisphere: Sydney leaves DST in April and enters it in October', () => {
    const aedt = { name: 'Australia/Sydney', short_name: 'AEDT', offset_sec: 39600, now_in_dst: 1 };
    const aest = { name: 'Australia/Sydney', short_name: 'AEST', offset_sec: 36000, now_in_dst: 0 };
    const moments: [string, object][] = [
      ['2026-04-04T10:00:00Z', aedt],
      ['2026-04-04T15:59:59.999Z', aedt],
      ['2026-04-04T16:00:00Z', aest],
      ['2026-04-04T15:59:59Z', aedt],
      ['2026-04-04T16:00:01Z', aest],
      ['2026-10-03T15:00:00Z', aest],
      ['2026-10-03T15:59:59.999Z', aest],
      ['2026-10-03T16:00:00Z', aedt],
      ['2026-10-03T15:59:59Z', aest],
    ];
    for (const [iso, expected] of moments) {
      expect(describeZone('Australia/Sydney', at(iso)), iso).toEqual(expected);
    }
  });

  it('holds for transitions off the whole minute (Monrovia, 1972: from -0:44:30 to GMT)', () => {
    expect(describeZone('Africa/Monrovia', at('1972-01-07T00:44:29Z')).offset_sec).toBe(-2670);
    expect(describeZone('Africa/Monrovia', at('1972-01-07T00:44:30Z')).offset_sec).toBe(0);
    expect(describeZone('Africa/Monrovia', at('1972-01-07T00:44:29.999Z')).offset_sec).toBe(-2670);
  });

  it('equals the uncached answer over years of moments, in time order and shuffled', () => {
    const zones = [
      'Europe/Berlin',
      'Australia/Sydney',
      'America/Sao_Paulo',
      'Africa/Casablanca',
      'Asia/Gaza',
    ];
    const random = mulberry32(3);
    const moments: number[] = [];
    // every 7 h 13 min across 2014-2030, which steps over every transition of those years
    for (let t = Date.UTC(2014, 0, 1); t < Date.UTC(2030, 0, 1); t += 25_980_000) moments.push(t);
    // and moments in random order over two centuries, each in another window than the last
    for (let i = 0; i < 500; i++) moments.push(Date.UTC(1900, 0, 1) + random() * 200 * 365.25 * 86_400_000);
    const wrong: string[] = [];
    for (const zone of zones) {
      for (const t of moments) {
        const d = new Date(t);
        const cached = describeZone(zone, d);
        const fresh = describeZoneUncached(zone, d);
        if (JSON.stringify(cached) !== JSON.stringify(fresh)) wrong.push(`${zone} ${d.toISOString()}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('keeps the answers of an engine by zone index, the same as by name', () => {
    const answers = new ZoneAnswers(['Europe/Berlin', 'Australia/Sydney']);
    const d = at('2026-03-29T01:00:00Z');
    expect(answers.describe(0, d)).toEqual(describeZoneUncached('Europe/Berlin', d));
    expect(answers.describe(1, d)).toEqual(describeZoneUncached('Australia/Sydney', d));
    expect(answers.describe(0, at('2026-03-29T00:59:59.999Z'))).toEqual(BERLIN_CET);
    expect(answers.describe(2, d)).toBeUndefined();
    expect(answers.describe(-1, d)).toBeUndefined();
  });

  it('answers now by default, as the clock reads', () => {
    const before = Date.now();
    const r = describeZone('America/New_York');
    const after = Date.now();
    expect([
      describeZoneUncached('America/New_York', new Date(before)),
      describeZoneUncached('America/New_York', new Date(after)),
    ]).toContainEqual(r);
  });
});

describe('engine.timezone', () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await Engine.open();
  });
  afterAll(() => engine?.close());

  it('answers the zone of a point', () => {
    const r = engine.timezone({ lat: 52.52, lon: 13.405, at: WINTER });
    expect(r).toEqual({
      status: 'ok',
      timezone: { name: 'Europe/Berlin', short_name: 'CET', offset_sec: 3600, now_in_dst: 0 },
    });
    expect(engine.timezone({ lat: '40.7128', lon: '-74.006' })).toMatchObject({
      status: 'ok',
      timezone: { name: 'America/New_York' },
    });
  });

  it('answers both sides of a transition, alternating, through its cached answers', () => {
    const before = new Date('2026-03-29T00:59:59.999Z');
    const after = new Date('2026-03-29T01:00:00Z');
    for (let i = 0; i < 6; i++) {
      expect(engine.timezone({ lat: 52.52, lon: 13.405, at: before })).toMatchObject({
        timezone: { short_name: 'CET', offset_sec: 3600, now_in_dst: 0 },
      });
      expect(engine.timezone({ lat: 52.52, lon: 13.405, at: after })).toMatchObject({
        timezone: { short_name: 'CEST', offset_sec: 7200, now_in_dst: 1 },
      });
    }
    const sydney = { lat: -33.8688, lon: 151.2093 };
    expect(engine.timezone({ ...sydney, at: new Date('2026-04-04T15:59:59.999Z') })).toMatchObject({
      timezone: { name: 'Australia/Sydney', short_name: 'AEDT', offset_sec: 39600, now_in_dst: 1 },
    });
    expect(engine.timezone({ ...sydney, at: new Date('2026-04-04T16:00:00Z') })).toMatchObject({
      timezone: { short_name: 'AEST', offset_sec: 36000, now_in_dst: 0 },
    });
  });

  it('answers the nautical zone at sea', () => {
    const r = engine.timezone({ lat: 30, lon: -40, at: WINTER });
    expect(r).toEqual({
      status: 'ok',
      timezone: { name: 'Etc/GMT+3', short_name: '-03', offset_sec: -10800, now_in_dst: 0 },
    });
  });

  it.each([
    ['missing lat', { lon: 1 }],
    ['latitude out of range', { lat: 91, lon: 0 }],
    ['longitude out of range', { lat: 0, lon: -180.5 }],
    ['not a number', { lat: 'abc', lon: 1 }],
    ['an empty string', { lat: '', lon: 1 }],
  ])('refuses %s with INVALID_REQUEST', (_name, query) => {
    expect(engine.timezone(query as never)).toEqual({ status: 'error', message: 'INVALID_REQUEST' });
  });

  it('says UNKNOWN_ERROR when opened without timezone data', async () => {
    const e = await Engine.open({ timezones: false });
    e.prepareTimezones(); // nothing to prepare: no error either
    expect(e.timezone({ lat: 0, lon: 0 })).toEqual({ status: 'error', message: 'UNKNOWN_ERROR' });
    e.close();
  });

  it('answers the same after prepareTimezones built the cell tree ahead', async () => {
    const e = await Engine.open({ places: false, search: false });
    e.prepareTimezones();
    e.prepareTimezones(); // a second call builds nothing new
    for (const [lat, lon] of [
      [48.8566, 2.3522],
      [-33.8688, 151.2093],
      [0, -30],
    ] as const) {
      expect(e.timezone({ lat, lon })).toEqual(engine.timezone({ lat, lon }));
    }
    e.close();
    expect(() => e.prepareTimezones()).toThrow(/closed/);
  });
});

describe('whereabouts timezone', () => {
  it('prints the timezone of a point, negative coordinates included', () => {
    const r = cli(['timezone', '--lat', '-33.8688', '--lon', '151.2093']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'ok', timezone: { name: 'Australia/Sydney' } });
  });

  it('exits 1 with the error body for a bad coordinate, 2 without --lon', () => {
    const bad = cli(['timezone', '--lat', '100', '--lon', '0']);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout)).toEqual({ status: 'error', message: 'INVALID_REQUEST' });
    expect(cli(['timezone', '--lat', '1']).code).toBe(2);
  });
});

describe('GET /v2/timezone', () => {
  const server = serverForSuite();
  const { get } = server;

  it('answers with the timezone and the geocoding balance after the charge, at both paths', async () => {
    const token = server.tokens.create({ geocodingPerDay: 10 }).token;
    const r = await get(`/v2/timezone?token=${token}&lat=48.8566&lon=2.3522`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'ok', balance: 9, timezone: { name: 'Europe/Paris' } });
    expect(Object.keys(r.body.timezone as object).sort()).toEqual([
      'name',
      'now_in_dst',
      'offset_sec',
      'short_name',
    ]);
    const php = await get(`/v2/timezone.php?token=${token}&lat=35.6762&lon=139.6503`);
    expect(php.body).toMatchObject({
      status: 'ok',
      balance: 8,
      timezone: { name: 'Asia/Tokyo', short_name: 'JST' },
    });
    expect(server.tokens.balance(token, 'geocoding')).toBe(8);
  });

  it('refuses bad input with INVALID_REQUEST, HTTP 200, uncharged', async () => {
    const token = server.tokens.create({ geocodingPerDay: 10 }).token;
    for (const q of ['lat=1', 'lat=1&lon=x', 'lat=95&lon=0', 'lon=1&lat=']) {
      const r = await get(`/v2/timezone?token=${token}&${q}`);
      expect(r).toEqual({ status: 200, body: { status: 'error', message: 'INVALID_REQUEST' } });
    }
    expect(server.tokens.balance(token, 'geocoding')).toBe(10);
  });

  it('answers token errors with the 7.2 codes', async () => {
    expect((await get('/v2/timezone?lat=1&lon=1')).body).toEqual({
      status: 'error',
      message: 'INVALID_TOKEN',
    });
    expect((await get('/v2/timezone?token=nope&lat=1&lon=1')).body.message).toBe('INVALID_TOKEN');
    const revoked = server.tokens.create({}).token;
    server.tokens.revoke(revoked);
    expect((await get(`/v2/timezone?token=${revoked}&lat=1&lon=1`)).body.message).toBe('INACTIVE_TOKEN');
    const spent = server.tokens.create({ geocodingPerDay: 1 }).token;
    expect((await get(`/v2/timezone?token=${spent}&lat=1&lon=1`)).body.status).toBe('ok');
    expect((await get(`/v2/timezone?token=${spent}&lat=1&lon=1`)).body).toEqual({
      status: 'error',
      message: 'RATELIMITED_DAY',
    });
    const walled = server.tokens.create({ ips: ['10.9.9.9'] }).token;
    expect(await get(`/v2/timezone?token=${walled}&lat=1&lon=1`)).toEqual({
      status: 403,
      body: { status: 'error', message: 'ACCESS_RESTRICTED' },
    });
  });
});

describe('ZoneLookup (the cell tree answered in JavaScript)', () => {
  it('gives the core answer everywhere: random points, cell sides at every depth, the rims and bad input', () => {
    const handle = native().NativeEngine.open({ db: defaultDbDir, timezones: timezonesFile });
    const zones = new ZoneLookup(handle);
    const random = mulberry32(7);
    const points: [number, number][] = [];
    for (let i = 0; i < 20_000; i++) {
      points.push([Math.asin(2 * random() - 1) * (180 / Math.PI), random() * 360 - 180]);
    }
    // on and next to the sides of cells of every depth, where the cells must defer to the core
    const { topDepth, maxDepth, guard } = handle.timezoneCells(1, 1);
    expect(guard).toBeGreaterThan(0);
    for (let i = 0; i < 5_000; i++) {
      const n = 2 ** (8 + (i % 9));
      const x = Math.floor(random() * n);
      const y = Math.floor(random() * n);
      const lon = -179.9999 + (x * 359.9998) / n;
      const lat = 89.9999 - (y * 179.9998) / n;
      points.push([lat, lon], [lat - 1e-9, lon + 1e-9], [lat + 1e-7, lon - 1e-7]);
      points.push([lat - 1.5e-6, lon + 2.5e-6], [lat + 2.5e-6, lon - 1.5e-6], [lat - 3e-6, lon + 3e-6]);
    }
    expect([topDepth, maxDepth]).toEqual([1, 1]);
    points.push([90, 10], [-90, 0], [89.99995, 5], [0, 180], [0, -180], [0, 179.99995]);
    points.push([Number.NaN, 0], [0, Number.NaN], [91, 0], [0, 181]);
    for (const [lat, lon] of points) {
      expect(zones.indexAt(lat, lon), `${lat}, ${lon}`).toBe(handle.timezoneIndexAt(lat, lon));
    }
    // and few random points need the core at all
    let core = 0;
    const counting = new ZoneLookup({
      timezoneCells: (top, max) => handle.timezoneCells(top, max),
      timezoneNames: () => handle.timezoneNames(),
      timezoneIndexAt: (lat, lon) => {
        core++;
        return handle.timezoneIndexAt(lat, lon);
      },
    });
    for (const [lat, lon] of points.slice(0, 20_000)) counting.indexAt(lat, lon);
    expect(core).toBeLessThan(0.02 * 20_000);
    handle.close();
  });
});
