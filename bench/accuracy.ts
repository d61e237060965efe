/**
 * Accuracy evaluation on the simulator: per scenario, the engine's median and p90 error and
 * the share of true positions inside its reported radius, beside two baselines run on the
 * same requests (the serving cell's position; a signal-weighted mean of known stations).
 *
 *   npx tsx bench/accuracy.ts [--requests N] [--seed N] [--keep] [--separate-masts SHARE] [--ratios]
 *
 * It builds the simulator (cargo, release), writes a world into .eval/sim-SEED-N, imports it
 * with the CLI (`--keep`: reuses the world there while this build opens its database) and
 * evaluates every scenario. Deterministic for a given seed. `--ratios` adds the 68% and 95%
 * quantiles of error / reported radius per scenario and over all answers: the 95% one is the
 * factor that turns the 68% radius into a 95% one (the Ichnaea interface's, docs/server.md).
 * This is the reference world only; bench/families.ts reports over world families, on seeds a
 * fit never saw, with the worst world beside the median one.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Engine } from '../src/engine.js';
import { distanceM, ErrorStats, quantile } from '../src/eval/metrics.js';
import { type LocateRequest, parseRequest } from '../src/locating/request/index.js';
import { MapBaseline } from './baseline.js';
import { simWorld } from './sim-world.js';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '1000' },
    seed: { type: 'string', default: '1' },
    keep: { type: 'boolean', default: false },
    'separate-masts': { type: 'string', default: '0' },
    json: { type: 'boolean', default: false },
    ratios: { type: 'boolean', default: false },
  },
});

const { world: simDir, db: dbDir } = await simWorld(
  values.seed as string,
  values.requests as string,
  values.keep as boolean,
  values['separate-masts'] as string,
);

interface Line {
  scenario: string;
  truth: { lat: number; lon: number };
  request: unknown;
}

// The simulator's scenario time (its default --now, 2026-06-01): station ages are relative to it.
const SIM_NOW = Date.UTC(2026, 5, 1) / 1000;
const engine = await Engine.open({ db: dbDir, now: SIM_NOW });
const baseline = MapBaseline.fromCsv(join(simDir, 'cells.csv'), join(simDir, 'wifi.csv'));
const rows: Record<string, string | number>[] = [];
/** Error / radius of every answer of every scenario, for the pooled quantiles of `--ratios`. */
const allRatios: number[] = [];
const scenarios = readdirSync(join(simDir, 'scenarios'))
  .filter((f) => f.endsWith('.jsonl'))
  .sort();
for (const file of scenarios) {
  const lines = readFileSync(join(simDir, 'scenarios', file), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Line);
  const ours = new ErrorStats();
  const serving = new ErrorStats();
  const mean = new ErrorStats();
  const fallbacks: Record<string, number> = {};
  // The same requests answered by both: a ratio not skewed by different answered sets.
  const pairedOurs: number[] = [];
  const pairedMean: number[] = [];
  const responses = engine.processBatch(lines.map((l) => l.request));
  lines.forEach((l, i) => {
    const r = responses[i];
    const answer =
      r?.status === 'ok' && r.lat !== undefined && r.lon !== undefined
        ? { lat: r.lat, lon: r.lon, accuracy: r.accuracy }
        : undefined;
    ours.add(l.truth, answer);
    if (r?.fallback) fallbacks[r.fallback] = (fallbacks[r.fallback] ?? 0) + 1;
    const parsed = parseRequest(l.request);
    const req: LocateRequest | undefined = parsed.ok ? parsed.request : undefined;
    serving.add(l.truth, req && baseline.serving(req));
    const m = req && baseline.weightedMean(req);
    mean.add(l.truth, m);
    if (answer && m) {
      pairedOurs.push(distanceM(l.truth.lat, l.truth.lon, answer.lat, answer.lon));
      pairedMean.push(distanceM(l.truth.lat, l.truth.lon, m.lat, m.lon));
    }
  });
  const f = (x: number) => (Number.isFinite(x) ? Math.round(x) : '-');
  const p = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : '-');
  for (const x of ours.ratios) allRatios.push(x);
  const ratioColumns: Record<string, string> = values.ratios
    ? {
        'err/radius q68': quantile(ours.ratios, 0.68).toFixed(2),
        'err/radius q95': quantile(ours.ratios, 0.95).toFixed(2),
      }
    : {};
  rows.push({
    scenario: file.replace('.jsonl', ''),
    n: ours.total,
    answered: p(ours.answered / ours.total),
    median: f(ours.median),
    p90: f(ours.p90),
    inside: p(ours.insideShare),
    fallback:
      Object.entries(fallbacks)
        .map(([k, v]) => `${k}:${v}`)
        .join(' ') || '-',
    'serving median': f(serving.median),
    'serving answered': p(serving.answered / serving.total),
    'wmean median': f(mean.median),
    'wmean answered': p(mean.answered / mean.total),
    // Three decimals: the target is 1.3, and ratios near it differ in the third.
    'wmean/ours (paired)': pairedOurs.length
      ? (quantile(pairedMean, 0.5) / quantile(pairedOurs, 0.5)).toFixed(3)
      : '-',
    ...ratioColumns,
  });
}
engine.close();
if (values.ratios) {
  rows.push({
    scenario: 'all answers',
    n: allRatios.length,
    'err/radius q68': quantile(allRatios, 0.68).toFixed(3),
    'err/radius q95': quantile(allRatios, 0.95).toFixed(3),
  });
}
if (values.json) process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
else {
  console.log(
    `Accuracy on the simulator (seed ${values.seed}, ${values.requests} requests per scenario); errors in metres, "inside" = share of truths within the reported 68% radius`,
  );
  console.table(rows);
}
