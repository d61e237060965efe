/**
 * `whereabouts calibrate` on held-out data: calibrates on one part and reports the inside
 * shares of another, before and after the model.
 *
 *   npx tsx bench/calibrate.ts [--zip PATH]        Cork's held-out files cut in halves, each way
 *   npx tsx bench/calibrate.ts --sim SEED          a simulator world, even blocks of 50 rows / odd
 *   npx tsx bench/calibrate.ts --world DIR         a world the simulator wrote, the same way
 *   npx tsx bench/calibrate.ts --families A..B     the world families' cell scenarios, each world
 *                                                  calibrated on its even blocks, pooled by the
 *                                                  class of cell count and per world and scenario
 */
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { calibrate, readCalibrationRows, resetRadiusModel } from '../src/calibration/radius.js';
import { nativeLearn } from '../src/cli/learn.js';
import { Engine } from '../src/engine.js';
import { type EvalRow, groupObservations, readObservationFiles } from '../src/eval/inputs.js';
import { distanceM } from '../src/eval/metrics.js';
import { simWorld } from '../src/eval/sim.js';
import { native } from '../src/native/binding.js';
import { unpackCorkTraces } from './cork-traces.js';
import { seedRange } from './seeds.js';

const { values } = parseArgs({
  options: {
    zip: { type: 'string' },
    sim: { type: 'string' },
    world: { type: 'string' },
    families: { type: 'string' },
    requests: { type: 'string', default: '2000' },
  },
});

const root = join(import.meta.dirname, '..');
const work = mkdtempSync(join(tmpdir(), 'whereabouts-calibrate-bench-'));

/** A located row: its class, and whether its truth fell inside the radius without and with the model. */
interface Inside {
  cls: string;
  before: boolean;
  after: boolean;
}

/** Each row of `rows` located with the database in `db` (undefined: not located). */
async function insideOf(db: string, rows: readonly EvalRow[]): Promise<(Inside | undefined)[]> {
  const engine = await Engine.open({ db, ipDatabases: false });
  try {
    const raw = engine.radiusSamples(
      rows.map((r) => r.request),
      rows.map((r) => r.truth),
    );
    const answers = engine.processBatch(rows.map((r) => r.request)) as {
      lat?: number;
      lon?: number;
      accuracy?: number;
    }[];
    return rows.map((row, i) => {
      const cls = raw.classes[i] as string;
      const a = answers[i];
      if (cls === '' || a?.lat === undefined || a.lon === undefined || a.accuracy === undefined)
        return undefined;
      return {
        cls,
        before: (raw.ratios[i] as number) <= 1,
        after: distanceM(a.lat, a.lon, row.truth.lat, row.truth.lon) <= a.accuracy,
      };
    });
  } finally {
    engine.close();
  }
}

/** Rows inside the radius without and with the model, counted by a key. */
type Tally = Map<string, { n: number; before: number; after: number }>;

/** Counts `r` under `key` in `tally`. */
function count(tally: Tally, key: string, r: Inside): void {
  const t = tally.get(key) ?? { n: 0, before: 0, after: 0 };
  t.n++;
  t.before += r.before ? 1 : 0;
  t.after += r.after ? 1 : 0;
  tally.set(key, t);
}

/**
 * Inside shares of `rows` by class level, before and after the model stored in `db`; with
 * `brief`, only the line of all rows.
 */
async function report(db: string, rows: readonly EvalRow[], label: string, brief = false): Promise<void> {
  const tally: Tally = new Map();
  for (const r of await insideOf(db, rows)) {
    if (!r) continue;
    const parts = r.cls.split('/');
    const keys = new Set(['all', ...[1, 2, 3, 4].map((k) => parts.slice(0, k).join('/'))]);
    for (const key of keys) count(tally, key, r);
  }
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`.padStart(6);
  const keys = [...tally.keys()].sort((a, b) => (a === 'all' ? -1 : b === 'all' ? 1 : a < b ? -1 : 1));
  if (brief) {
    const t = tally.get('all') ?? { n: 0, before: 0, after: 0 };
    process.stdout.write(
      `  ${label.padEnd(40)} ${String(t.n).padStart(6)} ${pct(t.before / Math.max(t.n, 1))} ${pct(t.after / Math.max(t.n, 1))}\n`,
    );
    return;
  }
  process.stdout.write(`${label}\n  ${'class'.padEnd(28)} ${'rows'.padStart(6)} before  after\n`);
  let worst: [string, number] | undefined;
  for (const k of keys) {
    const t = tally.get(k) as { n: number; before: number; after: number };
    if (t.n < 30 && k !== 'all') continue;
    const after = t.after / t.n;
    if (k.split('/').length === 4 && (!worst || Math.abs(after - 0.68) > Math.abs(worst[1] - 0.68)))
      worst = [k, after];
    process.stdout.write(
      `  ${k.padEnd(28)} ${String(t.n).padStart(6)} ${pct(t.before / t.n)} ${pct(after)}\n`,
    );
  }
  if (worst)
    process.stdout.write(
      `  worst class of 30+ rows (finest level): ${worst[0]}, ${pct(worst[1]).trim()} after\n`,
    );
}

/** Calibrates `db` on `fit` (stored), reports on each part of `check`, then removes the model. */
async function round(
  db: string,
  fit: readonly EvalRow[],
  check: Record<string, readonly EvalRow[]>,
  label: string,
): Promise<void> {
  const c = await calibrate(db, fit, {});
  const all = c.shares.find((s) => s.class === 'all');
  process.stdout.write(
    `${label}: calibrated on ${c.rowsLocated} located rows (fit ${c.fitRows}, its own held-out ${c.testRows}: ` +
      `${all ? `${(100 * all.before).toFixed(1)}% -> ${(100 * all.after).toFixed(1)}%` : 'none'}); factor of all ${all?.factor.toFixed(3)}\n`,
  );
  for (const [part, rows] of Object.entries(check))
    if (rows.length > 0)
      await report(db, rows, `  reported on ${rows.length} rows of the other part: ${part}`);
  resetRadiusModel(db);
}

async function cork(zip: string): Promise<void> {
  const files = unpackCorkTraces(zip, join(work, 'traces'));
  const learn = files.filter((_, i) => i % 4 !== 3);
  const rest = files.filter((_, i) => i % 4 === 3);
  const a = rest.filter((_, i) => i % 2 === 0);
  const b = rest.filter((_, i) => i % 2 === 1);
  const db = join(work, 'cork-db');
  await nativeLearn()(db, learn, { mcc: 272, mnc: 1 }, () => {});
  const net = { mcc: 272, mnc: 1 };
  /**
   * The rows of `files`: all of them, the moving rows of the driving traces (Speed > 0, the rows
   * bench/cork.ts reports), and the rows of the static traces (the folder says which).
   */
  const read = async (files: string[]) => {
    const moving = 'driving traces, rows with Speed > 0';
    const parts: Record<string, EvalRow[]> = { 'all rows': [], [moving]: [], 'static traces': [] };
    const observed = await readObservationFiles(files, net);
    for (const g of groupObservations(observed)) {
      const f = observed[g.file] as (typeof observed)[number];
      parts['all rows']?.push(g.row);
      if (f.path.includes('/Static/')) parts['static traces']?.push(g.row);
      else if ((f.speed[g.first] as number) > 0) parts[moving]?.push(g.row);
    }
    return parts;
  };
  const partsA = await read(a);
  const partsB = await read(b);
  const rowsA = partsA['all rows'] as EvalRow[];
  const rowsB = partsB['all rows'] as EvalRow[];
  process.stdout.write(
    `Cork: learned ${learn.length} files; held-out ${rest.length} files cut in two: A ${a.length} files (${rowsA.length} rows), B ${b.length} files (${rowsB.length} rows)\n`,
  );
  await round(db, rowsA, partsB, 'Cork, calibrated on A, reported on B');
  await round(db, rowsB, partsA, 'Cork, calibrated on B, reported on A');
}

/** Calibrates `db` on the even blocks of 50 rows of each scenario, reports on the odd ones. */
async function scenarios(db: string, files: readonly string[], label: string): Promise<void> {
  const fit: EvalRow[] = [];
  const check: EvalRow[] = [];
  const byScenario = new Map<string, EvalRow[]>();
  for (const f of files) {
    const { rows } = await readCalibrationRows([f], {}, () => {});
    rows.forEach((r, i) => {
      if (Math.floor(i / 50) % 2 === 0) fit.push(r);
      else {
        check.push(r);
        byScenario.set(r.scenario, [...(byScenario.get(r.scenario) ?? []), r]);
      }
    });
  }
  process.stdout.write(`${label}: ${fit.length} rows to calibrate on, ${check.length} to report on\n`);
  const c = await calibrate(db, fit, {});
  const all = c.shares.find((s) => s.class === 'all');
  process.stdout.write(
    `  own held-out ${c.testRows} rows: ${all ? `${(100 * all.before).toFixed(1)}% -> ${(100 * all.after).toFixed(1)}%` : 'none'}\n` +
      `  ${'scenario (odd blocks)'.padEnd(40)} ${'rows'.padStart(6)} before  after\n`,
  );
  for (const [name, rows] of [...byScenario.entries()].sort()) await report(db, rows, name, true);
  await report(db, check, 'all odd blocks', true);
  await report(db, check, '  by class, odd blocks');
  resetRadiusModel(db);
}

async function sim(seed: string, requests: string): Promise<void> {
  const world = await simWorld(join(work, `sim-${seed}`), seed, requests, false);
  await scenarios(world.db, world.scenarios, `simulator world ${seed}`);
}

/** A world the simulator wrote into `dir`, imported into a temporary database. */
async function worldDir(dir: string): Promise<void> {
  const db = join(work, 'world-db');
  const importFiles = native().importFiles;
  if (!importFiles) throw new Error('this build of the native addon has no importer');
  await importFiles(
    db,
    [join(dir, 'cells.csv'), join(dir, 'wifi.csv')],
    { replace: true, simulated: true },
    () => {},
  );
  const files = readdirSync(join(dir, 'scenarios'))
    .filter((f) => f.endsWith('.jsonl'))
    .sort()
    .map((f) => join(dir, 'scenarios', f));
  await scenarios(db, files, `world ${dir}`);
}

/** The cell scenarios `--families` calibrates on and reports. */
const FAMILY_SCENARIOS = [
  'cells-urban',
  'cells-suburban',
  'cells-rural',
  'cells-known-towers',
  'single-cell',
  'scf',
];

/**
 * Each family world of `seeds` (1,000 requests a scenario, `.eval/family-SEED-1000` as
 * `bench/families.ts` leaves it) calibrated on the even blocks of 50 rows of its cell
 * scenarios and reported on the odd ones: the inside shares pooled over the worlds by the class
 * level of how many cells were known (`cells-1`, `cells-eff-*`), and per world and scenario.
 */
async function families(seeds: number[]): Promise<void> {
  const byCount: Tally = new Map();
  const perWorld = new Map<string, { before: number[]; after: number[] }>();
  for (const seed of seeds) {
    const w = await simWorld(
      join(root, '.eval', `family-${seed}-1000`),
      String(seed),
      '1000',
      true,
      '0',
      true,
    );
    const db = join(work, `family-${seed}`);
    cpSync(w.db, db, { recursive: true });
    resetRadiusModel(db);
    const files = w.scenarios.filter((f) => FAMILY_SCENARIOS.some((s) => f.endsWith(`/${s}.jsonl`)));
    const { rows } = await readCalibrationRows(files, {}, () => {});
    const fit = rows.filter((_, i) => Math.floor(i / 50) % 2 === 0);
    const check = rows.filter((_, i) => Math.floor(i / 50) % 2 === 1);
    await calibrate(db, fit, {});
    try {
      const scenario: Tally = new Map();
      const inside = await insideOf(db, check);
      check.forEach((row, i) => {
        const r = inside[i];
        if (!r) return;
        const cells = r.cls.split('/')[2] ?? '';
        if (cells !== '' && (r.cls.startsWith('cells/') || r.cls.startsWith('scf/')))
          count(byCount, cells, r);
        if (row.scenario !== '') count(scenario, row.scenario, r);
      });
      for (const [k, t] of scenario) {
        const p = perWorld.get(k) ?? { before: [], after: [] };
        p.before.push(t.before / t.n);
        p.after.push(t.after / t.n);
        perWorld.set(k, p);
      }
    } finally {
      rmSync(db, { recursive: true, force: true });
    }
  }
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  process.stdout.write(
    `World families ${seeds[0]}..${seeds.at(-1)}: each calibrated on the even blocks of 50 rows of its cell scenarios, reported on the odd ones.\n` +
      `Pooled over the worlds, by how many cells were known (one; several by their effective number):\n`,
  );
  for (const [k, t] of [...byCount.entries()].sort())
    process.stdout.write(
      `  ${k.padEnd(14)} ${String(t.n).padStart(7)} rows  ${pct(t.before / t.n).padStart(6)} -> ${pct(t.after / t.n).padStart(6)}\n`,
    );
  process.stdout.write('Per world and scenario, after: median world (range), worlds within 60-76%:\n');
  let band = 0;
  let total = 0;
  for (const [k, p] of [...perWorld.entries()].sort()) {
    const v = [...p.after].sort((a, b) => a - b);
    const inBand = v.filter((x) => x >= 0.6 && x <= 0.76).length;
    band += inBand;
    total += v.length;
    process.stdout.write(
      `  ${k.padEnd(20)} ${pct(v[Math.floor(v.length / 2)] as number)} (${pct(v[0] as number)}-${pct(v.at(-1) as number)}), ${inBand} of ${v.length}\n`,
    );
  }
  process.stdout.write(`  all scenarios: ${band} of ${total} within 60-76%\n`);
}

try {
  if (values.families !== undefined) await families(seedRange('--families', values.families));
  else if (values.sim !== undefined) await sim(values.sim, values.requests);
  else if (values.world !== undefined) await worldDir(values.world);
  else {
    const zip = values.zip ?? join(root, '..', 'shared', 'data', 'ucc-5g-cork', '5G-production-dataset.zip');
    if (!existsSync(zip)) {
      process.stderr.write(
        `bench/calibrate.ts: the Cork traces are not at ${zip} (read from ../shared/data/ucc-5g-cork, never copied here); give --zip PATH or --sim SEED\n`,
      );
      process.exitCode = 2;
    } else await cork(zip);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
