/**
 * Shared test setup: a station database imported from the fixtures in test/fixtures
 * through the real CLI, in a temporary directory.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect } from 'vitest';
import { Engine, type EngineOptions } from '../src/engine.js';
import { LearnBatcher } from '../src/learning/submissions.js';
import { ObservationStore } from '../src/observations/index.js';
import { buildServer, type ServerOptions } from '../src/server/app.js';
import type { MapsOptions } from '../src/server/maps.js';
import { TokenStore, type TokenStoreOptions } from '../src/tokens/index.js';
import { tempDir } from './temp-dirs.js';

export const root = join(import.meta.dirname, '..');
export const fixtures = join(import.meta.dirname, 'fixtures');

/** Runs the built CLI (bin/whereabouts.js) and returns its exit code and output. */
export function cli(
  args: string[],
  input?: string | Buffer,
): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [join(root, 'bin', 'whereabouts.js'), ...args], {
    input,
    encoding: 'utf8',
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** A running `whereabouts serve` (the built CLI). */
export interface ServeProcess {
  child: ChildProcess;
  port: number;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

/**
 * Starts `whereabouts serve ARGS --port 0 --log-level warn` and resolves once the primary says
 * every worker listens. The caller kills `child`.
 */
export function startServe(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<ServeProcess> {
  const proc = spawn(
    process.execPath,
    [join(root, 'bin', 'whereabouts.js'), 'serve', ...args, '--port', '0', '--log-level', 'warn'],
    { stdio: ['ignore', 'pipe', 'inherit'], env },
  );
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('serve did not start in 20 s')), 20_000);
    const lines = createInterface({ input: proc.stdout as NodeJS.ReadableStream });
    // what serve logged before it was listening: the reason, when it exits instead
    const early: string[] = [];
    lines.on('line', (line) => {
      let entry: { msg?: string; port?: number };
      try {
        entry = JSON.parse(line);
      } catch {
        return;
      }
      early.push(line);
      if (entry.msg === 'listening' && typeof entry.port === 'number') {
        clearTimeout(timer);
        resolve({ child: proc, port: entry.port, exited });
      }
    });
    proc.on('close', (code) => reject(new Error(`serve exited early with ${code}:\n${early.join('\n')}`)));
  });
}

/** Imports the fixture cells and APs into a new temporary database directory. */
export function fixtureDb(): string {
  const db = join(tempDir('wb-test-'), 'db');
  const r = cli(['import', '--quiet', '--db', db, join(fixtures, 'cells.csv'), join(fixtures, 'wifi.csv')]);
  if (r.code !== 0) throw new Error(`fixture import failed: ${r.stderr}`);
  return db;
}

/**
 * One LTE network (mcc 208, mnc 10) of three-sector sites in a row 2 km apart (three unless
 * said), each sector's estimate `offset` metres out from its mast (300 unless said), every
 * range 600 m and `samples` sightings (40 unless said; '' for none). `gsm`: a GSM network
 * instead, its cells numbered 1, 2, 3... along the row (no site in their last digits).
 * `exact`: every row marked exact (`changeable` 0), as OpenCelliD marks positions it did not
 * average. `firstEnb`: the first site's eNB (100 unless said), its mast `east` metres east.
 */
export function siteRowCsv({
  sites = 3,
  offset = 300,
  samples = '40',
  gsm = false,
  exact = false,
  firstEnb = 100,
  east = 0,
} = {}): string {
  const rows = [
    'radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal',
  ];
  const lat0 = 48.85;
  const mPerDegLat = 111_195;
  const mPerDegLon = mPerDegLat * Math.cos((lat0 * Math.PI) / 180);
  for (let site = 0; site < sites; site++) {
    const x0 = east + site * 2_000;
    for (let s = 0; s < 3; s++) {
      const az = (s * 2 * Math.PI) / 3;
      const x = x0 + offset * Math.sin(az);
      const y = offset * Math.cos(az);
      const lon = 2.35 + x / mPerDegLon;
      const lat = lat0 + y / mPerDegLat;
      const cid = gsm ? site * 3 + s + 1 : ((firstEnb + site) << 8) | (s + 1);
      rows.push(
        `${gsm ? 'GSM' : 'LTE'},208,10,7,${cid},0,${lon.toFixed(7)},${lat.toFixed(7)},600,${samples},${exact ? 0 : 1},1700000000,1700000000,0`,
      );
    }
  }
  return `${rows.join('\n')}\n`;
}

/** A database imported from {@link siteRowCsv} in a fresh directory. */
export function importedSites(options?: Parameters<typeof siteRowCsv>[0]): { dir: string; db: string } {
  const dir = tempDir('wb-sites-');
  const csv = join(dir, 'cells.csv');
  writeFileSync(csv, siteRowCsv(options));
  const db = join(dir, 'db');
  expect(cli(['import', '--quiet', '--db', db, csv]).code).toBe(0);
  return { dir, db };
}

/** Where {@link mastWalkCsv}'s mast stands, and metres a degree there. */
export const MAST_WALK = {
  lat: 48.85,
  lon: 2.35,
  mPerDegLat: 111_195,
  mPerDegLon: 111_195 * Math.cos((48.85 * Math.PI) / 180),
  /** LTE 208/10, TAC 7: eNB 300's first cell id, its site. */
  site: 300 << 8,
};

/**
 * An OpenCelliD measurement CSV: LTE 208/10 eNB 300's sectors 1 and 2 walked past along two
 * streets (300 m north, 500 m east of the mast at {@link MAST_WALK}), 20 rows each, a
 * minute apart from 2023-11-14, each row with the advance the mast gives (78.12 m steps):
 * what `learn` fits a site mast from.
 */
export function mastWalkCsv(): string {
  const { lat: lat0, lon: lon0, mPerDegLat, mPerDegLon } = MAST_WALK;
  const rows = [
    'mcc,mnc,lac,cellid,lat,lon,signal,measured_at,rating,speed,direction,act,ta,psc,tac,pci,sid,nid,bid',
  ];
  for (let i = 0; i < 20; i++) {
    for (const [sector, x, y] of [
      [1, -600 + i * 63, 300],
      [2, 500, -600 + i * 63],
    ] as const) {
      const ta = Math.floor(Math.hypot(x, y) / 78.12);
      const lat = (lat0 + y / mPerDegLat).toFixed(6);
      const lon = (lon0 + x / mPerDegLon).toFixed(6);
      rows.push(
        `208,10,,${(300 << 8) | sector},${lat},${lon},-95,${1.7e12 + i * 60_000},10,1,0,LTE,${ta},,7,1,,,`,
      );
    }
  }
  return `${rows.join('\n')}\n`;
}

/** LTE 208/10 eNB 301's first sector, TAC 7: the cell {@link levelDriveCsv} drives past. */
export const LEVEL_DRIVE_CELL = (301 << 8) | 1;

/**
 * An OpenCelliD measurement CSV: {@link LEVEL_DRIVE_CELL} driven along a road 2 km west to
 * east through {@link MAST_WALK}'s point on three days, heard at -70 dBm at the west end and
 * 40 dB weaker at the east end (the learner keeps where it was heard at each level). Another
 * `cell` may be driven so; with `mast` (metres east and north of that point), each row has
 * the timing advance that mast gives.
 */
export function levelDriveCsv(cell = LEVEL_DRIVE_CELL, mast?: { east: number; north: number }): string {
  const { lat: lat0, lon: lon0, mPerDegLon } = MAST_WALK;
  const rows = [
    'mcc,mnc,lac,cellid,lat,lon,signal,measured_at,rating,speed,direction,act,ta,psc,tac,pci,sid,nid,bid',
  ];
  for (let day = 0; day < 3; day++) {
    for (let i = 0; i <= 80; i++) {
      const x = -1000 + i * 25;
      const signal = Math.round(-70 - (40 * (x + 1000)) / 2000);
      const t = 1.7e12 + day * 86_400_000 + i * 2000;
      const ta = mast ? String(Math.floor(Math.hypot(x - mast.east, mast.north) / 78.12)) : '';
      rows.push(
        `208,10,,${cell},${lat0.toFixed(6)},${(lon0 + x / mPerDegLon).toFixed(6)},${signal},${t},10,12,0,LTE,${ta},,7,2,,,`,
      );
    }
  }
  return `${rows.join('\n')}\n`;
}

/** Metres from `a` to the point (lat, lon) near {@link MAST_WALK}. */
export function metresNearMastWalk(a: { lat: number; lon: number }, lat: number, lon: number): number {
  return Math.hypot((a.lon - lon) * MAST_WALK.mPerDegLon, (a.lat - lat) * MAST_WALK.mPerDegLat);
}

/**
 * A cell of the fixture network as a `/process` request names it: GSM 262/1, LAC 10 (the
 * fixture database knows cids 1 and 2 there), with any other request fields in `extra`.
 */
export function fixtureCell(cid: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { radio: 'gsm', mcc: 262, mnc: 1, lac: 10, cid, ...extra };
}

/** A server from `buildServer` on 127.0.0.1 and a free port, over temporary token and observation stores. */
export interface TestServer {
  engine: Engine;
  tokens: TokenStore;
  observations: ObservationStore;
  app: FastifyInstance;
  /** `http://127.0.0.1:PORT` */
  base: string;
  /** The directory holding the token and observation stores. */
  store: string;
  /** The server's log lines (pino JSON, level info), for tests that read what was logged. */
  logs: string[];
  /** GET `path` on the server: the HTTP status and the JSON body. */
  get(
    path: string,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: Record<string, unknown> }>;
  close(): Promise<void>;
}

/** Starts a test server; `close` stops it and releases the engine and stores. */
export async function startTestServer(
  options: {
    engine?: EngineOptions;
    tokens?: TokenStoreOptions;
    bodyLimit?: number;
    clock?: () => number;
    learn?: boolean;
    /** Further options of buildServer (timeouts, proxies, health detail...). */
    server?: Partial<Omit<ServerOptions, 'engine' | 'tokens' | 'observations' | 'logger'>>;
    maps?: MapsOptions;
  } = {},
): Promise<TestServer> {
  const store = tempDir('wb-server-');
  const engine = await Engine.open(options.engine);
  const tokens = TokenStore.open(store, options.tokens);
  const observations = ObservationStore.open(store);
  const learner = options.learn ? new LearnBatcher((batch) => engine.learnSubmissions(batch)) : undefined;
  // Every test server logs at info into memory: `close` fails when a token reached the log.
  const logs: string[] = [];
  const app = buildServer({
    engine,
    tokens,
    observations,
    bodyLimit: options.bodyLimit,
    clock: options.clock,
    learner,
    logger: { level: 'info', stream: { write: (line: string) => logs.push(line) } },
    ...options.server,
    maps: options.maps,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (typeof address !== 'object' || address === null) throw new Error('no address');
  const base = `http://127.0.0.1:${address.port}`;
  return {
    engine,
    tokens,
    observations,
    app,
    base,
    store,
    logs,
    get: async (path, headers = {}) => {
      const res = await fetch(`${base}${path}`, { headers });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    },
    close: async () => {
      await app.close();
      const created = tokens.list().map((r) => r.token);
      tokens.close();
      observations.close();
      engine.close();
      const leaked = leakedTokens(logs, created);
      if (leaked.length > 0) {
        throw new Error(`${leaked.length} token(s) reached the server log, e.g. in: ${leaked[0]}`);
      }
    },
  };
}

/** `text` with every `%XX` escape decoded (one at a time, so that a broken one elsewhere does not stop the rest). */
function percentDecoded(text: string): string {
  return text.replace(/(?:%[0-9a-f]{2})+/gi, (run) => {
    try {
      return decodeURIComponent(run);
    } catch {
      return run.replace(/%([0-9a-f]{2})/gi, (_m, hex: string) =>
        String.fromCharCode(Number.parseInt(hex, 16)),
      );
    }
  });
}

/**
 * The log lines holding any of `tokens` in full: as is, percent-encoded (any characters, any
 * hex case) or in another letter case.
 */
export function leakedTokens(lines: readonly string[], tokens: readonly string[]): string[] {
  const wanted = tokens.filter((t) => t.length >= 8).map((t) => t.toLowerCase());
  const found: string[] = [];
  for (const line of lines) {
    const plain = line.toLowerCase();
    const decoded = percentDecoded(line).toLowerCase();
    if (wanted.some((t) => plain.includes(t) || decoded.includes(t))) found.push(line);
  }
  return found;
}

/**
 * A test server for the tests of the calling `describe` block: started before them with token
 * changes seen at once (`cacheMs: 0`), closed after them. `tokens` and `get` are the started
 * server's.
 */
export function serverForSuite(): { readonly tokens: TokenStore; get: TestServer['get'] } {
  let server: TestServer | undefined;
  beforeAll(async () => {
    server = await startTestServer({ tokens: { cacheMs: 0 } });
  });
  afterAll(() => server?.close());
  const started = (): TestServer => {
    if (server === undefined) throw new Error('the suite server is used before beforeAll started it');
    return server;
  };
  return {
    get tokens() {
      return started().tokens;
    },
    get: (path, headers) => started().get(path, headers),
  };
}
