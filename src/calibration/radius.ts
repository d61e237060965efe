/**
 * Radius calibration (`whereabouts calibrate`, and `learn` on a held-out share of its files):
 * rows with a known truth are located by the engine without the database's radius model, the
 * core fits the model (a factor on the radius per class of answer, whereabouts-core's
 * `calibration`) on one part of the rows and reports the inside shares on the rest, before and
 * after, and stores it with the database. The model is applied by the core at answer time.
 */
import { copyFileSync, existsSync, linkSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Engine } from '../engine.js';
import {
  type BadLine,
  type EvalRow,
  expandInputs,
  groupObservations,
  isLabelled,
  readLabelled,
  readObservationFiles,
} from '../eval/inputs.js';
import {
  type NativeImportProgress,
  type NativeLearnOptions,
  type NativeLearnSummary,
  native,
} from '../native/binding.js';

/** Rows located per call into the core. */
const BATCH = 16_384;

/** One class's inside shares on the held-out rows (whereabouts-core's `ClassShares`). */
export interface ClassShares {
  class: string;
  rows: number;
  /** With the model stored before this run (none: the engine's radii). */
  before: number;
  /** With the model just fitted. */
  after: number;
  factor: number;
}

/** A fitted class as stored. */
export interface ClassFactor {
  rows: number;
  /** The rows' total weight ({@link placeWeights}): places, roughly. */
  weight: number;
  quantile: number;
  factor: number;
}

/** The stored radius model (whereabouts-core's `RadiusModel`). */
export interface RadiusModel {
  format: number;
  confidence: number;
  prior_rows: number;
  rows: number;
  created: number;
  /** The share, in logarithms, of each measured correction the factors apply (1: all; absent in older files). */
  trust?: number;
  classes: Record<string, ClassFactor>;
}

/** What a calibration did. */
export interface Calibration {
  model: RadiusModel;
  shares: ClassShares[];
  fitRows: number;
  testRows: number;
  /** The file the model was stored in; null with a dry run. */
  file: string | null;
  /** Rows read, and of those located by the database. */
  rowsRead: number;
  rowsLocated: number;
  /** Consecutive rows held out together ({@link heldOutRows}). */
  block: number;
}

/** Rows read from the inputs: labelled requests and observation files grouped into requests. */
export interface CalibrationRows {
  rows: EvalRow[];
  malformed: number;
}

/**
 * Reads the inputs (files or directories): labelled JSON lines (`{"request", "truth"}`) and
 * GPS-tagged observation files (the formats `learn` reads). A file that cannot be read fails with
 * its name; malformed lines go to `bad` and are counted.
 */
export async function readCalibrationRows(
  inputs: readonly string[],
  net: { mcc?: number; mnc?: number },
  bad: (b: BadLine) => void,
): Promise<CalibrationRows> {
  let files: string[];
  try {
    files = expandInputs(inputs);
  } catch (e) {
    throw new Error(
      `cannot read ${(e as NodeJS.ErrnoException).path ?? 'an input'}: ${(e as Error).message}`,
    );
  }
  if (files.length === 0) throw new Error('no input files (the directories named are empty)');
  const rows: EvalRow[] = [];
  let malformed = 0;
  const count = (b: BadLine) => {
    malformed++;
    bad(b);
  };
  const observed: string[] = [];
  for (const f of files) {
    let labelled: boolean;
    try {
      labelled = isLabelled(f);
    } catch (e) {
      throw new Error(`cannot read ${f}: ${(e as Error).message}`);
    }
    if (labelled) readLabelled(f, BATCH, (part) => rows.push(...part), count);
    else observed.push(f);
  }
  if (observed.length > 0) {
    const read = await readObservationFiles(observed, net);
    for (const f of read) {
      malformed += f.report.rejected;
      for (const b of f.report.badLines) bad({ file: f.path, line: b.line, reason: b.reason });
    }
    for (const g of groupObservations(read)) rows.push(g.row);
  }
  return { rows, malformed };
}

/**
 * Which rows are held out: blocks of `block` consecutive rows, every third block (rows next to
 * each other in a trace share their stations and errors, so a block is held out whole). `block`
 * is a thirtieth of the rows, at least 1 and at most 100, so that even a few hundred rows give
 * ten held-out blocks.
 */
export function heldOutRows(n: number): { heldOut: boolean[]; block: number } {
  const block = Math.max(1, Math.min(100, Math.floor(n / 30)));
  const heldOut = Array.from({ length: n }, (_, i) => Math.floor(i / block) % 3 === 2);
  return { heldOut, block };
}

/** The size of a place in degrees (about 110 m of latitude) for {@link placeWeights}. */
const PLACE_DEG = 0.001;

/**
 * The most rows' weight one place carries ({@link placeWeights}): about what a car at town
 * speed logs in a place at one row a second, so that driving rows count one each while a device
 * standing still for an hour counts as a short stop.
 */
const PLACE_ROWS = 20;

/**
 * Each row's weight: 1, or PLACE_ROWS / n where n > PLACE_ROWS rows of its class and of its
 * part (fitting or held out) were taken at its place (its truth in a square of
 * {@link PLACE_DEG}). A device standing still logs thousands of rows with one error between
 * them: they are one piece of evidence, and unweighted they would decide the fit (Cork's static
 * traces are half of some files' rows). The held-out shares are weighted alike, so that they
 * measure what the fit aims at.
 */
export function placeWeights(
  classes: readonly string[],
  truths: readonly { lat: number; lon: number }[],
  heldOut: readonly boolean[],
): number[] {
  const key = (i: number) => {
    const t = truths[i] as { lat: number; lon: number };
    return `${heldOut[i] ? 'h' : 'f'}|${classes[i]}|${Math.round(t.lat / PLACE_DEG)}|${Math.round(t.lon / PLACE_DEG)}`;
  };
  const count = new Map<string, number>();
  classes.forEach((_, i) => {
    count.set(key(i), (count.get(key(i)) ?? 0) + 1);
  });
  return classes.map((_, i) => Math.min(1, PLACE_ROWS / (count.get(key(i)) as number)));
}

/**
 * Locates `rows` with the database in `db` (without its radius model), fits the model on the
 * rows not held out and reports the shares on those held out; stores it unless `dryRun`.
 * Fails when no row is located.
 */
export async function calibrate(
  db: string,
  rows: readonly EvalRow[],
  o: { dryRun?: boolean; now?: number; progress?: (done: number, total: number) => void } = {},
): Promise<Calibration> {
  return fitRadius(db, rows, await radiusSamples(db, rows, o), { ...o, trust: 1 });
}

/** Each row's class and error over radius with the database in `db` (without its radius model; NaN: not located). */
interface RadiusSamples {
  classes: string[];
  ratios: number[];
}

async function radiusSamples(
  db: string,
  rows: readonly EvalRow[],
  o: { now?: number; progress?: (done: number, total: number) => void },
): Promise<RadiusSamples> {
  if (rows.length === 0) throw new Error('no usable rows: the inputs hold no request with a GPS truth');
  const engine = await Engine.open({ db, now: o.now, ipDatabases: false });
  const classes: string[] = [];
  const ratios: number[] = [];
  try {
    for (let s = 0; s < rows.length; s += BATCH) {
      const part = rows.slice(s, s + BATCH);
      const out = engine.radiusSamples(
        part.map((r) => r.request),
        part.map((r) => r.truth),
      );
      classes.push(...out.classes);
      ratios.push(...out.ratios);
      o.progress?.(s + part.length, rows.length);
    }
  } finally {
    engine.close();
  }
  return { classes, ratios };
}

/**
 * Fits the model on `samples` of `rows` (split as {@link heldOutRows}) and stores it with `db`
 * unless `dryRun`; its factors apply the share `trust` of each measured correction.
 */
function fitRadius(
  db: string,
  rows: readonly EvalRow[],
  { classes, ratios }: RadiusSamples,
  o: { dryRun?: boolean; trust: number },
): Calibration {
  // Rows the database could not locate say nothing of its radii: the split is over the rest.
  const located: number[] = [];
  ratios.forEach((r, i) => {
    if (Number.isFinite(r)) located.push(i);
  });
  if (located.length === 0)
    throw new Error(
      `no usable rows: none of the ${rows.length.toLocaleString('en')} rows read was located with ${db} ` +
        '(do its stations cover the files?)',
    );
  const { heldOut, block } = heldOutRows(located.length);
  const weights = placeWeights(
    located.map((i) => classes[i] as string),
    located.map((i) => (rows[i] as EvalRow).truth),
    heldOut,
  );
  const fit = native().calibrateRadius(
    db,
    located.map((i) => classes[i] as string),
    located.map((i) => ratios[i] as number),
    weights,
    heldOut,
    !o.dryRun,
    o.trust,
  );
  const result = JSON.parse(fit) as Omit<Calibration, 'rowsRead' | 'rowsLocated' | 'block'>;
  return { ...result, rowsRead: rows.length, rowsLocated: located.length, block };
}

/** The model stored with the database in `db`, or undefined. */
export function storedRadiusModel(db: string): RadiusModel | undefined {
  const text = native().storedRadiusModel(db);
  return text == null ? undefined : (JSON.parse(text) as RadiusModel);
}

/** Removes the model stored with the database in `db`; whether there was one. */
export function resetRadiusModel(db: string): boolean {
  return native().resetRadiusModel(db);
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

/**
 * Classes shown in the table: the whole set, and every class with at least `minRows` held-out
 * rows, coarser classes before their finer ones.
 */
export function formatShares(c: Calibration, minRows = 20): string {
  const shown = c.shares.filter((s) => s.class === 'all' || s.rows >= minRows);
  const width = Math.max(5, ...shown.map((s) => s.class.length));
  const lines = [
    `${'class'.padEnd(width)}  ${'rows'.padStart(7)}  ${'before'.padStart(7)}  ${'after'.padStart(7)}  factor`,
  ];
  for (const s of shown)
    lines.push(
      `${s.class.padEnd(width)}  ${s.rows.toLocaleString('en').padStart(7)}  ${pct(s.before).padStart(7)}  ${pct(s.after).padStart(7)}  ${s.factor.toFixed(3)}`,
    );
  const worst = worstClass(c.shares);
  if (worst)
    lines.push(
      `worst class (of those with ${WORST_MIN_ROWS}+ held-out rows): ${worst.class}, ${pct(worst.after)} inside after (${pct(worst.before)} before)`,
    );
  return lines.join('\n');
}

/** Classes with fewer held-out rows than this are too noisy to call the worst. */
export const WORST_MIN_ROWS = 30;

/** The class whose share after lies farthest from 68%, of those with {@link WORST_MIN_ROWS}+ rows. */
export function worstClass(shares: readonly ClassShares[]): ClassShares | undefined {
  let worst: ClassShares | undefined;
  for (const s of shares)
    if (s.rows >= WORST_MIN_ROWS && (!worst || Math.abs(s.after - 0.68) > Math.abs(worst.after - 0.68)))
      worst = s;
  return worst;
}

/** The stored model as a table: class, fitting rows, factor. */
export function formatModel(m: RadiusModel): string {
  const entries = Object.entries(m.classes);
  const width = Math.max(5, ...entries.map(([k]) => k.length));
  const lines = [
    `radius model format ${m.format}, fitted on ${m.rows.toLocaleString('en')} rows` +
      (m.created > 0 ? ` on ${new Date(m.created * 1000).toISOString().slice(0, 10)}` : '') +
      `, a class of few places pooled toward its parent (weighing ${m.prior_rows} places)` +
      ((m.trust ?? 1) < 1
        ? `; the factors apply ${m.trust} of each measured correction (in logarithms)`
        : ''),
    `${'class'.padEnd(width)}  ${'rows'.padStart(7)}  ${'places'.padStart(7)}  q68/radius  factor`,
  ];
  for (const [k, f] of entries)
    lines.push(
      `${k.padEnd(width)}  ${f.rows.toLocaleString('en').padStart(7)}  ${Math.round(f.weight).toLocaleString('en').padStart(7)}  ${f.quantile.toFixed(3).padStart(10)}  ${f.factor.toFixed(3)}`,
    );
  return lines.join('\n');
}

/** `learn` calibrates by itself when its files give at least this many requests: a third held out is 200. */
export const LEARN_CALIBRATE_MIN_ROWS = 600;

/** `learn` calibrates by itself only while its files total at most this many bytes (their rows are read into memory). */
export const LEARN_CALIBRATE_MAX_BYTES = 1 << 30;

/**
 * How `learn` calibrates by itself: a third of its files' requests (`rows`; blocks of time,
 * {@link calibrationPlan}) is held out of a first run into a scratch copy of the database
 * ({@link learnCalibrated}). `heldOut`: per file, the sorted line
 * numbers of those rows (the learner's `heldOut` option).
 */
export interface LearnCalibrationPlan {
  rows: EvalRow[];
  heldOut: number[][];
}

/** The plan for `files`, or why there is none. */
export async function learnCalibrationPlan(
  files: readonly string[],
  net: { mcc?: number; mnc?: number },
  bytes: number,
): Promise<LearnCalibrationPlan | string> {
  if (files.includes('-')) return 'standard input cannot be read twice';
  if (bytes > LEARN_CALIBRATE_MAX_BYTES)
    return `the files hold over ${LEARN_CALIBRATE_MAX_BYTES / 2 ** 30} GiB (run whereabouts calibrate on a part of them)`;
  const observed = await readObservationFiles(files, net);
  const groups = groupObservations(observed);
  if (groups.length < LEARN_CALIBRATE_MIN_ROWS)
    return `${groups.length.toLocaleString('en')} requests, fewer than ${LEARN_CALIBRATE_MIN_ROWS}`;
  return calibrationPlan(
    groups,
    observed.map((o) => o.line),
  );
}

/**
 * `learn` holds out every third block of this many seconds of each file for its calibration:
 * a walk or drive passes through a cell's coverage in a few minutes, so rows ten minutes
 * apart are mostly on other streets, as other trips' devices would be. Rows held out next to
 * learned ones of the same trip are answered from their own neighbours' sightings: on the Dakar
 * walks, held-out blocks of 100 rows fitted radii that held 40% and 59% on other blocks
 * (docs/experiments.md).
 */
export const PLAN_BLOCK_S = 600;

/**
 * The share, in logarithms, of each correction `learn`'s own calibration measured that its
 * model applies (`calibration::RadiusModel::trust`): its held-out blocks are other streets of
 * the very trips it learns, which stand in for the devices to come only so far. Applied in
 * full, it moved every walking or driving set away from 68% inside (Cork's held-out files
 * 66.8% -> 73.7%, the Dakar logs 68.3% / 68.7% -> 75.0% / 92.5%, the simulated walks' median
 * world 72.4% -> 76.8%) and only the families' independent sightings toward it. Chosen on the
 * simulated sets (walks and the families' sightings, 16 held-out worlds each: worlds within
 * 60-76%, 21 of 32 at 1, 24 at 0.5, 26 at 0.25, 26 at 0.1, 25 at 0; the sum of distances
 * from 68%, 1.67 at 0.25, 1.69-1.71 at the others), reported on the real ones: Cork 69.2%,
 * Dakar 70.8% / 75.8% (docs/experiments.md). `whereabouts calibrate`, on the user's own
 * ground truth, applies all of it.
 */
export const LEARN_CALIBRATION_TRUST = 0.25;

/**
 * The plan over `groups` (requests of the files whose line numbers by row are `lines`, one
 * array a file): every third block of {@link PLAN_BLOCK_S} seconds of each file held out (of
 * 100 requests where rows have no time).
 */
export function calibrationPlan(
  groups: readonly { file: number; first: number; end: number; time: number; row: EvalRow }[],
  lines: readonly ArrayLike<number>[],
): LearnCalibrationPlan {
  const start = lines.map(() => Number.POSITIVE_INFINITY);
  for (const g of groups) if (g.time < (start[g.file] as number)) start[g.file] = g.time;
  const untimed = lines.map(() => 0);
  const unit = (g: (typeof groups)[number]): string => {
    if (Number.isNaN(g.time)) {
      const k = untimed[g.file] as number;
      untimed[g.file] = k + 1;
      return `${g.file}/n${Math.floor(k / 100)}`;
    }
    return `${g.file}/t${Math.floor((g.time - (start[g.file] as number)) / PLAN_BLOCK_S)}`;
  };
  const order = new Map<string, number>();
  const held: number[][] = lines.map(() => []);
  const rows: EvalRow[] = [];
  for (const g of groups) {
    const u = unit(g);
    if (!order.has(u)) order.set(u, order.size);
    if ((order.get(u) as number) % 3 !== 2) continue;
    for (let i = g.first; i < g.end; i++)
      held[g.file]?.push((lines[g.file] as ArrayLike<number>)[i] as number);
    rows.push(g.row);
  }
  return { rows, heldOut: held.map((l) => l.sort((a, b) => a - b)) };
}

/**
 * Learns `files` into `db` as `learn` without calibration does, and calibrates its radius on
 * the held-out rows of `plan`: a first run without them goes into a scratch copy of `db`
 * (stations files linked, not copied, where the file system allows), which locates them; then
 * `files` are learned into `db` whole, and the model fitted on those rows is stored with it.
 * A first run into `db` itself, then the held-out rows learned on top, would leave `db` other
 * than one whole run: a refined cell's levels would be those of the held-out third alone.
 */
export async function learnCalibrated(
  db: string,
  files: string[],
  options: NativeLearnOptions,
  plan: LearnCalibrationPlan,
  onProgress: (p: NativeImportProgress) => void,
): Promise<{ report: NativeLearnSummary; calibration: Calibration | string }> {
  const scratch = scratchCopy(db);
  let samples: RadiusSamples | string;
  try {
    const held = files.map((_, f) => {
      const base = options.heldOut?.[f] ?? [];
      return [...base, ...(plan.heldOut[f] ?? [])].sort((a, b) => a - b);
    });
    await native().learnFiles(scratch, files, { ...options, heldOut: held }, onProgress);
    samples = await radiusSamples(scratch, plan.rows, {});
  } catch (e) {
    samples = (e as Error).message;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const report = await native().learnFiles(db, files, options, onProgress);
  let calibration: Calibration | string;
  try {
    calibration =
      typeof samples === 'string'
        ? samples
        : fitRadius(db, plan.rows, samples, { trust: LEARN_CALIBRATION_TRUST });
  } catch (e) {
    calibration = (e as Error).message;
  }
  return { report, calibration };
}

/**
 * An empty directory beside `db`, or a copy of the database in `db` there: its stations files
 * (never changed once written) hard-linked where possible, its small files copied; the live
 * overlay and lock files left out (a file run does not read them).
 */
function scratchCopy(db: string): string {
  const parent = dirname(resolve(db));
  let scratch: string;
  try {
    scratch = mkdtempSync(join(parent, '.whereabouts-calibrate-'));
  } catch {
    scratch = mkdtempSync(join(tmpdir(), 'whereabouts-calibrate-'));
  }
  if (!existsSync(join(db, 'manifest.json'))) return scratch;
  for (const e of readdirSync(db, { withFileTypes: true })) {
    if (!e.isFile() || /\.sqlite|\.lock$|^\./.test(e.name)) continue;
    const from = join(db, e.name);
    const to = join(scratch, e.name);
    if (e.name.endsWith('.fb')) {
      try {
        linkSync(from, to);
        continue;
      } catch {
        // Another file system: copied below.
      }
    }
    copyFileSync(from, to);
  }
  return scratch;
}
