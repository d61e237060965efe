/**
 * What an export writes besides its positions, rewritten: the simulator worlds named located on
 * copies of each world's database whose rows state their ranges and sample counts otherwise.
 * The published operator (mnc 3, its rows at its towers' true positions; the
 * `cells-known-towers` requests): ranges as the simulator wrote them (the zone's site spacing,
 * 100 sightings), divided or multiplied by 4, none, all 300 m, every sample count 1, and its GSM
 * and UMTS cells numbered 1, 2, 3... in each LAC (and RNC) in their order, so that a cell id's
 * last digit no longer groups a site's sectors (the requests renumbered alike), and its rows
 * marked exact (`changeable` 0, as OpenCelliD marks positions it did not average). The crowd
 * operators (mnc 1 and 2; the `cells-*` and `single-cell` requests): no sample counts (an export
 * without them), no ranges, their GSM and UMTS ids 1, 2, 3... as above. A solver that reads a
 * published mast's range or samples as a measurement, an uncounted export as one sighting a
 * cell, or a site in ids numbered otherwise, moves with them.
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
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Engine } from '../src/engine.js';
import { SIM_NOW } from '../src/eval/sim.js';
import { native } from '../src/native/binding.js';
import { MapBaseline } from './baseline.js';
import { scoreScenario } from './scenario-score.js';
import { cellRowsRewritten, type StatedFields } from './sim-world.js';

const dirs = process.argv.slice(2);
if (dirs.length === 0) {
  process.stderr.write('usage: npx tsx bench/export-variants.ts DIR...\n');
  process.exit(2);
}
/** The simulator's published operator (`KNOWN_MNC` in crates/whereabouts-sim/src/family.rs). */
const PUBLISHED_MNC = '3';
const CROWD_SCENARIOS = ['cells-urban', 'cells-suburban', 'cells-rural', 'single-cell'];

/** Each variant: whose rows it rewrites, what they then state, and the requests. */
interface Variant {
  name: string;
  published: boolean;
  /** The fields the rewritten rows state anew ({@link cellRowsRewritten}); none: as simulated. */
  row: (range: number, samples: number) => StatedFields;
  scenarios: string[];
  /** The GSM and UMTS cells of the operators it rewrites renumbered ({@link renumbered}). */
  renumber?: boolean;
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
  published('as simulated', () => ({})),
  published('ranges / 4', (r) => ({ range: Math.max(1, Math.round(r / 4)) })),
  published('ranges x 4', (r) => ({ range: r * 4 })),
  published('no ranges', () => ({ range: '' })),
  published('ranges 300 m', () => ({ range: 300 })),
  published('samples 1', () => ({ samples: 1 })),
  { ...published('GSM and UMTS ids 1, 2, 3...', () => ({})), renumber: true },
  // OpenCelliD marks a position it did not average with `changeable` 0.
  published('rows marked exact (changeable 0)', () => ({ changeable: 0 })),
  crowd('as simulated', () => ({})),
  crowd('no sample counts', () => ({ samples: '' })),
  crowd('no ranges', () => ({ range: '' })),
  { ...crowd('GSM and UMTS ids 1, 2, 3...', () => ({})), renumber: true },
];

/** A cell's key in a renumbering: operator, radio as in the CSV (upper case), LAC, cell id. */
const idKey = (net: number | string, radio: string, lac: number | string, cid: number | string) =>
  `${net}/${radio.toUpperCase()}/${lac}/${cid}`;

/**
 * `csv` (a world's cells.csv) with the GSM and UMTS cells of the published operator (or,
 * `published` false, of the crowd ones) numbered 1, 2, 3... within each LAC (UMTS: each RNC,
 * the id's upper 16 bits) in their order, and the new id of each renumbered cell by
 * {@link idKey}.
 */
function renumbered(csv: string, published: boolean): { csv: string; ids: Map<string, number> } {
  const [header, ...rows] = csv.split('\n');
  const cols = (header ?? '').split(',');
  const [radio, net, area, cell] = ['radio', 'net', 'area', 'cell'].map((c) => cols.indexOf(c)) as [
    number,
    number,
    number,
    number,
  ];
  const groups = new Map<string, number[]>();
  for (const line of rows) {
    const f = line.split(',');
    const r = f[radio] ?? '';
    if ((f[net] === PUBLISHED_MNC) !== published || (r !== 'GSM' && r !== 'UMTS')) continue;
    const cid = Number(f[cell]);
    const group = `${f[net]}/${r}/${f[area]}/${r === 'UMTS' ? Math.floor(cid / 65_536) : 0}`;
    groups.set(group, [...(groups.get(group) ?? []), cid]);
  }
  const ids = new Map<string, number>();
  for (const [group, cids] of groups) {
    const [operator, r, lac, rnc] = group.split('/') as [string, string, string, string];
    const sorted = [...cids].sort((a, b) => a - b);
    for (const [i, cid] of sorted.entries())
      ids.set(idKey(operator, r, lac, cid), Number(rnc) * 65_536 + i + 1);
  }
  const out = rows.map((line) => {
    const f = line.split(',');
    const id = ids.get(idKey(f[net] ?? '', f[radio] ?? '', f[area] ?? '', f[cell] ?? ''));
    if (id === undefined) return line;
    f[cell] = String(id);
    return f.join(',');
  });
  return { csv: [header, ...out].join('\n'), ids };
}

/** A scenario file's requests with their cells' ids as `ids` renumbers them. */
function requestsRenumbered(file: string, ids: Map<string, number>): string {
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((line) => {
      if (line.trim() === '') return line;
      const l = JSON.parse(line) as {
        request: { cells?: { radio?: string; mnc?: number; lac?: number; cid?: number }[] };
      };
      for (const c of l.request.cells ?? []) {
        const id = ids.get(idKey(c.mnc ?? '', c.radio ?? '', c.lac ?? '', c.cid ?? ''));
        if (id !== undefined) c.cid = id;
      }
      return JSON.stringify(l);
    })
    .join('\n');
}

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
    const stated = cellRowsRewritten(world, ({ net, range, samples }) =>
      (net === PUBLISHED_MNC) === v.published ? v.row(range, samples) : undefined,
    );
    const ids = v.renumber ? renumbered(stated, v.published) : undefined;
    writeFileSync(cells, ids?.csv ?? stated);
    const scenarioFile = (scenario: string) => {
      const file = join(world, 'scenarios', `${scenario}.jsonl`);
      if (!ids) return file;
      const copy = join(out, `${scenario}.jsonl`);
      writeFileSync(copy, requestsRenumbered(file, ids.ids));
      return copy;
    };
    await importFiles(join(out, 'db'), [cells], { replace: true, simulated: true }, () => {});
    const engine = await Engine.open({ db: join(out, 'db'), now: SIM_NOW, ipDatabases: false });
    try {
      const baseline = MapBaseline.fromCsv(cells, join(world, 'wifi.csv'));
      for (const scenario of v.scenarios) {
        const s = scoreScenario(engine, scenarioFile(scenario), baseline);
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
  `${dirs.length} worlds, each export's ranges, sample counts or ids rewritten: the baseline's median error over ours, and inside the 68% radius`,
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
