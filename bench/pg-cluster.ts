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
