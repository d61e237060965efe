/**
 * Fault bench: `kill -9` of the whole `whereabouts serve` process group under load, then a
 * restart, then the token's charges compared with what the client saw.
 *
 *   npx tsx bench/kill9.ts [--workers N] [--concurrency N] [--rounds N] [--load-ms MS] [--sync full|normal]
 *
 * Each round: start serve (own process group) on the same token store, send located requests
 * from `--concurrency` loops for `--load-ms`, SIGKILL the group, wait for it to die. A request is
 * a *success* when the client received `status: "ok"` (a charged answer) and *unknown* when the
 * connection failed (in flight at the kill: it may or may not have been committed). After the
 * rounds the server is started once more and the charges are read back through GET /v2/balance.
 * The invariant: successes <= charged <= successes + unknown. Exit code 1 if it fails.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { TokenStore } from '../src/tokens/index.js';
import { requestMix, type Served, startServe } from './load.js';

const BALANCE = 1_000_000_000;

const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '64' },
    rounds: { type: 'string', default: '3' },
    'load-ms': { type: 'string', default: '3000' },
    sync: { type: 'string', default: 'full' },
  },
});
const rounds = Math.min(20, Math.max(1, Number(values.rounds)));
const loadMs = Math.min(30_000, Math.max(200, Number(values['load-ms'])));
const concurrency = Math.min(512, Math.max(1, Number(values.concurrency)));

const mix = requestMix(undefined, 2000);
const store = mkdtempSync(join(tmpdir(), 'wb-kill9-'));
const seed = TokenStore.open(store);
const token = seed.create({ label: 'kill9', geolocationPerDay: BALANCE }).token;
seed.close();
const bodies = mix.bodies.map((b) => JSON.stringify({ ...b, token }));
const serveArgs = ['--db', mix.db, '--store', store, '--workers', values.workers, '--log-level', 'warn'];
serveArgs.push('--sync', values.sync);

interface Round {
  sent: number;
  successes: number;
  answeredErrors: number;
  unknown: number;
}

/** Loads the server until `stop` says so; counts what came back. */
async function load(served: Served, stopAt: () => boolean): Promise<Round> {
  const r: Round = { sent: 0, successes: 0, answeredErrors: 0, unknown: 0 };
  let next = 0;
  const loop = async () => {
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
      } catch {
        // The connection died with the server: this request's fate is unknown to the client.
        r.unknown++;
        return;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  return r;
}

const totals: Round = { sent: 0, successes: 0, answeredErrors: 0, unknown: 0 };
for (let round = 1; round <= rounds; round++) {
  const served = await startServe(serveArgs);
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    // The whole group: primary and workers die at once, mid-request, mid-commit.
    process.kill(-(served.child.pid as number), 'SIGKILL');
  }, loadMs);
  const r = await load(served, () => killed);
  clearTimeout(timer);
  const exit = await served.exited;
  console.log(
    `round ${round}: sent ${r.sent}, ok ${r.successes}, answered errors ${r.answeredErrors}, ` +
      `unknown (in flight at the kill) ${r.unknown}; server ${exit.signal ?? exit.code}`,
  );
  for (const k of Object.keys(totals) as (keyof Round)[]) totals[k] += r[k];
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
const charged = BALANCE - balance.balance_geolocation;
const ok = charged >= totals.successes && charged <= totals.successes + totals.unknown;
console.log(
  JSON.stringify(
    {
      rounds,
      sync: values.sync,
      successes: totals.successes,
      unknown: totals.unknown,
      charged,
      chargedMinusSuccesses: charged - totals.successes,
      invariant: `${totals.successes} <= ${charged} <= ${totals.successes + totals.unknown}: ${ok ? 'holds' : 'BROKEN'}`,
    },
    null,
    2,
  ),
);
rmSync(store, { recursive: true, force: true });
process.exitCode = ok ? 0 : 1;
