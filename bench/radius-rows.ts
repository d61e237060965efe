/**
 * Every scenario answer of the simulator worlds named, one JSON line each, for analysing the
 * radius outside the engine: error and radius, the request's cell count, every cell's level and
 * whether the database knows it, the first cell's stored row (lat, lon, range, samples) and its
 * network's statistics (the database's `network-stats-*.json`), and the world's crowd-estimate
 * and range kinds (for diagnosis: the engine cannot see them).
 *
 *   npx tsx bench/radius-rows.ts OUT.jsonl DIR...
 *
 * Each DIR is a world directory as `bench/families.ts` leaves it (`DIR/world`, `DIR/db`).
 */
import { appendFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Engine } from '../src/engine.js';
import { distanceM } from '../src/eval/metrics.js';
import { SIM_NOW } from '../src/eval/sim.js';

const [out, ...dirs] = process.argv.slice(2);
if (!out || dirs.length === 0) {
  process.stderr.write('usage: npx tsx bench/radius-rows.ts OUT.jsonl DIR...\n');
  process.exit(2);
}
// Written world by world: hundreds of worlds' rows overflow one string.
writeFileSync(out, '');
for (const dir of dirs) {
  const lines: string[] = [];
  const db = join(dir, 'db');
  const statsFile = readdirSync(db).find((f) => f.startsWith('network-stats'));
  const stats = statsFile ? JSON.parse(readFileSync(join(db, statsFile), 'utf8')).networks : [];
  const net = new Map<string, unknown>();
  for (const n of stats) net.set(`${n.radio}/${n.mnc}`, n);
  const cells = new Map<string, number[]>();
  for (const l of readFileSync(join(dir, 'world', 'cells.csv'), 'utf8')
    .split('\n')
    .slice(1)) {
    if (!l) continue;
    const f = l.split(',');
    cells.set(`${(f[0] ?? '').toLowerCase()}/${f[2]}/${f[3]}/${f[4]}`, [
      Number(f[7]),
      Number(f[6]),
      Number(f[8]),
      Number(f[9]),
    ]);
  }
  // The reference world (seed 1) draws no family parameters.
  const paramsFile = join(dir, 'world', 'params.json');
  const params = existsSync(paramsFile) ? JSON.parse(readFileSync(paramsFile, 'utf8')) : {};
  const engine = await Engine.open({ db, now: SIM_NOW, ipDatabases: false });
  const scen = join(dir, 'world', 'scenarios');
  for (const f of readdirSync(scen).filter((x) => x.endsWith('.jsonl'))) {
    const scenario = f.replace(/\.jsonl$/, '');
    const items = readFileSync(join(scen, f), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const answers = engine.processBatch(items.map((i) => i.request));
    items.forEach((it, k) => {
      const o = answers[k];
      if (!o || o.status !== 'ok' || o.lat === undefined || o.lon === undefined || !o.accuracy) return;
      const rc = it.request.cells ?? [];
      const c0 = rc[0];
      const key = c0 ? `${c0.radio}/${c0.mnc}` : '';
      const known = rc.map((c: { radio: string; mnc: number; lac: number; cid: number }) =>
        cells.get(`${c.radio}/${c.mnc}/${c.lac}/${c.cid}`),
      );
      lines.push(
        JSON.stringify({
          world: basename(dir),
          scenario,
          fallback: o.fallback ?? null,
          ncells: rc.length,
          nwifi: it.request.wifi?.length ?? 0,
          nknown: known.filter(Boolean).length,
          err: distanceM(it.truth.lat, it.truth.lon, o.lat, o.lon),
          acc: o.accuracy,
          radio: c0?.radio ?? null,
          mnc: c0?.mnc ?? null,
          signal: c0?.signal ?? null,
          // Every cell's level, and whether the database knows it, in the request's order.
          levels: rc.map((c: { signal?: number }) => c.signal ?? null),
          known: known.map(Boolean),
          ta: c0?.ta ?? null,
          c0: known[0] ?? null,
          d0: known[0] ? distanceM(known[0][0], known[0][1], o.lat, o.lon) : null,
          net: net.get(key) ?? null,
          note: it.note,
          p: { est: params.cell_estimate, range: params.cell_range, layout: params.layout },
        }),
      );
    });
  }
  engine.close();
  if (lines.length > 0) appendFileSync(out, `${lines.join('\n')}\n`);
}
