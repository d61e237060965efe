/**
 * PostgreSQL for the benches: a throwaway cluster (scripts/pg-test-cluster.sh) or a server of
 * the caller's, and a fresh database on it per run.
 */
import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

const script = join(import.meta.dirname, '..', 'scripts', 'pg-test-cluster.sh');

/** A PostgreSQL server for a bench. */
export interface BenchPg {
  /** The server's URL (its `postgres` database). */
  url: string;
  /** Whether commits are flushed to disk (`fsync`); undefined for a server of the caller's. */
  fsync?: 'on' | 'off';
  /** The postmaster's pid when the cluster is this bench's own (its CPU is measured), else undefined. */
  pid(): number | undefined;
  /** `pg_ctl restart` (-m fast or immediate), without blocking the event loop; only for a cluster of this bench's own. */
  restart(mode: 'fast' | 'immediate'): Promise<void>;
  /** Stops the cluster and removes it (nothing for a server of the caller's). */
  stop(): void;
}

function run(command: string, dir: string, env: NodeJS.ProcessEnv = {}): string {
  const r = spawnSync('bash', [script, command, dir], { encoding: 'utf8', env: { ...process.env, ...env } });
  if (r.status !== 0) throw new Error(`pg-test-cluster.sh ${command} failed: ${r.stderr}`);
  return r.stdout.trim().split('\n').pop() ?? '';
}

/**
 * `url` when given (a server of the caller's), else a throwaway cluster started with `fsync`:
 * `on` for figures about durable commits, `off` for an upper bound.
 */
export function benchPostgres(url: string | undefined, fsync: 'on' | 'off'): BenchPg {
  if (url)
    return {
      url,
      pid: () => undefined,
      restart: () =>
        Promise.reject(
          new Error('a PostgreSQL restart needs the bench its own cluster (leave out --pg-url)'),
        ),
      stop: () => {},
    };
  const dir = mkdtempSync(join(tmpdir(), 'wb-pg-bench-'));
  const started = run('start', dir, { FSYNC: fsync });
  return {
    url: started,
    fsync,
    pid: () => Number(readFileSync(join(dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]),
    restart: (mode) =>
      new Promise((resolve, reject) => {
        execFile(
          'bash',
          [script, 'restart', dir],
          { env: { ...process.env, MODE: mode } },
          (err, _out, stderr) =>
            err ? reject(new Error(`pg-test-cluster.sh restart failed: ${stderr}`)) : resolve(),
        );
      }),
    stop: () => {
      run('stop', dir);
    },
  };
}

/** The URL of a new, empty database on `url`'s server. */
export async function freshPgDatabase(url: string): Promise<string> {
  const name = `wbbench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const db = new URL(url);
  db.pathname = `/${name}`;
  return db.toString();
}

/**
 * Round-trip and commit times of `url` as seen from this process: the median and the 99th
 * percentile of 200 `SELECT 1` and of 100 one-row insert transactions (BEGIN, INSERT, COMMIT:
 * the commit waits for the WAL flush when fsync is on). What a batch of charges is made of.
 */
export async function pgLatency(
  url: string,
): Promise<{ roundTripMs: { p50: number; p99: number }; commitMs: { p50: number; p99: number } }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const pct = (xs: number[], q: number) => {
    const sorted = [...xs].sort((a, b) => a - b);
    return Number((sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number).toFixed(2));
  };
  try {
    const rt: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t = performance.now();
      await client.query('SELECT 1');
      rt.push(performance.now() - t);
    }
    // A regular table: a temporary one skips the WAL, and the point is the commit's flush.
    await client.query('CREATE TABLE IF NOT EXISTS wb_latency_commit (n int)');
    const commit: number[] = [];
    for (let i = 0; i < 100; i++) {
      await client.query('BEGIN');
      await client.query('INSERT INTO wb_latency_commit VALUES ($1)', [i]);
      const t = performance.now();
      await client.query('COMMIT');
      commit.push(performance.now() - t);
    }
    await client.query('DROP TABLE wb_latency_commit');
    return {
      roundTripMs: { p50: pct(rt, 0.5), p99: pct(rt, 0.99) },
      commitMs: { p50: pct(commit, 0.5), p99: pct(commit, 0.99) },
    };
  } finally {
    await client.end();
  }
}
