/**
 * What an export writes besides its positions, rewritten: the simulator worlds named located on
 * copies of each world's database whose rows state their ranges and sample counts otherwise.
 * The published operator (mnc 3, its rows at its towers' true positions; the
 * `cells-known-towers` requests): ranges as the simulator wrote them (the zone's site spacing,
 * 100 sightings), divided or multiplied by 4, none, all 300 m, every sample count 1. The crowd
 * operators (mnc 1 and 2; the `cells-*` and `single-cell` requests): no sample counts (an export
 * without them), no ranges. A solver that reads a published mast's range or samples as a
 * measurement, or an uncounted export as one sighting a cell, moves with them.
 *
 *   npx tsx bench/export-variants.ts DIR...
 *
 * Each DIR is a world directory as `bench/families.ts` leaves it (`DIR/world`, `DIR/db`), for
 * example `.eval/family-{201..216}-1000`; the variants' databases go to `DIR/variants/`.
 * Prints per variant and scenario the median world and the worst of the baseline's median error
 * over ours on the same requests (the power-weighted centroid of the towers heard, or the
 * signal-weighted mean of the known cells), and of the share inside the 68% radius (the worst:
 * the farthest from 68%).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Engine } from '../src/engine.js';
import { SIM_NOW } from '../src/eval/sim.js';
import { native } from '../src/native/binding.js';
import { MapBaseline } from './baseline.js';
import { scoreScenario } from './scenario-score.js';
import { cellRowsRewritten } from './sim-world.js';

const dirs = process.argv.slice(2);
if (dirs.length === 0) {
  process.stderr.write('usage: npx tsx bench/export-variants.ts DIR...\n');
  process.exit(2);
}
/** The simulator's published operator (`KNOWN_MNC` in crates/whereabouts-sim/src/family.rs). */
const PUBLISHED_MNC = '3';
const CROWD_SCENARIOS = ['cells-urban', 'cells-suburban', 'cells-rural', 'single-cell'];

/** Each variant: whose rows it rewrites, what they then state (range, samples), and the requests. */
interface Variant {
  name: string;
  published: boolean;
  row: (range: number, samples: number) => [number | '', number | ''];
  scenarios: string[];
}
const published = (name: string, row: Variant['row']): Variant => ({
  name: `published: ${name}`,
  published: true,
  row,
  scenarios: ['cells-known-towers'],
});
const crowd = (name: string, row: Variant['row']): Variant => ({
  name: `crowd: ${name}`,
  published: false,
  row,
  scenarios: CROWD_SCENARIOS,
});
const variants: Variant[] = [
  published('as simulated', (r, s) => [r, s]),
  published('ranges / 4', (r, s) => [Math.max(1, Math.round(r / 4)), s]),
  published('ranges x 4', (r, s) => [r * 4, s]),
  published('no ranges', (_, s) => ['', s]),
  published('ranges 300 m', (_, s) => [300, s]),
  published('samples 1', (r) => [r, 1]),
  crowd('as simulated', (r, s) => [r, s]),
  crowd('no sample counts', (r) => [r, '']),
  crowd('no ranges', (_, s) => ['', s]),
];

const importFiles = native().importFiles;
if (!importFiles)
  throw new Error('this build of the native addon has no importer; run `npm run build:native`');

/** Per variant and scenario, each world's ratio and inside share. */
const results = new Map<string, { world: string; ratio: number; inside: number }[]>();
for (const dir of dirs) {
  const world = join(dir, 'world');
  for (const v of variants) {
    const out = join(dir, 'variants', v.name.replace(/[^a-z0-9]+/g, '-'));
    rmSync(out, { recursive: true, force: true });
    mkdirSync(out, { recursive: true });
    const cells = join(out, 'cells.csv');
    writeFileSync(
      cells,
      cellRowsRewritten(world, ({ net, range, samples }) =>
        (net === PUBLISHED_MNC) === v.published ? v.row(range, samples) : undefined,
      ),
    );
    await importFiles(join(out, 'db'), [cells], { replace: true, simulated: true }, () => {});
    const engine = await Engine.open({ db: join(out, 'db'), now: SIM_NOW, ipDatabases: false });
    try {
      const baseline = MapBaseline.fromCsv(cells, join(world, 'wifi.csv'));
      for (const scenario of v.scenarios) {
        const s = scoreScenario(engine, join(world, 'scenarios', `${scenario}.jsonl`), baseline);
        const key = `${v.name}\t${scenario}`;
        results.set(key, [
          ...(results.get(key) ?? []),
          { world: basename(dir), ratio: s.ratio, inside: s.inside },
        ]);
      }
    } finally {
      engine.close();
    }
  }
  process.stderr.write(`${basename(dir)}: ${variants.length} variants\n`);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)] as number;
};
const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
console.log(
  `${dirs.length} worlds, each export's ranges and sample counts rewritten: the baseline's median error over ours, and inside the 68% radius`,
);
console.table(
  [...results].map(([key, list]) => {
    const [variant, scenario] = key.split('\t');
    const worstRatio = list.reduce((a, b) => (b.ratio < a.ratio ? b : a));
    const worstInside = list.reduce((a, b) =>
      Math.abs(b.inside - 0.68) > Math.abs(a.inside - 0.68) ? b : a,
    );
    const inside = list.map((x) => x.inside);
    return {
      variant,
      scenario,
      'ratio, median world': median(list.map((x) => x.ratio)).toFixed(3),
      'worst (world)': `${worstRatio.ratio.toFixed(3)} (${worstRatio.world})`,
      'inside, median world': pct(median(inside)),
      'worst (world) ': `${pct(worstInside.inside)} (${worstInside.world})`,
      range: `${pct(Math.min(...inside))}-${pct(Math.max(...inside))}`,
    };
  }),
);
