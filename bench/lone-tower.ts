/**
 * A published tower's cell heard alone with a timing advance: the `cells-known-towers` requests
 * of the simulator worlds named whose serving cell carries an advance, cut to that cell, and
 * located. The answer is the mast; the device is on the advance's ring. Prints, per world and
 * radio, the share of true positions within the 68% radius, and the median world beside the
 * worst (farthest from 68%).
 *
 *   npx tsx bench/lone-tower.ts DIR...
 *
 * Each DIR is a world directory as `bench/families.ts` leaves it (`DIR/world`, `DIR/db`), for
 * example `.eval/family-{201..216}-1000`.
 */
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Engine } from '../src/engine.js';
import { distanceM } from '../src/eval/metrics.js';
import { SIM_NOW } from '../src/eval/sim.js';

const dirs = process.argv.slice(2);
if (dirs.length === 0) {
  process.stderr.write('usage: npx tsx bench/lone-tower.ts DIR...\n');
  process.exit(2);
}

interface Share {
  world: string;
  radio: string;
  rows: number;
  inside: number;
}
const shares: Share[] = [];
for (const dir of dirs) {
  const items = readFileSync(join(dir, 'world', 'scenarios', 'cells-known-towers.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((it) => it.request.cells?.[0]?.ta !== undefined);
  const engine = await Engine.open({ db: join(dir, 'db'), now: SIM_NOW, ipDatabases: false });
  const answers = engine.processBatch(items.map((it) => ({ ...it.request, cells: [it.request.cells[0]] })));
  engine.close();
  const tally = new Map<string, { rows: number; inside: number }>();
  items.forEach((it, k) => {
    const o = answers[k];
    if (!o || o.status !== 'ok' || o.lat === undefined || o.lon === undefined || !o.accuracy) return;
    const inside = distanceM(it.truth.lat, it.truth.lon, o.lat, o.lon) <= o.accuracy ? 1 : 0;
    for (const radio of ['all', it.request.cells[0].radio as string]) {
      const t = tally.get(radio) ?? { rows: 0, inside: 0 };
      t.rows++;
      t.inside += inside;
      tally.set(radio, t);
    }
  });
  for (const [radio, t] of tally)
    shares.push({ world: basename(dir), radio, rows: t.rows, inside: t.inside / t.rows });
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
console.table(shares.map((s) => ({ ...s, inside: pct(s.inside) })));
for (const radio of [...new Set(shares.map((s) => s.radio))]) {
  const of = shares.filter((s) => s.radio === radio && s.rows >= 40).map((s) => s.inside);
  if (of.length === 0) continue;
  const sorted = [...of].sort((a, b) => a - b);
  const worst = of.reduce((w, x) => (Math.abs(x - 0.68) > Math.abs(w - 0.68) ? x : w), of[0] as number);
  console.log(
    `${radio}: median world ${pct(sorted[Math.floor(sorted.length / 2)] as number)}, worst ${pct(worst)}, ` +
      `range ${pct(sorted[0] as number)}-${pct(sorted[sorted.length - 1] as number)}, ` +
      `${of.filter((x) => x >= 0.6 && x <= 0.76).length} of ${of.length} worlds within 60-76% (worlds with 40+ rows)`,
  );
}
