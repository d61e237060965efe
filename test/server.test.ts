/**
 * The HTTP service (src/server): real sockets on port 0, the fixture station database, a
 * temporary token store with a clock the tests move.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/engine.js';
import { GeoMessage } from '../src/errors.js';
import type { ObservationStore } from '../src/observations/index.js';
import { buildServer } from '../src/server/app.js';
import { ServerMessage } from '../src/server/auth.js';
import type { TokenInput, TokenStore } from '../src/tokens/index.js';
import { fixtureCell, fixtureDb, startTestServer, type TestServer } from './helpers.js';

let db: string;
let engine: Engine;
let tokens: TokenStore;
let observations: ObservationStore;
let base: string;
/** The token store's clock: tests step it past rate-limit windows. */
let clock = Date.UTC(2030, 0, 1, 12, 0, 0);

/** A located request body for `token`. */
const located = (token: string, extra: Record<string, unknown> = {}) => ({
  token,
  cells: [fixtureCell(1)],
  address: 0,
  ...extra,
});

interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

async function call(path: string, init: RequestInit = {}): Promise<Answer> {
  const res = await fetch(`${base}${path}`, init);
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as Record<string, unknown>, headers: res.headers };
}

function post(body: unknown, options: { path?: string; headers?: Record<string, string> } = {}) {
  return call(options.path ?? '/v2/process', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...options.headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

function newToken(input: TokenInput = {}): string {
  return tokens.create({ geolocationPerDay: 100, ...input }).token;
}

const balanceOf = (token: string) => tokens.balance(token, 'geolocation');

let server: TestServer;

beforeAll(async () => {
  db = fixtureDb();
  server = await startTestServer({
    engine: { db, now: 1_700_000_000 },
    tokens: { now: () => clock, cacheMs: 0 },
    bodyLimit: 64 * 1024,
    server: { healthDetail: true },
  });
  ({ engine, tokens, observations, base } = server);
});

afterAll(() => server?.close());

describe('POST /v2/process', () => {
  it('answers a located request, with the balance after its charge', async () => {
    const token = newToken();
    const r = await post(located(token));
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(r.body).toMatchObject({ status: 'ok', balance: 99, lat: 52.5, lon: 13.4 });
    expect(balanceOf(token)).toBe(99);
  });

  it('charges each successful call exactly once, also at /v2/process.php', async () => {
    const token = newToken();
    for (let i = 1; i <= 3; i++) {
      const r = await post(located(token), { path: i === 2 ? '/v2/process.php' : '/v2/process' });
      expect(r.body.status).toBe('ok');
      expect(r.body.balance).toBe(100 - i);
      expect(balanceOf(token)).toBe(100 - i);
    }
  });

  it('charges concurrent calls once each', async () => {
    const token = newToken();
    const answers = await Promise.all(Array.from({ length: 40 }, () => post(located(token))));
    expect(answers.every((a) => a.body.status === 'ok')).toBe(true);
    expect(balanceOf(token)).toBe(60);
    const balances = answers.map((a) => a.body.balance as number).sort((a, b) => a - b);
    expect(balances).toEqual(Array.from({ length: 40 }, (_, i) => 60 + i));
  });

  it('accepts text/plain, form content types and none at all', async () => {
    const token = newToken();
    const body = JSON.stringify(located(token));
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', undefined]) {
      const res = await fetch(`${base}/v2/process`, {
        method: 'POST',
        body: new TextEncoder().encode(body),
        headers: type === undefined ? {} : { 'content-type': type },
      });
      expect(((await res.json()) as { status: string }).status).toBe('ok');
    }
    expect(balanceOf(token)).toBe(97);
  });

  it('refuses a missing or unknown token with the spec text, HTTP 200 and balance 0', async () => {
    for (const body of [
      { cells: [fixtureCell(1)] },
      located('no-such-token'),
      { token: '', cells: [fixtureCell(1)] },
    ]) {
      const r = await post(body);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ status: 'error', message: GeoMessage.invalidToken, balance: 0 });
    }
    // Authentication comes before parsing errors.
    const r = await post({ token: 'no-such-token', cells: [{ radio: 'gsm' }] });
    expect(r.body.message).toBe(GeoMessage.invalidToken);
  });

  it('refuses a revoked token with the invalid-token text and charges nothing', async () => {
    const token = newToken();
    tokens.revoke(token);
    const r = await post(located(token));
    expect(r.body).toEqual({ status: 'error', message: GeoMessage.invalidToken, balance: 0 });
  });

  it.each([
    ['leading zero', (t: string) => `{"token":"${t}","mcc":0262,"cells":[]}`, GeoMessage.invalidRequest],
    ['broken JSON', (t: string) => `{"token":"${t}",`, GeoMessage.invalidRequest],
    ['a JSON array', () => '[1,2]', GeoMessage.invalidRequest],
    [
      'no cid',
      (t: string) => ({ token: t, cells: [{ radio: 'gsm', mcc: 262, mnc: 1, lac: 1 }] }),
      GeoMessage.noCellId,
    ],
    [
      'no lac',
      (t: string) => ({ token: t, cells: [{ radio: 'gsm', mcc: 262, mnc: 1, cid: 1 }] }),
      GeoMessage.noLac,
    ],
    [
      'no mcc',
      (t: string) => ({ token: t, cells: [{ radio: 'gsm', mnc: 1, lac: 1, cid: 1 }] }),
      GeoMessage.noCountryCode,
    ],
    ['no data', (t: string) => ({ token: t }), GeoMessage.noNetworkData],
    ['bad lac/cid', (t: string) => ({ token: t, cells: [fixtureCell(99_999_999)] }), GeoMessage.noValidCells],
    ['bad mnc', (t: string) => ({ token: t, cells: [fixtureCell(1, { mnc: 5000 })] }), GeoMessage.invalidMnc],
    ['bad mcc', (t: string) => ({ token: t, cells: [fixtureCell(1, { mcc: 5000 })] }), GeoMessage.invalidMcc],
    ['wrong type', (t: string) => ({ token: t, cells: 'gsm' }), GeoMessage.invalidRequest],
    [
      'no match',
      (t: string) => ({ token: t, cells: [fixtureCell(5, { lac: 4444 })], fallbacks: { all: 0 } }),
      GeoMessage.noMatches,
    ],
  ])('answers %s with its spec 7.1 error, the balance, and no charge', async (_name, make, message) => {
    const token = newToken();
    await post(located(token));
    const body = make(token);
    const r = await post(body);
    expect(r.status).toBe(200);
    // A body that names no token cannot report a balance.
    expect(r.body).toEqual({ status: 'error', message, balance: body === '[1,2]' ? 0 : 99 });
    expect(balanceOf(token)).toBe(99);
  });

  it('never charges geolocation: 0', async () => {
    const token = newToken();
    const r = await post(located(token, { geolocation: 0 }));
    expect(r.body).toEqual({ status: 'ok', balance: 100 });
    expect(balanceOf(token)).toBe(100);
  });

  it('says the balance is over once the day is used up, and charges nothing more', async () => {
    const token = newToken({ geolocationPerDay: 2 });
    expect((await post(located(token))).body.balance).toBe(1);
    expect((await post(located(token))).body.balance).toBe(0);
    const r = await post(located(token));
    expect(r.body).toEqual({ status: 'error', message: GeoMessage.balanceOver, balance: 0 });
    // A new UTC day brings the balance back.
    clock += 24 * 3600 * 1000;
    expect((await post(located(token))).body).toMatchObject({ status: 'ok', balance: 1 });
  });

  it('applies the per-second and per-minute limits without charging the refused calls', async () => {
    clock = Math.ceil(clock / 60_000) * 60_000;
    const token = newToken({ perSecond: 1, perMinute: 2 });
    expect((await post(located(token))).body.status).toBe('ok');
    const second = await post(located(token));
    expect(second.body).toEqual({ status: 'error', message: ServerMessage.rateLimitedSecond, balance: 99 });
    expect(second.headers.get('retry-after')).toBe('1');
    clock += 1000;
    expect((await post(located(token))).body.status).toBe('ok');
    clock += 1000;
    const minute = await post(located(token));
    expect(minute.body).toEqual({ status: 'error', message: ServerMessage.rateLimitedMinute, balance: 98 });
    expect(balanceOf(token)).toBe(98);
  });

  it('refuses a referrer that no pattern matches, and charges nothing', async () => {
    const token = newToken({ referrers: ['https://example.com/*', '*.example.org/'] });
    const refused = { status: 'error', message: ServerMessage.referrerRefused, balance: 0 };
    expect((await post(located(token))).body).toEqual(refused);
    expect((await post(located(token), { headers: { referer: 'https://evil.com/' } })).body).toEqual(refused);
    expect((await post(located(token), { headers: { referer: 'https://EXAMPLE.com/x' } })).body).toEqual(
      refused,
    );
    expect(balanceOf(token)).toBe(100);
    const ok = await post(located(token), { headers: { referer: 'https://example.com/map' } });
    expect(ok.body.status).toBe('ok');
    const suffix = await post(located(token), { headers: { referer: 'https://www.example.org/' } });
    expect(suffix.body.status).toBe('ok');
  });

  it('refuses callers outside the IP restrictions, and charges nothing', async () => {
    const outside = newToken({ ips: ['10.0.0.0/8', '2001:db8::/32'] });
    const r = await post(located(outside));
    expect(r.body).toEqual({ status: 'error', message: ServerMessage.ipRefused, balance: 0 });
    expect(balanceOf(outside)).toBe(100);
    const inside = newToken({ ips: ['127.0.0.0/8'] });
    expect((await post(located(inside))).body.status).toBe('ok');
  });

  it('gives device plans balance_slots, and -1 with an error when no slot is free', async () => {
    const token = newToken({ slots: 1 });
    const first = await post(located(token, { id: 'Dev1' }));
    expect(first.body).toMatchObject({ status: 'ok', balance: 99, balance_slots: 0 });
    const again = await post(located(token, { id: 'dev1' }));
    expect(again.body).toMatchObject({ status: 'ok', balance: 98, balance_slots: 0 });
    const other = await post(located(token, { id: 'dev2' }));
    expect(other.body).toEqual({
      status: 'error',
      message: ServerMessage.slots,
      balance: 98,
      balance_slots: -1,
    });
    expect(balanceOf(token)).toBe(98);
  });

  it('uses the caller address for ipf when the request has no ip (spec 2.2)', async () => {
    const token = newToken();
    const body = { token, fallbacks: { ipf: 1 }, address: 0 };
    // Loopback cannot be located: the default took the caller's address, not something else.
    const own = await post(body);
    expect(own.body).toEqual({ status: 'error', message: GeoMessage.noMatches, balance: 100 });
    const given = await post({ ...body, ip: '8.8.8.8' });
    if (engine.stats().hasIp)
      expect(given.body).toMatchObject({ status: 'ok', fallback: 'ipf', balance: 99 });
  });

  it('adds an empty metadata object when metadata is 1 and no GPS was sent', async () => {
    const token = newToken();
    const r = await post(located(token, { metadata: 1 }));
    expect(r.body).toMatchObject({ status: 'ok', metadata: {} });
  });

  it('returns 404 as JSON for unknown paths and methods', async () => {
    const r = await call('/v2/nothing');
    expect(r.status).toBe(404);
    expect(r.body.status).toBe('error');
    const g = await call('/v2/process');
    expect(g.status).toBe(404);
    expect(g.body.status).toBe('error');
  });

  it('gives each response a request id, taking the caller’s X-Request-Id', async () => {
    const r = await post(located(newToken()), { headers: { 'x-request-id': 'abc-123' } });
    expect(r.headers.get('x-request-id')).toBe('abc-123');
    const s = await post(located(newToken()));
    expect(s.headers.get('x-request-id')).toMatch(/.+-.+/);
  });
});

describe('GPS submissions (spec 2.5)', () => {
  const fix = { source: 'gps', lat: 52.5, lon: 13.4, accuracy: 5, heading: 90, timestamp: 1_700_000_000_000 };

  it('refuses GPS from a token without the feature, and charges nothing', async () => {
    const token = newToken();
    const r = await post(located(token, { gps: [fix] }));
    expect(r.body).toEqual({ status: 'error', message: ServerMessage.gpsNotEnabled, balance: 100 });
  });

  it('validates only in the sandbox (the default), storing nothing', async () => {
    const token = newToken({ gps: true });
    const before = observations.count();
    const r = await post(located(token, { gps: [fix], metadata: 1 }));
    expect(r.body).toMatchObject({
      status: 'ok',
      balance: 99,
      metadata: { gps: { status: 'ok', gps_sandbox: 1 } },
    });
    expect(observations.count()).toBe(before);
  });

  it('stores the observation durably with gps_sandbox: 0, also with geolocation: 0 (not charged)', async () => {
    const token = newToken({ gps: true });
    const before = observations.count();
    const r = await post(located(token, { gps: [fix, fix], gps_sandbox: 0, metadata: 1, id: 'car7' }));
    expect(r.body).toMatchObject({ status: 'ok', metadata: { gps: { status: 'ok', gps_sandbox: 0 } } });
    expect(observations.count()).toBe(before + 1);
    const only = await post({ token, gps: [fix], gps_sandbox: 0, geolocation: 0, fallbacks: { ipf: 1 } });
    expect(only.body).toEqual({ status: 'ok', balance: 99 });
    expect(observations.count()).toBe(before + 2);
    expect(balanceOf(token)).toBe(99);
  });

  it('answers invalid GPS fixes with Invalid request and stores nothing', async () => {
    const token = newToken({ gps: true });
    const before = observations.count();
    for (const bad of [{ ...fix, lat: 91 }, { ...fix, heading: 361 }, { lon: 1 }, { ...fix, accuracy: -1 }]) {
      const r = await post(located(token, { gps: [bad], gps_sandbox: 0 }));
      expect(r.body).toEqual({ status: 'error', message: GeoMessage.invalidRequest, balance: 100 });
    }
    expect(observations.count()).toBe(before);
  });
});

describe('GET /v2/balance', () => {
  it('answers the balances (spec 2.11), also at /v2/balance.php', async () => {
    const token = tokens.create({ geolocationPerDay: 50, geocodingPerDay: 7 }).token;
    await post(located(token));
    const r = await call(`/v2/balance?token=${encodeURIComponent(token)}`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ status: 'ok', balance_geolocation: 49, balance_geocoding: 7 });
    clock += 1000;
    const php = await call(`/v2/balance.php?token=${encodeURIComponent(token)}`);
    expect(php.body).toEqual({ status: 'ok', balance_geolocation: 49, balance_geocoding: 7 });
  });

  it('allows one request per second per token (RATELIMITED_SECOND)', async () => {
    const token = newToken();
    clock += 1000;
    expect((await call(`/v2/balance?token=${token}`)).body.status).toBe('ok');
    const limited = await call(`/v2/balance?token=${token}`);
    expect(limited.body).toEqual({ status: 'error', message: 'RATELIMITED_SECOND' });
    expect(limited.status).toBe(200);
    // Another token has its own second.
    expect((await call(`/v2/balance?token=${newToken()}`)).body.status).toBe('ok');
    clock += 1000;
    expect((await call(`/v2/balance?token=${token}`)).body.status).toBe('ok');
  });

  it('answers INVALID_TOKEN and INACTIVE_TOKEN', async () => {
    expect((await call('/v2/balance')).body).toEqual({ status: 'error', message: 'INVALID_TOKEN' });
    expect((await call('/v2/balance?token=nope')).body).toEqual({
      status: 'error',
      message: 'INVALID_TOKEN',
    });
    const token = newToken();
    tokens.revoke(token);
    expect((await call(`/v2/balance?token=${token}`)).body).toEqual({
      status: 'error',
      message: 'INACTIVE_TOKEN',
    });
  });

  it('answers ACCESS_RESTRICTED (HTTP 403) outside the IP restrictions', async () => {
    const token = newToken({ ips: ['192.0.2.1'] });
    const r = await call(`/v2/balance?token=${token}`);
    expect(r.status).toBe(403);
    expect(r.body).toEqual({ status: 'error', message: 'ACCESS_RESTRICTED' });
  });
});

describe('HTTP plumbing', () => {
  it('answers CORS preflights and marks responses for any origin', async () => {
    const res = await fetch(`${base}/v2/process`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-methods')).toContain('POST');
    expect(res.headers.get('access-control-allow-headers')).toContain('content-type');
    const r = await post(located(newToken()), { headers: { origin: 'https://app.example' } });
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('answers a body over the limit with HTTP 413 and a JSON error, charging nothing', async () => {
    const token = newToken();
    const huge = JSON.stringify({ ...located(token), pad: 'x'.repeat(100 * 1024) });
    const r = await post(huge);
    expect(r.status).toBe(413);
    expect(r.body).toEqual({ status: 'error', message: ServerMessage.bodyTooLarge, balance: 0 });
    expect(balanceOf(token)).toBe(100);
  });

  it('reports health with database statistics', async () => {
    const r = await call('/health');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'ok', db: { cells: expect.any(Number) } });
    expect(r.body.observations).toEqual(expect.any(Number));
  });

  it('answers server-side failures with HTTP 500 and UNKNOWN_ERROR, charging nothing', async () => {
    // the methods the server calls (a stale name here would fail as a TypeError, passing for
    // the wrong reason)
    const broken = {
      locateParsed: () => Promise.reject(new Error('boom')),
      stats: () => {
        throw new Error('boom');
      },
    } as unknown as Engine;
    const failingTokens = Object.create(tokens, {
      hit: { value: () => Promise.reject(new Error('disk full')) },
    }) as TokenStore;
    const other = buildServer({ engine: broken, tokens: failingTokens, observations });
    try {
      const token = newToken();
      const p = await other.inject({
        method: 'POST',
        url: '/v2/process',
        payload: JSON.stringify(located(token)),
      });
      expect(p.statusCode).toBe(500);
      expect(p.json()).toEqual({ status: 'error', message: ServerMessage.unknownError, balance: 0 });
      expect(balanceOf(token)).toBe(100);
      const b = await other.inject({ method: 'GET', url: `/v2/balance?token=${token}` });
      expect(b.statusCode).toBe(500);
      expect(b.json()).toEqual({ status: 'error', message: 'UNKNOWN_ERROR' });
      const h = await other.inject({ method: 'GET', url: '/health' });
      expect(h.statusCode).toBe(503);
    } finally {
      await other.close();
    }
  });
});
