/**
 * Every call that does work counts against its token's per-second and per-minute limits,
 * billed or not, and a token with no balance left is refused before any work: searches that
 * match nothing, `geolocation: 0` submissions, unlocated `/process` calls.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GeoMessage } from '../src/errors.js';
import { ServerMessage } from '../src/server/auth.js';
import { fixtureCell, fixtureDb, startTestServer, type TestServer } from './helpers.js';

/** The token store's clock, held still so that concurrent calls share one rate window. */
let clock = Date.UTC(2030, 0, 1, 12, 0, 0, 500);
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    engine: { db: fixtureDb(), land: false, ipDatabases: false },
    tokens: { cacheMs: 0, now: () => clock },
  });
});
afterAll(() => server?.close());

const nothing = (token: string) => `/v2/search?token=${token}&q=${encodeURIComponent('zzqxv nowhere qqq')}`;

async function post(body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${server.base}/v2/process`, { method: 'POST', body: JSON.stringify(body) });
  return (await res.json()) as Record<string, unknown>;
}

const count = (bodies: Record<string, unknown>[], message: string) =>
  bodies.filter((b) => b.message === message).length;

describe('limits on unbilled work', () => {
  it('60 concurrent searches that match nothing: 5 run under --per-second 5, the rest are RATELIMITED_SECOND', async () => {
    clock += 1000;
    const token = server.tokens.create({ perSecond: 5 }).token;
    const answers = await Promise.all(Array.from({ length: 60 }, () => server.get(nothing(token))));
    const bodies = answers.map((a) => a.body);
    expect(count(bodies, 'NO_MATCHES')).toBe(5);
    expect(count(bodies, 'RATELIMITED_SECOND')).toBe(55);
    expect(answers.every((a) => a.status === 200)).toBe(true);
    // Nothing was charged: no match is no answer.
    expect(server.tokens.balance(token, 'geocoding')).toBe(5000);
    // The next second admits again.
    clock += 1000;
    expect((await server.get(nothing(token))).body).toEqual({ status: 'error', message: 'NO_MATCHES' });
  });

  it('counts unbilled searches against the per-minute limit too', async () => {
    clock = Math.ceil(clock / 60_000) * 60_000 + 100;
    const token = server.tokens.create({ perMinute: 3 }).token;
    for (let i = 0; i < 3; i++) {
      clock += 1000;
      expect((await server.get(nothing(token))).body.message).toBe('NO_MATCHES');
    }
    clock += 1000;
    expect((await server.get(nothing(token))).body).toEqual({
      status: 'error',
      message: 'RATELIMITED_MINUTE',
    });
  });

  it('a token with no geocoding balance gets RATELIMITED_DAY before a search that would match nothing', async () => {
    const token = server.tokens.create({ geocodingPerDay: 0 }).token;
    expect((await server.get(nothing(token))).body).toEqual({ status: 'error', message: 'RATELIMITED_DAY' });
    expect((await server.get(`/v2/search?token=${token}&q=Munich`)).body).toEqual({
      status: 'error',
      message: 'RATELIMITED_DAY',
    });
  });

  it('20 concurrent geolocation: 0 submissions under --per-second 5: 5 run, 15 are refused', async () => {
    clock += 1000;
    const token = server.tokens.create({ perSecond: 5, gps: true }).token;
    const body = {
      token,
      cells: [fixtureCell(1)],
      gps: [{ lat: 52.5, lon: 13.4, accuracy: 10 }],
      geolocation: 0,
      gps_sandbox: 1,
    };
    const bodies = await Promise.all(Array.from({ length: 20 }, () => post(body)));
    expect(bodies.filter((b) => b.status === 'ok')).toHaveLength(5);
    const refused = bodies.filter((b) => b.status === 'error');
    expect(refused).toHaveLength(15);
    for (const r of refused)
      expect(r).toEqual({ status: 'error', message: ServerMessage.rateLimitedSecond, balance: 10_000 });
    expect(server.tokens.balance(token, 'geolocation')).toBe(10_000);
  });

  it('geolocation: 0 from a token with no balance left gets the balance error, not its balance', async () => {
    const token = server.tokens.create({ geolocationPerDay: 0, gps: true }).token;
    const r = await post({ token, cells: [fixtureCell(1)], geolocation: 0 });
    expect(r).toEqual({ status: 'error', message: GeoMessage.balanceOver, balance: 0 });
  });

  it('unlocated /process calls count against the per-second limit, and located ones are charged once', async () => {
    clock += 1000;
    const token = server.tokens.create({ perSecond: 3 }).token;
    const unknown = { token, cells: [fixtureCell(9_999)], fallbacks: { lacf: 0, ipf: 0 }, address: 0 };
    const bodies = await Promise.all(Array.from({ length: 10 }, () => post(unknown)));
    expect(count(bodies, GeoMessage.noMatches)).toBe(3);
    expect(count(bodies, ServerMessage.rateLimitedSecond)).toBe(7);
    clock += 1000;
    const located = await post({ token, cells: [fixtureCell(1)], address: 0 });
    expect(located).toMatchObject({ status: 'ok', balance: 9_999 });
    expect(server.tokens.balance(token, 'geolocation')).toBe(9_999);
  });

  it('a body that fails validation still reports the balance only within the limits', async () => {
    clock += 1000;
    const token = server.tokens.create({ perSecond: 2 }).token;
    const bad = { token, cells: [{ radio: 'gsm', mcc: 262, mnc: 1, lac: 10 }] };
    const bodies = await Promise.all(Array.from({ length: 5 }, () => post(bad)));
    const parsed = bodies.filter((b) => b.message !== ServerMessage.rateLimitedSecond);
    expect(parsed).toHaveLength(2);
    for (const b of parsed) expect(b).toEqual({ status: 'error', message: b.message, balance: 10_000 });
    expect(count(bodies, ServerMessage.rateLimitedSecond)).toBe(3);
  });

  it('sync pages count against the per-second limit too', async () => {
    clock += 1000;
    const token = server.tokens.create({ perSecond: 1, scopes: ['sync'] }).token;
    const first = await fetch(`${server.base}/v2/sync?token=${token}&since=0`);
    expect(first.status).toBe(200);
    await first.arrayBuffer();
    const second = await server.get(`/v2/sync?token=${token}&since=0`);
    expect(second.body).toEqual({ status: 'error', message: 'RATELIMITED_SECOND' });
  });
});
