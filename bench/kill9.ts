/**
 * Fault bench: `kill -9` under load, then the token's charges compared with what the client saw.
 *
 *   npx tsx bench/kill9.ts [--workers N] [--concurrency N] [--rounds N] [--load-ms MS] [--sync full|normal]
 *   npx tsx bench/kill9.ts --pg-servers N [--pg-restart none|fast|immediate] [--no-kill] [--fsync on|off] [...]
 *
 * SQLite (the default): each round starts serve (own process group) on the same token store,
 * sends located requests from `--concurrency` loops for `--load-ms`, SIGKILLs the group, waits
 * for it to die; after the rounds the server is started once more and the charges are read
 * back through GET /v2/balance.
 *
 * PostgreSQL (`--pg-servers N`, N >= 1): N servers on one database (a throwaway cluster with
 * `--fsync`, default on), the loops spread over them. Each round, halfway through `--load-ms`,
 * the whole process group of one server (in turn) is SIGKILLed while the others keep serving
 * (unless `--no-kill`), and with `--pg-restart` the database is restarted under the load
 * (`pg_ctl restart -m fast|immediate`); the killed server starts again for the next round. The
 * charges are read from the database at the end.
 *
 * A request is a *success* when the client received `status: "ok"` (a charged answer), an
 * *answered error* when it got any other answer (503 while the database restarts: not charged),
 * and *unknown* when the connection failed (in flight at the kill: it may or may not have been
 * committed). The invariant: successes <= charged <= successes + unknown. Exit code 1 if it fails.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openTokenStorage, TokenStore } from '../src/tokens/index.js';
import { copyOfDb, requestMix, type Served, startServe } from './load.js';
import { benchPostgres, freshPgDatabase } from './pg-cluster.js';

const BALANCE = 1_000_000_000;

const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '64' },
    rounds: { type: 'string', default: '3' },
    'load-ms': { type: 'string', default: '3000' },
    sync: { type: 'string', default: 'full' },
    'pg-servers': { type: 'string' },
    'pg-restart': { type: 'string', default: 'none' },
    'no-kill': { type: 'boolean', default: false },
    fsync: { type: 'string', default: 'on' },
  },
});
const rounds = Math.min(20, Math.max(1, Number(values.rounds)));
const loadMs = Math.min(30_000, Math.max(200, Number(values['load-ms'])));
const concurrency = Math.min(512, Math.max(1, Number(values.concurrency)));
const pgServers = values['pg-servers'] === undefined ? 0 : Number(values['pg-servers']);
if (!Number.isInteger(pgServers) || pgServers < 0 || pgServers > 8) throw new Error('--pg-servers is 1..8');
const restartMode = values['pg-restart'];
if (restartMode !== 'none' && restartMode !== 'fast' && restartMode !== 'immediate')
  throw new Error('--pg-restart is none, fast or immediate');
if (pgServers === 0 && (restartMode !== 'none' || values['no-kill']))
  throw new Error('--pg-restart and --no-kill go with --pg-servers');
if (values.fsync !== 'on' && values.fsync !== 'off') throw new Error('--fsync is on or off');

const mix = requestMix(undefined, 2000);

interface Round {
  sent: number;
  successes: number;
  answeredErrors: number;
  /** Of the answered errors, those answered 503 (the token store unavailable). */
  unavailable: number;
  unknown: number;
}

const zero = (): Round => ({ sent: 0, successes: 0, answeredErrors: 0, unavailable: 0, unknown: 0 });

function add(to: Round, r: Round): void {
  for (const k of Object.keys(to) as (keyof Round)[]) to[k] += r[k];
}

/**
 * Loads `servers` from `concurrency` loops (loop i on server i mod n) until `stopAt` says so;
 * counts what came back. A loop whose connection fails stops: its server is dead.
 */
async function load(servers: Served[], bodies: string[], stopAt: () => boolean): Promise<Round> {
  const r = zero();
  let next = 0;
  const loop = async (served: Served) => {
    while (!stopAt()) {
      const body = bodies[next++ % bodies.length] as string;
      r.sent++;
      try {
        const res = await fetch(`${served.url}/v2/process`, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json' },
        });
        const json = (await res.json()) as { status?: string };
        if (json.status === 'ok') r.successes++;
        else r.answeredErrors++;
        if (res.status === 503) r.unavailable++;
      } catch {
        // The connection died with the server: this request's fate is unknown to the client.
        r.unknown++;
        return;
      }
    }
  };
  await Promise.all(
    Array.from({ length: concurrency }, (_, i) => loop(servers[i % servers.length] as Served)),
  );
  return r;
}

/** Prints the totals and the invariant; the exit code says whether it holds. */
function verdict(totals: Round, charged: number, extra: Record<string, unknown>): void {
  const ok = charged >= totals.successes && charged <= totals.successes + totals.unknown;
  console.log(
    JSON.stringify(
      {
        rounds,
        ...extra,
        sent: totals.sent,
        successes: totals.successes,
        answeredErrors: totals.answeredErrors,
        answered503: totals.unavailable,
        unknown: totals.unknown,
        charged,
        chargedMinusSuccesses: charged - totals.successes,
        invariant: `${totals.successes} <= ${charged} <= ${totals.successes + totals.unknown}: ${ok ? 'holds' : 'BROKEN'}`,
      },
      null,
      2,
    ),
  );
  process.exitCode = ok ? 0 : 1;
}

async function sqliteRounds(): Promise<void> {
  const store = mkdtempSync(join(tmpdir(), 'wb-kill9-'));
  const seed = TokenStore.open(store);
  const token = seed.create({ label: 'kill9', geolocationPerDay: BALANCE }).token;
  seed.close();
  const bodies = mix.bodies.map((b) => JSON.stringify({ ...b, token }));
  const serveArgs = ['--db', mix.db, '--store', store, '--workers', values.workers, '--log-level', 'warn'];
  serveArgs.push('--sync', values.sync);
  const totals = zero();
  for (let round = 1; round <= rounds; round++) {
    const served = await startServe(serveArgs);
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      // The whole group: primary and workers die at once, mid-request, mid-commit.
      process.kill(-(served.child.pid as number), 'SIGKILL');
    }, loadMs);
    const r = await load([served], bodies, () => killed);
    clearTimeout(timer);
    const exit = await served.exited;
    console.log(
      `round ${round}: sent ${r.sent}, ok ${r.successes}, answered errors ${r.answeredErrors} (503: ${r.unavailable}), ` +
        `unknown (in flight at the kill) ${r.unknown}; server ${exit.signal ?? exit.code}`,
    );
    add(totals, r);
  }
  // Restart and read the charges back through the service itself.
  const served = await startServe(serveArgs);
  const balance = (await (
    await fetch(`${served.url}/v2/balance?token=${encodeURIComponent(token)}`)
  ).json()) as {
    balance_geolocation: number;
  };
  served.child.kill('SIGTERM');
  await served.exited;
  verdict(totals, BALANCE - balance.balance_geolocation, { store: 'SQLite', sync: values.sync });
  rmSync(store, { recursive: true, force: true });
}

async function pgRounds(): Promise<void> {
  const pg = benchPostgres(undefined, values.fsync as 'on' | 'off');
  const dir = mkdtempSync(join(tmpdir(), 'wb-kill9-'));
  const servers: Served[] = [];
  try {
    const database = await freshPgDatabase(pg.url);
    const seed = await openTokenStorage(database);
    const token = (await seed.create({ label: 'kill9', geolocationPerDay: BALANCE })).token;
    await seed.close();
    const bodies = mix.bodies.map((b) => JSON.stringify({ ...b, token }));
    const db = copyOfDb(mix.db, dir);
    const serveArgs = ['--db', db, '--store', database, '--workers', values.workers, '--log-level', 'warn'];
    for (let i = 0; i < pgServers; i++) servers.push(await startServe(serveArgs));
    const totals = zero();
    for (let round = 1; round <= rounds; round++) {
      const victim = values['no-kill'] ? -1 : (round - 1) % pgServers;
      let stop = false;
      const events: Promise<string>[] = [];
      const halfway = new Promise<void>((resolve) => setTimeout(resolve, loadMs / 2));
      const timer = setTimeout(() => {
        stop = true;
      }, loadMs);
      const loading = load(servers, bodies, () => stop);
      await halfway;
      if (victim >= 0) {
        const served = servers[victim] as Served;
        process.kill(-(served.child.pid as number), 'SIGKILL');
        events.push(served.exited.then((e) => `server ${victim + 1} killed (${e.signal ?? e.code})`));
      }
      if (restartMode !== 'none') {
        const t0 = performance.now();
        events.push(
          pg
            .restart(restartMode as 'fast' | 'immediate')
            .then(() => `PostgreSQL restarted -m ${restartMode} in ${Math.round(performance.now() - t0)} ms`),
        );
      }
      const r = await loading;
      clearTimeout(timer);
      const happened = await Promise.all(events);
      console.log(
        `round ${round}: sent ${r.sent}, ok ${r.successes}, answered errors ${r.answeredErrors} (503: ${r.unavailable}), ` +
          `unknown (in flight at the kill) ${r.unknown}; ${happened.join('; ') || 'nothing killed'}`,
      );
      add(totals, r);
      if (victim >= 0) servers[victim] = await startServe(serveArgs);
    }
    for (const s of servers.splice(0)) {
      s.child.kill('SIGTERM');
      await s.exited;
    }
    const reader = await openTokenStorage(database);
    const charged = BALANCE - (await reader.balance(token, 'geolocation'));
    await reader.close();
    verdict(totals, charged, {
      store: `PostgreSQL, ${pgServers} server(s) x ${values.workers} workers, fsync=${pg.fsync}`,
      kill: values['no-kill'] ? 'none' : 'one server per round',
      pgRestart: restartMode,
    });
  } finally {
    for (const s of servers) if (s.child.exitCode === null) process.kill(-(s.child.pid as number), 'SIGKILL');
    pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (pgServers > 0) await pgRounds();
else await sqliteRounds();
