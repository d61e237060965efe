/**
 * The solver on variants of one simulator world whose stored data says the same geography in
 * other units: every cell's published range times a factor (crowd estimates of other kinds:
 * an OpenCelliD-style range is the farthest sighting, a spread is nearer a standard deviation),
 * every cell's sample count times a factor. Each variant is answered twice in the same run,
 * with the database's per-network statistics (docs/positioning.md, "Each network's scale") and
 * without them (the solver's priors): a radius that scales with what the data says holds its
 * share inside; one fixed to the simulator's units does not.
 *
 *   npx tsx bench/world-variants.ts [--seed N] [--requests N] [--range 0.5,1,2] [--samples 1]
 *
 * Prints per variant and scenario the median error, the weighted mean's median over ours on the
 * same requests, and the share inside the 68% radius, for both. The world is written under
 * .eval/ (as bench/accuracy.ts's), the variants' databases beside it.
 */
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Engine } from '../src/engine.js';
import { SIM_NOW } from '../src/eval/sim.js';
import { native } from '../src/native/binding.js';
import { MapBaseline } from './baseline.js';
import { scoreScenario } from './scenario-score.js';
import { cellRowsRewritten, simWorld } from './sim-world.js';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '2000' },
    seed: { type: 'string', default: '1' },
    range: { type: 'string', default: '0.5,1,2' },
    samples: { type: 'string', default: '1' },
  },
});
const factors = (s: string) =>
  s.split(',').map((x) => {
    const v = Number(x);
    if (!(v > 0)) throw new Error(`not a positive factor: ${x}`);
    return v;
  });

const { world } = await simWorld(values.seed as string, values.requests as string, true);
const scenarios = readdirSync(join(world, 'scenarios'))
  .filter((f) => f.endsWith('.jsonl') && !/wifi|moved|lacf/.test(f))
  .sort();
const root = join(world, '..', 'variants');

/** cells.csv with every range and sample count scaled (at least 1 sample, ranges kept whole). */
function scaledCells(rangeBy: number, samplesBy: number): string {
  return cellRowsRewritten(world, ({ range, samples }) => ({
    range: Math.round(range * rangeBy),
    samples: Math.max(1, Math.round(samples * samplesBy)),
  }));
}

interface Row {
  variant: string;
  scenario: string;
  'median priors': number;
  'median net': number;
  'wmean/ours priors': string;
  'wmean/ours net': string;
  'inside priors': string;
  'inside net': string;
}

async function measure(db: string, file: string, baseline: MapBaseline) {
  const engine = await Engine.open({ db, now: SIM_NOW });
  try {
    const s = scoreScenario(engine, join(world, 'scenarios', file), baseline);
    return {
      median: Math.round(s.median),
      ratio: Number.isNaN(s.ratio) ? '-' : s.ratio.toFixed(3),
      inside: `${(100 * s.inside).toFixed(1)}%`,
    };
  } finally {
    engine.close();
  }
}

const rows: Row[] = [];
for (const rangeBy of factors(values.range as string)) {
  for (const samplesBy of factors(values.samples as string)) {
    const variant = `range x${rangeBy} samples x${samplesBy}`;
    const dir = join(root, `r${rangeBy}-s${samplesBy}`);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const cells = join(dir, 'cells.csv');
    writeFileSync(cells, scaledCells(rangeBy, samplesBy));
    const net = join(dir, 'db-net');
    const importFiles = native().importFiles;
    if (!importFiles)
      throw new Error('this build of the native addon has no importer; run `npm run build:native`');
    await importFiles(net, [cells, join(world, 'wifi.csv')], { replace: true, simulated: true }, () => {});
    // The same database without its statistics: the solver's priors.
    const priors = join(dir, 'db-priors');
    cpSync(net, priors, { recursive: true });
    const manifest = JSON.parse(readFileSync(join(priors, 'manifest.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    delete manifest.network_stats;
    writeFileSync(join(priors, 'manifest.json'), JSON.stringify(manifest));
    const baseline = MapBaseline.fromCsv(cells, join(world, 'wifi.csv'));
    for (const file of scenarios) {
      const a = await measure(priors, file, baseline);
      const b = await measure(net, file, baseline);
      rows.push({
        variant,
        scenario: file.replace('.jsonl', ''),
        'median priors': a.median,
        'median net': b.median,
        'wmean/ours priors': a.ratio,
        'wmean/ours net': b.ratio,
        'inside priors': a.inside,
        'inside net': b.inside,
      });
    }
  }
}
console.log(
  `The solver with and without each network's statistics on variants of simulator world ${values.seed} (${values.requests} requests a scenario)`,
);
console.table(rows);
