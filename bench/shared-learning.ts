/**
 * Learning across servers (docs/deploy.md, "Learning across servers"): what a round of the
 * elected compactor costs beside the same learning on one server, on a synthetic database.
 *
 *   npx tsx bench/shared-learning.ts [--cells 500000] [--submissions 2000] [--rounds 4] [--url postgres://...]
 *
 * Per round, in one process: **one server** learns the submissions into its own overlay and
 * compacts (`engine.learnSubmissions` + `engine.compact`, the single-server path); **shared**
 * stores the same submissions in PostgreSQL, runs the compactor's round (read, learn, compact,
 * publish) and a second directory installs the publication (a follower). The first shared
 * round also seeds the work directory from the server's database. Without --url (or
 * WHEREABOUTS_TEST_PG_URL) a throwaway cluster is started (fsync off: an upper bound).
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Engine } from '../src/engine.js';
import {
  foldSubmissions,
  GenerationStore,
  installPublication,
  updateShared,
  workDirOf,
} from '../src/generations/index.js';
import { toSubmission } from '../src/learning/submissions.js';
import { type LocateRequest, parseRequest } from '../src/locating/request/index.js';
import { type Observation, PgObservationStore } from '../src/observations/index.js';

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    cells: { type: 'string', default: '500000' },
    submissions: { type: 'string', default: '2000' },
    rounds: { type: 'string', default: '4' },
  },
});
const cells = Number(values.cells);
const perRound = Number(values.submissions);
const rounds = Number(values.rounds);
const root = join(import.meta.dirname, '..');
const script = join(root, 'scripts', 'pg-test-cluster.sh');

/** A deterministic pseudo-random source. */
let seed = 42;
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
};

const work = mkdtempSync(join(tmpdir(), 'wb-shared-bench-'));
const csv = join(work, 'cells.csv');
const lines = ['radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal'];
for (let i = 0; i < cells; i++) {
  const lat = 47.5 + random() * 7;
  const lon = 6 + random() * 9;
  lines.push(
    `LTE,262,1,${1 + (i % 60000)},${1000 + i},,${lon.toFixed(5)},${lat.toFixed(5)},1500,10,1,1600000000,1700000000,0`,
  );
}
writeFileSync(csv, `${lines.join('\n')}\n`);
const base = join(work, 'base');
const imported = spawnSync(
  process.execPath,
  [join(root, 'bin', 'whereabouts.js'), 'import', '--quiet', '--db', base, csv],
  {
    encoding: 'utf8',
  },
);
if (imported.status !== 0) throw new Error(`import failed: ${imported.stderr}`);
rmSync(csv);

/** One round's submissions: half refine known cells, half place new ones, from 50 tokens. */
function roundRequests(round: number): { observation: Observation; request: LocateRequest }[] {
  const out = [];
  for (let i = 0; i < perRound; i++) {
    const known = i % 2 === 0;
    const n = known ? Math.floor(random() * cells) : cells + round * perRound + i;
    const raw = {
      token: `bench-token-${i % 50}`,
      cells: [{ radio: 'lte', mcc: 262, mnc: 1, lac: 1 + (n % 60000), cid: 1000 + n }],
      gps: [
        { lat: 47.5 + random() * 7, lon: 6 + random() * 9, accuracy: 10, timestamp: Date.now() - 3_600_000 },
      ],
    };
    const parsed = parseRequest(raw, { requireToken: true });
    if (!parsed.ok) throw new Error(parsed.message);
    out.push({
      request: parsed.request,
      observation: {
        receivedAt: Date.now(),
        token: raw.token,
        gps: parsed.request.gps,
        cells: parsed.request.cells,
        wifi: parsed.request.wifi,
      },
    });
  }
  return out;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const ms = (t: number) => `${t.toFixed(0)} ms`;

let url = values.url ?? process.env.WHEREABOUTS_TEST_PG_URL;
let clusterDir: string | undefined;
if (!url) {
  clusterDir = mkdtempSync(join(tmpdir(), 'wb-pg-bench-'));
  const r = spawnSync('bash', [script, 'start', clusterDir], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`cannot start a PostgreSQL cluster: ${r.stderr}`);
  url = r.stdout.trim().split('\n').pop() as string;
}
const name = `wbbench_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: url });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const dbUrl = new URL(url);
dbUrl.pathname = `/${name}`;
try {
  const local = join(work, 'local');
  const server = join(work, 'server');
  const follower = join(work, 'follower');
  for (const d of [local, server, follower]) cpSync(base, d, { recursive: true });
  const engine = await Engine.open({
    db: local,
    land: false,
    ipDatabases: false,
    timezones: false,
    places: false,
    compaction: false,
  });
  const observations = await PgObservationStore.open(dbUrl.toString());
  const generations = await GenerationStore.open(dbUrl.toString());
  const localMs: number[] = [];
  const roundMs: number[] = [];
  const installMs: number[] = [];
  let bytes = 0;
  for (let r = 0; r < rounds; r++) {
    const batch = roundRequests(r);
    let t = performance.now();
    await engine.learnSubmissions(
      batch.map((b) =>
        toSubmission(b.request, Date.now(), {
          token: b.observation.token,
        }),
      ),
    );
    await engine.compact();
    localMs.push(performance.now() - t);

    await observations.addAll(batch.map((b) => b.observation));
    t = performance.now();
    const outcome = await updateShared(
      { store: generations, seed: server, work: workDirOf(server), publisher: 'bench' },
      foldSubmissions(generations),
    );
    roundMs.push(performance.now() - t);
    const p = outcome.published;
    if (!p || outcome.observations !== perRound)
      throw new Error(`round ${r} folded ${outcome.observations} of ${perRound}`);
    bytes = p.files.reduce((n, f) => n + f.bytes, 0);
    t = performance.now();
    await installPublication(generations, p, follower);
    installMs.push(performance.now() - t);
    console.log(
      `round ${r + 1}: one server ${ms(localMs[r] as number)}; shared round ${ms(roundMs[r] as number)} (${((roundMs[r] as number) / (localMs[r] as number)).toFixed(1)}x), follower install ${ms(installMs[r] as number)}; published ${(bytes / 1e6).toFixed(1)} MB`,
    );
  }
  engine.close();
  await observations.close();
  await generations.close();
  const steady = (xs: number[]) => xs.slice(1);
  console.log(
    `${cells.toLocaleString('en')} cells, ${perRound.toLocaleString('en')} submissions a round; rounds 2..${rounds} (round 1 seeds):\n` +
      `  one server (learn + compact): median ${ms(median(steady(localMs)))}, worst ${ms(Math.max(...steady(localMs)))}\n` +
      `  shared round (read + learn + compact + publish): median ${ms(median(steady(roundMs)))}, worst ${ms(Math.max(...steady(roundMs)))}; ratio of medians ${(median(steady(roundMs)) / median(steady(localMs))).toFixed(1)}x\n` +
      `  follower install (download + switch): median ${ms(median(steady(installMs)))}, worst ${ms(Math.max(...steady(installMs)))}; ${(bytes / 1e6).toFixed(1)} MB a publication`,
  );
} finally {
  await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
  await admin.end();
  rmSync(work, { recursive: true, force: true });
  if (clusterDir) spawnSync('bash', [script, 'stop', clusterDir]);
}
