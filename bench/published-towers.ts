/**
 * Published tower positions whatever their publisher wrote for ranges and sample counts: the
 * `cells-known-towers` requests of the simulator worlds named, located on copies of each
 * world's database whose published operator (mnc 3, its rows at its towers' true positions)
 * states its ranges and sample counts otherwise: as the simulator wrote them (the zone's site
 * spacing, 100 sightings), divided or multiplied by 4, all 0 (none), all 300 m, and every
 * sample count 1. A solver that reads a published mast's range or samples as a measurement
 * moves with them; the data it has, the masts, stays the same.
 *
 *   npx tsx bench/published-towers.ts DIR...
 *
 * Each DIR is a world directory as `bench/families.ts` leaves it (`DIR/world`, `DIR/db`), for
 * example `.eval/family-{201..216}-1000`; the variants' databases go to `DIR/published/`.
 * Prints per variant the median world and the worst of the power-weighted centroid's median
 * error over ours on the same requests, and of the share inside the 68% radius (the worst: the
 * farthest from 68%).
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Engine } from '../src/engine.js';
import { SIM_NOW } from '../src/eval/sim.js';
import { native } from '../src/native/binding.js';
import { MapBaseline } from './baseline.js';
import { scoreScenario } from './scenario-score.js';

const dirs = process.argv.slice(2);
if (dirs.length === 0) {
  process.stderr.write('usage: npx tsx bench/published-towers.ts DIR...\n');
  process.exit(2);
}
/** The simulator's published operator (`KNOWN_MNC` in crates/whereabouts-sim/src/family.rs). */
const PUBLISHED_MNC = '3';

/** Each variant: what the publisher writes for a row's range and samples, from the simulator's. */
const variants: { name: string; row: (range: number, samples: number) => [number, number] }[] = [
  { name: 'as simulated', row: (r, s) => [r, s] },
  { name: 'ranges / 4', row: (r, s) => [Math.max(1, Math.round(r / 4)), s] },
  { name: 'ranges x 4', row: (r, s) => [r * 4, s] },
  { name: 'no ranges', row: (_, s) => [0, s] },
  { name: 'ranges 300 m', row: (_, s) => [300, s] },
  { name: 'samples 1', row: (r) => [r, 1] },
];

/** The world's cells.csv with the published operator's rows rewritten by `row`. */
function published(world: string, row: (range: number, samples: number) => [number, number]): string {
  const [header, ...rows] = readFileSync(join(world, 'cells.csv'), 'utf8').split('\n');
  const cols = (header ?? '').split(',');
  const [net, r, s] = [cols.indexOf('net'), cols.indexOf('range'), cols.indexOf('samples')];
  const out = rows.map((line) => {
    const f = line.split(',');
    if (line.trim() === '' || f[net] !== PUBLISHED_MNC) return line;
    [f[r], f[s]] = row(Number(f[r]), Number(f[s])).map(String) as [string, string];
    return f.join(',');
  });
  return [header, ...out].join('\n');
}

const importFiles = native().importFiles;
if (!importFiles)
  throw new Error('this build of the native addon has no importer; run `npm run build:native`');

const results = new Map<string, { world: string; ratio: number; inside: number }[]>();
for (const dir of dirs) {
  const world = join(dir, 'world');
  for (const v of variants) {
    const out = join(dir, 'published', v.name.replace(/[^a-z0-9]+/g, '-'));
    rmSync(out, { recursive: true, force: true });
    mkdirSync(out, { recursive: true });
    const cells = join(out, 'cells.csv');
    writeFileSync(cells, published(world, v.row));
    await importFiles(join(out, 'db'), [cells], { replace: true, simulated: true }, () => {});
    const engine = await Engine.open({ db: join(out, 'db'), now: SIM_NOW, ipDatabases: false });
    try {
      const s = scoreScenario(
        engine,
        join(world, 'scenarios', 'cells-known-towers.jsonl'),
        MapBaseline.fromCsv(cells, join(world, 'wifi.csv')),
      );
      const list = results.get(v.name) ?? [];
      list.push({ world: basename(dir), ratio: s.ratio, inside: s.inside });
      results.set(v.name, list);
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
  `Published towers (cells-known-towers) on ${dirs.length} worlds, the publisher's ranges and samples rewritten: power-weighted centroid / ours, and inside the 68% radius`,
);
console.table(
  variants.map((v) => {
    const list = results.get(v.name) ?? [];
    const worstRatio = list.reduce((a, b) => (b.ratio < a.ratio ? b : a));
    const worstInside = list.reduce((a, b) =>
      Math.abs(b.inside - 0.68) > Math.abs(a.inside - 0.68) ? b : a,
    );
    const inside = list.map((x) => x.inside);
    return {
      variant: v.name,
      'ratio, median world': median(list.map((x) => x.ratio)).toFixed(3),
      'worst (world)': `${worstRatio.ratio.toFixed(3)} (${worstRatio.world})`,
      'inside, median world': pct(median(inside)),
      'worst (world)_': `${pct(worstInside.inside)} (${worstInside.world})`,
      range: `${pct(Math.min(...inside))}-${pct(Math.max(...inside))}`,
    };
  }),
);
