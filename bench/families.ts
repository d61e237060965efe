/**
 * Accuracy over world families: the engine on simulator worlds whose every model parameter is
 * drawn from the seed (`whereabouts-sim world --family`, docs/simulator.md), reported on seeds
 * the engine's constants were not fitted on, with the worst world beside the median one.
 *
 *   npx tsx bench/families.ts --fit-seeds 1..8 --report-seeds 101..116 [--requests N] [--json]
 *                             [--worlds] [--show-fit] [--svg FILE] [--level-offset DB]
 *                             [--drop-levels cells|neighbours|wifi]
 *
 * `--fit-seeds` names the seeds a fit may use, `--report-seeds` those it must not: the ranges
 * must be disjoint. Each world is written and imported once into `.eval/family-SEED-N/` and
 * reused while this build opens its database. Every scenario of every report world is run
 * through `whereabouts eval`'s evaluation (src/eval/run.ts: the engine and, on the same
 * requests, its baselines). Per scenario it prints, over the report worlds, the median world
 * and the worst world of:
 *   - `base/ours`: the baseline's median error over ours on the requests both answered. The
 *     baseline is the signal-weighted mean of the known stations (on `cells-known-towers`,
 *     whose stations are the true towers, the power-weighted centroid of the towers heard); on
 *     the LAC/TAC fallback's scenarios (`lacf`, `lacf-site`), whose cells the database lacks,
 *     the area the same request gets with `lacf` 2 (`AREA_BASELINE`);
 *   - `inside`: the share of truths within the stated 68% radius (worst = farthest outside
 *     60-76%);
 *   - on `cells-known-towers` also the centroid's p90 over ours;
 *   - per cell scenario, the ratio on the requests whose serving cell reported a timing
 *     advance and on the rest, with the share of the first;
 * and whether the issue's targets hold, and flags a world's scenario drawn in fewer than five
 * LAC/TAC areas (a few places, not a world). `--worlds` adds a line per world and scenario;
 * `--show-fit` evaluates the fit worlds too and prints their median world beside (a fit that
 * only holds on its own worlds shows there); `--json` writes everything as JSON instead;
 * `--svg FILE` draws every report world's inside share and ratio per scenario against the
 * targets (the README's picture); `--level-offset DB` evaluates every request as a device
 * that reads its cells DB stronger (negative: weaker) would send it (`whereabouts eval
 * --level-offset`); `--drop-levels cells|neighbours|wifi` as one that reports no cell levels,
 * the serving cell's alone, or no AP levels (`whereabouts eval --drop-levels`).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  DROPPED_LEVELS_USAGE,
  droppedLevelsNote,
  MAX_LEVEL_OFFSET_DB,
  parseDroppedLevels,
  parseLevelOffset,
} from '../src/eval/inputs.js';
import {
  INSIDE_BAND,
  insideBadness,
  outsideBand,
  quantile,
  ratioBadness,
  type WorldSpread,
  worldSpread,
} from '../src/eval/metrics.js';
import { worldsSvg } from '../src/eval/report.js';
import { runEval } from '../src/eval/run.js';
import { renderColumns } from '../src/eval/table.js';
import { seedRange } from './seeds.js';

const { values } = parseArgs({
  options: {
    'fit-seeds': { type: 'string' },
    'report-seeds': { type: 'string' },
    requests: { type: 'string', default: '300' },
    json: { type: 'boolean', default: false },
    worlds: { type: 'boolean', default: false },
    'show-fit': { type: 'boolean', default: false },
    svg: { type: 'string' },
    'level-offset': { type: 'string', default: '0' },
    'drop-levels': { type: 'string' },
  },
});

/** Refuses bad arguments with a message and exit code 2. */
function fail(message: string): never {
  process.stderr.write(`bench/families.ts: ${message}\n`);
  process.exit(2);
}

const fitSeeds = seedRange('--fit-seeds', values['fit-seeds']);
const reportSeeds = seedRange('--report-seeds', values['report-seeds']);
const overlap = reportSeeds.filter((s) => fitSeeds.includes(s));
if (overlap.length > 0)
  fail(`--fit-seeds and --report-seeds overlap (${overlap.join(', ')}): report on worlds the fit never saw`);
const requests = values.requests as string;
const levelOffset =
  parseLevelOffset(values['level-offset'] as string) ??
  fail(
    `--level-offset: \`${values['level-offset']}\` is not a number of dB from -${MAX_LEVEL_OFFSET_DB} to ${MAX_LEVEL_OFFSET_DB}`,
  );
const dropText = values['drop-levels'] as string | undefined;
const dropLevels =
  dropText === undefined
    ? undefined
    : (parseDroppedLevels(dropText) ?? fail(`--drop-levels ${DROPPED_LEVELS_USAGE}`));
if (!/^\d+$/.test(requests) || Number(requests) < 1)
  fail(`--requests: \`${requests}\` is not a positive integer`);

/** Targets of issue 23: the median-error ratio the median world must reach, and the inside band. */
const RATIO_TARGET: Record<string, number> = {
  'wifi-urban': 1.15,
  'moved-ap': 1.15,
  'cells-urban': 1.15,
  'cells-suburban': 1.15,
  'cells-rural': 1.15,
  'single-cell': 1.15,
  // "median at most 0.85x the power-weighted centroid of the towers heard".
  'cells-known-towers': 1 / 0.85,
};
/** A world's scenario drawn in fewer LAC/TAC areas than this is flagged in the report. */
const NARROW_AREAS = 5;
const KNOWN = 'cells-known-towers';
/** The scenarios answered by cells, whose ratio {@link advanceTable} splits by timing advance. */
const CELL_SCENARIOS = new Set(['cells-urban', 'cells-suburban', 'cells-rural', 'single-cell', KNOWN]);
/** Scenarios measured against the LAC/TAC area (the `area` baseline of src/eval/results.ts). */
const AREA_BASELINE = new Set(['lacf', 'lacf-site']);

/** One scenario of one world. */
interface WorldLine {
  seed: number;
  scenario: string;
  n: number;
  answered: number;
  median: number;
  p90: number;
  inside: number;
  /** The scenario's baseline (the weighted mean, or the area): its median and p90. */
  baseMedian: number;
  baseP90: number;
  /** The baseline's median over ours, on the requests both answered. */
  ratio: number;
  /** The LAC/TAC areas the scenario's requests were drawn in (of their first cell). */
  areas: number;
  /** The ratio on the requests whose serving cell reported a timing advance, and on the rest. */
  ratioWithAdvance: number;
  ratioWithoutAdvance: number;
  /** The share of the requests whose serving cell reported a timing advance. */
  advanceShare: number;
}

async function evaluateWorld(seed: number): Promise<{ lines: WorldLine[]; params: unknown }> {
  const work = join(import.meta.dirname, '..', '.eval', `family-${seed}-${requests}`);
  const { json } = await runEval({
    inputs: [],
    sim: { seed: String(seed), requests, work, family: true },
    levelOffset,
    dropLevels,
  });
  const params = JSON.parse(readFileSync(join(work, 'world', 'params.json'), 'utf8')) as unknown;
  const areas = (scenario: string) => {
    const file = join(work, 'world', 'scenarios', `${scenario}.jsonl`);
    if (!existsSync(file)) return 0;
    const keys = new Set<string>();
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!line) continue;
      const c = (
        JSON.parse(line) as { request: { cells?: { radio?: string; mnc?: number; lac?: number }[] } }
      ).request.cells?.[0];
      if (c) keys.add(`${c.radio}/${c.mnc}/${c.lac}`);
    }
    return keys.size;
  };
  const baseOf = (l: (typeof json.table)[number]) =>
    AREA_BASELINE.has(l.scenario) ? l.baselines.area : l.baselines.wmean;
  const byAdvance = (scenario: string, value: string) =>
    json.table.find((l) => l.scenario === scenario && l.by === 'advance' && l.value === value);
  const lines = json.table
    .filter((l) => l.by === 'all')
    .map((l) => {
      const base = baseOf(l);
      const withAdvance = byAdvance(l.scenario, 'reported');
      const withoutAdvance = byAdvance(l.scenario, 'none');
      return {
        seed,
        scenario: l.scenario,
        n: l.ours.count,
        answered: l.ours.answeredShare,
        median: l.ours.median,
        p90: l.ours.p90,
        inside: l.ours.inside,
        baseMedian: base?.median ?? Number.NaN,
        baseP90: base?.p90 ?? Number.NaN,
        ratio: base?.ratio ?? Number.NaN,
        areas: areas(l.scenario),
        ratioWithAdvance: (withAdvance && baseOf(withAdvance)?.ratio) ?? Number.NaN,
        ratioWithoutAdvance: (withoutAdvance && baseOf(withoutAdvance)?.ratio) ?? Number.NaN,
        advanceShare: (withAdvance?.ours.count ?? 0) / Math.max(l.ours.count, 1),
      };
    });
  return { lines, params };
}

interface ScenarioSummary {
  scenario: string;
  worlds: number;
  requests: number;
  ratio: WorldSpread;
  inside: WorldSpread;
  /** cells-known-towers: the centroid's p90 over ours. */
  p90Ratio?: WorldSpread;
  /** The ratio on the requests with a timing advance and on those without, and their share. */
  ratioWithAdvance: WorldSpread;
  ratioWithoutAdvance: WorldSpread;
  advanceShare: number;
  ratioTarget: number | null;
  /** Median world at or above the target, and every world at or above 1. */
  ratioMet: boolean | null;
  /** Every world inside 60-76%. */
  insideMet: boolean;
  /** cells-known-towers: p90 no worse than the centroid's in every world. */
  p90Met?: boolean;
}

function summarise(lines: WorldLine[]): ScenarioSummary[] {
  const names = [...new Set(lines.map((l) => l.scenario))];
  return names.map((scenario) => {
    const ls = lines.filter((l) => l.scenario === scenario);
    const ratio = worldSpread(ls, (l) => l.ratio, ratioBadness);
    // Worst: the farthest outside 60-76%, or, when every world is inside, the farthest from 68%.
    const inside = worldSpread(ls, (l) => l.inside, insideBadness);
    const target = RATIO_TARGET[scenario] ?? null;
    const s: ScenarioSummary = {
      scenario,
      worlds: ls.length,
      requests: ls.reduce((a, l) => a + l.n, 0),
      ratio,
      inside,
      ratioTarget: target,
      ratioMet: target === null ? null : ratio.median >= target && ratio.min >= 1,
      ratioWithAdvance: worldSpread(ls, (l) => l.ratioWithAdvance, ratioBadness),
      ratioWithoutAdvance: worldSpread(ls, (l) => l.ratioWithoutAdvance, ratioBadness),
      advanceShare: quantile(
        ls.map((l) => l.advanceShare),
        0.5,
      ),
      insideMet: ls.every((l) => outsideBand(l.inside) === 0),
    };
    if (scenario === KNOWN) {
      s.p90Ratio = worldSpread(ls, (l) => l.baseP90 / l.p90, ratioBadness);
      s.p90Met = s.p90Ratio.min >= 1;
    }
    return s;
  });
}

const fmtRatio = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : '-');
const fmtPct = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : '-');
const met = (b: boolean | null | undefined) => (b === null || b === undefined ? '' : b ? 'met' : 'MISSED');

function summaryTable(sums: ScenarioSummary[], fit?: ScenarioSummary[]): string {
  const head = [
    'scenario',
    'worlds',
    'base/ours median world',
    'worst world (seed)',
    'target',
    '',
    'inside median world',
    'worst world (seed)',
    'range',
    '',
  ];
  if (fit) head.push('fit worlds: base/ours', 'inside');
  const rows = sums.map((s) => {
    const r = [
      s.scenario,
      String(s.worlds),
      fmtRatio(s.ratio.median),
      Number.isFinite(s.ratio.worst) ? `${fmtRatio(s.ratio.worst)} (${s.ratio.worstSeed})` : '-',
      s.ratioTarget === null ? '-' : `>=${s.ratioTarget.toFixed(2)}, all >=1`,
      met(s.ratioMet),
      fmtPct(s.inside.median),
      `${fmtPct(s.inside.worst)} (${s.inside.worstSeed})`,
      `${fmtPct(s.inside.min)}-${fmtPct(s.inside.max)}`,
      met(s.insideMet),
    ];
    if (fit) {
      const f = fit.find((x) => x.scenario === s.scenario);
      r.push(fmtRatio(f?.ratio.median ?? Number.NaN), fmtPct(f?.inside.median ?? Number.NaN));
    }
    return r;
  });
  return renderColumns(head, rows, 1);
}

/**
 * Per cell scenario, the ratio on the requests whose serving cell reported a timing advance
 * and on the rest (median world / worst): an advance is a measured distance from the mast,
 * which the weighted mean cannot use, so the gain a scenario shows may come from those rows.
 */
function advanceTable(sums: ScenarioSummary[]): string {
  const rows = sums
    .filter((s) => CELL_SCENARIOS.has(s.scenario))
    .map((s) => [
      s.scenario,
      fmtPct(s.advanceShare),
      `${fmtRatio(s.ratioWithAdvance.median)} / ${fmtRatio(s.ratioWithAdvance.worst)} (${s.ratioWithAdvance.worstSeed})`,
      `${fmtRatio(s.ratioWithoutAdvance.median)} / ${fmtRatio(s.ratioWithoutAdvance.worst)} (${s.ratioWithoutAdvance.worstSeed})`,
    ]);
  return renderColumns(
    [
      'scenario',
      'with advance (median world)',
      'base/ours with advance: median / worst (seed)',
      'without advance: median / worst (seed)',
    ],
    rows,
    1,
  );
}

function worldTable(lines: WorldLine[]): string {
  const m = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en') : '-');
  return renderColumns(
    [
      'seed',
      'scenario',
      'n',
      'answered',
      'median',
      'p90',
      'inside',
      'base median',
      'base p90',
      'base/ours',
      'areas',
    ],
    lines.map((l) => [
      String(l.seed),
      l.scenario,
      String(l.n),
      fmtPct(l.answered),
      m(l.median),
      m(l.p90),
      fmtPct(l.inside),
      m(l.baseMedian),
      m(l.baseP90),
      fmtRatio(l.ratio),
      String(l.areas),
    ]),
    2,
  );
}

async function evaluateAll(seeds: number[]) {
  const lines: WorldLine[] = [];
  const params: Record<number, unknown> = {};
  for (const seed of seeds) {
    const t0 = performance.now();
    const w = await evaluateWorld(seed);
    lines.push(...w.lines);
    params[seed] = w.params;
    process.stderr.write(`family world ${seed}: ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
  }
  return { lines, params };
}

const t0 = performance.now();
const report = await evaluateAll(reportSeeds);
const fit = values['show-fit'] ? await evaluateAll(fitSeeds) : undefined;
const reportSums = summarise(report.lines);
const fitSums = fit ? summarise(fit.lines) : undefined;
const seconds = (performance.now() - t0) / 1000;

if (values.svg) {
  // Ratios only where the issue sets a target: wifi-fake's baseline wins by design.
  const points = report.lines.map((l) => ({
    scenario: l.scenario,
    seed: l.seed,
    inside: l.inside,
    ratio: RATIO_TARGET[l.scenario] === undefined ? Number.NaN : l.ratio,
  }));
  const title = `World families: ${reportSeeds.length} report worlds (seeds ${reportSeeds[0]}..${reportSeeds.at(-1)}), ${requests} requests a scenario`;
  writeFileSync(values.svg, `${worldsSvg(title, points, INSIDE_BAND, RATIO_TARGET)}\n`);
}

if (values.json) {
  process.stdout.write(
    `${JSON.stringify(
      {
        format: 'whereabouts-families/2',
        fitSeeds,
        reportSeeds,
        requests: Number(requests),
        levelOffset,
        dropLevels: dropLevels ?? null,
        seconds,
        summary: reportSums,
        fitSummary: fitSums ?? null,
        worlds: report.lines,
        fitWorlds: fit?.lines ?? null,
        params: report.params,
      },
      null,
      2,
    )}\n`,
  );
} else {
  console.log(
    `World families: report seeds ${reportSeeds[0]}..${reportSeeds.at(-1)} (fit seeds ${fitSeeds[0]}..${fitSeeds.at(-1)}, disjoint), ${requests} requests a scenario${levelOffset === 0 ? '' : `, every cell's level moved by ${levelOffset} dB`}${droppedLevelsNote(dropLevels)}, ${seconds.toFixed(0)} s.`,
  );
  console.log(
    '"base/ours": the baseline\'s median error over ours on requests both answered; the baseline is the signal-weighted mean of the known stations (on cells-known-towers: the power-weighted centroid of the true towers heard; on lacf and lacf-site: the LAC/TAC area the same request gets with lacf 2). "inside": truths within the stated 68% radius, target 60-76% in every world.\n',
  );
  console.log(summaryTable(reportSums, fitSums));
  const known = reportSums.find((s) => s.scenario === KNOWN);
  if (known?.p90Ratio)
    console.log(
      `\n${KNOWN}: centroid p90 / ours, median world ${fmtRatio(known.p90Ratio.median)}, worst ${fmtRatio(known.p90Ratio.worst)} (seed ${known.p90Ratio.worstSeed}); target >= 1 in every world: ${met(known.p90Met)}`,
    );
  console.log(`\n${advanceTable(reportSums)}`);
  // A scenario a world could draw in only a few places measures those places, not the world.
  const narrow = report.lines.filter((l) => l.areas > 0 && l.areas < NARROW_AREAS);
  if (narrow.length > 0)
    console.log(
      `\nDrawn in fewer than ${NARROW_AREAS} LAC/TAC areas (a few places, not a world): ${narrow.map((l) => `${l.scenario} in ${l.seed} (${l.areas})`).join(', ')}`,
    );
  if (values.worlds) console.log(`\n${worldTable(report.lines)}`);
}
