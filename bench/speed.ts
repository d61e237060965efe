/**
 * JS-visible speed, every case beside its baseline in the same process:
 *  - the object API (`engine.process`) against a JS `Map` lookup plus weighted mean;
 *  - the batch API (`engine.processBatch`) per request against the same baseline, on the
 *    machine's cores (its default) and on one thread;
 *  - both against a better-sqlite3 lookup per station.
 * Prints median latency per request and the ratios (medians: these machines are shared).
 * The four cases run in turn, `--rounds` times: load on the machine drifts over seconds, so
 * every ratio is taken within one round and the median over rounds is reported.
 *
 *   npx tsx bench/speed.ts [--seed N] [--time MS per case and round] [--rounds N] [--batch N]
 *
 * Uses the simulator world of bench/accuracy.ts (.eval/, built on first use).
 */
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { Bench } from 'tinybench';
import { Engine } from '../src/engine.js';
import { MapBaseline, rawWeightedMean } from './baseline.js';
import { Rounds } from './rounds.js';
import { mixedRequests, speedWorld } from './speed-requests.js';

const { values } = parseArgs({
  options: {
    seed: { type: 'string', default: '1' },
    time: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '5' },
    batch: { type: 'string', default: '1000' },
  },
});
const { db, world: simDir } = await speedWorld(values.seed as string);
const requests = mixedRequests(simDir);

const engine = await Engine.open({ db });
// processBatch spreads a batch over the machine's cores by default; the same on one thread:
const engine1 = await Engine.open({ db, batchThreads: 1 });
const threads = availableParallelism();
const baseline = MapBaseline.fromCsv(join(simDir, 'cells.csv'), join(simDir, 'wifi.csv'));

// better-sqlite3: the same stations in indexed tables, one query per station.
const sql = new Database(':memory:');
sql.exec(`CREATE TABLE cells (radio INT, mcc INT, mnc INT, lac INT, cid INT, lat REAL, lon REAL, range INT,
          PRIMARY KEY (radio, mcc, mnc, lac, cid)) WITHOUT ROWID;
          CREATE TABLE wifi (bssid INT PRIMARY KEY, lat REAL, lon REAL, range INT) WITHOUT ROWID;`);
const insCell = sql.prepare('INSERT OR REPLACE INTO cells VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
const insWifi = sql.prepare('INSERT OR REPLACE INTO wifi VALUES (?, ?, ?, ?)');
sql.transaction(() => {
  for (const [k, s] of baseline.cells) insCell.run(...k.split(':').map(Number), s.lat, s.lon, s.range);
  for (const [k, s] of baseline.wifi) insWifi.run(k, s.lat, s.lon, s.range);
})();
const qCell = sql.prepare(
  'SELECT lat, lon FROM cells WHERE radio = ? AND mcc = ? AND mnc = ? AND lac = ? AND cid = ?',
);
const qWifi = sql.prepare('SELECT lat, lon FROM wifi WHERE bssid = ?');
const RADIO: Record<string, number> = { GSM: 0, CDMA: 1, UMTS: 2, LTE: 3, NBIOT: 4, NR: 5 };
/** Reads the fields directly, like the Map baseline, with one indexed query per station. */
function sqliteProcess(request: unknown) {
  const r = request as {
    radio?: string;
    mcc?: number;
    mnc?: number;
    cells?: { radio?: string; mcc?: number; mnc?: number; lac?: number; cid?: number; signal?: number }[];
    wifi?: { bssid: string; signal?: number }[];
  };
  let sw = 0;
  let la = 0;
  let lo = 0;
  const add = (row: unknown, signal: number | undefined) => {
    if (!row) return;
    const { lat, lon } = row as { lat: number; lon: number };
    const w = 10 ** (((signal ?? -90) + 100) / 10);
    sw += w;
    la += w * lat;
    lo += w * lon;
  };
  for (const c of r.cells ?? []) {
    const radio = RADIO[(c.radio ?? r.radio ?? '').toUpperCase()] ?? -1;
    add(qCell.get(radio, c.mcc ?? r.mcc ?? 0, c.mnc ?? r.mnc ?? 0, c.lac ?? 0, c.cid ?? 0), c.signal);
  }
  for (const w of r.wifi ?? []) add(qWifi.get(Number.parseInt(w.bssid.replace(/[:.-]/g, ''), 16)), w.signal);
  return sw > 0 ? { lat: la / sw, lon: lo / sw } : undefined;
}

const BATCH = Number(values.batch);
let i = 0;
const next = () => requests[i++ % requests.length];
const bench = new Bench({ time: Number(values.time), warmupTime: 300 });
bench
  .add('baseline: JS Map + weighted mean (per request)', () => {
    rawWeightedMean(baseline, next());
  })
  .add('baseline: better-sqlite3 query per station (per request)', () => {
    sqliteProcess(next());
  })
  .add('engine.process (object API, per request)', () => {
    engine.process(next());
  })
  .add(`engine.processBatch (${BATCH} per call)`, () => {
    const start = i % requests.length;
    engine.processBatch(requests.slice(start, start + BATCH));
    i += BATCH;
  })
  .add(`engine.processBatch (${BATCH} per call, one thread)`, () => {
    const start = i % requests.length;
    engine1.processBatch(requests.slice(start, start + BATCH));
    i += BATCH;
  });
const rounds = Math.max(1, Number(values.rounds));
const timed = await Rounds.run(bench, rounds, (n) => (n.includes('processBatch') ? BATCH : 1));
const names = timed.names;
const ns = names.map((_, k) => timed.ns(k));
const ratio = (a: number, b: number) => timed.ratio(a, b);
const [MAP, SQLITE, OBJ, BATCH_CASE, BATCH_ONE] = [0, 1, 2, 3, 4];
console.log(
  `Speed on ${requests.length} mixed simulator requests (median latency per request over ${rounds} rounds; ${process.version})`,
);
console.table(
  names.map((n, k) => ({
    case: n,
    'ns/request (p50)': Math.round(ns[k] as number),
    'requests/s': Math.round(1e9 / (ns[k] as number)),
  })),
);
console.log(`object API vs Map baseline: ${ratio(MAP, OBJ)}x (target: > 1)`);
console.log(`batch API vs Map baseline:  ${ratio(MAP, BATCH_CASE)}x (target: >= 5; ${threads} threads)`);
console.log(`batch API vs better-sqlite3: ${ratio(SQLITE, BATCH_CASE)}x (target: >= 20)`);
console.log(
  `batch API on one thread vs Map baseline: ${ratio(MAP, BATCH_ONE)}x, vs better-sqlite3: ${ratio(SQLITE, BATCH_ONE)}x`,
);
console.log(`object API vs better-sqlite3: ${ratio(SQLITE, OBJ)}x`);
engine.close();
engine1.close();
