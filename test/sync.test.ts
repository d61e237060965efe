/**
 * Database sync on loopback: export downloads (resume, Range ignored, a file changed between
 * attempts, damaged gzip, wrong SHA-256, HTTP errors), `GET /v2/sync` between two Whereabouts
 * servers with and without the `sync` scope, and the engine's background scheduler.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.js';
import { Engine } from '../src/engine.js';
import { native } from '../src/native/binding.js';
import { syncDatabase } from '../src/sync/run.js';
import { readSyncState } from '../src/sync/state.js';
import {
  cli,
  fixtureDb,
  LEVEL_DRIVE_CELL,
  levelDriveCsv,
  MAST_WALK,
  mastWalkCsv,
  metresNearMastWalk,
  startTestServer,
  type TestServer,
} from './helpers.js';
import { tempDir } from './temp-dirs.js';

const HEADER = 'radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal';
const DAY = 86_400;

/** An export of `n` LTE cells in mcc 262 mnc 7 lac `lac`, updated at `updated`. */
function exportCsv(n: number, lac: number, updated = 1_700_000_000): string {
  const rows = [HEADER];
  for (let i = 0; i < n; i++) {
    const lat = (52.4 + (i % 100) * 0.001).toFixed(6);
    const lon = (13.3 + Math.floor(i / 100) * 0.001).toFixed(6);
    rows.push(`LTE,262,7,${lac},${100_000 + i},,${lon},${lat},800,4,1,1600000000,${updated},0`);
  }
  return `${rows.join('\n')}\n`;
}

const newDir = () => join(tempDir('wb-sync-'), 'db');
const cellsOf = (db: string) => {
  const e = native().NativeEngine.open({ db });
  try {
    return e.stats().cells;
  } finally {
    e.close();
  }
};
const generationOf = (db: string) =>
  (JSON.parse(readFileSync(join(db, 'manifest.json'), 'utf8')) as { generation: number }).generation;

/** A plain file server with ETag, Last-Modified and Range, and knobs to misbehave. */
class FileServer {
  files = new Map<string, { body: Buffer; etag: string; lastModified: string }>();
  /** Cut the connection after this many body bytes of the next full or ranged response. */
  cutNextAfter: number | undefined;
  /** Send this many body bytes of the next response, then nothing, without closing. */
  stallNextAfter: number | undefined;
  ignoreRange = false;
  /** Forced statuses by path. */
  status = new Map<string, number>();
  requests: { path: string; range?: string; ifRange?: string; ifNoneMatch?: string }[] = [];
  #server: Server | undefined;
  base = '';

  put(path: string, body: Buffer, version: number): void {
    this.files.set(path, {
      body,
      etag: `"v${version}-${body.length}"`,
      lastModified: new Date(1_700_000_000_000 + version * 1000).toUTCString(),
    });
  }

  async start(): Promise<void> {
    this.#server = createServer((req, res) => this.#handle(req, res));
    await new Promise<void>((r) => this.#server?.listen(0, '127.0.0.1', r));
    this.base = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise((r) => this.#server?.close(r));
  }

  #handle(req: IncomingMessage, res: import('node:http').ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0] as string;
    const h = (n: string) => req.headers[n] as string | undefined;
    this.requests.push({ path, range: h('range'), ifRange: h('if-range'), ifNoneMatch: h('if-none-match') });
    const forced = this.status.get(path);
    const file = this.files.get(path);
    if (forced !== undefined || !file) {
      res.writeHead(forced ?? 404).end('no');
      return;
    }
    const headers = { etag: file.etag, 'last-modified': file.lastModified, 'accept-ranges': 'bytes' };
    if (h('if-none-match') === file.etag) {
      res.writeHead(304, headers).end();
      return;
    }
    let start = 0;
    let status = 200;
    const range = /^bytes=(\d+)-$/.exec(h('range') ?? '');
    const ifRange = h('if-range');
    if (range && !this.ignoreRange && (ifRange === undefined || ifRange === file.etag)) {
      start = Number(range[1]);
      status = 206;
    }
    const body = file.body.subarray(start);
    res.writeHead(status, {
      ...headers,
      'content-length': body.length,
      ...(status === 206
        ? { 'content-range': `bytes ${start}-${file.body.length - 1}/${file.body.length}` }
        : {}),
    });
    if (this.stallNextAfter !== undefined) {
      res.write(body.subarray(0, this.stallNextAfter));
      this.stallNextAfter = undefined;
      return;
    }
    const cut = this.cutNextAfter;
    if (cut !== undefined) {
      this.cutNextAfter = undefined;
      // the pause lets the client store what came before the cut
      res.write(body.subarray(0, cut), () => setTimeout(() => res.destroy(), 300));
      return;
    }
    res.end(body);
  }
}

describe('whereabouts sync from an export', () => {
  const server = new FileServer();
  const big = gzipSync(exportCsv(3000, 5));
  beforeAll(() => server.start());
  afterAll(() => server.stop());
  afterEach(() => {
    server.requests = [];
    server.ignoreRange = false;
    server.cutNextAfter = undefined;
    server.status.clear();
  });

  /** A run that the server cuts after 10,000 bytes: it fails and leaves a part file. */
  const cutFirstRun = async (db: string, url: string) => {
    server.cutNextAfter = 10_000;
    await expect(syncDatabase({ db, from: url, attempts: 1 })).rejects.toThrow(/connection broke/);
  };

  it('imports a verified export once; a re-run of the unchanged file is a no-op', async () => {
    server.put('/full.csv.gz', big, 1);
    const db = newDir();
    const url = `${server.base}/full.csv.gz`;
    const first = await syncDatabase({ db, from: url });
    expect(first).toMatchObject({
      source: 'export',
      changed: true,
      stations: 3000,
      rejected: 0,
      bytes: big.length,
    });
    expect(cellsOf(db)).toBe(3000);
    const state = readSyncState(db).sources[url];
    expect(state).toMatchObject({
      kind: 'export',
      etag: `"v1-${big.length}"`,
      stations: 3000,
      generation: 1,
    });
    expect(state?.sha256).toBe(createHash('sha256').update(big).digest('hex'));

    const again = await syncDatabase({ db, from: url });
    expect(again.changed).toBe(false);
    expect(generationOf(db)).toBe(1);
    expect(server.requests.at(-1)?.ifNoneMatch).toBe(state?.etag);
    // the downloaded file does not linger once imported
    expect(readdirSync(join(db, '.sync')).filter((f) => f !== 'lock')).toEqual([]);
  });

  it('resumes after a connection cut mid-body with Range and If-Range', async () => {
    server.put('/cut.csv.gz', big, 1);
    const db = newDir();
    const url = `${server.base}/cut.csv.gz`;
    await cutFirstRun(db, url);
    expect(existsSync(join(db, 'manifest.json'))).toBe(false);
    const part = readdirSync(join(db, '.sync')).find((f) => f.endsWith('.part'));
    expect(part).toBeDefined();
    const kept = readFileSync(join(db, '.sync', part as string)).length;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThanOrEqual(10_000);

    const done = await syncDatabase({ db, from: url, attempts: 1 });
    expect(done).toMatchObject({ changed: true, stations: 3000, bytes: big.length });
    const resumed = server.requests.filter((r) => r.path === '/cut.csv.gz').at(-1);
    expect(resumed).toMatchObject({ range: `bytes=${kept}-`, ifRange: `"v1-${big.length}"` });
    expect(cellsOf(db)).toBe(3000);
  });

  it('resumes within one run when attempts remain', async () => {
    server.put('/retry.csv.gz', big, 1);
    const db = newDir();
    server.cutNextAfter = 5_000;
    const done = await syncDatabase({ db, from: `${server.base}/retry.csv.gz` });
    expect(done).toMatchObject({ changed: true, stations: 3000 });
    expect(
      server.requests.filter((r) => r.path === '/retry.csv.gz').map((r) => r.range !== undefined),
    ).toEqual([false, true]);
  });

  it('cuts a download that stalls and resumes it', async () => {
    server.put('/stall.csv.gz', big, 1);
    const db = newDir();
    server.stallNextAfter = 8_000;
    const done = await syncDatabase({ db, from: `${server.base}/stall.csv.gz`, stallMs: 300 });
    expect(done).toMatchObject({ changed: true, stations: 3000 });
    const ranges = server.requests.filter((r) => r.path === '/stall.csv.gz').map((r) => r.range);
    expect(ranges).toEqual([undefined, 'bytes=8000-']);
  });

  it('starts again cleanly when the server ignores Range', async () => {
    server.put('/norange.csv.gz', big, 1);
    const db = newDir();
    const url = `${server.base}/norange.csv.gz`;
    await cutFirstRun(db, url);
    server.ignoreRange = true;
    const done = await syncDatabase({ db, from: url, attempts: 1 });
    expect(done).toMatchObject({ changed: true, stations: 3000 });
    expect(server.requests.at(-1)?.range).toBeDefined(); // asked to resume, got the whole file
    expect(cellsOf(db)).toBe(3000);
  });

  it('starts again when the file changed between attempts (If-Range no longer matches)', async () => {
    server.put('/changing.csv.gz', big, 1);
    const db = newDir();
    const url = `${server.base}/changing.csv.gz`;
    await cutFirstRun(db, url);
    const changed = gzipSync(exportCsv(2000, 6));
    server.put('/changing.csv.gz', changed, 2);
    const done = await syncDatabase({ db, from: url, attempts: 1 });
    expect(done).toMatchObject({ changed: true, stations: 2000, bytes: changed.length });
    expect(cellsOf(db)).toBe(2000); // only the new file's stations: no mix of the two versions
  });

  it('refuses a truncated gzip file and leaves the database alone', async () => {
    server.put('/trunc.csv.gz', big.subarray(0, big.length - 100), 1);
    const db = fixtureDb();
    const before = generationOf(db);
    await expect(syncDatabase({ db, from: `${server.base}/trunc.csv.gz` })).rejects.toThrow(
      /damaged gzip data/,
    );
    expect(generationOf(db)).toBe(before);
    expect(readdirSync(join(db, '.sync')).filter((f) => f !== 'lock')).toEqual([]);
  });

  it('checks --sha256 and the URL.sha256 sidecar', async () => {
    server.put('/signed.csv.gz', big, 1);
    const url = `${server.base}/signed.csv.gz`;
    const good = createHash('sha256').update(big).digest('hex');
    const db = newDir();
    await expect(syncDatabase({ db, from: url, sha256: 'ab'.repeat(32) })).rejects.toThrow(/SHA-256 is/);
    expect(existsSync(join(db, 'manifest.json'))).toBe(false);

    server.put('/signed.csv.gz.sha256', Buffer.from(`${'cd'.repeat(32)}  signed.csv.gz\n`), 1);
    await expect(syncDatabase({ db, from: url })).rejects.toThrow(/SHA-256 is/);
    server.put('/signed.csv.gz.sha256', Buffer.from(`${good}  signed.csv.gz\n`), 2);
    expect(await syncDatabase({ db, from: url })).toMatchObject({ changed: true, stations: 3000 });
  });

  it('fails clearly on HTTP 404 and 500', async () => {
    const db = newDir();
    await expect(syncDatabase({ db, from: `${server.base}/missing.csv.gz` })).rejects.toThrow(/HTTP 404/);
    server.put('/broken.csv.gz', big, 1);
    server.status.set('/broken.csv.gz', 500);
    await expect(syncDatabase({ db, from: `${server.base}/broken.csv.gz`, attempts: 2 })).rejects.toThrow(
      /HTTP 500/,
    );
    expect(server.requests.filter((r) => r.path === '/broken.csv.gz')).toHaveLength(2);
  });

  it("refuses to run beside another sync of the same directory, and takes over a dead one's lock", async () => {
    const dir = tempDir('wb-sync-lock-');
    const file = join(dir, 'cells.csv');
    writeFileSync(file, exportCsv(10, 9));
    const db = newDir();
    mkdirSync(join(db, '.sync'), { recursive: true });
    writeFileSync(join(db, '.sync', 'lock'), String(process.ppid)); // a live process
    await expect(syncDatabase({ db, from: file })).rejects.toThrow(/another sync \(process \d+\) is running/);
    writeFileSync(join(db, '.sync', 'lock'), '2147483646'); // no such process
    expect(await syncDatabase({ db, from: file })).toMatchObject({ changed: true, stations: 10 });
    expect(existsSync(join(db, '.sync', 'lock'))).toBe(false);
  });

  it('merges a daily diff and reads local files; the CLI reports both', async () => {
    const dir = tempDir('wb-sync-files-');
    const full = join(dir, 'full.csv');
    writeFileSync(full, exportCsv(50, 8));
    const diff = join(dir, 'diff.csv.gz');
    writeFileSync(diff, gzipSync(exportCsv(60, 8))); // 50 stations again and 10 new ones
    const db = newDir();
    expect(await main(['sync', '--quiet', '--db', db, '--from', full])).toBe(0);
    expect(await main(['sync', '--quiet', '--db', db, '--from', full])).toBe(0); // unchanged: no-op
    expect(generationOf(db)).toBe(1);
    expect(await main(['sync', '--quiet', '--db', db, '--from', diff])).toBe(0);
    expect(generationOf(db)).toBe(2);
    expect(cellsOf(db)).toBe(60);
    expect(await main(['sync', '--db', db])).toBe(2);
  });
});

describe('GET /v2/sync and sync between Whereabouts servers', () => {
  // The remote server's clock: its sync window ends at the midnight before it.
  let now = Date.UTC(2026, 0, 10, 12);
  let remote: TestServer;
  let remoteDb: string;
  let token: string;
  let noScope: string;
  const dayStart = () => Math.floor(now / 1000 / DAY) * DAY;

  beforeAll(async () => {
    remoteDb = newDir();
    const dir = tempDir('wb-sync-remote-');
    writeFileSync(join(dir, 'a.csv'), exportCsv(120, 20, dayStart() - 3 * DAY));
    await native().importFiles?.(remoteDb, [join(dir, 'a.csv')], {}, () => {});
    remote = await startTestServer({
      engine: { db: remoteDb, land: false, ipDatabases: false },
      clock: () => now,
    });
    token = remote.tokens.create({ scopes: ['sync'] }).token;
    noScope = remote.tokens.create({}).token;
  });
  afterAll(() => remote.close());

  const get = async (q: string) => {
    const res = await fetch(`${remote.base}/v2/sync?${q}`);
    return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
  };

  it('refuses without a token, with an unknown one and without the sync scope', async () => {
    const json = (r: { body: Buffer }) => JSON.parse(r.body.toString());
    expect(json(await get('since=0'))).toEqual({ status: 'error', message: 'INVALID_TOKEN' });
    expect(json(await get('since=0&token=nope'))).toEqual({ status: 'error', message: 'INVALID_TOKEN' });
    const restricted = await get(`since=0&token=${noScope}`);
    expect(restricted.status).toBe(403);
    expect(json(restricted)).toEqual({ status: 'error', message: 'ACCESS_RESTRICTED' });
    for (const q of [
      '',
      'since=-1',
      'since=x',
      `since=0&until=${dayStart() + DAY}`,
      'since=0&limit=0',
      'since=0&cursor=zz',
      // A cell cursor of store format 7, whose keys order a LAC's cells otherwise.
      'since=0&cursor=c.3.262.1.1000000000',
    ]) {
      const r = await get(`${q}&token=${token}`);
      expect([r.status, json(r)], q).toEqual([200, { status: 'error', message: 'INVALID_REQUEST' }]);
    }
  });

  it('pages the changes with a cursor, in the export format', async () => {
    const first = await get(`since=0&limit=50&token=${token}`);
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toBe('application/gzip');
    expect(first.headers.get('x-sync-until')).toBe(String(dayStart()));
    expect(first.headers.get('x-sync-stations')).toBe('50');
    expect(first.headers.get('x-sync-kind')).toBe('cells');
    const text = (await import('node:zlib')).gunzipSync(first.body).toString();
    expect(text.split('\n')[0]).toBe(HEADER);
    expect(text.split('\n')[1]).toMatch(/^LTE,262,7,20,100000,,13\.3000000,52\.4000000,800,4,1,\d+,\d+,0$/);
    let cursor = first.headers.get('x-sync-next');
    let total = 50;
    while (cursor) {
      const page = await get(`since=0&limit=50&cursor=${encodeURIComponent(cursor)}&token=${token}`);
      total += Number(page.headers.get('x-sync-stations'));
      cursor = page.headers.get('x-sync-next');
    }
    expect(total).toBe(120);
    const later = await get(`since=${dayStart()}&token=${token}`);
    expect([later.headers.get('x-sync-stations'), later.body.length]).toEqual(['0', 0]);
  });

  it('brings stations added there into the local database; nothing new is a no-op', async () => {
    const db = fixtureDb();
    const from = `whereabouts+${remote.base}`;
    await expect(syncDatabase({ db, from })).rejects.toThrow(/needs a token/);
    await expect(syncDatabase({ db, from, token: noScope })).rejects.toThrow(
      /ACCESS_RESTRICTED \(HTTP 403\)/,
    );
    const before = cellsOf(db);
    const first = await syncDatabase({ db, from, token });
    expect(first).toMatchObject({ source: 'server', changed: true, stations: 120 });
    expect(cellsOf(db)).toBe(before + 120);
    expect(readSyncState(db).sources[remote.base]).toMatchObject({ kind: 'server', until: dayStart() });

    // a station added on the remote today, and a day later the remote's window covers it
    const dir = tempDir('wb-sync-add-');
    writeFileSync(
      join(dir, 'b.csv'),
      `${HEADER}\nGSM,262,3,77,4242,,13.5,52.6,900,3,1,1600000000,${dayStart() + 3600},0\n`,
    );
    await native().importFiles?.(remoteDb, [join(dir, 'b.csv')], {}, () => {});
    remote.engine.reload();
    const sameDay = await syncDatabase({ db, from, token });
    expect(sameDay.changed).toBe(false); // today is not complete on the remote yet
    now += DAY * 1000;
    const generation = generationOf(db);
    const delta = await syncDatabase({ db, from, token });
    expect(delta).toMatchObject({ changed: true, stations: 1, generation: generation + 1 });
    expect(cellsOf(db)).toBe(before + 121);

    const again = await syncDatabase({ db, from, token });
    expect(again).toMatchObject({ changed: false, stations: 0 });
    expect(generationOf(db)).toBe(generation + 1);
    expect(readSyncState(db).sources[remote.base]?.until).toBe(dayStart());
  });

  it('syncs in the background; the running engine answers from the new generation', async () => {
    const db = fixtureDb();
    const request = {
      token: 'x',
      cells: [{ radio: 'gsm', mcc: 262, mnc: 3, lac: 77, cid: 4242 }],
    };
    const engine = await Engine.open({
      db,
      land: false,
      ipDatabases: false,
      sync: { from: `whereabouts+${remote.base}`, token, intervalMs: 3_600_000 },
    });
    try {
      await engine.syncNow();
      const state = engine.syncState();
      expect(state).toMatchObject({ state: 'idle', failures: 0 });
      expect(state?.lastSuccess?.outcome).toMatchObject({ changed: true, stations: 121 });
      expect(state?.nextRunAt?.getTime()).toBeGreaterThan(Date.now() + 3_000_000);
      const res = engine.process(request);
      expect(res).toMatchObject({ status: 'ok' });
      expect((res as { lat: number }).lat).toBeCloseTo(52.6, 2);
      expect(engine.stats().generation).toBe(generationOf(db));
    } finally {
      engine.close();
    }
  });

  it('rejects a sync option without a database or with a bad interval', async () => {
    const sync = { from: `whereabouts+${remote.base}`, token };
    await expect(Engine.open({ land: false, ipDatabases: false, sync })).rejects.toThrow(/needs a db/);
    await expect(
      Engine.open({ db: fixtureDb(), land: false, ipDatabases: false, sync: { ...sync, intervalMs: 0 } }),
    ).rejects.toThrow(/intervalMs/);
  });

  it('reports a failed background sync and backs off', async () => {
    const db = fixtureDb();
    const engine = await Engine.open({
      db,
      land: false,
      ipDatabases: false,
      sync: { from: `whereabouts+${remote.base}`, token: noScope, intervalMs: 3_600_000, retryMs: 60_000 },
    });
    try {
      await engine.syncNow();
      const first = engine.syncState();
      expect(first).toMatchObject({ state: 'failed', failures: 1 });
      expect(first?.lastError?.message).toMatch(/ACCESS_RESTRICTED/);
      const wait1 = (first?.nextRunAt?.getTime() ?? 0) - Date.now();
      expect(wait1).toBeGreaterThan(50_000);
      expect(wait1).toBeLessThanOrEqual(60_000);
      await engine.syncNow();
      const wait2 = (engine.syncState()?.nextRunAt?.getTime() ?? 0) - Date.now();
      expect(engine.syncState()?.failures).toBe(2);
      expect(wait2).toBeGreaterThan(110_000); // doubled
    } finally {
      engine.close();
    }
  });
});

describe('learned site masts between Whereabouts servers', () => {
  it("carry with the learned cells, and the receiving database answers on the sender's rings", async () => {
    // The sender learned eNB 300's mast from a walk with timing advances.
    const dir = tempDir('wb-sync-masts-');
    const csv = join(dir, 'walk.csv');
    writeFileSync(csv, mastWalkCsv());
    // And where it heard eNB 301's sector at each level, driving past on three days, and
    // eNB 302's at each timing advance from its mast, 100 m off the road's west end.
    const drive = join(dir, 'drive.csv');
    writeFileSync(drive, levelDriveCsv());
    const ringed = join(dir, 'ringed.csv');
    const RINGED_CELL = (302 << 8) | 1;
    writeFileSync(ringed, levelDriveCsv(RINGED_CELL, { east: -1100, north: -100 }));
    const remoteDb = join(dir, 'remote');
    expect(cli(['learn', '--db', remoteDb, '--no-calibrate', '--quiet', csv, drive, ringed]).code).toBe(0);
    const remote = await startTestServer({
      engine: { db: remoteDb, land: false, ipDatabases: false },
      clock: () => Date.UTC(2026, 0, 10, 12),
    });
    try {
      const token = remote.tokens.create({ scopes: ['sync'] }).token;
      const pages = await fetch(`${remote.base}/v2/sync?since=0&token=${token}&limit=1`);
      expect(pages.headers.get('x-sync-kind')).toBe('cells');
      // The level page's header: with advances for a receiver that asks, without for others
      // (older versions), which then get no row for a cell with advances only.
      const levelPage = async (extra: string) => {
        for (let cursor = ''; ; ) {
          const res = await fetch(`${remote.base}/v2/sync?since=0&token=${token}${cursor}${extra}`);
          const body = Buffer.from(await res.arrayBuffer());
          if (res.headers.get('x-sync-kind') === 'levels') return gunzipSync(body).toString().split('\n')[0];
          const next = res.headers.get('x-sync-next');
          if (!next) return undefined;
          cursor = `&cursor=${encodeURIComponent(next)}`;
        }
      };
      expect(await levelPage('&advances=1')).toBe('radio,mcc,net,area,cell,levels,advances');
      expect(await levelPage('')).toBe('radio,mcc,net,area,cell,levels');

      const db = newDir();
      const from = `whereabouts+${remote.base}`;
      const first = await syncDatabase({ db, from, token });
      expect(first).toMatchObject({ changed: true, stations: 4, masts: 2, levels: 2, rejected: 0 });
      const masts = (d: string) => {
        const stats = JSON.parse(cli(['stats', '--db', d, '--json']).stdout);
        return stats.networks.flatMap((n: { masts?: unknown[] }) => n.masts ?? []);
      };
      const [sent] = masts(remoteDb).filter((m: { site: number }) => m.site === MAST_WALK.site);
      const [got] = masts(db).filter((m: { site: number }) => m.site === MAST_WALK.site);
      expect(got).toMatchObject({ site: MAST_WALK.site, sightings: sent.sightings, updated: sent.updated });
      expect(metresNearMastWalk(got, sent.lat, sent.lon)).toBeLessThan(0.05);

      // Sector 1 serving with advance 10: on the ring, as the sender answers.
      const request = JSON.stringify({
        token: 't',
        radio: 'lte',
        mcc: 208,
        mnc: 10,
        cells: [{ lac: 7, cid: MAST_WALK.site | 1, ta: 10 }],
      });
      const at = (d: string) => JSON.parse(cli(['locate', '--db', d], request).stdout);
      const here = at(db);
      expect(metresNearMastWalk(here, got.lat, got.lon)).toBeCloseTo(9 * 78.12, -1);
      expect(metresNearMastWalk(here, at(remoteDb).lat, at(remoteDb).lon)).toBeLessThan(0.1);

      // The drive's levels cross too: heard weak, the cell answers near the east end of the
      // road on both, and claims the level's spread, not its range's radius.
      const levels = (d: string) => {
        const stats = JSON.parse(cli(['stats', '--db', d, '--json']).stdout);
        return stats.networks.flatMap((n: { levels?: { points: string }[] }) =>
          (n.levels ?? []).map((l) => l.points.split(';')),
        );
      };
      const [sentLevels] = levels(remoteDb);
      const [gotLevels] = levels(db);
      expect(gotLevels).toEqual(sentLevels);
      expect(gotLevels.length).toBeGreaterThan(10);
      const weak = JSON.stringify({
        token: 't',
        radio: 'lte',
        mcc: 208,
        mnc: 10,
        cells: [{ lac: 7, cid: LEVEL_DRIVE_CELL, signal: -108 }],
      });
      const [there, sender] = [db, remoteDb].map((d) => JSON.parse(cli(['locate', '--db', d], weak).stdout));
      const east = { lat: MAST_WALK.lat, lon: MAST_WALK.lon + 950 / MAST_WALK.mPerDegLon };
      expect(metresNearMastWalk(there, east.lat, east.lon)).toBeLessThan(150);
      expect(metresNearMastWalk(there, sender.lat, sender.lon)).toBeLessThan(0.1);
      expect(there.accuracy).toBe(sender.accuracy);
      expect(there.accuracy).toBeLessThan(300);

      // And eNB 302's advances: heard at advance 10, without a level, the cell answers where
      // the drives were that far from its mast, on both.
      const advances = (d: string) => {
        const stats = JSON.parse(cli(['stats', '--db', d, '--json']).stdout);
        return stats.networks.flatMap((n: { advances?: { points: string }[] }) =>
          (n.advances ?? []).map((a) => a.points.split(';')),
        );
      };
      const [sentAdvances] = advances(remoteDb);
      expect(sentAdvances.length).toBeGreaterThan(10);
      expect(advances(db)).toEqual([sentAdvances]);
      const atAdvance = JSON.stringify({
        token: 't',
        radio: 'lte',
        mcc: 208,
        mnc: 10,
        cells: [{ lac: 7, cid: RINGED_CELL, ta: 10 }],
      });
      const [here10, sender10] = [db, remoteDb].map((d) =>
        JSON.parse(cli(['locate', '--db', d], atAdvance).stdout),
      );
      const road = { lat: MAST_WALK.lat, lon: MAST_WALK.lon - 286 / MAST_WALK.mPerDegLon };
      expect(metresNearMastWalk(sender10, road.lat, road.lon)).toBeLessThan(80);
      expect(metresNearMastWalk(here10, sender10.lat, sender10.lon)).toBeLessThan(0.1);
      expect(here10.accuracy).toBe(sender10.accuracy);

      // Nothing new: the mast is not merged again.
      expect(await syncDatabase({ db, from, token })).toMatchObject({ changed: false, masts: 0, levels: 0 });
      expect(masts(db)).toHaveLength(2);
    } finally {
      await remote.close();
    }
  });
});
