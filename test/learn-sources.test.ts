/**
 * Learning from hostile submitters (docs/security.md): one token's GPS submissions
 * neither move nor block a known cell nor change other tokens' answers; independent tokens
 * agreeing do move a station; an operator lists a token's contributions and takes them out.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { tokenHash } from '../src/observations/index.js';
import { cli, fixtureCell, fixtureDb, startTestServer, type TestServer } from './helpers.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Fix times start a day ago: the core reads a timestamp from the future as the receiving time. */
const T0 = Date.now() - 86_400_000;

async function post(body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${server?.base}/v2/process`, { method: 'POST', body: JSON.stringify(body) });
  return (await res.json()) as Record<string, unknown>;
}

/** Fixture cell 262/1/10/`cid` as a located question (its LAC area as the fallback). */
const ask = (token: string, cid: number) => post({ token, cells: [fixtureCell(cid)], address: 0 });

/** A free GPS submission (`geolocation: 0`) placing cell `cid` at (lat, lon) at `ms`. */
const submit = (token: string, cid: number, lat: number, lon: number, ms: number, id?: string) =>
  post({
    token,
    cells: [fixtureCell(cid)],
    gps: [{ lat, lon, accuracy: 10, timestamp: ms }],
    geolocation: 0,
    gps_sandbox: 0,
    ...(id === undefined ? {} : { id }),
  });

/** The station database directory of each test server. */
const dbDirs = new WeakMap<TestServer, string>();
const dbOf = (s: TestServer): string => dbDirs.get(s) ?? '';

async function learningServer(): Promise<TestServer> {
  const db = fixtureDb();
  server = await startTestServer({
    engine: { db, land: false, ipDatabases: false, compaction: false },
    learn: true,
  });
  dbDirs.set(server, db);
  return server;
}

describe('hostile GPS submissions', () => {
  it('30 submissions of one token placing a known cell in Sydney change no other token’s answer', async () => {
    const s = await learningServer();
    const honest = s.tokens.create({ geolocationPerDay: 1000 }).token;
    const attacker = s.tokens.create({ gps: true, geolocationPerDay: 1000 }).token;
    const before = await ask(honest, 1);
    expect(before).toMatchObject({ status: 'ok' });
    expect(before.fallback).toBeUndefined();

    for (let i = 0; i < 30; i++) {
      const r = await submit(attacker, 1, -33.8688, 151.2093, T0 + i * 60_000, `dev${i}`);
      expect(r.status).toBe('ok');
    }
    const after = await ask(honest, 1);
    expect(after).toEqual({ ...before, balance: (before.balance as number) - 1 });
    expect(s.engine.stats().overlayBlocked).toBe(0);

    // The operator sees the attacker quarantined, with its suspects held, and takes them out.
    const key = tokenHash(attacker).slice(0, 16);
    const listed = cli(['learn', '--db', dbOf(s), '--contributions', '--store', s.store]);
    expect(listed.code, listed.stderr).toBe(0);
    const entry = (JSON.parse(listed.stdout) as Record<string, unknown>[]).find((c) => c.token === key);
    expect(entry).toMatchObject({ quarantined: 'automatic', far: 30, sightings: 30, blocks: [] });
    expect(entry?.held).toBeGreaterThan(0);
    expect(entry?.held).toBeLessThanOrEqual(8);
    expect(entry?.masked).toBe(`${attacker.slice(0, 4)}…`);

    const reverted = cli([
      'learn',
      '--db',
      dbOf(s),
      '--revert-token',
      attacker,
      '--observations',
      `${s.store}/observations.sqlite`,
    ]);
    expect(reverted.code, reverted.stderr).toBe(0);
    expect(JSON.parse(reverted.stdout)).toMatchObject({ token: key, observationsDeleted: 30 });
    expect(s.observations.count()).toBe(0);
    const again = cli(['learn', '--db', dbOf(s), '--contributions', '--token', attacker]);
    expect(JSON.parse(again.stdout)).toEqual([]);
  });

  it('one token refining a known cell moves it by a bounded share, and reverting it restores the answer', async () => {
    const s = await learningServer();
    const honest = s.tokens.create({ geolocationPerDay: 1000 }).token;
    const attacker = s.tokens.create({ gps: true, geolocationPerDay: 1000 }).token;
    const before = await ask(honest, 1);
    // 4 km north: near enough to count as the cell's own coverage, not a move.
    for (let i = 0; i < 40; i++) await submit(attacker, 1, 52.536, 13.4, T0 + i * 60_000, `d${i % 5}`);
    const after = await ask(honest, 1);
    const shift = Math.abs((after.lat as number) - (before.lat as number)) * 111_200;
    // 10 samples against the database's 20: at most a third of the 4 km.
    expect(shift).toBeLessThan(1_400);
    const r = cli(['learn', '--db', dbOf(s), '--revert-token', tokenHash(attacker)]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ stations: 1 });
    s.engine.reload();
    const restored = await ask(honest, 1);
    expect(Math.abs((restored.lat as number) - (before.lat as number))).toBeLessThan(1e-5);
    // The store keeps ranges in 4 m steps, rounded up at every refinement: within a few percent.
    expect(Math.abs((restored.accuracy as number) - (before.accuracy as number))).toBeLessThan(
      0.05 * (before.accuracy as number),
    );
  });

  it('three independent tokens agreeing on a new place do move a cell', async () => {
    const s = await learningServer();
    const honest = s.tokens.create({ geolocationPerDay: 1000 }).token;
    const reporters = [0, 1, 2].map(() => s.tokens.create({ gps: true }).token);
    const before = await ask(honest, 2);
    expect(before.fallback).toBeUndefined();
    // Two of them, many times: not enough.
    for (let i = 0; i < 6; i++)
      for (const t of reporters.slice(0, 2)) await submit(t, 2, 52.7, 13.4 + i * 0.0005, T0 + i * 600_000);
    expect((await ask(honest, 2)).fallback).toBeUndefined();
    // The third agrees: moved, blocked; the answer falls back to the LAC area.
    await submit(reporters[2] as string, 2, 52.7005, 13.401, T0 + 7 * 600_000);
    expect(s.engine.stats().overlayBlocked).toBe(1);
    expect(await ask(honest, 2)).toMatchObject({ status: 'ok', fallback: 'lacf' });
  });
});

describe('Engine.learn (the operator’s own data)', () => {
  it('is trusted as one source: its own agreeing sightings move a station', async () => {
    const s = await learningServer();
    const at = (i: number) => ({
      cells: [fixtureCell(2)],
      gps: [{ lat: 52.7 + i * 0.0001, lon: 13.4, accuracy: 10, timestamp: T0 + i * 600_000 }],
    });
    const r = await s.engine.learn([at(0), at(1), at(2)]);
    expect(r).toMatchObject({ moved: 1, blocked: 1, capped: 0, quarantined: 0 });
  });
});
