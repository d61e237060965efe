/**
 * The solver over simulator world families (`whereabouts-sim world --family`: every model
 * parameter drawn from the seed), each world answered twice in the same run: with the
 * database's per-network statistics (docs/positioning.md, "Each network's scale") and without
 * them (the solver's priors). Per scenario it prints the median world and the worst world of
 * the weighted mean's median error over ours (same requests) and of the share of true
 * positions inside the 68% radius (worst: farthest from 68%).
 *
 *   npx tsx bench/net-stats-families.ts --seeds 201-208 [--requests N] [--per-world]
 *
 * Seeds are a list or ranges (`101-105,110`). Worlds are written and imported under
 * .eval/family-SEED-N/, shared with bench/families.ts (reused while the simulator is unchanged). Fit on some seeds, report on others.
 * bench/families.ts is the scoring against the targets; this one isolates what the
 * statistics change.
 */
import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Engine } from '../src/engine.js';
import { quantile } from '../src/eval/metrics.js';
import { SIM_NOW, simWorld } from '../src/eval/sim.js';
import { MapBaseline } from './baseline.js';
import { type ScenarioScore, scoreScenario } from './scenario-score.js';

const { values } = parseArgs({
  options: {
    seeds: { type: 'string', default: '201-204' },
    requests: { type: 'string', default: '1000' },
    'per-world': { type: 'boolean', default: false },
  },
});

function seedList(s: string): number[] {
  const out: number[] = [];
  for (const part of s.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) throw new Error(`--seeds: not a seed or range: ${part}`);
    const a = Number(m[1]);
    const b = m[2] === undefined ? a : Number(m[2]);
    for (let i = a; i <= b; i++) out.push(i);
  }
  return out;
}

/**
 * The world of `seed`, written by the simulator and imported (`simWorld`, reused while the
 * simulator's sources and the store format are unchanged), and a copy of its database without
 * the statistics: the solver's priors.
 */
async function familyWorld(seed: number, requests: string) {
  const work = join(import.meta.dirname, '..', '.eval', `family-${seed}-${requests}`);
  const w = await simWorld(work, String(seed), requests, true, '0', true);
  const priors = join(work, 'db-priors');
  rmSync(priors, { recursive: true, force: true });
  cpSync(w.db, priors, { recursive: true });
  const manifest = JSON.parse(readFileSync(join(priors, 'manifest.json'), 'utf8')) as Record<string, unknown>;
  delete manifest.network_stats;
  writeFileSync(join(priors, 'manifest.json'), JSON.stringify(manifest));
  return { world: w.world, net: w.db, priors };
}

type Score = ScenarioScore;

const seeds = seedList(values.seeds as string);
/** scenario -> mode -> one score a world. */
const results = new Map<string, { priors: Score[]; net: Score[] }>();
const perWorld: Record<string, string | number>[] = [];
for (const seed of seeds) {
  const w = await familyWorld(seed, values.requests as string);
  const baseline = MapBaseline.fromCsv(join(w.world, 'cells.csv'), join(w.world, 'wifi.csv'));
  const priors = await Engine.open({ db: w.priors, now: SIM_NOW });
  const net = await Engine.open({ db: w.net, now: SIM_NOW });
  for (const f of readdirSync(join(w.world, 'scenarios'))
    .filter((x) => x.endsWith('.jsonl'))
    .sort()) {
    const scenario = f.replace('.jsonl', '');
    const file = join(w.world, 'scenarios', f);
    const a = scoreScenario(priors, file, baseline);
    const b = scoreScenario(net, file, baseline);
    const r = results.get(scenario) ?? { priors: [], net: [] };
    r.priors.push(a);
    r.net.push(b);
    results.set(scenario, r);
    perWorld.push({
      seed,
      scenario,
      'ratio priors': a.ratio.toFixed(3),
      'ratio net': b.ratio.toFixed(3),
      'inside priors': `${(100 * a.inside).toFixed(1)}%`,
      'inside net': `${(100 * b.inside).toFixed(1)}%`,
    });
  }
  priors.close();
  net.close();
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
const medianOf = (xs: number[]) => quantile(xs, 0.5);
const worstRatio = (xs: number[]) => Math.min(...xs.filter(Number.isFinite));
/** The share farthest from 68%. */
const worstInside = (xs: number[]) =>
  xs.reduce((w, x) => (Math.abs(x - 0.68) > Math.abs(w - 0.68) ? x : w), 0.68);
const rows = [...results.entries()].map(([scenario, r]) => ({
  scenario,
  'ratio median priors': medianOf(r.priors.map((s) => s.ratio)).toFixed(3),
  'ratio median net': medianOf(r.net.map((s) => s.ratio)).toFixed(3),
  'ratio worst priors': worstRatio(r.priors.map((s) => s.ratio)).toFixed(3),
  'ratio worst net': worstRatio(r.net.map((s) => s.ratio)).toFixed(3),
  'inside median priors': pct(medianOf(r.priors.map((s) => s.inside))),
  'inside median net': pct(medianOf(r.net.map((s) => s.inside))),
  'inside worst priors': pct(worstInside(r.priors.map((s) => s.inside))),
  'inside worst net': pct(worstInside(r.net.map((s) => s.inside))),
}));
if (values['per-world']) console.table(perWorld);
console.log(
  `World families, seeds ${values.seeds} (${seeds.length} worlds, ${values.requests} requests a scenario): ` +
    'ratio = weighted mean median / ours (same requests), inside = share within the 68% radius; ' +
    'priors = without the database statistics, net = with them',
);
console.table(rows);
