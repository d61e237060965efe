/**
 * Live learning through the library and the server: learned stations answer the very next
 * request, compaction runs in the background while requests keep being answered, and
 * `reload` switches to a generation written by another process.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../src/engine.js';
import { cli, fixtureDb, startTestServer, type TestServer } from './helpers.js';

const opened: { close(): unknown }[] = [];
afterEach(async () => {
  for (const o of opened.splice(0)) await o.close();
});

async function openEngine(db: string, compaction?: { stations?: number } | false): Promise<Engine> {
  const engine = await Engine.open({ db, land: false, ipDatabases: false, compaction });
  opened.push(engine);
  return engine;
}

/** A GSM cell of the fixture network that the fixture database does not hold. */
const unknownCell = (cid: number) => ({ radio: 'gsm', mcc: 262, mnc: 1, lac: 10, cid });
const ask = (cid: number) => ({ cells: [unknownCell(cid)], fallbacks: { lacf: 0, ipf: 0 }, address: 0 });
const sighting = (cid: number, lat: number, lon: number, extra: Record<string, unknown> = {}) => ({
  cells: [unknownCell(cid)],
  gps: [{ lat, lon, accuracy: 10, timestamp: 1_790_000_000_000 }],
  ...extra,
});

describe('Engine.learn', () => {
  it('answers the very next request from a learned cell', async () => {
    const engine = await openEngine(fixtureDb());
    expect(engine.process(ask(500))).toEqual({ status: 'error', message: 'No matches found' });

    const r = await engine.learn([sighting(500, 52.45, 13.35), { cells: [unknownCell(501)] }, 'nonsense']);
    expect(r.accepted).toBe(1);
    expect(r.rejected.map((x) => x.index)).toEqual([1, 2]);
    expect(r).toMatchObject({ observations: 1, added: 1 });

    const res = engine.process(ask(500));
    expect(res.status).toBe('ok');
    expect(Math.abs((res.lat as number) - 52.45)).toBeLessThan(0.0005);
    expect(Math.abs((res.lon as number) - 13.35)).toBeLessThan(0.0005);
    expect(engine.stats()).toMatchObject({ overlayCells: 1, overlayWifi: 0, compacting: false });
  });

  it('never learns an access point whose network opted out (_nomap)', async () => {
    const engine = await openEngine(fixtureDb());
    const wifi = [
      { bssid: '02:00:00:00:00:00', signal: -60 }, // locally administered: never usable
      { bssid: '10:11:22:33:44:01', signal: -60 },
      { bssid: '10:11:22:33:44:02', signal: -62 },
      { bssid: '10:11:22:33:44:03', signal: -64, ssid: 'Home_nomap' },
    ];
    await engine.learn([sighting(600, 52.45, 13.35, { wifi })]);
    expect(engine.stats()).toMatchObject({ overlayCells: 1, overlayWifi: 2 });
  });

  it('closes while a learning batch or a compaction is still running, which then finishes', async () => {
    const engine = await Engine.open({ db: fixtureDb(), land: false, ipDatabases: false });
    const learning = engine.learn([sighting(550, 52.45, 13.35)]);
    engine.close();
    await expect(learning).resolves.toMatchObject({ added: 1 });
    expect(() => engine.process(ask(550))).toThrow(/closed/);
    const other = await Engine.open({ db: fixtureDb(), land: false, ipDatabases: false });
    await other.learn([sighting(551, 52.45, 13.35)]);
    const compaction = other.compact();
    other.close();
    await expect(compaction).resolves.toMatchObject({ folded: 1 });
  });

  it('rejects learning without a database directory', async () => {
    const engine = await Engine.open({ land: false, ipDatabases: false });
    opened.push(engine);
    await expect(engine.learn([sighting(500, 52.45, 13.35)])).rejects.toThrow(/database directory/);
  });
});

describe('compaction', () => {
  it('folds the overlay in the background while requests keep being answered', async () => {
    const db = fixtureDb();
    const engine = await openEngine(db, { stations: 3 });
    const before = engine.stats().generation;
    await engine.learn([sighting(700, 52.45, 13.35), sighting(701, 52.46, 13.36)]);
    expect(engine.stats().generation).toBe(before);
    // The third station passes the threshold: the core starts a compaction on its own thread.
    await engine.learn([sighting(702, 52.47, 13.37)]);
    const deadline = Date.now() + 20_000;
    // Asked at least once right after the compaction started (it may finish before a first
    // check of a plain while loop: a fast machine did), then until it has finished.
    do {
      if (Date.now() > deadline) throw new Error('the compaction did not finish');
      for (const cid of [700, 701, 702]) expect(engine.process(ask(cid)).status).toBe('ok');
      await new Promise((r) => setTimeout(r, 1));
    } while (engine.stats().generation === before || engine.stats().compacting);
    const stats = engine.stats();
    expect(stats).toMatchObject({ generation: before + 1, overlayCells: 0, lastCompactionError: null });
    expect(stats.lastCompaction).toBeGreaterThan(0);
    for (const cid of [700, 701, 702]) expect(engine.process(ask(cid)).status).toBe('ok');

    // A fresh engine reads the learned cells from the new generation alone.
    const again = await openEngine(db);
    expect(again.stats().overlayCells).toBe(0);
    expect(again.process(ask(701)).status).toBe('ok');
  });

  it('engine.compact and `whereabouts compact` fold on request', async () => {
    const db = fixtureDb();
    const engine = await openEngine(db, false);
    await engine.learn([sighting(800, 52.45, 13.35)]);
    const r = await engine.compact();
    expect(r).toMatchObject({ generation: 2, folded: 1 });
    await engine.learn([sighting(801, 52.45, 13.35)]);
    const run = cli(['compact', '--db', db]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ generation: 3, folded: 1 });
    engine.reload();
    expect(engine.stats()).toMatchObject({ generation: 3, overlayCells: 0 });
    expect(engine.process(ask(801)).status).toBe('ok');
  });
});

describe('Engine.reload', () => {
  it('switches to a generation written by an external import', async () => {
    const db = fixtureDb();
    const engine = await openEngine(db);
    expect(engine.process(ask(900)).status).toBe('error');
    const csv = join(db, '..', 'more.csv');
    writeFileSync(
      csv,
      'radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal\n' +
        'GSM,262,1,10,900,,13.300000,52.400000,1000,20,1,1600000000,1700000000,0\n',
    );
    const r = cli(['import', '--quiet', '--db', db, csv]);
    expect(r.code, r.stderr).toBe(0);
    expect(engine.process(ask(900)).status).toBe('error');
    engine.reload();
    const res = engine.process(ask(900));
    expect(res).toMatchObject({ status: 'ok' });
    expect(Math.abs((res.lat as number) - 52.4)).toBeLessThan(0.0005);
    expect(engine.process(ask(1)).status).toBe('ok'); // the stations already there stay
  });
});

describe('server', () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('a /process with gps teaches the running engine the next request uses', async () => {
    server = await startTestServer({
      engine: { db: fixtureDb(), land: false, ipDatabases: false },
      learn: true,
    });
    const token = server.tokens.create({ geolocationPerDay: 100, gps: true }).token;
    const post = async (body: unknown) => {
      const res = await fetch(`${server?.base}/v2/process`, { method: 'POST', body: JSON.stringify(body) });
      return (await res.json()) as Record<string, unknown>;
    };
    expect(await post({ token, ...ask(1000) })).toMatchObject({
      status: 'error',
      message: 'No matches found',
    });
    const sent = await post({
      token,
      ...sighting(1000, 52.41, 13.31),
      gps_sandbox: 0,
      geolocation: 0,
      metadata: 1,
    });
    expect(sent).toMatchObject({ status: 'ok', metadata: { gps: { status: 'ok', gps_sandbox: 0 } } });
    const res = await post({ token, ...ask(1000) });
    expect(res).toMatchObject({ status: 'ok' });
    expect(Math.abs((res.lat as number) - 52.41)).toBeLessThan(0.0005);
    // Sandbox submissions teach nothing.
    await post({ token, ...sighting(1001, 52.41, 13.31), gps_sandbox: 1, geolocation: 0 });
    expect((await post({ token, ...ask(1001) })).status).toBe('error');
    expect(server.observations.count()).toBe(1);

    // An access point whose network opted out is neither stored nor learned.
    const wifi = [
      { bssid: '10:11:22:33:44:01', signal: -60 },
      { bssid: '10:11:22:33:44:02', signal: -62 },
      { bssid: '10:11:22:33:44:03', signal: -64, ssid: 'Cafe_nomap' },
    ];
    await post({ token, ...sighting(1002, 52.41, 13.31, { wifi }), gps_sandbox: 0, geolocation: 0 });
    expect(server.engine.stats()).toMatchObject({ overlayCells: 2, overlayWifi: 2 });
    const stored = new Database(join(server.store, 'observations.sqlite'), { readonly: true });
    const rows = stored.prepare('SELECT wifi FROM observations ORDER BY id').all() as { wifi: string }[];
    stored.close();
    expect(JSON.parse(rows[1]?.wifi ?? '[]')).toHaveLength(2);
  });
});
