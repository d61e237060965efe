/**
 * One evaluation run: reads the inputs, learns each fold's database when splitting, answers
 * every row with the engine (or reads another system's answers), runs the baselines on the same
 * rows and tabulates. The command line (src/cli/eval.ts) shows its progress and writes its output.
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { nativeLearn } from '../cli/learn.js';
import { Engine } from '../engine.js';
import type { ProcessResponse } from '../locating/response.js';
import { CentroidBaseline, MapBaseline } from './baselines.js';
import {
  type BadLine,
  type DroppedLevels,
  type EvalRow,
  expandInputs,
  groupObservations,
  isLabelled,
  readLabelled,
  readObservationFiles,
  withCellLevelOffset,
  withoutLevels,
} from './inputs.js';
import { Results, tabulate } from './results.js';
import { SIM_NOW, simWorld } from './sim.js';
import { assignFolds, learnPlan, type Split } from './split.js';
import type { EvalJson } from './table.js';

/** Rows answered per call into the core: large enough for its threads, small enough to stream. */
export const BATCH = 16_384;

export interface EvalOptions {
  /** The station database; without it, the embedded demo database (or an empty one to learn into). */
  db?: string;
  inputs: string[];
  /** A simulator world to evaluate on (its scenarios and its database); `family`: a member of the world family. */
  sim?: { seed: string; requests: string; work: string; family?: boolean };
  split?: Split;
  splitText?: string;
  /** MCC/MNC for observation files without them (G-NetTrack). */
  mcc?: number;
  mnc?: number;
  /** Another system's answers: JSON lines, the N-th answering the N-th row evaluated. */
  answers?: string;
  /** Writes each evaluated row's request, one JSON line each, in evaluation order. */
  requestsOut?: number;
  /** Every cell's level moved by this many dB before anything reads it ({@link withCellLevelOffset}). */
  levelOffset?: number;
  /** Levels taken off before anything reads them ({@link withoutLevels}). */
  dropLevels?: DroppedLevels;
  now?: number;
  progress?: (done: number, total: number, rows: number) => void;
  bad?: (b: BadLine) => void;
}

/** Evaluates; resolves to the `--json` output and the per-row results (for the report). */
export async function runEval(o: EvalOptions): Promise<{ json: EvalJson; results: Results }> {
  let malformed = 0;
  const bad = (b: BadLine) => {
    malformed++;
    o.bad?.(b);
  };
  let db = o.db;
  let now = o.now;
  const files = expandInputs(o.inputs);
  if (o.sim) {
    const world = await simWorld(o.sim.work, o.sim.seed, o.sim.requests, true, '0', o.sim.family);
    db = world.db;
    now ??= SIM_NOW;
    files.push(...world.scenarios);
  }
  if (files.length === 0) throw new Error('nothing to evaluate: name INPUT files or --sim SEED');
  const labelled = files.filter(isLabelled);
  const observed = files.filter((f) => !labelled.includes(f));
  if (o.split && observed.length === 0)
    throw new Error(
      '--split learns from observation files (OpenCelliD measurements, G-NetTrack, WiGLE); none given',
    );

  const answers = o.answers ? readAnswers(o.answers, bad) : undefined;
  let answered = 0;
  const results = new Results();
  const open = (dir: string | undefined) => Engine.open({ db: dir, now, ipDatabases: false });
  const evaluate = (
    engine: Engine | undefined,
    rows: EvalRow[],
    tables: MapBaseline,
    centroid?: CentroidBaseline,
  ) => {
    const offset = o.levelOffset ?? 0;
    for (let s = 0; s < rows.length; s += BATCH) {
      const part = rows
        .slice(s, s + BATCH)
        .map((r) => withoutLevels(withCellLevelOffset(r, offset), o.dropLevels));
      let out: (ProcessResponse | undefined)[];
      if (answers) {
        out = answers.slice(answered, answered + part.length);
        answered += part.length;
      } else out = (engine as Engine).processBatch(part.map((r) => r.request));
      if (o.requestsOut !== undefined)
        writeSync(o.requestsOut, `${part.map((r) => JSON.stringify(r.request)).join('\n')}\n`);
      results.add(part, out, tables, centroid, engine && areaAnswers(engine, part, out));
    }
  };

  // Progress in rows; labelled files count by bytes until their rows are known.
  let doneRows = 0;
  if (labelled.length > 0) {
    const engine = await open(db);
    try {
      const tables = await MapBaseline.fromEngine(engine);
      const sizes = labelled.map((f) => readFileSync(f).byteLength);
      const total = sizes.reduce((a, b) => a + b, 0);
      let before = 0;
      labelled.forEach((file, fi) => {
        readLabelled(
          file,
          BATCH,
          (rows, bytes) => {
            evaluate(engine, rows, tables);
            doneRows += rows.length;
            o.progress?.(before + bytes, total, doneRows);
          },
          bad,
        );
        before += sizes[fi] as number;
      });
    } finally {
      engine.close();
    }
  }

  if (observed.length > 0) {
    const obs = await readObservationFiles(observed, { mcc: o.mcc, mnc: o.mnc });
    for (const f of obs)
      for (const b of f.report.badLines) bad({ file: f.path, line: b.line, reason: b.reason });
    // Rejected rows past the core's first 20 a file are counted without their reasons.
    for (const f of obs) malformed += Math.max(0, f.report.rejected - f.report.badLines.length);
    const groups = groupObservations(obs);
    const total = groups.length;
    if (!o.split) {
      const engine = await open(db);
      try {
        evaluate(
          engine,
          groups.map((g) => g.row),
          await MapBaseline.fromEngine(engine),
        );
      } finally {
        engine.close();
      }
      doneRows += total;
      o.progress?.(total, total, doneRows);
    } else {
      const folds = assignFolds(groups, obs.length, o.split);
      const lines = obs.map((f) => f.line);
      let done = 0;
      for (let k = 0; k < folds.count; k++) {
        const plan = learnPlan(groups, lines, folds, k);
        const tested = groups.filter((_, i) => folds.fold[i] === k);
        if (tested.length === 0 || plan.files.length === 0) continue;
        const work =
          db && existsSync(join(db, 'manifest.json'))
            ? mkdtempSync(`${resolve(db)}.eval-`)
            : mkdtempSync(join(tmpdir(), 'whereabouts-eval-'));
        try {
          if (db && existsSync(join(db, 'manifest.json'))) cpSync(db, work, { recursive: true });
          await nativeLearn()(
            work,
            plan.files.map((f) => obs[f]?.path as string),
            { mcc: o.mcc, mnc: o.mnc, heldOut: plan.heldOut },
            () => {},
          );
          const centroid = new CentroidBaseline();
          groups.forEach((g, i) => {
            if (folds.fold[i] === k) return;
            const f = obs[g.file];
            if (f) centroid.addRows(f, g.first, g.end);
          });
          const engine = await open(work);
          try {
            evaluate(
              engine,
              tested.map((g) => g.row),
              await MapBaseline.fromEngine(engine),
              centroid,
            );
          } finally {
            engine.close();
          }
        } finally {
          rmSync(work, { recursive: true, force: true });
        }
        done += tested.length;
        doneRows += tested.length;
        o.progress?.(done, total, doneRows);
      }
    }
  }
  if (answers && answered !== answers.length)
    bad({
      file: o.answers as string,
      line: answers.length,
      reason: `${answers.length} answers for ${answered} rows: they are matched by order, so check both`,
    });
  const json: EvalJson = {
    format: 'whereabouts-eval/1',
    inputs: o.sim
      ? [...o.inputs, `sim:${o.sim.family ? 'family:' : ''}${o.sim.seed}:${o.sim.requests}`]
      : [...o.inputs],
    split: o.splitText ?? null,
    answers: o.answers ?? null,
    rows: results.count,
    malformed,
    table: tabulate(results),
  };
  return { json, results };
}

/**
 * The area baseline: each row the engine answered through the LAC/TAC fallback, asked again
 * with `lacf` 2 (the whole LAC/TAC area answers); undefined for the other rows.
 */
function areaAnswers(
  engine: Engine,
  rows: readonly EvalRow[],
  answers: readonly (ProcessResponse | undefined)[],
): (ProcessResponse | undefined)[] {
  const asked: number[] = [];
  answers.forEach((a, i) => {
    if (a?.status === 'ok' && a.fallback === 'lacf') asked.push(i);
  });
  const out: (ProcessResponse | undefined)[] = new Array(rows.length).fill(undefined);
  if (asked.length === 0) return out;
  const requests = asked.map((i) => {
    const request = (rows[i] as EvalRow).request as Record<string, unknown>;
    const f = request.fallbacks;
    // A list of names (spec 2.6) turns on those it names, lacf and scf always.
    const ipf = Array.isArray(f) && f.some((x) => /^\s*(all|ipf)\s*$/i.test(String(x)));
    const fallbacks = Array.isArray(f)
      ? { ipf: ipf ? 1 : 0, scf: 1, lacf: 2 }
      : { ...(typeof f === 'object' && f !== null ? f : {}), lacf: 2 };
    return { ...request, fallbacks };
  });
  engine.processBatch(requests).forEach((a, k) => {
    out[asked[k] as number] = a;
  });
  return out;
}

/** Another system's answers, one `/process` response a line; a bad line answers nothing. */
function readAnswers(file: string, bad: (b: BadLine) => void): (ProcessResponse | undefined)[] {
  const out: (ProcessResponse | undefined)[] = [];
  const lines = readFileSync(file, 'utf8').split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  lines.forEach((l, i) => {
    try {
      const v = JSON.parse(l) as ProcessResponse;
      if (typeof v !== 'object' || v === null) throw new Error('not a JSON object');
      out.push(v);
    } catch (e) {
      bad({ file, line: i + 1, reason: `not a response (${(e as Error).message})` });
      out.push(undefined);
    }
  });
  return out;
}
