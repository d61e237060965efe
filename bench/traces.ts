import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { nativeLearn } from '../src/cli/learn.js';
import { Engine } from '../src/engine.js';
import { CentroidBaseline } from '../src/eval/baselines.js';
import { groupObservations, type ObservationFile, readObservationFiles } from '../src/eval/inputs.js';
import { ErrorStats, quantile } from '../src/eval/metrics.js';
import type { LocateRequest } from '../src/locating/request/index.js';
import { unpackCorkTraces } from './cork-traces.js';

const { values } = parseArgs({
  options: {
    set: { type: 'string', default: 'dakar' },
    cv: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    zip: { type: 'string' },
  },
});

const root = join(import.meta.dirname, '..');
const shared = join(root, '..', 'shared', 'data');
const BLOCK_S = 600;

/** One learn-and-locate run: which groups learn, which are located, and the labels rows report under. */
interface Case {
  name: string;
  learn: (g: Group) => boolean;
  locate: (g: Group) => boolean;
}
type Group = ReturnType<typeof groupObservations>[number];

const work = mkdtempSync(join(tmpdir(), 'whereabouts-traces-'));
try {
  let files: string[];
  let net: { mcc?: number; mnc?: number } = {};
  let cases: (obs: ObservationFile[], groups: Group[]) => Case[];
  /** Which subset a located row reports under besides the pooled one (the operator, the fold). */
  let part: (obs: ObservationFile[], g: Group) => string;
  if (values.set === 'dakar') {
    const dir = join(shared, 'gnettrack-dakar');
    if (!existsSync(dir)) missing(dir);
    files = readdirSync(dir)
      .filter((f) => f.endsWith('_log.txt'))
      .sort()
      .map((f) => join(dir, f));
    const block = (obs: ObservationFile[], groups: Group[]) => {
      const t0 = obs.map((_, fi) => Math.min(...groups.filter((g) => g.file === fi).map((g) => g.time)));
      return (g: Group) =>
        Number.isNaN(g.time) ? -1 : Math.floor((g.time - (t0[g.file] as number)) / BLOCK_S) % 2;
    };
    cases = (obs, groups) => {
      const b = block(obs, groups);
      const a: Case = { name: 'A (learn even blocks)', learn: (g) => b(g) === 0, locate: (g) => b(g) === 1 };
      const r: Case = { name: 'B (learn odd blocks)', learn: (g) => b(g) === 1, locate: (g) => b(g) === 0 };
      return values.cv ? [a] : [a, r];
    };
    part = (obs, g) => basename(obs[g.file]?.path ?? '').replace(/_log\.txt$/, '');
  } else if (values.set === 'cork') {
    const zip = values.zip ?? join(shared, 'ucc-5g-cork', '5G-production-dataset.zip');
    if (!existsSync(zip)) missing(zip);
    files = unpackCorkTraces(zip, join(work, 'traces'));
    net = { mcc: 272, mnc: 1 };
    const driving = (obs: ObservationFile[], g: Group) => ((obs[g.file]?.speed[g.first] as number) ?? 0) > 0;
    cases = (obs) => {
      const train = (g: Group) => g.file % 4 !== 3;
      if (!values.cv)
        return [{ name: 'held-out files', learn: train, locate: (g) => g.file % 4 === 3 && driving(obs, g) }];
      // Fold k: the learn files whose rank among the learn files is k mod 3.
      const rank = (g: Group) => g.file - Math.floor(g.file / 4);
      return [0, 1, 2].map((k) => ({
        name: `fold ${k}`,
        learn: (g: Group) => train(g) && rank(g) % 3 !== k,
        locate: (g: Group) => train(g) && rank(g) % 3 === k && driving(obs, g),
      }));
    };
    part = () => 'all';
  } else {
    process.stderr.write(`bench/traces.ts: --set must be dakar or cork (got ${values.set})\n`);
    process.exit(2);
  }

  const obs = await readObservationFiles(files, net);
  const groups = groupObservations(obs);
  const results: Result[] = [];
  for (const [k, c] of cases(obs, groups).entries()) {
    const db = join(work, `db-${k}`);
    // Held out: every row the case does not learn, by file.
    const held = obs.map(() => [] as number[]);
    const learnedFiles = new Set<number>();
    for (const g of groups) {
      if (c.learn(g)) learnedFiles.add(g.file);
      else for (let r = g.first; r < g.end; r++) held[g.file]?.push(obs[g.file]?.line[r] as number);
    }
    const fileIdx = [...learnedFiles].sort((a, b) => a - b);
    await nativeLearn()(
      db,
      fileIdx.map((f) => files[f] as string),
      { ...net, heldOut: fileIdx.map((f) => held[f] as number[]) },
      () => {},
    );
    const centroid = new CentroidBaseline();
    for (const g of groups) {
      if (!c.learn(g)) continue;
      centroid.addRows(obs[g.file] as ObservationFile, g.first, g.end);
    }
    const located = groups.filter((g) => c.locate(g));
    const engine = await Engine.open({ db, land: false, ipDatabases: false });
    const answers = engine.processBatch(
      located.map((g) => ({ ...(g.row.request as object), fallbacks: { lacf: 1, scf: 0, ipf: 0 } })),
    );
    engine.close();
    const byPart = new Map<string, Result>();
    const get = (name: string) => {
      let r = byPart.get(name);
      if (!r) {
        r = {
          case: c.name,
          part: name,
          ours: new ErrorStats(),
          base: new ErrorStats(),
          unseen: 0,
          withTa: 0,
        };
        byPart.set(name, r);
      }
      return r;
    };
    located.forEach((g, i) => {
      const f = obs[g.file] as ObservationFile;
      // The request's only cell: the baseline answers it only if the cell was learned.
      const req: LocateRequest = {
        cells: [
          {
            radio: f.kind[g.first] as number,
            mcc: f.mcc[g.first] as number,
            mnc: f.mnc[g.first] as number,
            lac: f.lac[g.first] as number,
            cid: f.id[g.first] as number,
          },
        ],
        wifi: [],
      } as unknown as LocateRequest;
      const base = centroid.answer(req);
      const targets = [get(part(obs, g)), ...(part(obs, g) === 'all' ? [] : [get('all')])];
      for (const t of targets) {
        if (!base) {
          t.unseen++;
          continue;
        }
        const a = answers[i];
        t.ours.add(
          g.row.truth,
          a?.status === 'ok' && a.lat !== undefined && a.lon !== undefined
            ? { lat: a.lat, lon: a.lon, accuracy: a.accuracy }
            : undefined,
        );
        t.base.add(g.row.truth, base);
        if (!Number.isNaN(f.ta[g.first] as number)) t.withTa++;
      }
    });
    results.push(...[...byPart.values()].sort((a, b) => (a.part === 'all' ? 1 : b.part === 'all' ? -1 : 0)));
  }

  // Every case's rows together, per part, when there are several cases (directions, folds).
  const caseNames = new Set(results.map((r) => r.case));
  if (caseNames.size > 1)
    for (const p of new Set(results.map((r) => r.part))) {
      const pooled: Result = {
        case: 'pooled',
        part: p,
        ours: new ErrorStats(),
        base: new ErrorStats(),
        unseen: 0,
        withTa: 0,
      };
      for (const r of results.filter((x) => x.part === p)) {
        for (const [to, from] of [
          [pooled.ours, r.ours],
          [pooled.base, r.base],
        ] as const) {
          to.errors.push(...from.errors);
          to.ratios.push(...from.ratios);
          to.inside += from.inside;
          to.total += from.total;
        }
        pooled.unseen += r.unseen;
        pooled.withTa += r.withTa;
      }
      results.push(pooled);
    }
  const table = results.map(row);
  // The worst case of each part: the highest ratio of medians over the cases.
  const worst = [...new Set(results.map((r) => r.part))].map((p) => {
    const of = results.filter((r) => r.part === p && r.case !== 'pooled');
    const w = of.reduce((a, b) => (ratio(b) > ratio(a) ? b : a));
    return { ...row(w), case: `worst: ${w.case}` };
  });
  if (values.json)
    process.stdout.write(`${JSON.stringify({ set: values.set, cv: values.cv, table, worst }, null, 2)}\n`);
  else {
    console.log(
      `${values.set}${values.cv ? ' (cross-validation within the learn part)' : ''}: ${files.length} files, ` +
        `${groups.length.toLocaleString('en')} rows; located rows whose serving cell was learned, errors in metres.`,
    );
    console.table(table);
    console.log('Worst case per part (highest median ratio to the centroid):');
    console.table(worst);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

interface Result {
  case: string;
  part: string;
  ours: ErrorStats;
  base: ErrorStats;
  unseen: number;
  withTa: number;
}

function ratio(r: Result): number {
  return r.ours.median / r.base.median;
}

function row(r: Result) {
  const m = (x: number) => (Number.isFinite(x) ? Math.round(x) : '-');
  return {
    case: r.case,
    part: r.part,
    rows: r.ours.total,
    'with TA': r.withTa,
    unseen: r.unseen,
    median: m(r.ours.median),
    p68: m(quantile(r.ours.errors, 0.68)),
    p90: m(r.ours.p90),
    inside: `${(100 * r.ours.insideShare).toFixed(1)}%`,
    'centroid median': m(r.base.median),
    'centroid p68': m(quantile(r.base.errors, 0.68)),
    'centroid p90': m(r.base.p90),
    'median ratio': (r.ours.median / r.base.median).toFixed(3),
    'p90 ratio': (r.ours.p90 / r.base.p90).toFixed(3),
  };
}

function missing(path: string): never {
  process.stderr.write(
    `bench/traces.ts: no data at ${path}; the traces are read from ../shared/data (never copied into the repository).\n`,
  );
  process.exit(2);
}
