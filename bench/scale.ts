/**
 * The scale test of the issue, at world size: generate an N-row OpenCelliD export with the
 * simulator, import it with the CLI, then in fresh Node processes time `Engine.open`, measure
 * bytes per cell on disk, and RSS around 100,000 random single-cell lookups.
 *
 *   npx tsx bench/scale.ts [--rows N] [--keep] [--seed N] [--opens 5] [--lookups 100000]
 *                          [--cold-lookups 10000]
 *
 * Targets: import at 500,000 rows/s or more, `Engine.open` under 50 ms, at most 24 bytes per
 * cell on disk (the whole shards; the cells vector and the indexes reported apart). Works in .eval/scale-N/ (gitignored);
 * the CSV is deleted at the end unless --keep (then it is reused by the next run), the database
 * stays for inspection. Opens run with the shards in the page cache (just written): a cold
 * cache costs only what the first lookups fault in, since opening maps the files. What those
 * faults read is measured apart: `--cold-lookups` lookups after the shards are dropped from
 * the page cache (GNU `dd iflag=nocache count=0`), with the bytes the process read from disk
 * (/proc/self/io), the IoT gateway's case of a database on slow storage.
 *
 * The same file is the child process (`--child open|lookup`), so that every measurement of
 * open and of RSS starts from a Node process that has never touched the database.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  statfsSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { Engine } from '../src/engine.js';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '50000000' },
    seed: { type: 'string', default: '1' },
    keep: { type: 'boolean', default: false },
    opens: { type: 'string', default: '5' },
    lookups: { type: 'string', default: '100000' },
    'cold-lookups': { type: 'string', default: '10000' },
    child: { type: 'string' },
    'db-only': { type: 'boolean', default: false },
    db: { type: 'string' },
    requests: { type: 'string' },
  },
});

const IMPORT_TARGET_ROWS_S = 500_000;
const OPEN_TARGET_MS = 50;
const BYTES_PER_CELL_TARGET = 24;
const BATCH = 1000;

/** VmRSS and its parts from /proc (Linux); process.memoryUsage().rss elsewhere. */
function rss(): { total: number; anon?: number; file?: number } {
  try {
    const s = readFileSync('/proc/self/status', 'utf8');
    const kb = (k: string) => {
      const m = new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s);
      return m ? Number(m[1]) * 1024 : undefined;
    };
    return { total: kb('VmRSS') ?? process.memoryUsage().rss, anon: kb('RssAnon'), file: kb('RssFile') };
  } catch {
    return { total: process.memoryUsage().rss };
  }
}

// ---------------------------------------------------------------------------------------------
// Child processes: print one JSON line on stdout.

if (values.child === 'open') {
  // --db-only leaves out land and IP data: the difference is what they cost.
  const options = values['db-only']
    ? { db: values.db as string, land: false as const, ipDatabases: false as const }
    : { db: values.db as string };
  const t0 = performance.now();
  const engine = await Engine.open(options);
  const first = performance.now() - t0;
  const cells = engine.stats().cells;
  engine.close();
  // A second open in the same process: the addon is loaded and the files were just read.
  const t1 = performance.now();
  const again = await Engine.open(options);
  const second = performance.now() - t1;
  again.close();
  process.stdout.write(`${JSON.stringify({ first, second, cells })}\n`);
  process.exit(0);
}

/** Bytes this process has caused to be read from storage (Linux), else NaN. */
function diskReadBytes(): number {
  try {
    return Number(/^read_bytes: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))?.[1] ?? Number.NaN);
  } catch {
    return Number.NaN;
  }
}

if (values.child === 'lookup') {
  const before = rss();
  const engine = await Engine.open({ db: values.db as string });
  const afterOpen = rss();
  const requests = readFileSync(values.requests as string, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as unknown);
  const afterParse = rss();
  let hits = 0;
  let fallbacks = 0;
  let errors = 0;
  const read0 = diskReadBytes();
  const t0 = performance.now();
  for (let i = 0; i < requests.length; i += BATCH) {
    for (const r of engine.processBatch(requests.slice(i, i + BATCH))) {
      if (r.status !== 'ok') errors++;
      else if (r.fallback) fallbacks++;
      else hits++;
    }
  }
  const seconds = (performance.now() - t0) / 1000;
  const diskRead = diskReadBytes() - read0;
  const after = rss();
  engine.close();
  process.stdout.write(
    `${JSON.stringify({ before, afterOpen, afterParse, after, seconds, diskRead, n: requests.length, hits, fallbacks, errors })}\n`,
  );
  process.exit(0);
}

// ---------------------------------------------------------------------------------------------
// The parent: generate, import, measure, report.

const rows = Number(values.rows);
if (!Number.isInteger(rows) || rows <= 0)
  throw new Error(`--rows must be a positive integer, got ${values.rows}`);
const root = join(import.meta.dirname, '..');
const work = join(root, '.eval', `scale-${rows}`);
const csv = join(work, 'cells.csv');
const csvDone = `${csv}.complete`;
const dbDir = join(work, 'db');
mkdirSync(work, { recursive: true });

const mb = (b: number) => `${(b / 1e6).toFixed(0)} MB`;
const log = (s: string) => process.stderr.write(`[scale] ${s}\n`);
const median = (v: number[]) => {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

// About 83 bytes per CSV row, 23 per cell in the database, and sorted runs of 32-byte
// records spilled during import: refuse early rather than fill a shared disk.
const fs = statfsSync(work);
const free = fs.bavail * fs.bsize;
const need = (existsSync(csvDone) ? 0 : rows * 83) + rows * (24 + 2 * 32) + 200e6;
log(`free disk ${mb(free)}, this run needs about ${mb(need)}`);
if (free < need)
  throw new Error(`not enough free disk in ${work}: ${mb(free)} free, about ${mb(need)} needed`);

// 1. The export.
let generateS = Number.NaN;
let simSummary = '';
if (existsSync(csvDone)) {
  log(`reusing ${csv} (--keep of an earlier run)`);
  simSummary = readFileSync(csvDone, 'utf8').trim();
} else {
  rmSync(csv, { force: true });
  // Build first, so that the timing below is of generation only.
  execFileSync('cargo', ['build', '-q', '--release', '-p', 'whereabouts-sim'], {
    cwd: root,
    stdio: 'inherit',
  });
  const t = performance.now();
  const sim = spawnSync(
    'cargo',
    [
      'run',
      '-q',
      '--release',
      '-p',
      'whereabouts-sim',
      '--',
      'scale',
      '--rows',
      String(rows),
      '--out',
      csv,
      '--seed',
      values.seed as string,
    ],
    { cwd: root, stdio: ['ignore', 'inherit', 'pipe'], encoding: 'utf8' },
  );
  generateS = (performance.now() - t) / 1000;
  process.stderr.write(sim.stderr);
  if (sim.status !== 0) throw new Error(`the simulator failed (exit ${sim.status})`);
  simSummary = sim.stderr.split('\n').find((l) => l.startsWith('wrote ')) ?? '';
  writeFileSync(csvDone, `${simSummary}\n`);
}
const csvBytes = statSync(csv).size;
const uniqueKeys = Number(/(\d+) unique keys/.exec(simSummary)?.[1] ?? Number.NaN);
log(
  `export: ${rows.toLocaleString('en')} rows, ${mb(csvBytes)}, ${uniqueKeys.toLocaleString('en')} unique keys`,
);

// 2. The import, through the CLI as a user runs it, under /usr/bin/time -v when present (it
// sees the whole process, Node included). Progress lines are timestamped as they arrive to
// see where the time goes; the CLI logs one every 5 s when stderr is not a terminal.
interface ImportResult {
  wallS: number;
  coreS: number;
  rowsPerS: number;
  cells: number;
  duplicates: number;
  shards: number;
  peakRssCore?: number;
  peakRssTime?: number;
  phases: Map<string, { first: number; last: number }>;
}

async function runImport(): Promise<ImportResult> {
  rmSync(dbDir, { recursive: true, force: true });
  const cli = [join(root, 'bin', 'whereabouts.js'), 'import', '--replace', '--db', dbDir, csv];
  const haveTime = existsSync('/usr/bin/time');
  const [cmd, args] = haveTime ? ['/usr/bin/time', ['-v', 'node', ...cli]] : ['node', cli];
  log(`$ ${cmd} ${args.join(' ')}`);
  const t0 = performance.now();
  const child = spawn(cmd, args, { cwd: root, stdio: ['ignore', 'inherit', 'pipe'] });
  const phases = new Map<string, { first: number; last: number }>();
  const lines: string[] = [];
  const rl = createInterface({ input: child.stderr });
  rl.on('line', (line) => {
    const at = (performance.now() - t0) / 1000;
    lines.push(line);
    const m = / (reading|sorting|merging|writing) [\d.]+% /.exec(line);
    if (m) {
      const p = phases.get(m[1] as string);
      if (p) p.last = at;
      else phases.set(m[1] as string, { first: at, last: at });
    }
    if (!line.startsWith('\t')) process.stderr.write(`  ${at.toFixed(0).padStart(4)} s | ${line}\n`);
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const wallS = (performance.now() - t0) / 1000;
  if (code !== 0) throw new Error(`import failed (exit ${code})`);
  const all = lines.join('\n');
  const summary =
    /database .*: ([\d,]+) cells, .* ([\d,]+) duplicates merged, (\d+) shard\(s\), .* ([\d.]+) s \(([\d,]+) rows\/s\)(?:, peak RSS (\d+) MB)?/.exec(
      all,
    );
  if (!summary) throw new Error('could not find the import summary line on stderr');
  const num = (s: string | undefined) => Number((s ?? 'NaN').replaceAll(',', ''));
  const maxRssKb = /Maximum resident set size \(kbytes\): (\d+)/.exec(all);
  return {
    wallS,
    coreS: num(summary[4]),
    rowsPerS: num(summary[5]),
    cells: num(summary[1]),
    duplicates: num(summary[2]),
    shards: num(summary[3]),
    peakRssCore: summary[6] === undefined ? undefined : num(summary[6]) * 1e6,
    peakRssTime: maxRssKb ? Number(maxRssKb[1]) * 1024 : undefined,
    phases,
  };
}

const imp = await runImport();
log(
  `import: ${imp.cells.toLocaleString('en')} cells in ${imp.coreS.toFixed(1)} s, ${imp.rowsPerS.toLocaleString('en')} rows/s`,
);

// 3. Size on disk, from the manifest and the files themselves.
const manifest = JSON.parse(readFileSync(join(dbDir, 'manifest.json'), 'utf8')) as {
  shards: { file: string; cells: number; wifi: number; bytes: number }[];
};
const shardBytes = manifest.shards.reduce((s, e) => s + statSync(join(dbDir, e.file)).size, 0);
const cells = manifest.shards.reduce((s, e) => s + e.cells, 0);
const stats = await (async () => {
  const e = await Engine.open({ db: dbDir });
  const s = e.stats();
  e.close();
  return s;
})();
// Record sizes of crates/whereabouts-core/src/store/record.rs (a station 23 bytes, an area
// 24, a network 16); what remains is the fences (8 bytes per 64 stations), the masts and
// their block index (8 bytes per pooled site, 4 per 64 cells), and the FlatBuffers headers
// and padding.
const STATION_RECORD_BYTES = 23;
const cellsVector = cells * STATION_RECORD_BYTES;
const areasBytes = stats.areas * 24;
const networksBytes = stats.networks * 16;
const rest = shardBytes - cellsVector - stats.wifi * STATION_RECORD_BYTES - areasBytes - networksBytes;

// 4. Sample requests from the export (random byte offsets; the next whole row) so that the
// lookups hit, then drop the CSV unless it is kept.
function sampleRequests(n: number, seed: number): string[] {
  const fd = openSync(csv, 'r');
  const buf = Buffer.alloc(1024);
  let s = BigInt(seed) * 0x9e3779b97f4a7c15n + 1n;
  const rand = () => {
    s = (s * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
    return Number(s >> 11n) / 2 ** 53;
  };
  const out: string[] = [];
  let tries = 0;
  while (out.length < n && tries < n * 3) {
    tries++;
    const pos = Math.floor(rand() * Math.max(1, csvBytes - buf.length));
    const got = readSync(fd, buf, 0, buf.length, pos);
    const text = buf.toString('latin1', 0, got);
    const a = text.indexOf('\n');
    const b = text.indexOf('\n', a + 1);
    if (a < 0 || b < 0) continue;
    const f = text.slice(a + 1, b).split(',');
    if (f.length !== 14) continue; // the export's deliberately bad rows
    const [radio, mcc, mnc, lac, cid] = [f[0], f[1], f[2], f[3], f[4]].map((x) => (x ?? '').trim());
    if (!/^(GSM|UMTS|LTE|NR|CDMA)$/i.test(radio as string)) continue;
    if (![mcc, mnc, lac, cid].every((x) => /^\d+$/.test(x as string))) continue;
    out.push(
      JSON.stringify({
        radio: (radio as string).toLowerCase(),
        mcc: Number(mcc),
        mnc: Number(mnc),
        cells: [{ lac: Number(lac), cid: Number(cid) }],
      }),
    );
  }
  closeSync(fd);
  return out;
}
const lookups = Number(values.lookups);
const requestsFile = join(work, 'requests.jsonl');
writeFileSync(requestsFile, `${sampleRequests(lookups, Number(values.seed)).join('\n')}\n`);
if (!values.keep) {
  rmSync(csv, { force: true });
  rmSync(csvDone, { force: true });
  log(`deleted ${csv} (--keep keeps it)`);
}

// 5. Opens and lookups, each in a fresh process running this file.
function child(args: string[]): Record<string, unknown> {
  const out = execFileSync(process.execPath, [...process.execArgv, import.meta.filename, ...args], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return JSON.parse(out.trim().split('\n').pop() as string) as Record<string, unknown>;
}
const opens: { first: number; second: number }[] = [];
for (let i = 0; i < Number(values.opens); i++) {
  opens.push(child(['--child', 'open', '--db', dbDir]) as { first: number; second: number });
}
const openMs = median(opens.map((o) => o.first));
const reopenMs = median(opens.map((o) => o.second));
const dbOnly: { first: number; second: number }[] = [];
for (let i = 0; i < Number(values.opens); i++) {
  dbOnly.push(child(['--child', 'open', '--db-only', '--db', dbDir]) as { first: number; second: number });
}
const dbOnlyMs = median(dbOnly.map((o) => o.first));
log(`Engine.open without land and IP data: ${dbOnly.map((o) => o.first.toFixed(1)).join(', ')} ms`);
log(
  `Engine.open: ${opens.map((o) => o.first.toFixed(1)).join(', ')} ms (second open in process: ${opens.map((o) => o.second.toFixed(1)).join(', ')} ms)`,
);

type Rss = { total: number; anon?: number; file?: number };
const lk = child(['--child', 'lookup', '--db', dbDir, '--requests', requestsFile]) as {
  before: Rss;
  afterOpen: Rss;
  afterParse: Rss;
  after: Rss;
  seconds: number;
  diskRead: number;
  n: number;
  hits: number;
  fallbacks: number;
  errors: number;
};

// 6. Lookups on a cold page cache: the shards dropped from it first.
let cold: typeof lk | undefined;
const coldN = Number(values['cold-lookups']);
if (coldN > 0) {
  const coldFile = join(work, 'requests-cold.jsonl');
  writeFileSync(coldFile, `${readFileSync(requestsFile, 'utf8').split('\n').slice(0, coldN).join('\n')}\n`);
  const dropped = manifest.shards.every(
    (e) =>
      spawnSync('dd', [`if=${join(dbDir, e.file)}`, 'iflag=nocache', 'count=0'], { stdio: 'ignore' })
        .status === 0,
  );
  if (dropped) cold = child(['--child', 'lookup', '--db', dbDir, '--requests', coldFile]) as typeof lk;
  else log('could not drop the shards from the page cache (GNU dd needed): no cold lookups');
  rmSync(coldFile, { force: true });
}

// ---------------------------------------------------------------------------------------------
// The table.

const fmt = (n: number, d = 0) =>
  Number.isFinite(n) ? n.toLocaleString('en', { maximumFractionDigits: d, minimumFractionDigits: d }) : 'n/a';
const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
const rssText = (r: Rss) =>
  `${mb(r.total)}${r.anon === undefined ? '' : ` (anon ${mb(r.anon)}, file ${mb(r.file ?? 0)})`}`;
const phaseText = [...imp.phases]
  .map(([name, p]) => `${name} ${p.first.toFixed(0)}-${p.last.toFixed(0)} s`)
  .join(', ');
const table: { metric: string; value: string; target: string; verdict: string }[] = [
  { metric: 'rows in export', value: fmt(rows), target: '', verdict: '' },
  {
    metric: 'export generation',
    value: Number.isFinite(generateS) ? `${fmt(generateS, 1)} s, ${mb(csvBytes)}` : `reused, ${mb(csvBytes)}`,
    target: '',
    verdict: '',
  },
  {
    metric: 'import rows/s (core timer)',
    value: fmt(imp.rowsPerS),
    target: `>= ${fmt(IMPORT_TARGET_ROWS_S)}`,
    verdict: verdict(imp.rowsPerS >= IMPORT_TARGET_ROWS_S),
  },
  {
    metric: 'import time core / process wall',
    value: `${fmt(imp.coreS, 1)} s / ${fmt(imp.wallS, 1)} s`,
    target: '',
    verdict: '',
  },
  { metric: 'import phases (first-last log line, 5 s steps)', value: phaseText, target: '', verdict: '' },
  {
    metric: 'import peak RSS core / whole process',
    value: `${imp.peakRssCore === undefined ? 'n/a' : mb(imp.peakRssCore)} / ${imp.peakRssTime === undefined ? 'n/a' : mb(imp.peakRssTime)}`,
    target: '',
    verdict: '',
  },
  {
    metric: 'cells stored (unique keys in export)',
    value: `${fmt(cells)} (${fmt(uniqueKeys)}), ${fmt(imp.duplicates)} duplicates merged`,
    target: '',
    verdict: Number.isFinite(uniqueKeys) && uniqueKeys !== cells ? 'MISMATCH' : '',
  },
  {
    metric: 'bytes/cell, cells vector',
    value: fmt(cellsVector / cells, 2),
    target: `<= ${BYTES_PER_CELL_TARGET}`,
    verdict: verdict(cellsVector / cells <= BYTES_PER_CELL_TARGET),
  },
  {
    metric: 'bytes/cell, whole (shards on disk)',
    value: `${fmt(shardBytes / cells, 2)} (${mb(shardBytes)} in ${manifest.shards.length} shards)`,
    target: `<= ${BYTES_PER_CELL_TARGET}`,
    verdict: verdict(shardBytes / cells <= BYTES_PER_CELL_TARGET),
  },
  {
    metric: 'index bytes/cell: areas, networks, fences + masts + headers',
    value: `${fmt(areasBytes / cells, 2)} (${fmt(stats.areas)}), ${fmt(networksBytes / cells, 3)} (${fmt(stats.networks)}), ${fmt(rest / cells, 2)}`,
    target: '',
    verdict: '',
  },
  {
    metric: `Engine.open, first in a fresh process (median of ${opens.length})`,
    value: `${fmt(openMs, 1)} ms`,
    target: `< ${OPEN_TARGET_MS} ms`,
    verdict: verdict(openMs < OPEN_TARGET_MS),
  },
  {
    metric: 'Engine.open, second in the same process (median)',
    value: `${fmt(reopenMs, 1)} ms`,
    target: '',
    verdict: '',
  },
  {
    metric: 'Engine.open without land and IP data, fresh process (median)',
    value: `${fmt(dbOnlyMs, 1)} ms`,
    target: '',
    verdict: '',
  },
  {
    metric: `lookups/s, processBatch of ${BATCH}, 1 cell each, with the address (the spec default)`,
    value: fmt(lk.n / lk.seconds),
    target: '',
    verdict: '',
  },
  {
    metric: 'lookups answered by the cell / fallback / error',
    value: `${fmt(lk.hits)} / ${fmt(lk.fallbacks)} / ${fmt(lk.errors)} of ${fmt(lk.n)}`,
    target: '',
    verdict: lk.hits < lk.n * 0.99 ? 'LOW' : '',
  },
  { metric: 'RSS before open', value: rssText(lk.before), target: '', verdict: '' },
  { metric: 'RSS after open', value: rssText(lk.afterOpen), target: '', verdict: '' },
  { metric: 'RSS after reading the requests', value: rssText(lk.afterParse), target: '', verdict: '' },
  { metric: `RSS after ${fmt(lk.n)} lookups`, value: rssText(lk.after), target: '', verdict: '' },
];
if (cold) {
  table.push(
    {
      metric: `cold page cache: ${fmt(cold.n)} lookups, read from disk`,
      value: `${mb(cold.diskRead)} (${fmt(cold.diskRead / cold.n / 1024, 1)} KiB a lookup), ${fmt(cold.n / cold.seconds)} lookups/s`,
      target: '',
      verdict: '',
    },
    {
      metric: `cold page cache: RSS after ${fmt(cold.n)} lookups`,
      value: rssText(cold.after),
      target: '',
      verdict: '',
    },
  );
}
console.log(
  `\nScale test, ${fmt(rows)} rows (${process.version}, ${new Date().toISOString()}); database ${dbDir}`,
);
console.table(table);
