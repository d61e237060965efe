/**
 * Charges per second of the token stores: SQLite (`DIR/tokens.sqlite`) and PostgreSQL, with
 * `--stores` stores on one database (as that many servers would be), each keeping
 * `--concurrency` charges in flight for `--ms`. At the end the stored usage must equal the
 * successful charges (exit code 1 if not). For PostgreSQL it also prints the round trips per
 * batch: the queries the stores sent (each one request and its answer) over the transactions
 * they began.
 *
 *   npx tsx bench/charges.ts [--url postgres://...] [--stores N] [--concurrency N] [--ms MS] [--fsync on|off]
 *
 * Without --url (or WHEREABOUTS_TEST_PG_URL) it starts a throwaway cluster with
 * scripts/pg-test-cluster.sh (fsync as --fsync, default off) and stops it afterwards.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { PgTokenStore, type TokenStorage, TokenStore } from '../src/tokens/index.js';
import { benchPostgres, freshPgDatabase } from './pg-cluster.js';

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    stores: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '64' },
    ms: { type: 'string', default: '3000' },
    fsync: { type: 'string', default: 'off' },
  },
});
const stores = Number(values.stores);
const concurrency = Number(values.concurrency);
const ms = Number(values.ms);
if (values.fsync !== 'on' && values.fsync !== 'off') throw new Error('--fsync is on or off');

/** Queries sent by every pg client of this process, and how many of them began a transaction. */
const sent = { queries: 0, batches: 0 };
const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const first = args[0];
  const text = typeof first === 'string' ? first : (first as { text?: unknown } | null)?.text;
  sent.queries++;
  if (typeof text === 'string' && /^\s*BEGIN\b/i.test(text)) sent.batches++;
  return query.apply(this, args);
} as typeof pg.Client.prototype.query;

async function run(name: string, open: () => Promise<TokenStorage>[]): Promise<boolean> {
  const opened = await Promise.all(open());
  const first = opened[0] as TokenStorage;
  const t = await first.create({ geolocationPerDay: 1_000_000_000 });
  await new Promise((r) => setTimeout(r, 200));
  const before = { ...sent };
  let ok = 0;
  const end = Date.now() + ms;
  const loop = async (s: TokenStorage) => {
    while (Date.now() < end) if ((await s.charge(t.token, 'geolocation')).ok) ok++;
  };
  const started = Date.now();
  await Promise.all(opened.flatMap((s) => Array.from({ length: concurrency }, () => loop(s))));
  const seconds = (Date.now() - started) / 1000;
  const batches = sent.batches - before.batches;
  const trips =
    batches > 0
      ? `; ${batches} batches of ${(ok / batches).toFixed(1)} charges, ${((sent.queries - before.queries) / batches).toFixed(2)} round trips each`
      : '';
  const used = 1_000_000_000 - (await first.balance(t.token, 'geolocation'));
  for (const s of opened) await s.close();
  const holds = used === ok;
  console.log(
    `${name}: ${opened.length} store(s) x ${concurrency} in flight: ${Math.round(ok / seconds)} charges/s; stored ${used}, ok ${ok}: ${holds ? 'exact' : 'MISMATCH'}${trips}`,
  );
  return holds;
}

const server = benchPostgres(values.url ?? process.env.WHEREABOUTS_TEST_PG_URL, values.fsync);
const dir = mkdtempSync(join(tmpdir(), 'wb-charges-'));
let exact = true;
try {
  exact = (await run('SQLite (one store)', () => [Promise.resolve(TokenStore.open(dir))])) && exact;
  const database = await freshPgDatabase(server.url);
  try {
    exact =
      (await run(`PostgreSQL (fsync ${server.fsync ?? 'of the server'})`, () =>
        Array.from({ length: stores }, () => PgTokenStore.open(database)),
      )) && exact;
  } finally {
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    await admin.query(`DROP DATABASE ${new URL(database).pathname.slice(1)} WITH (FORCE)`);
    await admin.end();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
  server.stop();
}
process.exitCode = exact ? 0 : 1;
