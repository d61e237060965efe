/**
 * Load bench of the HTTP service: `whereabouts serve` (built CLI) on 127.0.0.1 with metering
 * on, autocannon beside it on the same machine, a realistic request mix, a bounded time.
 *
 *   npx tsx bench/load.ts [--db DIR] [--workers N] [--connections N] [--duration S]
 *                         [--pipelining N] [--sync full|normal] [--variant process|nocharge|health]
 *                         [--cpu-prof] [--tokens N] [--pg-servers 1,2,3 [--fsync on|off] [--pg-url URL]]
 *
 * The station database defaults to the embedded demo database (the simulated world of
 * .eval/sim-1-1000), with requests from that world's simulator scenarios, every scenario in
 * turn (data/demo-requests.jsonl when .eval is absent). Tokens live in a fresh temporary store (--store), so the station
 * directory is not written. Reports requests/s, p50/p99 latency, HTTP errors, and how many
 * answers were located (= charged, read back from the token store). `--cpu-prof` profiles the
 * workers (node --cpu-prof) and prints where their time went.
 *
 * `--pg-servers 1,2,3` runs, after the SQLite server, that many servers (each with `--workers`)
 * on one PostgreSQL database, autocannon's connections spread over them, and prints each case's
 * ratios to the SQLite server of the same run and the CPU per request of the servers, of
 * PostgreSQL (its postmaster and backends, from /proc) and of this load generator. PostgreSQL is
 * a throwaway cluster started with `--fsync` (default on: commits reach the disk, as in
 * production), or the server of `--pg-url` (its CPU is then not measured). `--tokens N` spreads
 * the requests over N tokens (default 1: every charge on one token's row, the hardest case for
 * the PostgreSQL store, whose batches of one token apply one after another).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { openTokenStorage, TokenStore } from '../src/tokens/index.js';
import { benchPostgres, freshPgDatabase, pgLatency } from './pg-cluster.js';

export const root = join(import.meta.dirname, '..');

/** A running `whereabouts serve`. */
export interface Served {
  child: ChildProcess;
  port: number;
  url: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts the built CLI's `serve` in its own process group (so a bench can kill the whole
 * group) and resolves once the primary reports every worker listening.
 */
export function startServe(
  args: string[],
  options: { nodeArgs?: string[]; cwd?: string; timeoutMs?: number; onLine?: (line: string) => void } = {},
): Promise<Served> {
  const child = spawn(
    process.execPath,
    [...(options.nodeArgs ?? []), join(root, 'bin', 'whereabouts.js'), 'serve', '--port', '0', ...args],
    { stdio: ['ignore', 'pipe', 'inherit'], detached: true, cwd: options.cwd ?? root },
  );
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error('serve did not start in time')),
      options.timeoutMs ?? 30_000,
    );
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    let announced = false;
    lines.on('line', (line) => {
      options.onLine?.(line);
      if (announced) return;
      try {
        const entry = JSON.parse(line) as { msg?: string; port?: number };
        if (entry.msg === 'listening' && typeof entry.port === 'number') {
          announced = true;
          clearTimeout(timer);
          resolve({ child, port: entry.port, url: `http://127.0.0.1:${entry.port}`, exited });
        }
      } catch {
        // not a log line
      }
    });
    // Keep reading so a chatty server never blocks on a full pipe.
    child.stdout?.resume();
    child.on('exit', (code) => {
      if (!announced) reject(new Error(`serve exited with ${code} before listening`));
    });
  });
}

/**
 * Request bodies (without token) for the bench and the station database they fit: the
 * simulator scenarios of .eval/sim-1-1000 against the embedded demo database (built from the
 * same simulated world), or data/demo-requests.jsonl when .eval is absent. `db` overrides
 * the database.
 */
export function requestMix(db: string | undefined, limit: number): { db: string; bodies: object[] } {
  const scenarios = join(root, '.eval', 'sim-1-1000', 'world', 'scenarios');
  const lists: object[][] = [];
  if (existsSync(scenarios)) {
    for (const f of readdirSync(scenarios)
      .filter((n) => n.endsWith('.jsonl'))
      .sort()) {
      lists.push(
        readFileSync(join(scenarios, f), 'utf8')
          .split('\n')
          .filter((l) => l.trim() !== '')
          .map((l) => (JSON.parse(l) as { request: object }).request),
      );
    }
  } else {
    // The demo's requests include bodies that are not JSON on purpose (an unquoted leading zero):
    // the bench sends objects, so those are left out.
    const parsed: object[] = [];
    for (const l of readFileSync(join(root, 'data', 'demo-requests.jsonl'), 'utf8').split('\n')) {
      if (l.trim() === '') continue;
      try {
        parsed.push(JSON.parse(l) as object);
      } catch {
        // not JSON
      }
    }
    lists.push(parsed);
  }
  // Interleave the scenarios so that every stretch of the run sees every kind of request.
  const bodies: object[] = [];
  for (let i = 0; bodies.length < limit; i++) {
    let any = false;
    for (const list of lists) {
      const item = list[i];
      if (item !== undefined && bodies.length < limit) {
        bodies.push(item);
        any = true;
      }
    }
    if (!any) break;
  }
  return { db: db ?? join(root, 'data', 'demo-db'), bodies };
}

/**
 * `whereabouts serve` on the embedded demo database with a fresh token store holding one
 * token (its key returned): the map benches' server. Remove `store` when done.
 */
export async function serveDemoWithKey(
  label: string,
  workers: string,
): Promise<{ served: Served; key: string; store: string }> {
  const store = mkdtempSync(join(tmpdir(), `wb-${label}-`));
  const tokens = TokenStore.open(store);
  const key = tokens.create({ label }).token;
  tokens.close();
  const args = [
    '--db',
    join(root, 'data', 'demo-db'),
    '--store',
    store,
    '--workers',
    workers,
    '--log-level',
    'warn',
  ];
  return { served: await startServe(args), key, store };
}

/** The subset of autocannon's API used here (it ships no types). */
export interface AutocannonResult {
  requests: { average: number; total: number; sent: number };
  latency: { p50: number; p99: number; average: number; max: number };
  throughput: { average: number };
  errors: number;
  timeouts: number;
  non2xx: number;
  '2xx': number;
  duration: number;
}
type Autocannon = (options: Record<string, unknown>) => Promise<AutocannonResult> & { stop?: () => void };
export const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

/** CPU seconds (user + system) used so far by `pid` and its child processes (Linux /proc). */
export function treeCpuSeconds(pid: number): number {
  const ticks = 100; // USER_HZ on Linux
  let total = 0;
  const seen = new Set<number>();
  const visit = (p: number) => {
    if (seen.has(p)) return;
    seen.add(p);
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += (Number(fields[11]) + Number(fields[12])) / ticks;
    } catch {
      return;
    }
    try {
      const children = readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim();
      for (const c of children.split(/\s+/).filter(Boolean)) visit(Number(c));
    } catch {
      // no children list
    }
  };
  visit(pid);
  return total;
}

/** Summarises a V8 .cpuprofile: self time per function, the top `n`. */
export function profileSummary(file: string, n = 20): string {
  interface Node {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    hitCount?: number;
  }
  const profile = JSON.parse(readFileSync(file, 'utf8')) as {
    nodes: Node[];
    samples: number[];
    timeDeltas: number[];
  };
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<string, number>();
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const node = byId.get(profile.samples[i] as number);
    const dt = profile.timeDeltas[i] ?? 0;
    if (!node) continue;
    const url = node.callFrame.url.replace(/^.*node_modules\//, '').replace(`file://${root}/`, '');
    const key = `${node.callFrame.functionName || '(anonymous)'} ${url}:${node.callFrame.lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + dt);
    total += dt;
  }
  const rows = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, n);
  return rows.map(([k, us]) => `${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`).join('\n');
}

/** One configuration of a run: SQLite (one server) or `servers` servers on one PostgreSQL database. */
interface Case {
  label: string;
  /** A directory (SQLite) or a PostgreSQL database URL. */
  store: string;
  servers: number;
}

/** What one case measured. */
interface CaseResult {
  label: string;
  requestsPerSecond: number;
  total: number;
  latencyMs: { p50: number; p99: number; max: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  located: number;
  /** CPU seconds per second of wall time: the servers (every process), PostgreSQL, this load generator. */
  coresBusy: { servers: number; postgres?: number; client: number };
  /** CPU microseconds per request, the same three. */
  microsPerRequest: { servers: number; postgres?: number; client: number };
  serverExits: { code: number | null; signal: NodeJS.Signals | null }[];
}

interface RunOptions {
  workers: string;
  sync: string;
  groupMs: string;
  connections: number;
  pipelining: number;
  duration: number;
  variant: string;
  bodies: object[];
  db: string;
  nodeArgs: string[];
  /** The PostgreSQL postmaster's pid, when its CPU is to be measured. */
  pgPid?: number;
}

const BENCH_BALANCE = 1_000_000_000;

async function runCase(c: Case, tokens: string[], o: RunOptions): Promise<CaseResult> {
  const args = ['--db', o.db, '--store', c.store, '--workers', o.workers, '--log-level', 'warn'];
  args.push('--sync', o.sync, '--group-ms', o.groupMs);
  const servers: Served[] = [];
  for (let i = 0; i < c.servers; i++) servers.push(await startServe(args, { nodeArgs: o.nodeArgs }));
  // Variants that take parts away, to see where the time goes: `nocharge` sends geolocation: 0
  // (parsed and authorised, neither solved nor charged), `health` only GET /health.
  const requests =
    o.variant === 'health'
      ? [{ method: 'GET', path: '/health' }]
      : o.bodies.map((b, i) => ({
          method: 'POST',
          path: '/v2/process',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            ...b,
            token: tokens[i % tokens.length],
            ...(o.variant === 'nocharge' ? { geolocation: 0 } : {}),
          }),
        }));
  // One URL per server: autocannon spreads its connections over them in turn, as a proxy would.
  const url = servers.map((s) => s.url);
  // A short warm-up so the JIT and the page cache are not measured.
  await autocannon({ url, connections: 16 * c.servers, duration: 1, requests });
  const before = await balanceUsed(c.store, tokens);
  const serversCpu = () => servers.reduce((sum, s) => sum + treeCpuSeconds(s.child.pid as number), 0);
  const serverCpu0 = serversCpu();
  const pgCpu0 = o.pgPid === undefined ? 0 : treeCpuSeconds(o.pgPid);
  const clientCpu0 = process.cpuUsage();
  const wall0 = performance.now();
  const result = await autocannon({
    url,
    connections: o.connections,
    pipelining: o.pipelining,
    duration: o.duration,
    requests,
  });
  const wall = (performance.now() - wall0) / 1000;
  const serverCpu = serversCpu() - serverCpu0;
  const pgCpu = o.pgPid === undefined ? undefined : treeCpuSeconds(o.pgPid) - pgCpu0;
  const clientUsage = process.cpuUsage(clientCpu0);
  const clientCpu = (clientUsage.user + clientUsage.system) / 1e6;
  for (const s of servers) s.child.kill('SIGTERM');
  const serverExits = await Promise.all(servers.map((s) => s.exited));
  const located = (await balanceUsed(c.store, tokens)) - before;
  const total = Math.max(1, result.requests.total);
  // CPU time per request, measured rather than inferred from wall time: on a machine shared with
  // other work, requests/s says more about the neighbours than about the server.
  const per = (seconds: number) => Math.round((seconds * 1e6) / total);
  const busy = (seconds: number) => Number((seconds / wall).toFixed(2));
  return {
    label: c.label,
    requestsPerSecond: Math.round(result.requests.average),
    total: result.requests.total,
    latencyMs: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    located,
    coresBusy: {
      servers: busy(serverCpu),
      ...(pgCpu === undefined ? {} : { postgres: busy(pgCpu) }),
      client: busy(clientCpu),
    },
    microsPerRequest: {
      servers: per(serverCpu),
      ...(pgCpu === undefined ? {} : { postgres: per(pgCpu) }),
      client: per(clientCpu),
    },
    serverExits,
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      db: { type: 'string' },
      workers: { type: 'string', default: '2' },
      connections: { type: 'string', default: '64' },
      pipelining: { type: 'string', default: '1' },
      duration: { type: 'string', default: '10' },
      requests: { type: 'string', default: '4000' },
      sync: { type: 'string', default: 'full' },
      variant: { type: 'string', default: 'process' },
      'group-ms': { type: 'string', default: '0' },
      'cpu-prof': { type: 'boolean', default: false },
      'pg-servers': { type: 'string' },
      'pg-url': { type: 'string' },
      fsync: { type: 'string', default: 'on' },
      tokens: { type: 'string', default: '1' },
    },
  });
  const tokenCount = Number(values.tokens);
  if (!Number.isInteger(tokenCount) || tokenCount < 1 || tokenCount > 10_000)
    throw new Error('--tokens is 1..10000');
  const duration = Math.min(120, Math.max(1, Number(values.duration)));
  const mix = requestMix(values.db, Number(values.requests));
  const pgServers =
    values['pg-servers'] === undefined
      ? []
      : values['pg-servers'].split(',').map((n) => {
          const v = Number(n);
          if (!Number.isInteger(v) || v < 1 || v > 8) throw new Error(`--pg-servers: 1..8 each, not ${n}`);
          return v;
        });
  if (values.fsync !== 'on' && values.fsync !== 'off') throw new Error('--fsync is on or off');
  // Kept after the run (its path is printed): the profiles are the point of --cpu-prof.
  const profDir = values['cpu-prof'] ? mkdtempSync(join(tmpdir(), 'wb-prof-')) : undefined;
  const options: RunOptions = {
    workers: values.workers,
    sync: values.sync,
    groupMs: values['group-ms'],
    connections: Number(values.connections),
    pipelining: Number(values.pipelining),
    duration,
    variant: values.variant,
    bodies: mix.bodies,
    db: mix.db,
    nodeArgs: profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [],
  };
  const pg = pgServers.length > 0 ? benchPostgres(values['pg-url'], values.fsync) : undefined;
  const dir = mkdtempSync(join(tmpdir(), 'wb-load-'));
  const results: CaseResult[] = [];
  try {
    console.log(
      `serve: ${mix.db}, ${values.workers} workers per server, SQLite --sync ${values.sync}, variant ${values.variant}; ` +
        `${mix.bodies.length} distinct requests over ${tokenCount} token(s); autocannon: ${values.connections} connections in all, pipelining ${values.pipelining}, ${duration} s per case` +
        (pg
          ? `; PostgreSQL ${values['pg-url'] ? 'of --pg-url' : `throwaway cluster, fsync=${pg.fsync}`}`
          : ''),
    );
    const sqlite = await newTokens(dir, tokenCount);
    results.push(await runCase({ label: 'SQLite, 1 server', store: dir, servers: 1 }, sqlite, options));
    printCase(results.at(-1) as CaseResult);
    if (pg) {
      const database = await freshPgDatabase(pg.url);
      const tokens = await newTokens(database, tokenCount);
      // What a batch is made of: a charge batch is about six round trips and one commit.
      console.log(`\nPostgreSQL from this process, idle: ${JSON.stringify(await pgLatency(database))}`);
      const pgPid = pg.pid();
      // With tokens in PostgreSQL a server keeps its GPS submissions in its --db directory: a
      // copy, so that the bench writes nothing into the station database it was given.
      const db = copyOfDb(mix.db, dir);
      for (const n of pgServers) {
        const c = { label: `PostgreSQL, ${n} server${n > 1 ? 's' : ''}`, store: database, servers: n };
        results.push(await runCase(c, tokens, { ...options, db, ...(pgPid === undefined ? {} : { pgPid }) }));
        printCase(results.at(-1) as CaseResult);
      }
    }
  } finally {
    pg?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const base = results[0] as CaseResult;
  if (results.length > 1) {
    console.log('\nratios to the SQLite server (same run):');
    for (const r of results.slice(1))
      console.log(
        `  ${r.label}: throughput x${(r.requestsPerSecond / base.requestsPerSecond).toFixed(2)}, ` +
          `p50 x${(r.latencyMs.p50 / Math.max(1, base.latencyMs.p50)).toFixed(2)}, ` +
          `p99 x${(r.latencyMs.p99 / Math.max(1, base.latencyMs.p99)).toFixed(2)}; ` +
          `CPU per request: servers ${r.microsPerRequest.servers} us, postgres ${r.microsPerRequest.postgres ?? '?'} us, ` +
          `load generator ${r.microsPerRequest.client} us (SQLite: ${base.microsPerRequest.servers} + ${base.microsPerRequest.client} us)`,
      );
  }
  console.log(`target 20000 req/s: ${base.requestsPerSecond >= 20_000 ? 'met' : 'not met'} (${base.label})`);
  if (profDir) {
    for (const f of readdirSync(profDir).filter((n) => n.endsWith('.cpuprofile'))) {
      console.log(`\nprofile ${f} (self time):\n${profileSummary(join(profDir, f))}`);
    }
    console.log(`\nprofiles kept in ${profDir}`);
  }
}

function printCase(r: CaseResult): void {
  console.log(`\n${r.label}:`);
  console.log(
    JSON.stringify(
      {
        ...r,
        cores: availableParallelism(),
        loadAverage: loadavg().map((l) => Number(l.toFixed(2))),
        locatedShare: Number((r.located / Math.max(1, r.total)).toFixed(3)),
      },
      null,
      2,
    ),
  );
}

/** A copy of the station database `db` in `dir` (removed with it); its path. */
export function copyOfDb(db: string, dir: string): string {
  const copy = join(dir, 'db');
  cpSync(db, copy, { recursive: true });
  return copy;
}

/** `n` tokens with a balance that no run exhausts, in the store at `where` (a directory or a PostgreSQL URL). */
async function newTokens(where: string, n: number): Promise<string[]> {
  const store = await openTokenStorage(where);
  try {
    const made: string[] = [];
    for (let i = 0; i < n; i++)
      made.push((await store.create({ label: `load-${i}`, geolocationPerDay: BENCH_BALANCE })).token);
    return made;
  } finally {
    await store.close();
  }
}

/** Geolocation units used today by `tokens` together in the store at `where`. */
async function balanceUsed(where: string, tokens: string[]): Promise<number> {
  const store = await openTokenStorage(where);
  try {
    let used = 0;
    for (const t of tokens) used += BENCH_BALANCE - (await store.balance(t, 'geolocation'));
    return used;
  } finally {
    await store.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
