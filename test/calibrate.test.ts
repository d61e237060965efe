/**
 * `whereabouts calibrate` on a generated world whose radius is off by a known factor: the
 * held-out inside share moves to about 68%, the stored model widens the engine's answers by
 * that factor, --dry-run stores nothing, --show prints the model, --reset removes it; bad
 * inputs give clear errors.
 */
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  calibrationPlan,
  LEARN_CALIBRATION_TRUST,
  PLAN_BLOCK_S,
  type RadiusModel,
} from '../src/calibration/radius.js';
import { Engine } from '../src/engine.js';
import type { EvalRow } from '../src/eval/inputs.js';
import { cli } from './helpers.js';
import { tempDir } from './temp-dirs.js';

/** xorshift32: the world and its rows are functions of the seed. */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 2 ** 32;
  };
}

const GRID = 20;
const STEP_DEG = 0.015;
const cellId = (i: number, j: number) => i * GRID + j + 1;

/** LTE 262/1: a 20 x 20 grid of cells about 1.3 km apart, one TAC per row. */
function worldDb(dir: string): string {
  const lines = [
    'radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal',
  ];
  for (let i = 0; i < GRID; i++)
    for (let j = 0; j < GRID; j++)
      lines.push(
        `LTE,262,1,${100 + i},${cellId(i, j)},,${(13 + j * STEP_DEG).toFixed(6)},${(52 + i * STEP_DEG).toFixed(6)},1500,30,1,1600000000,1700000000,0`,
      );
  const csv = join(dir, 'cells.csv');
  writeFileSync(csv, `${lines.join('\n')}\n`);
  const db = join(dir, 'db');
  const r = cli(['import', '--quiet', '--db', db, csv]);
  if (r.code !== 0) throw new Error(r.stderr);
  return db;
}

/** Requests of the 1 to 3 cells nearest a random point inside the grid. */
function requests(n: number, next: () => number): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (let k = 0; k < n; k++) {
    const y = 1 + next() * (GRID - 3);
    const x = 1 + next() * (GRID - 3);
    const near: [number, number, number][] = [];
    for (let i = Math.floor(y) - 1; i <= Math.floor(y) + 2; i++)
      for (let j = Math.floor(x) - 1; j <= Math.floor(x) + 2; j++)
        near.push([(i - y) ** 2 + (j - x) ** 2, i, j]);
    near.sort((a, b) => a[0] - b[0]);
    const count = 1 + Math.floor(next() * 3);
    out.push({
      cells: near.slice(0, count).map(([, i, j], r) => ({
        radio: 'lte',
        mcc: 262,
        mnc: 1,
        lac: 100 + i,
        cid: cellId(i, j),
        signal: -80 - 6 * r,
      })),
    });
  }
  return out;
}

/**
 * Labelled rows whose truth lies off the engine's answer by `scale` times its radius times a
 * Rayleigh draw scaled so that 68% of draws are within 1: with `scale` 2 the engine's radius
 * holds about 25% of the truths, and twice the radius holds 68%.
 */
async function labelled(db: string, reqs: Record<string, unknown>[], scale: number, next: () => number) {
  const engine = await Engine.open({ db, ipDatabases: false });
  try {
    const answers = engine.processBatch(reqs) as { lat?: number; lon?: number; accuracy?: number }[];
    const norm = Math.sqrt(-2 * Math.log(0.32));
    return reqs.map((request, k) => {
      const a = answers[k];
      if (a?.lat === undefined || a.lon === undefined || a.accuracy === undefined)
        throw new Error(`no answer for request ${k}`);
      const d = (scale * a.accuracy * Math.sqrt(-2 * Math.log(1 - next()))) / norm;
      const bearing = 2 * Math.PI * next();
      const lat = a.lat + (d * Math.cos(bearing)) / 111_320;
      const lon = a.lon + (d * Math.sin(bearing)) / (111_320 * Math.cos((a.lat * Math.PI) / 180));
      return { request, truth: { lat, lon } };
    });
  } finally {
    engine.close();
  }
}

function writeJsonl(file: string, rows: unknown[]): string {
  writeFileSync(file, `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
  return file;
}

async function accuracies(db: string, reqs: Record<string, unknown>[]): Promise<number[]> {
  const engine = await Engine.open({ db, ipDatabases: false });
  try {
    return engine.processBatch(reqs).map((a) => (a as { accuracy: number }).accuracy);
  } finally {
    engine.close();
  }
}

const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)] as number;

interface Shares {
  class: string;
  rows: number;
  before: number;
  after: number;
  factor: number;
}

describe('whereabouts calibrate', () => {
  let dir: string;
  let db: string;
  let rowsFile: string;
  let reqs: Record<string, unknown>[];

  beforeAll(async () => {
    dir = tempDir('wb-calibrate-');
    db = worldDb(dir);
    const next = rng(23);
    reqs = requests(1_500, next);
    rowsFile = writeJsonl(join(dir, 'truth.jsonl'), await labelled(db, reqs, 2, next));
  }, 60_000);

  it('a dry run reports the held-out shares moving to 68% and stores nothing', () => {
    const r = cli(['calibrate', '--db', db, '--dry-run', '--json', '--quiet', rowsFile]);
    expect(r.code, r.stderr).toBe(0);
    const c = JSON.parse(r.stdout) as { shares: Shares[]; fitRows: number; testRows: number; file: null };
    expect(c.file).toBeNull();
    expect(c.fitRows + c.testRows).toBe(1_500);
    expect(c.testRows).toBeGreaterThan(400);
    const all = c.shares.find((s) => s.class === 'all') as Shares;
    expect(all.before).toBeLessThan(0.35);
    expect(all.after).toBeGreaterThan(0.6);
    expect(all.after).toBeLessThan(0.76);
    expect(all.factor).toBeGreaterThan(1.7);
    expect(all.factor).toBeLessThan(2.3);
    // One cell, and several by their effective number, are classes of their own, and each
    // with 100 rows or more moves to 68% too.
    const counts = c.shares.filter((x) => /^cells\/lte\/cells-[^/]+$/.test(x.class) && x.rows > 100);
    expect(counts.map((x) => x.class)).toContain('cells/lte/cells-1');
    expect(counts.some((x) => x.class.startsWith('cells/lte/cells-eff-'))).toBe(true);
    for (const s of counts) {
      expect(s.after, s.class).toBeGreaterThan(0.58);
      expect(s.after, s.class).toBeLessThan(0.78);
    }
    const manifest = JSON.parse(readFileSync(join(db, 'manifest.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest.radius_model).toBeUndefined();
  });

  it('a stored model widens the answers by its factor until reset', async () => {
    const before = await accuracies(db, reqs.slice(0, 300));
    const r = cli(['calibrate', '--db', db, '--quiet', rowsFile]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^class\s+rows\s+before\s+after\s+factor/);
    expect(r.stdout).toMatch(/worst class/);
    const manifest = JSON.parse(readFileSync(join(db, 'manifest.json'), 'utf8')) as { radius_model: string };
    expect(existsSync(join(db, manifest.radius_model))).toBe(true);
    const after = await accuracies(db, reqs.slice(0, 300));
    const ratio = median(after.map((a, i) => a / (before[i] as number)));
    expect(ratio).toBeGreaterThan(1.7);
    expect(ratio).toBeLessThan(2.3);

    const show = cli(['calibrate', '--db', db, '--show']);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/radius model format 1, fitted on [\d,]+ rows/);
    expect(show.stdout).toMatch(/cells\/lte\/cells-1 /);
    // The user's own ground truth: all of each measured correction.
    expect(show.stdout).not.toMatch(/the factors apply/);
    const showJson = JSON.parse(cli(['calibrate', '--db', db, '--show', '--json']).stdout) as {
      calibration: { trust: number; classes: Record<string, { factor: number }> };
    };
    expect(showJson.calibration.trust).toBe(1);
    expect(showJson.calibration.classes.all?.factor).toBeGreaterThan(1.7);
    // `stats` shows the same model beside the network statistics.
    const stats = cli(['stats', '--db', db, '--json']);
    expect(stats.code).toBe(0);
    expect(JSON.parse(stats.stdout).calibration).toEqual(showJson.calibration);

    // A second run reports "before" with the stored model: already about 68%.
    const again = JSON.parse(
      cli(['calibrate', '--db', db, '--dry-run', '--json', '--quiet', rowsFile]).stdout,
    ) as {
      shares: Shares[];
    };
    const all = again.shares.find((s) => s.class === 'all') as Shares;
    expect(all.before).toBeGreaterThan(0.6);
    expect(all.before).toBeLessThan(0.76);

    const reset = cli(['calibrate', '--db', db, '--reset']);
    expect(reset.code).toBe(0);
    expect(reset.stderr).toMatch(/radius model removed/);
    expect(await accuracies(db, reqs.slice(0, 300))).toEqual(before);
    expect(cli(['calibrate', '--db', db, '--show']).stdout).toMatch(/no radius model stored/);
    expect(cli(['calibrate', '--db', db, '--reset']).stderr).toMatch(/nothing to remove/);
  });

  it('bad inputs give clear errors', () => {
    const missing = cli(['calibrate', '--db', db, join(dir, 'nope.jsonl')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no such file: .*nope\.jsonl/);

    const garbage = writeJsonl(join(dir, 'garbage.jsonl'), [{ request: 1 }, { truth: { lat: 1, lon: 2 } }]);
    const none = cli(['calibrate', '--db', db, '--quiet', garbage]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/line 1: no "request" object/);
    expect(none.stderr).toMatch(/no usable rows/);

    const elsewhere = writeJsonl(join(dir, 'elsewhere.jsonl'), [
      {
        request: { cells: [{ radio: 'lte', mcc: 208, mnc: 1, lac: 1, cid: 1 }] },
        truth: { lat: 48.8, lon: 2.3 },
      },
    ]);
    const unlocated = cli(['calibrate', '--db', db, '--quiet', elsewhere]);
    expect(unlocated.code).toBe(1);
    expect(unlocated.stderr).toMatch(/no usable rows: none of the 1 rows read was located/);

    const noDb = cli(['calibrate', '--db', join(dir, 'empty'), rowsFile]);
    expect(noDb.code).toBe(1);
    expect(noDb.stderr).toMatch(/no station database in .*empty/);

    expect(cli(['calibrate', rowsFile]).code).toBe(2);
    expect(cli(['calibrate', '--db', db]).code).toBe(2);
    expect(cli(['calibrate', '--db', db, '--show', '--reset']).code).toBe(2);
  });

  // Root may write anywhere: the check cannot fail there.
  it.skipIf(process.getuid?.() === 0)('a database that is not writable is refused before any work', () => {
    chmodSync(db, 0o555);
    try {
      const r = cli(['calibrate', '--db', db, rowsFile]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/is not writable/);
      expect(cli(['calibrate', '--db', db, '--dry-run', '--quiet', rowsFile]).code).toBe(0);
    } finally {
      chmodSync(db, 0o755);
    }
  });
});

/**
 * An OpenCelliD measurement file of `n` rows: LTE 1/1 cells 5000.. on a 6 x 5 grid 0.01 degree
 * apart, each row a device within about 400 m of one of them, a minute apart.
 */
function measurements(file: string, n: number, next: () => number): string {
  const lines = [
    'mcc,mnc,lac,cellid,lat,lon,signal,measured_at,rating,speed,direction,act,ta,psc,tac,pci,sid,nid,bid',
  ];
  for (let k = 0; k < n; k++) {
    const c = Math.floor(next() * 30);
    const lat = 50 + Math.floor(c / 6) * 0.01 + (next() - 0.5) * 0.007;
    const lon = 8 + (c % 6) * 0.01 + (next() - 0.5) * 0.011;
    const signal = -70 - Math.round(next() * 40);
    lines.push(
      `1,1,,${5000 + c},${lat.toFixed(6)},${lon.toFixed(6)},${signal},${1_700_000_000_000 + k * 60_000},10,0,0,LTE,,,100,${c},,,`,
    );
  }
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

describe('whereabouts learn calibrates by itself', () => {
  it('on a held-out third when the files give 600 requests or more, and learns that third too', async () => {
    const dir = tempDir('wb-learn-calibrate-');
    const file = measurements(join(dir, 'm.csv'), 900, rng(5));
    const db = join(dir, 'db');
    const r = cli(['learn', '--quiet', '--db', db, file]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/radius calibrated on a held-out third of the requests \(\d+ located/);
    expect(r.stderr).toMatch(/^all\s+\d+\s+[\d.]+%\s+[\d.]+%\s+[\d.]+$/m);
    const manifest = JSON.parse(readFileSync(join(db, 'manifest.json'), 'utf8')) as { radius_model?: string };
    expect(manifest.radius_model).toMatch(/^radius-model-\d+\.json$/);
    const shown = cli(['calibrate', '--db', db, '--show']).stdout;
    expect(shown).toMatch(/^cells\/lte\/cells-1\s/m);
    // Its own held-out blocks stand in for the next trips only so far: a quarter of each
    // measured correction, in logarithms.
    expect(shown).toContain(`the factors apply ${LEARN_CALIBRATION_TRUST} of each measured correction`);
    const model = JSON.parse(readFileSync(join(db, manifest.radius_model as string), 'utf8')) as RadiusModel;
    expect(model.trust).toBe(LEARN_CALIBRATION_TRUST);
    const all = model.classes.all as { weight: number; quantile: number; factor: number };
    const measured = (all.weight * Math.log(all.quantile)) / (all.weight + model.prior_rows);
    expect(Math.log(all.factor)).toBeCloseTo(LEARN_CALIBRATION_TRUST * measured, 6);

    // --no-calibrate: the same stations (every row learned either way), no model.
    const plain = join(dir, 'plain');
    const p = cli(['learn', '--quiet', '--no-calibrate', '--db', plain, file]);
    expect(p.code, p.stderr).toBe(0);
    expect(p.stderr).not.toMatch(/radius/);
    expect(JSON.parse(readFileSync(join(plain, 'manifest.json'), 'utf8')).radius_model).toBeUndefined();
    const cells = (text: string) => /database .*: ([\d,]+) cells/.exec(text)?.[1];
    expect(cells(r.stderr)).toBe(cells(p.stderr));
    expect(cells(p.stderr)).toBe('30');
    // The calibration's first run went into a scratch copy, since removed: --db holds one
    // whole run, whose cells answer where those learned without calibration do.
    const positions = async (d: string) => {
      const engine = await Engine.open({ db: d, ipDatabases: false });
      try {
        return Array.from({ length: 30 }, (_, c) =>
          [-75, -95, -110].map((signal) => {
            const cell = { radio: 'lte', mcc: 1, mnc: 1, lac: 100, cid: 5000 + c, signal };
            const a = engine.process({ cells: [cell] }) as { lat?: number; lon?: number };
            return [a.lat, a.lon];
          }),
        );
      } finally {
        engine.close();
      }
    };
    const ours = await positions(db);
    expect(ours.flat(2).every((x) => typeof x === 'number')).toBe(true);
    expect(ours).toEqual(await positions(plain));
    expect(readdirSync(dir).filter((f) => f.startsWith('.whereabouts-calibrate-'))).toEqual([]);
  });

  it('says why it did not with fewer requests', () => {
    const dir = tempDir('wb-learn-calibrate-');
    const file = measurements(join(dir, 'm.csv'), 100, rng(6));
    const r = cli(['learn', '--quiet', '--db', join(dir, 'db'), file]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/radius not calibrated: 100 requests, fewer than 600/);
  });
});

describe('learn holds out for its calibration', () => {
  it('every third block of ten minutes of each file, and of 100 requests where rows have no time', () => {
    const row = {} as EvalRow;
    // File 0: a request a second for an hour; file 1: 350 requests without a time. Lines are
    // numbered from 2 (after a header), one a request.
    const groups = [
      ...Array.from({ length: 3_600 }, (_, i) => ({ file: 0, first: i, end: i + 1, time: 5_000 + i, row })),
      ...Array.from({ length: 350 }, (_, i) => ({ file: 1, first: i, end: i + 1, time: Number.NaN, row })),
    ];
    const lines = [
      Array.from({ length: 3_600 }, (_, i) => i + 2),
      Array.from({ length: 350 }, (_, i) => i + 2),
    ];
    const plan = calibrationPlan(groups, lines);
    expect(PLAN_BLOCK_S).toBe(600);
    // Blocks in order of appearance: file 0's six, then file 1's four; every third held out.
    const block = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i + 2);
    expect(plan.heldOut[0]).toEqual([...block(1_200, 600), ...block(3_000, 600)]);
    expect(plan.heldOut[1]).toEqual(block(200, 100));
    expect(plan.rows.length).toBe(1_300);
  });
});
