/**
 * Fits the cell and WiFi radius constants' scale over simulator worlds, from each answer's
 * error / radius: answers every scenario request of the worlds named once with this build, then
 * per radius branch (WiFi, single crowd cell, several cells by count, LAC area) finds the factor
 * on the radius that brings the fit worlds' inside shares nearest 68% (least absolute deviations of the
 * per-world, per-scenario shares), and prints the shares before and after that factor on every
 * world named, fit and report, from the same answers.
 *
 *   npx tsx bench/radius-fit.ts --fit DIR... --report DIR... [--cache FILE]
 *
 * Each DIR is a world directory as `bench/families.ts` and `whereabouts eval --sim` leave it
 * (`DIR/world/scenarios/*.jsonl`, `DIR/db`). The factors apply exactly to a radius that is a
 * product of the constants (params.rs says which); the 50 m / 15 m floors are applied after.
 * The WiFi radius is not one since its floor of one member's pull (`solve/wifi.rs`): its
 * factor here scales the floor too, so `WIFI_ACCURACY_FACTOR` was refitted by a build per
 * value and `bench/families.ts` instead (docs/experiments.md, 2026-11-28).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { Engine } from '../src/engine.js';
import { distanceM } from '../src/eval/metrics.js';
import { SIM_NOW } from '../src/eval/sim.js';

const { values } = parseArgs({
  options: {
    fit: { type: 'string', multiple: true, default: [] },
    report: { type: 'string', multiple: true, default: [] },
    cache: { type: 'string' },
  },
});

type Branch = 'wifi' | 'single' | 'multi' | 'known' | 'area';
interface Row {
  world: string;
  scenario: string;
  branch: Branch;
  cells: number;
  err: number;
  acc: number;
}

/** The radius branch an answer came from, by its scenario and request. */
function branchOf(
  scenario: string,
  req: { cells?: unknown[]; wifi?: unknown[] },
  fallback?: string,
): Branch | null {
  // A lacf-site answer reports `lacf` too, but its radius is the site's, not the area's.
  if (scenario === 'scf' || scenario === 'wifi-fake' || scenario === 'lacf-site') return null;
  if (fallback === 'lacf') return 'area';
  if (fallback) return null;
  if (scenario === 'wifi-urban' || scenario === 'moved-ap') return 'wifi';
  if (scenario === 'lacf') return null;
  if ((req.cells?.length ?? 0) <= 1) return 'single';
  // The true towers: every sector of a site on its mast, so no serving cell is placed on its axis.
  return scenario === 'cells-known-towers' ? 'known' : 'multi';
}

async function collect(dir: string): Promise<Row[]> {
  const engine = await Engine.open({ db: join(dir, 'db'), now: SIM_NOW, ipDatabases: false });
  const rows: Row[] = [];
  try {
    const scen = join(dir, 'world', 'scenarios');
    for (const f of readdirSync(scen).filter((x) => x.endsWith('.jsonl'))) {
      const lines = readFileSync(join(scen, f), 'utf8').split('\n').filter(Boolean);
      const items = lines.map((l) => JSON.parse(l));
      const out = engine.processBatch(items.map((i) => i.request));
      items.forEach((it, k) => {
        const o = out[k];
        if (!o || o.status !== 'ok' || o.lat === undefined || o.lon === undefined || !o.accuracy) return;
        const scenario = f.replace(/\.jsonl$/, '');
        const branch = branchOf(scenario, it.request, o.fallback);
        if (!branch) return;
        rows.push({
          world: basename(dir),
          scenario,
          branch,
          cells: it.request.cells?.length ?? 0,
          err: distanceM(it.truth.lat, it.truth.lon, o.lat, o.lon),
          acc: o.accuracy,
        });
      });
    }
  } finally {
    engine.close();
  }
  return rows;
}

const FLOOR: Record<Branch, number> = { wifi: 15, single: 50, multi: 50, known: 50, area: 50 };

/** The radius after a factor: the floor kept where the answer sat on it. */
const scaled = (r: Row, f: number) =>
  r.acc <= FLOOR[r.branch] + 1e-6 ? FLOOR[r.branch] : Math.max(f * r.acc, FLOOR[r.branch]);

/** Per world and scenario inside shares under a factor per row. */
function shares(rows: Row[], factor: (r: Row) => number): Map<string, number> {
  const g = new Map<string, [number, number]>();
  for (const r of rows) {
    const k = `${r.world}\t${r.scenario}`;
    const v = g.get(k) ?? [0, 0];
    v[0] += r.err <= scaled(r, factor(r)) ? 1 : 0;
    v[1] += 1;
    g.set(k, v);
  }
  return new Map([...g].filter(([, v]) => v[1] >= 20).map(([k, v]) => [k, v[0] / v[1]]));
}

/** Absolute deviations from 68%: the median world at 68%, not pulled by a world no factor can hold. */
const loss = (s: Map<string, number>) => [...s.values()].reduce((a, x) => a + Math.abs(x - 0.68), 0);

/** The answers once: `--cache FILE` keeps them between fits of the same build. */
async function rowsOf(dirs: string[], tag: string): Promise<Row[]> {
  const file = values.cache ? `${values.cache}.${tag}.json` : undefined;
  if (file && existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Row[];
  const rows = (await Promise.all(dirs.map(collect))).flat();
  if (file) writeFileSync(file, JSON.stringify(rows));
  return rows;
}
const fitRows = await rowsOf(values.fit as string[], 'fit');
const reportRows = await rowsOf(values.report as string[], 'report');

const grid = Array.from({ length: 200 }, (_, i) => 0.4 * 1.02 ** i).filter((f) => f <= 4);
const factors: Record<string, number> = {};
for (const b of ['wifi', 'single', 'area'] as Branch[]) {
  // A single cell by its scenario: a lone cell heard in a multi-cell scenario is a device at the
  // edge of coverage, another population (printed below, left as it is).
  const rs = fitRows.filter((r) => r.branch === b && (b !== 'single' || r.scenario === 'single-cell'));
  let best = 1;
  let bestLoss = Number.POSITIVE_INFINITY;
  for (const f of grid) {
    const l = loss(shares(rs, () => f));
    if (l < bestLoss) [best, bestLoss] = [f, l];
  }
  factors[b] = best;
}
// Several cells: a factor A n^b on the count power law, both over a grid.
{
  const rs = fitRows.filter((r) => r.branch === 'multi');
  let best = [1, 0];
  let bestLoss = Number.POSITIVE_INFINITY;
  for (let b = -0.8; b <= 0.8001; b += 0.1)
    for (const a of grid) {
      const l = loss(shares(rs, (r) => a * (r.cells / 4) ** b));
      if (l < bestLoss) [best, bestLoss] = [[a, b], l];
    }
  factors.multiA = best[0] as number;
  factors.multiB = best[1] as number;
}
const law = (r: Row) => (factors.multiA as number) * (r.cells / 4) ** (factors.multiB as number);
// The towers' answers (off their axes): a factor on top of the count law.
{
  const rs = fitRows.filter((r) => r.branch === 'known');
  let best = 1;
  let bestLoss = Number.POSITIVE_INFINITY;
  for (const f of grid) {
    const l = loss(shares(rs, (r) => f * law(r)));
    if (l < bestLoss) [best, bestLoss] = [f, l];
  }
  factors.known = best;
}
const factor = (r: Row) =>
  r.branch === 'multi'
    ? law(r)
    : r.branch === 'known'
      ? (factors.known as number) * law(r)
      : (factors[r.branch] as number);

console.log('factors', JSON.stringify(factors));
for (const [name, rows] of [
  ['fit', fitRows],
  ['report', reportRows],
] as const) {
  const before = shares(rows, () => 1);
  const after = shares(rows, factor);
  const scen = [...new Set([...before.keys()].map((k) => k.split('\t')[1] as string))].sort();
  console.log(
    `\n${name} worlds: scenario, inside before (median world, min-max), after (median world, min-max)`,
  );
  for (const s of scen) {
    const pick = (m: Map<string, number>) =>
      [...m]
        .filter(([k]) => k.endsWith(`\t${s}`))
        .map(([, v]) => v)
        .sort((a, b) => a - b);
    const fmt = (v: number[]) =>
      `${(100 * (v[Math.floor((v.length - 1) / 2)] as number)).toFixed(1)}% (${(100 * (v[0] as number)).toFixed(1)}-${(100 * (v.at(-1) as number)).toFixed(1)})`;
    console.log(`  ${s.padEnd(20)} ${fmt(pick(before)).padEnd(24)} ${fmt(pick(after))}`);
  }
  console.log(`  loss before ${loss(before).toFixed(3)} after ${loss(after).toFixed(3)}`);
}

// Where each branch's answers come from: rows and pooled inside share by scenario, fit worlds.
console.log('\nfit worlds by branch and scenario: answers, inside before, after');
const keys = [...new Set(fitRows.map((r) => `${r.branch}\t${r.scenario}`))].sort();
for (const k of keys) {
  const rs = fitRows.filter((r) => `${r.branch}\t${r.scenario}` === k);
  const inB = rs.filter((r) => r.err <= scaled(r, 1)).length / rs.length;
  const inA = rs.filter((r) => r.err <= scaled(r, factor(r))).length / rs.length;
  console.log(
    `  ${k.replace('\t', ' / ').padEnd(32)} ${String(rs.length).padStart(6)} ${(100 * inB).toFixed(1)}% ${(100 * inA).toFixed(1)}%`,
  );
}
