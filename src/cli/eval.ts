/**
 * `whereabouts eval`: a positioning benchmark on labelled requests, GPS-tagged observation files
 * or simulated worlds; a table per scenario with baselines, `--json`, `--compare`, `--report`.
 * The harness lives in src/eval/; this module reads the flags and writes the output.
 */
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type BadLine,
  DROPPED_LEVELS_USAGE,
  MAX_LEVEL_OFFSET_DB,
  parseDroppedLevels,
  parseLevelOffset,
} from '../eval/inputs.js';
import { reportHtml } from '../eval/report.js';
import { runEval } from '../eval/run.js';
import { parseSplit } from '../eval/split.js';
import { formatCompare, formatTable, parseEvalJson } from '../eval/table.js';
import { ProgressLine } from './progress.js';
import { parseFlags, UsageError } from './usage.js';

/** Malformed lines shown with their reasons; the rest are counted. */
const SHOWN_BAD_LINES = 20;

export async function runEvalCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, {
    db: { type: 'string' },
    sim: { type: 'string' },
    requests: { type: 'string', default: '1000' },
    'sim-dir': { type: 'string' },
    family: { type: 'boolean' },
    split: { type: 'string' },
    mcc: { type: 'string' },
    mnc: { type: 'string' },
    answers: { type: 'string' },
    'requests-out': { type: 'string' },
    'level-offset': { type: 'string' },
    'drop-levels': { type: 'string' },
    json: { type: 'boolean' },
    report: { type: 'string' },
    compare: { type: 'boolean' },
    now: { type: 'string' },
    quiet: { type: 'boolean' },
  });
  if (values.compare) {
    if (positionals.length !== 2) throw new UsageError('--compare takes two files: A.json B.json');
    const [a, b] = positionals.map((f) => parseEvalJson(readFileSync(f, 'utf8'), f));
    process.stdout.write(
      `A: ${positionals[0]}\nB: ${positionals[1]}\n${formatCompare(a as never, b as never)}\n`,
    );
    return 0;
  }
  const int = (name: string, text: string | undefined, max: number) => {
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 0 || n > max)
      throw new UsageError(`--${name} must be an integer 0..${max}`);
    return n;
  };
  const mcc = int('mcc', values.mcc, 999);
  const mnc = int('mnc', values.mnc, 32767);
  if ((mcc === undefined) !== (mnc === undefined)) throw new UsageError('give --mcc and --mnc together');
  if (values.sim !== undefined && !/^\d+$/.test(values.sim))
    throw new UsageError('--sim takes a seed (an integer)');
  if (!/^\d+$/.test(values.requests)) throw new UsageError('--requests takes an integer');
  if (values.family && values.sim === undefined)
    throw new UsageError('--family makes --sim SEED a member of the world family: give --sim');
  if (values.sim !== undefined && values.db !== undefined)
    throw new UsageError("--sim evaluates on the simulated world's own database: leave out --db");
  let split: ReturnType<typeof parseSplit> | undefined;
  try {
    split = values.split === undefined ? undefined : parseSplit(values.split);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const levelOffset =
    values['level-offset'] === undefined ? undefined : parseLevelOffset(values['level-offset']);
  if (values['level-offset'] !== undefined && levelOffset === undefined)
    throw new UsageError(
      `--level-offset takes dB, a number from -${MAX_LEVEL_OFFSET_DB} to ${MAX_LEVEL_OFFSET_DB}`,
    );
  const dropLevels =
    values['drop-levels'] === undefined ? undefined : parseDroppedLevels(values['drop-levels']);
  if (values['drop-levels'] !== undefined && dropLevels === undefined)
    throw new UsageError(`--drop-levels ${DROPPED_LEVELS_USAGE}`);
  let now: number | undefined;
  if (values.now !== undefined) {
    now = Number(values.now);
    if (!Number.isFinite(now)) throw new UsageError('--now takes unix seconds');
  }

  const line = new ProgressLine();
  const started = Date.now();
  let shown = 0;
  const bad = (b: BadLine) => {
    if (shown++ < SHOWN_BAD_LINES) process.stderr.write(`${b.file}: line ${b.line}: ${b.reason} (skipped)\n`);
  };
  const requestsOut =
    values['requests-out'] === undefined ? undefined : openSync(values['requests-out'], 'w');
  let out: Awaited<ReturnType<typeof runEval>>;
  try {
    out = await runEval({
      db: values.db,
      inputs: positionals,
      sim:
        values.sim === undefined
          ? undefined
          : {
              seed: values.sim,
              requests: values.requests,
              family: values.family === true,
              work:
                values['sim-dir'] ??
                join(
                  tmpdir(),
                  `whereabouts-eval-sim-${values.family ? 'family-' : ''}${values.sim}-${values.requests}`,
                ),
            },
      split,
      splitText: values.split,
      mcc,
      mnc,
      answers: values.answers,
      requestsOut,
      levelOffset,
      dropLevels,
      now,
      bad,
      progress: values.quiet
        ? undefined
        : (done, total, rows) => {
            const secs = (Date.now() - started) / 1000;
            line.update({
              label: 'eval',
              phase: 'evaluating',
              done,
              total,
              rows,
              etaSeconds: done > 0 && total > done ? (secs * (total - done)) / done : undefined,
            });
          },
    });
  } finally {
    line.done();
    if (requestsOut !== undefined) closeSync(requestsOut);
  }
  const { json, results } = out;
  const secs = (Date.now() - started) / 1000;
  if (json.malformed > shown && shown >= SHOWN_BAD_LINES)
    process.stderr.write(
      `... and ${(json.malformed - SHOWN_BAD_LINES).toLocaleString('en')} more malformed lines\n`,
    );
  if (!values.quiet)
    process.stderr.write(
      `evaluated ${json.rows.toLocaleString('en')} rows in ${secs.toFixed(1)} s ` +
        `(${Math.round(json.rows / Math.max(secs, 1e-3)).toLocaleString('en')} rows/s); ` +
        `${json.malformed.toLocaleString('en')} malformed lines skipped\n`,
    );
  if (values.report) writeFileSync(values.report, reportHtml(json, results));
  if (values.json) process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
  else
    process.stdout.write(
      `${formatTable(json.table)}\nerrors in metres; inside: share of answered rows within the stated radius; ` +
        "xB: baseline B's median / the engine's, on rows both answered (docs/eval.md)\n",
    );
  return 0;
}
