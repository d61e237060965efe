/**
 * Cell positioning learned from real drive tests: the Cork 5G/LTE traces (G-NetTrack Pro,
 * 2019/2020; ../shared/data/ucc-5g-cork, GPL-3.0, read in place and never copied here).
 *
 *   npx tsx bench/cork.ts [--json] [--zip PATH] [--cv]
 *
 * The zip is unpacked into a temp directory (the __MACOSX copies skipped), its 83 trace files
 * sorted by path, and three of every four (index % 4 != 3) learned with `learnFiles`, as
 * `whereabouts learn --mcc 272 --mnc 1` would: the traces carry no MCC/MNC (the operator is
 * anonymised), so the fixed pair 272/1 stands in. The driving rows of the held-out files
 * (Speed > 0; the `State` column is the app's download state, not motion) are then located
 * by their serving cell alone through `Engine` (radio per NetworkMode, signal = RSRP,
 * fallbacks lacf only) and compared with each row's GPS position. The baseline is the plain
 * mean of the training observations of the same cell. Rows whose cell never appears in the
 * training files are reported apart: they can only be answered through lacf, at the learned
 * sectors of their site where there are some, else by their TAC area (the two also apart).
 *
 * --cv evaluates within the learn files only, for choosing constants without looking at the
 * held-out ones: three folds (learn-file index % 3), each located by a database learned from
 * the other two; the rows of the three folds are pooled, and the mean of the folds' medians
 * is reported beside the pooled median.
 *
 * --centroid adds a real-data check of the solver's rule for crowd averages: the plain mean
 * of each cell's training observations (the baseline) is exactly such an average, so those
 * means are imported as an OpenCelliD-style export (positions "averaged", range the farthest
 * observation from the mean, samples the observation count) and the same rows are located
 * through `Engine` on that database, where cells with sibling sectors are placed on their
 * sector's axis by their signal (docs/positioning.md, Cells). The row to compare it with is
 * the centroid baseline itself: the same positions, unmoved. A control imports the same
 * means with `changeable` 0 (not a crowd average, so never moved): it should match the
 * baseline but for the radius.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { nativeLearn } from '../src/cli/learn.js';
import { Engine } from '../src/engine.js';
import { distanceM, ErrorStats } from '../src/eval/metrics.js';
import { unpackCorkTraces } from './cork-traces.js';

const { values } = parseArgs({
  options: {
    json: { type: 'boolean', default: false },
    zip: { type: 'string' },
    cv: { type: 'boolean', default: false },
    centroid: { type: 'boolean', default: false },
  },
});

const root = join(import.meta.dirname, '..');
// --zip: a checkout whose ../shared is elsewhere (a git worktree) names the archive directly.
const zip = values.zip ?? join(root, '..', 'shared', 'data', 'ucc-5g-cork', '5G-production-dataset.zip');
if (!existsSync(zip)) {
  process.stderr.write(
    `bench/cork.ts: the Cork traces are not at ${zip}.\n` +
      'They are read from ../shared/data/ucc-5g-cork (never copied into the repository); without them there is nothing to evaluate.\n',
  );
  process.exit(2);
}

const MCC = 272;
const MNC = 1;
const work = mkdtempSync(join(tmpdir(), 'whereabouts-cork-'));
try {
  const files = unpackCorkTraces(zip, join(work, 'traces'));
  const train = files.filter((_, i) => i % 4 !== 3);
  const test = files.filter((_, i) => i % 4 === 3);

  const oursSeen = new ErrorStats();
  const baseSeen = new ErrorStats();
  const oursUnseen = new ErrorStats();
  const unseenSite = new ErrorStats();
  const unseenArea = new ErrorStats();
  const centroidEngine = new ErrorStats();
  const centroidControl = new ErrorStats();
  const centroidSited = { rows: 0, cells: 0 };
  const counts = { unseenViaLacf: 0, staticRows: 0, testRows: 0 };
  const foldMedians: number[] = [];
  const splits = values.cv
    ? [0, 1, 2].map((k) => ({
        learn: train.filter((_, j) => j % 3 !== k),
        locate: train.filter((_, j) => j % 3 === k),
      }))
    : [{ learn: train, locate: test }];
  let learned: Awaited<ReturnType<ReturnType<typeof nativeLearn>>> | undefined;
  for (const [k, split] of splits.entries()) {
    const db = join(work, `db-${k}`);
    learned = await nativeLearn()(db, split.learn, { mcc: MCC, mnc: MNC }, () => {});
    const fold = new ErrorStats();
    await locate(db, split.learn, split.locate, fold);
    foldMedians.push(fold.median);
  }

  /** Learns nothing: locates the driving rows of `files` in `db` and adds them to the stats. */
  async function locate(db: string, learnFiles: string[], files: string[], fold: ErrorStats): Promise<void> {
    // The baseline: plain mean of each cell's training observations (the rows the learner accepts).
    const sums = new Map<string, { lat: number; lon: number; n: number }>();
    for (const f of learnFiles)
      for (const r of rows(f)) {
        const s = sums.get(r.key) ?? { lat: 0, lon: 0, n: 0 };
        s.lat += r.lat;
        s.lon += r.lon;
        s.n++;
        sums.set(r.key, s);
      }

    const testRows = files.flatMap((f) => rows(f).map((r) => ({ ...r, file: f }))).filter((r) => r.speed > 0);
    counts.testRows += testRows.length;
    const engine = await Engine.open({ db, land: false, ipDatabases: false });
    const requests = testRows.map((r) => ({
      cells: [{ radio: r.radio, mcc: MCC, mnc: MNC, lac: r.lac, cid: r.cid, signal: r.signal }],
      fallbacks: { lacf: 1, scf: 0, ipf: 0 },
    }));
    const responses = engine.processBatch(requests);
    // The class of each answer in the radius model: `lacf/<radio>/site` for an unseen cell
    // answered at its site's known sectors, `lacf/<radio>` for one answered by its TAC area.
    const { classes } = engine.radiusSamples(requests, testRows);
    engine.close();

    const fromCentroids: ReturnType<Engine['processBatch']>[] = [];
    if (values.centroid) {
      const dbc = `${db}-centroids`;
      const csv = `${dbc}.csv`;
      // Range as OpenCelliD computes it from measurements: the farthest one from the mean.
      const far = new Map<string, number>();
      for (const f of learnFiles)
        for (const r of rows(f)) {
          const s = sums.get(r.key);
          if (!s) continue;
          const d = distanceM(r.lat, r.lon, s.lat / s.n, s.lon / s.n);
          far.set(r.key, Math.max(far.get(r.key) ?? 0, d));
        }
      const now = Math.floor(Date.now() / 1000);
      for (const changeable of [1, 0]) {
        const lines = [
          'radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal',
        ];
        for (const [key, s] of sums) {
          const [radio, lac, cid] = key.split('/');
          lines.push(
            `${(radio ?? '').toUpperCase()},${MCC},${MNC},${lac},${cid},,${(s.lon / s.n).toFixed(7)},${(s.lat / s.n).toFixed(7)},` +
              `${Math.max(1, Math.round(far.get(key) ?? 0))},${s.n},${changeable},${now},${now},0`,
          );
        }
        writeFileSync(csv, `${lines.join('\n')}\n`);
        execFileSync(
          'node',
          [join(root, 'bin', 'whereabouts.js'), 'import', '--quiet', '--replace', '--db', dbc, csv],
          {
            stdio: ['ignore', 'ignore', 'pipe'],
          },
        );
        const e = await Engine.open({ db: dbc, land: false, ipDatabases: false });
        fromCentroids.push(
          e.processBatch(
            testRows.map((r) => ({
              cells: [{ radio: r.radio, mcc: MCC, mnc: MNC, lac: r.lac, cid: r.cid, signal: r.signal }],
              fallbacks: { lacf: 1, scf: 0, ipf: 0 },
            })),
          ),
        );
        e.close();
      }
      // Cells whose site (LTE eNB = cid >> 8; UMTS/GSM last decimal digit) has two or more
      // cells in the file: the ones the solver may place on an axis (its spread check aside).
      const site = (r: Row) =>
        r.radio === 'lte'
          ? `l/${r.lac}/${Math.floor(r.cid / 256)}`
          : `${r.radio}/${r.lac}/${Math.floor(r.cid / 10)}`;
      const perSite = new Map<string, number>();
      for (const key of sums.keys()) {
        const [radio, lac, cid] = key.split('/');
        const k = site({ radio: radio as Row['radio'], lac: Number(lac), cid: Number(cid) } as Row);
        perSite.set(k, (perSite.get(k) ?? 0) + 1);
      }
      for (const key of sums.keys()) {
        const [radio, lac, cid] = key.split('/');
        if (
          (perSite.get(site({ radio: radio as Row['radio'], lac: Number(lac), cid: Number(cid) } as Row)) ??
            0) >= 2
        )
          centroidSited.cells++;
      }
      for (const r of testRows) if (sums.has(r.key) && (perSite.get(site(r)) ?? 0) >= 2) centroidSited.rows++;
    }

    testRows.forEach((r, i) => {
      const res = responses[i];
      const answer =
        res?.status === 'ok' && res.lat !== undefined && res.lon !== undefined
          ? { lat: res.lat, lon: res.lon, accuracy: res.accuracy }
          : undefined;
      if (r.file.includes('/Static/')) counts.staticRows++;
      const mean = sums.get(r.key);
      if (mean) {
        oursSeen.add(r, answer);
        fold.add(r, answer);
        baseSeen.add(r, { lat: mean.lat / mean.n, lon: mean.lon / mean.n });
        for (const [j, stats] of [centroidEngine, centroidControl].entries()) {
          const c = fromCentroids[j]?.[i];
          if (!c) continue;
          stats.add(
            r,
            c.status === 'ok' && c.lat !== undefined && c.lon !== undefined
              ? { lat: c.lat, lon: c.lon, accuracy: c.accuracy }
              : undefined,
          );
        }
      } else {
        oursUnseen.add(r, answer);
        if (res?.fallback === 'lacf') counts.unseenViaLacf++;
        (classes[i]?.endsWith('/site') ? unseenSite : unseenArea).add(r, answer);
      }
    });
  }

  const f = (x: number) => (Number.isFinite(x) ? Math.round(x) : '-');
  const p = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : '-');
  const line = (name: string, s: ErrorStats, extra = '', radius = true) => ({
    method: name,
    rows: s.total,
    answered: p(s.answered / s.total),
    'median m': m1(s.median),
    'p90 m': f(s.p90),
    // The baseline states no radius, so it has no inside share.
    inside: radius ? p(s.insideShare) : '-',
    note: extra,
  });
  const m1 = (x: number) => (Number.isFinite(x) ? Math.round(10 * x) / 10 : '-');
  const folds = values.cv
    ? `folds' medians ${foldMedians.map(f).join(', ')}, mean ${f(foldMedians.reduce((a, b) => a + b, 0) / foldMedians.length)}`
    : '';
  const table = [
    line('learned (Engine, serving cell)', oursSeen, folds),
    line('centroid of observations', baseSeen, 'plain mean of the training rows of the cell', false),
    line('unseen cells (Engine)', oursUnseen, `${counts.unseenViaLacf} answered through lacf`),
    line('  at their site', unseenSite, "lacf: the mean of the site's learned sectors"),
    line('  by their TAC area', unseenArea, 'lacf: no sector of the site learned (or no answer)'),
  ];
  if (values.centroid)
    table.splice(
      2,
      0,
      line(
        'centroids imported, averaged (Engine)',
        centroidEngine,
        `sector axes; ${centroidSited.rows} rows on ${centroidSited.cells} cells with >= 2 sibling sectors`,
      ),
      line(
        'centroids imported, changeable 0 (Engine)',
        centroidControl,
        'control: the same positions, never moved',
      ),
    );
  const summary = {
    files: { total: files.length, train: train.length, test: test.length },
    crossValidation: values.cv,
    // The last split's learning run (the only one without --cv).
    learned: learned && {
      observations: learned.counts.observations,
      outliers: learned.counts.outliers,
      cells: learned.cells,
      moved: learned.counts.moved,
      blocked: learned.counts.blocked,
    },
    testRows: counts.testRows,
    staticTraceRows: counts.staticRows,
    table,
  };
  if (values.json) process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  else {
    printHeading();
    console.table(table);
  }

  function printHeading(): void {
    if (values.cv)
      console.log(
        `Cork learn files only (${train.length} of ${files.length}; index % 4 != 3), three folds (index % 3): ` +
          `the ${counts.testRows.toLocaleString('en')} driving rows of each fold located by a database learned from the other two, pooled; ` +
          `${counts.staticRows.toLocaleString('en')} of them in "Static" traces.`,
      );
    else if (learned) {
      console.log(
        `Cork traces: learned from ${train.length} of ${files.length} files (index % 4 != 3; mcc ${MCC}, mnc ${MNC} assumed), ` +
          `${learned.counts.observations.toLocaleString('en')} observations -> ${learned.cells} cells ` +
          `(${learned.counts.outliers.toLocaleString('en')} observations dropped as inconsistent, ${learned.counts.moved} moved).`,
      );
      console.log(
        `Located the ${counts.testRows.toLocaleString('en')} driving rows (Speed > 0; ${counts.staticRows.toLocaleString('en')} of them in "Static" traces) ` +
          `of the ${test.length} held-out files by their serving cell; errors against their GPS, "inside" = share within the reported 68% radius.`,
      );
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

interface Row {
  key: string;
  radio: 'gsm' | 'umts' | 'lte';
  lac: number;
  cid: number;
  lat: number;
  lon: number;
  speed: number;
  signal?: number;
}

/** The rows of a trace that name a usable serving cell and position, as the learner reads them. */
function rows(file: string): Row[] {
  const lines = readFileSync(file, 'utf8').split(/\r?\n/);
  const head = (lines[0] ?? '').split(',').map((h) => h.trim().toLowerCase());
  const col = (n: string) => head.indexOf(n);
  const [iLat, iLon, iSpeed, iMode, iLac, iCid, iRsrp] = [
    col('latitude'),
    col('longitude'),
    col('speed'),
    col('networkmode'),
    col('lachex'),
    col('rawcellid'),
    col('rsrp'),
  ];
  const out: Row[] = [];
  for (const l of lines.slice(1)) {
    const c = l.split(',');
    const radio = radioOf(c[iMode] ?? '');
    const lat = Number(c[iLat]);
    const lon = Number(c[iLon]);
    const lac = Number.parseInt(c[iLac] ?? '', 16);
    const cid = Number(c[iCid]);
    if (!radio || !Number.isFinite(lat) || !Number.isFinite(lon) || (lat === 0 && lon === 0)) continue;
    if (!Number.isInteger(cid) || !(lac > 0)) continue;
    const signal = Number(c[iRsrp]);
    out.push({
      key: `${radio}/${lac}/${cid}`,
      radio,
      lac,
      cid,
      lat,
      lon,
      speed: Number(c[iSpeed]) || 0,
      signal: Number.isFinite(signal) && signal < 0 ? signal : undefined,
    });
  }
  return out;
}

function radioOf(mode: string): Row['radio'] | undefined {
  const m = mode.trim().toUpperCase();
  if (m === '5G' || m === 'LTE') return 'lte';
  if (['HSPA+', 'HSPA', 'UMTS', 'HSUPA', 'HSDPA'].includes(m)) return 'umts';
  if (m === 'GPRS' || m === 'EDGE') return 'gsm';
  return undefined;
}
