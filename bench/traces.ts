/**
 * Learned cells on real and simulated traces: learns one part of GPS-tagged observations and
 * locates the rest by each row's serving cell (with its timing advance), beside the centroid of
 * the training sightings of the same cell (`CentroidBaseline`) and the same database without
 * the site masts the learner fitted from timing advances (`learn::masts`), in one process.
 *
 *   npx tsx bench/traces.ts --set dakar|cork [--cv] [--json] [--rows FILE] [--level-offset DB] [--calibrate] [--classes]
 *   npx tsx bench/traces.ts --set dakar --scans [--json] [--classes]
 *   npx tsx bench/traces.ts --set families [--seeds 201..216] [--requests 10000] [--scans] [--json]
 *   npx tsx bench/traces.ts --set walks [--seeds 201..216] [--json]
 *
 * `dakar`: the three operators' G-NetTrack Pro logs (../shared/data/gnettrack-dakar), each cut
 * into 10-minute blocks; A learns the even blocks, B the odd. `cork`: the Cork drive tests
 * (../shared/data/ucc-5g-cork), every fourth file held out (`--cv`: folds within the learn
 * files). `families`: the simulator's world families (docs/simulator.md), one world per seed,
 * each scenario request of its cell scenarios taken as a GPS-tagged sighting of its serving
 * cell (with the advance the simulator gave, on 60% of LTE and GSM rows) at its true position;
 * two rows in three learn, the third is located; a part per world, and the median and worst
 * world beside each other. `--scans`: every cell a request heard is a sighting, and the
 * located rows are the whole multi-cell requests, beside the mean of all their cells'
 * training sightings. With `dakar`, `--scans` locates the rows two or three phones logged
 * together (`phonesTogether`) as one request naming each phone's serving cell: multi-cell
 * requests on real levels, beside the mean of their learned cells' training sightings.
 * `walks`: the simulator's walks through the family worlds
 * (`whereabouts-sim walks`: phones logging their serving cell along the streets, most routes
 * walked on several days, timing advances on most walks); in each world two walks in three (in
 * time order) learn and the third is located, as the real walking traces' check does.
 * Only rows whose (serving) cell was learned count. `--rows FILE` writes
 * them as JSON lines for analysis outside (docs/experiments.md): per case, a line with the
 * learned masts of its database (`masts`, by network), then a line per located row (truth,
 * answer, the answer without masts, the centroid's answer, radio, cell id and timing advance in
 * metres or null).
 * `--level-offset DB` adds DB to every located row's level: a device that reads its cells
 * stronger (or weaker, negative) than the phones the learning's logs came from. `--calibrate`
 * learns as `whereabouts learn` does by default: the radius calibrated on a held-out third of
 * the learn part's own requests (docs/positioning.md, "Calibration"). `--classes` adds, over
 * every case, each class of answer of the radius model (`whereabouts calibrate`'s classes:
 * what answered, radio, cells, station quality) with its rows, inside share and the 68%
 * quantile of error over radius (the factor a calibration would fit there), and with
 * `--calibrate` its share inside as answered; with `--rows`, each row's class and that ratio.
 */
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { calibrationPlan, learnCalibrated } from '../src/calibration/radius.js';
import { nativeLearn } from '../src/cli/learn.js';
import { Engine } from '../src/engine.js';
import { CentroidBaseline } from '../src/eval/baselines.js';
import { groupObservations, type ObservationFile, readObservationFiles } from '../src/eval/inputs.js';
import { distanceM, ErrorStats, quantile } from '../src/eval/metrics.js';
import { SIM_NOW, simWalks, simWorld } from '../src/eval/sim.js';
import type { LocateRequest } from '../src/locating/request/index.js';
import { unpackCorkTraces } from './cork-traces.js';
import { seedRange } from './seeds.js';

const { values } = parseArgs({
  options: {
    set: { type: 'string', default: 'dakar' },
    seeds: { type: 'string', default: '201..216' },
    requests: { type: 'string', default: '10000' },
    scans: { type: 'boolean', default: false },
    cv: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    rows: { type: 'string' },
    zip: { type: 'string' },
    'level-offset': { type: 'string', default: '0' },
    calibrate: { type: 'boolean', default: false },
    classes: { type: 'boolean', default: false },
  },
});
const levelOffset = Number(values['level-offset']);
if (!Number.isFinite(levelOffset)) {
  process.stderr.write(
    `bench/traces.ts: --level-offset must be a number of dB (got ${values['level-offset']})\n`,
  );
  process.exit(2);
}

const root = join(import.meta.dirname, '..');
const shared = join(root, '..', 'shared', 'data');
const BLOCK_S = 600;
/** Seconds apart at most for two phones' rows to make one scan (`--set dakar --scans`). */
const PHONES_TOGETHER_S = 1;

/** One learn-and-locate run: which groups learn, which are located, and the labels rows report under. */
interface Case {
  name: string;
  learn: (g: Group) => boolean;
  locate: (g: Group) => boolean;
}
type Group = ReturnType<typeof groupObservations>[number];
/** The phones' rows each merged scan of `--set dakar --scans` joins (its group: the merged request). */
const merged = new Map<Group, Group[]>();

if (values.rows) writeFileSync(values.rows, '');
/**
 * Per class of the radius model, each located row's error over its radius without the
 * database's model and as answered (with it, under `--calibrate`) (`--classes`).
 */
const byClass = new Map<string, { raw: number[]; answered: number[] }>();
const work = mkdtempSync(join(tmpdir(), 'whereabouts-traces-'));
try {
  let files: string[];
  let net: { mcc?: number; mnc?: number } = {};
  let cases: (obs: ObservationFile[], groups: Group[]) => Case[];
  /** Which subset a located row reports under besides the pooled one (the operator, the fold). */
  let part: (obs: ObservationFile[], g: Group) => string;
  if (values.set === 'dakar') {
    const dir = join(shared, 'gnettrack-dakar');
    if (!existsSync(dir)) missing(dir);
    files = readdirSync(dir)
      .filter((f) => f.endsWith('_log.txt'))
      .sort()
      .map((f) => join(dir, f));
    const block = (obs: ObservationFile[], groups: Group[]) => {
      const t0 = obs.map((_, fi) => Math.min(...groups.filter((g) => g.file === fi).map((g) => g.time)));
      return (g: Group) =>
        Number.isNaN(g.time) ? -1 : Math.floor((g.time - (t0[g.file] as number)) / BLOCK_S) % 2;
    };
    cases = (obs, groups) => {
      const b = block(obs, groups);
      const a: Case = { name: 'A (learn even blocks)', learn: (g) => b(g) === 0, locate: (g) => b(g) === 1 };
      const r: Case = { name: 'B (learn odd blocks)', learn: (g) => b(g) === 1, locate: (g) => b(g) === 0 };
      return values.cv ? [a] : [a, r];
    };
    part = (obs, g) => basename(obs[g.file]?.path ?? '').replace(/_log\.txt$/, '');
  } else if (values.set === 'cork') {
    const zip = values.zip ?? join(shared, 'ucc-5g-cork', '5G-production-dataset.zip');
    if (!existsSync(zip)) missing(zip);
    files = unpackCorkTraces(zip, join(work, 'traces'));
    net = { mcc: 272, mnc: 1 };
    const driving = (obs: ObservationFile[], g: Group) => ((obs[g.file]?.speed[g.first] as number) ?? 0) > 0;
    cases = (obs) => {
      const train = (g: Group) => g.file % 4 !== 3;
      if (!values.cv)
        return [{ name: 'held-out files', learn: train, locate: (g) => g.file % 4 === 3 && driving(obs, g) }];
      // Fold k: the learn files whose rank among the learn files is k mod 3.
      const rank = (g: Group) => g.file - Math.floor(g.file / 4);
      return [0, 1, 2].map((k) => ({
        name: `fold ${k}`,
        learn: (g: Group) => train(g) && rank(g) % 3 !== k,
        locate: (g: Group) => train(g) && rank(g) % 3 === k && driving(obs, g),
      }));
    };
    part = () => 'all';
  } else if (values.set === 'walks') {
    const seeds = seedRange('--seeds', values.seeds);
    files = [];
    /** Each file's world (its index in `seeds`) and its rank among that world's walks. */
    const worldOf: number[] = [];
    const rank: number[] = [];
    seeds.forEach((seed, k) => {
      const walks = simWalks(join(root, '.eval', `walks-${seed}`), String(seed), true);
      walks.forEach((f, i) => {
        files.push(f);
        worldOf.push(k);
        rank.push(i);
      });
    });
    // A case per world: its own database, two walks in three (in time order) learned.
    cases = () =>
      seeds.map((seed, k) => ({
        name: `world ${seed}`,
        learn: (g: Group) => worldOf[g.file] === k && (rank[g.file] as number) % 3 !== 2,
        locate: (g: Group) => worldOf[g.file] === k && (rank[g.file] as number) % 3 === 2,
      }));
    part = (obs, g) => (Number.isNaN(obs[g.file]?.ta[g.first] as number) ? 'no advance' : 'advance');
  } else if (values.set === 'families') {
    const seeds = seedRange('--seeds', values.seeds);
    files = [];
    for (const seed of seeds) {
      const w = await simWorld(
        join(root, '.eval', `family-${seed}-${values.requests}`),
        String(seed),
        values.requests as string,
        true,
        '0',
        true,
      );
      files.push(sightingsCsv(w.scenarios, join(work, `world-${seed}.csv`), values.scans as boolean));
    }
    // A case per world: its own database, two rows in three learned.
    const index = new Map<Group, number>();
    cases = (_, groups) => {
      const seen = new Map<number, number>();
      for (const g of groups) {
        const i = seen.get(g.file) ?? 0;
        index.set(g, i);
        seen.set(g.file, i + 1);
      }
      return seeds.map((seed, k) => ({
        name: `world ${seed}`,
        learn: (g: Group) => g.file === k && (index.get(g) as number) % 3 !== 2,
        locate: (g: Group) => g.file === k && (index.get(g) as number) % 3 === 2,
      }));
    };
    // Rows with an advance (the learned masts' part) apart from those without.
    part = (obs, g) => (Number.isNaN(obs[g.file]?.ta[g.first] as number) ? 'no advance' : 'advance');
  } else {
    process.stderr.write(
      `bench/traces.ts: --set must be dakar, cork, families or walks (got ${values.set})\n`,
    );
    process.exit(2);
  }

  const obs = await readObservationFiles(files, net);
  const groups = groupObservations(obs);
  const results: Result[] = [];
  for (const [k, c] of cases(obs, groups).entries()) {
    const db = join(work, `db-${k}`);
    // Held out: every row the case does not learn, by file.
    const held = obs.map(() => [] as number[]);
    const learnedFiles = new Set<number>();
    for (const g of groups) {
      if (c.learn(g)) learnedFiles.add(g.file);
      else for (let r = g.first; r < g.end; r++) held[g.file]?.push(obs[g.file]?.line[r] as number);
    }
    const fileIdx = [...learnedFiles].sort((a, b) => a - b);
    const learnFiles = fileIdx.map((f) => files[f] as string);
    const learnOptions = { ...net, heldOut: fileIdx.map((f) => held[f] as number[]) };
    if (values.calibrate) {
      // As `whereabouts learn` calibrates by itself, over the learn part's requests.
      const position = new Map(fileIdx.map((f, i) => [f, i]));
      const plan = calibrationPlan(
        groups.filter((g) => c.learn(g)).map((g) => ({ ...g, file: position.get(g.file) as number })),
        fileIdx.map((f) => (obs[f] as ObservationFile).line),
      );
      await learnCalibrated(db, learnFiles, learnOptions, plan, () => {});
    } else await nativeLearn()(db, learnFiles, learnOptions, () => {});
    const centroid = new CentroidBaseline();
    for (const g of groups) {
      if (!c.learn(g)) continue;
      centroid.addRows(obs[g.file] as ObservationFile, g.first, g.end);
    }
    const located =
      values.set === 'dakar' && values.scans
        ? phonesTogether(groups.filter((g) => c.locate(g)))
        : groups.filter((g) => c.locate(g));
    const requests = located.map((g) => {
      const request = g.row.request as { cells?: { signal?: number }[] };
      return {
        ...request,
        cells: request.cells?.map((c) =>
          c.signal === undefined ? c : { ...c, signal: Math.round(c.signal + levelOffset) },
        ),
        fallbacks: { lacf: 1, scf: 0, ipf: 0 },
      };
    });
    let samples: { classes: string[]; ratios: number[] } | undefined;
    const answersOf = async (dir: string, classes = false) => {
      const engine = await Engine.open({ db: dir, land: false, ipDatabases: false });
      try {
        if (classes)
          samples = engine.radiusSamples(
            requests,
            located.map((g) => g.row.truth),
          );
        return engine.processBatch(requests);
      } finally {
        engine.close();
      }
    };
    const answers = await answersOf(db, values.classes || values.rows !== undefined);
    if (values.rows) appendFileSync(values.rows, `${JSON.stringify({ case: c.name, masts: mastsOf(db) })}\n`);
    const plain = await answersOf(withoutMasts(db, `${db}-no-masts`));
    const byPart = new Map<string, Result>();
    const get = (name: string) => {
      let r = byPart.get(name);
      if (!r) {
        r = {
          case: c.name,
          part: name,
          ours: new ErrorStats(),
          base: new ErrorStats(),
          noMasts: new ErrorStats(),
          unseen: 0,
          withTa: 0,
        };
        byPart.set(name, r);
      }
      return r;
    };
    located.forEach((g, i) => {
      const f = obs[g.file] as ObservationFile;
      // The serving cell (every cell of the scan with `--scans`): the baseline answers only
      // if one of them was learned, with the mean of all their training sightings.
      const rowsHeard: [ObservationFile, number][] =
        merged.get(g)?.map((h) => [obs[h.file] as ObservationFile, h.first]) ??
        Array.from({ length: values.scans ? g.end - g.first : 1 }, (_, k) => [f, g.first + k]);
      const req = {
        cells: rowsHeard.map(([h, r]) => ({
          radio: h.kind[r] as number,
          mcc: h.mcc[r] as number,
          mnc: h.mnc[r] as number,
          lac: h.lac[r] as number,
          cid: h.id[r] as number,
        })),
        wifi: [],
      } as unknown as LocateRequest;
      const base = centroid.answer(req);
      const partName = merged.has(g) ? `${merged.get(g)?.length} phones` : part(obs, g);
      const targets = [get(partName), ...(partName === 'all' ? [] : [get('all')])];
      if (base && samples && values.classes) {
        const k = samples.classes[i] as string;
        const v = byClass.get(k) ?? { raw: [], answered: [] };
        byClass.set(k, v);
        v.raw.push(samples.ratios[i] as number);
        const a = located_(answers[i]);
        v.answered.push(
          a ? distanceM(g.row.truth.lat, g.row.truth.lon, a.lat, a.lon) / a.accuracy : Number.NaN,
        );
      }
      for (const t of targets) {
        if (!base) {
          t.unseen++;
          continue;
        }
        t.ours.add(g.row.truth, located_(answers[i]));
        t.noMasts.add(g.row.truth, located_(plain[i]));
        t.base.add(g.row.truth, base);
        if (!Number.isNaN(f.ta[g.first] as number)) t.withTa++;
      }
      if (base && values.rows) {
        const ta = f.ta[g.first] as number;
        const row = {
          case: c.name,
          part: partName,
          truth: g.row.truth,
          answer: located_(answers[i]),
          noMasts: located_(plain[i]),
          centroid: base,
          radio: f.kind[g.first],
          mcc: f.mcc[g.first],
          mnc: f.mnc[g.first],
          cid: f.id[g.first],
          ta: Number.isNaN(ta) ? null : ta,
          class: samples?.classes[i],
          errorOverRadius: samples?.ratios[i],
        };
        appendFileSync(values.rows, `${JSON.stringify(row)}\n`);
      }
    });
    results.push(...[...byPart.values()].sort((a, b) => (a.part === 'all' ? 1 : b.part === 'all' ? -1 : 0)));
  }

  // Every case's rows together, per part, when there are several cases (directions, folds).
  const caseNames = new Set(results.map((r) => r.case));
  if (caseNames.size > 1)
    for (const p of new Set(results.map((r) => r.part))) {
      const pooled: Result = {
        case: 'pooled',
        part: p,
        ours: new ErrorStats(),
        base: new ErrorStats(),
        noMasts: new ErrorStats(),
        unseen: 0,
        withTa: 0,
      };
      for (const r of results.filter((x) => x.part === p)) {
        for (const [to, from] of [
          [pooled.ours, r.ours],
          [pooled.base, r.base],
          [pooled.noMasts, r.noMasts],
        ] as const) {
          to.errors.push(...from.errors);
          to.ratios.push(...from.ratios);
          to.inside += from.inside;
          to.total += from.total;
        }
        pooled.unseen += r.unseen;
        pooled.withTa += r.withTa;
      }
      results.push(pooled);
    }
  const table = results.map(row);
  // The worst case of each part: the highest ratio of medians over the cases.
  const worst = [...new Set(results.map((r) => r.part))].map((p) => {
    const of = results.filter((r) => r.part === p && r.case !== 'pooled');
    const w = of.reduce((a, b) => (ratio(b) > ratio(a) ? b : a));
    return { ...row(w), case: `worst: ${w.case}` };
  });
  // Over the cases (worlds, directions, folds): the median case beside the worst, per figure.
  const cases_ = results.filter((r) => r.case !== 'pooled' && r.part === 'all');
  const spread = (name: string, of: (r: Result) => number, worse: 'high' | 'far') => {
    const v = cases_.map(of).sort((a, b) => a - b);
    const worst =
      worse === 'high'
        ? v[v.length - 1]
        : v.reduce((a, b) => (Math.abs(b - 0.68) > Math.abs(a - 0.68) ? b : a));
    return {
      figure: name,
      'median case': quantile(v, 0.5),
      'worst case': worst,
      min: v[0],
      max: v[v.length - 1],
    };
  };
  const summary = [
    spread('median / centroid median', ratio, 'high'),
    spread('p90 / centroid p90', (r) => r.ours.p90 / r.base.p90, 'high'),
    spread('median / median without learned masts', (r) => r.ours.median / r.noMasts.median, 'high'),
    spread('inside the radius', (r) => r.ours.insideShare, 'far'),
  ].map((x) =>
    Object.fromEntries(Object.entries(x).map(([k, v]) => [k, typeof v === 'number' ? v.toFixed(3) : v])),
  );
  // Every case's rows by class of answer, the largest first (`--classes`).
  const classes = [...byClass]
    .map(([name, v]) => {
      const r = v.raw.filter(Number.isFinite);
      const answered = v.answered.filter(Number.isFinite);
      const share = (x: number[]) => `${((100 * x.filter((e) => e <= 1).length) / x.length).toFixed(1)}%`;
      return {
        class: name || '(unanswered)',
        rows: r.length,
        inside: share(r),
        'error / radius at 68%': quantile(r, 0.68).toFixed(2),
        ...(values.calibrate ? { 'inside as answered (calibrated)': share(answered) } : {}),
      };
    })
    .filter((c) => c.rows >= 30)
    .sort((a, b) => b.rows - a.rows);
  if (values.json)
    process.stdout.write(
      `${JSON.stringify({ set: values.set, cv: values.cv, table, worst, summary, ...(values.classes ? { classes } : {}) }, null, 2)}\n`,
    );
  else {
    console.log(
      `${values.set}${values.cv ? ' (cross-validation within the learn part)' : ''}: ${files.length} files, ` +
        `${groups.length.toLocaleString('en')} rows; located rows whose serving cell was learned, errors in metres.`,
    );
    console.table(table);
    console.log('Worst case per part (highest median ratio to the centroid):');
    console.table(worst);
    if (cases_.length > 1) {
      console.log(
        `Over the ${cases_.length} cases, the median one beside the worst (inside: farthest from 68%):`,
      );
      console.table(summary);
    }
    if (values.classes) {
      console.log(
        'Every case by class of answer (30 rows or more; inside and the quantile: the radius without a calibration model):',
      );
      console.table(classes);
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

/** The seeds of `--seeds A..B`. */
/**
 * The Dakar logs' three phones were carried together (their GPS fixes a median 25 m apart):
 * rows of two or three of them within `PHONES_TOGETHER_S` of each other, as one request naming
 * each phone's serving cell (strongest first, a phone's advance kept on its cell), at the mean
 * of their fixes. Real multi-cell requests on real levels, over cells of three networks; each
 * row of a phone joins the scan of the first phone's row nearest in time.
 */
function phonesTogether(located: Group[]): Group[] {
  const byFile = new Map<number, Group[]>();
  for (const g of located) {
    if (Number.isNaN(g.time)) continue;
    const list = byFile.get(g.file) ?? [];
    list.push(g);
    byFile.set(g.file, list);
  }
  const files = [...byFile.keys()].sort((a, b) => a - b);
  const used = new Set<Group>();
  const out: Group[] = [];
  for (const [i, fi] of files.entries())
    for (const g of byFile.get(fi) ?? []) {
      if (used.has(g)) continue;
      const parts = [g];
      for (const other of files.slice(i + 1)) {
        let best: Group | undefined;
        for (const h of byFile.get(other) ?? [])
          if (!used.has(h) && Math.abs(h.time - g.time) <= PHONES_TOGETHER_S)
            if (!best || Math.abs(h.time - g.time) < Math.abs(best.time - g.time)) best = h;
        if (best) parts.push(best);
      }
      if (parts.length < 2) continue;
      for (const h of parts) used.add(h);
      type Cell = { signal?: number };
      const cells = parts
        .map((h) => (h.row.request as { cells?: Cell[] }).cells?.[0])
        .filter((c): c is Cell => c !== undefined)
        .sort((a, b) => (b.signal ?? -200) - (a.signal ?? -200));
      const mean = (k: 'lat' | 'lon') => parts.reduce((s, h) => s + h.row.truth[k], 0) / parts.length;
      const scan: Group = {
        ...g,
        row: { ...g.row, request: { cells }, truth: { lat: mean('lat'), lon: mean('lon') } },
      };
      merged.set(scan, parts);
      out.push(scan);
    }
  return out;
}

interface Result {
  case: string;
  part: string;
  ours: ErrorStats;
  base: ErrorStats;
  /** The same database without the learned masts. */
  noMasts: ErrorStats;
  unseen: number;
  withTa: number;
}

/** An engine answer as the error statistics take it (none unless located). */
function located_(a: { status?: string; lat?: number; lon?: number; accuracy?: number } | undefined) {
  return a?.status === 'ok' && a.lat !== undefined && a.lon !== undefined
    ? { lat: a.lat, lon: a.lon, accuracy: a.accuracy as number }
    : undefined;
}

/** The learned masts of the database in `db`, by network (its statistics file's `masts`). */
function mastsOf(db: string): unknown[] {
  const manifest = JSON.parse(readFileSync(join(db, 'manifest.json'), 'utf8'));
  if (typeof manifest.network_stats !== 'string') return [];
  const stats = JSON.parse(readFileSync(join(db, manifest.network_stats), 'utf8'));
  return stats.networks
    .filter((n: { masts?: unknown[] }) => n.masts?.length)
    .map((n: { radio: string; mcc: number; mnc: number; masts: unknown[] }) => ({
      radio: n.radio,
      mcc: n.mcc,
      mnc: n.mnc,
      masts: n.masts,
    }));
}

/** A copy of the database in `db` at `to` whose statistics keep no learned masts; returns `to`. */
function withoutMasts(db: string, to: string): string {
  cpSync(db, to, { recursive: true });
  const manifest = JSON.parse(readFileSync(join(to, 'manifest.json'), 'utf8'));
  if (typeof manifest.network_stats === 'string') {
    const path = join(to, manifest.network_stats);
    const stats = JSON.parse(readFileSync(path, 'utf8'));
    for (const n of stats.networks) delete n.masts;
    writeFileSync(path, JSON.stringify(stats));
  }
  return to;
}

/**
 * The simulator's cell-scenario requests of one world as an OpenCelliD measurement CSV at
 * `out`: a row per request, its serving cell seen at its true position with its level and
 * timing advance, a second apart (with `scans`, a row for every cell it heard, at the same
 * time and place: one multi-cell request when located); returns `out`.
 */
function sightingsCsv(scenarios: string[], out: string, scans: boolean): string {
  const ACT: Record<string, string> = { gsm: 'GSM', umts: 'UMTS', lte: 'LTE', nr: 'NR', nbiot: 'NBIOT' };
  const lines = [
    'mcc,mnc,lac,cellid,lat,lon,signal,measured_at,rating,speed,direction,act,ta,psc,tac,pci,sid,nid,bid',
  ];
  let t = SIM_NOW * 1000 - 30 * 86_400_000;
  for (const file of scenarios) {
    if (!/\/(cells-[a-z-]+|single-cell)\.jsonl$/.test(file)) continue;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!line) continue;
      const row = JSON.parse(line);
      const heard = (row.request.cells ?? []).slice(0, scans ? undefined : 1);
      if (heard.length === 0) continue;
      t += 1000;
      for (const c of heard) {
        if (ACT[c.radio] === undefined) continue;
        lines.push(
          [
            c.mcc,
            c.mnc,
            c.lac,
            c.cid,
            row.truth.lat.toFixed(7),
            row.truth.lon.toFixed(7),
            c.signal ?? '',
            t,
            5,
            '',
            '',
            ACT[c.radio],
            c.ta ?? '',
            '',
            c.lac,
            '',
            '',
            '',
            '',
          ].join(','),
        );
      }
    }
  }
  writeFileSync(out, `${lines.join('\n')}\n`);
  return out;
}

function ratio(r: Result): number {
  return r.ours.median / r.base.median;
}

function row(r: Result) {
  const m = (x: number) => (Number.isFinite(x) ? Math.round(x) : '-');
  return {
    case: r.case,
    part: r.part,
    rows: r.ours.total,
    'with TA': r.withTa,
    unseen: r.unseen,
    median: m(r.ours.median),
    p68: m(quantile(r.ours.errors, 0.68)),
    p90: m(r.ours.p90),
    inside: `${(100 * r.ours.insideShare).toFixed(1)}%`,
    'centroid median': m(r.base.median),
    'centroid p68': m(quantile(r.base.errors, 0.68)),
    'centroid p90': m(r.base.p90),
    'median ratio': (r.ours.median / r.base.median).toFixed(3),
    'p90 ratio': (r.ours.p90 / r.base.p90).toFixed(3),
    'no masts median': m(r.noMasts.median),
    'vs no masts': (r.ours.median / r.noMasts.median).toFixed(3),
  };
}

function missing(path: string): never {
  process.stderr.write(
    `bench/traces.ts: no data at ${path}; the traces are read from ../shared/data (never copied into the repository).\n`,
  );
  process.exit(2);
}
