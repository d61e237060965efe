/**
 * Charges per second of the token stores: SQLite (`DIR/tokens.sqlite`) and PostgreSQL, with
 * `--stores` stores on one database (as that many servers would be), each keeping
 * `--concurrency` charges in flight for `--ms`. At the end the stored usage must equal the
 * successful charges (exit code 1 if not).
 *
 *   npx tsx bench/charges.ts [--url postgres://...] [--stores N] [--concurrency N] [--ms MS]
 *
 * Without --url (or WHEREABOUTS_TEST_PG_URL) it starts a throwaway cluster with
 * scripts/pg-test-cluster.sh and stops it afterwards.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { PgTokenStore, type TokenStorage, TokenStore } from '../src/tokens/index.js';

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    stores: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '64' },
    ms: { type: 'string', default: '3000' },
  },
});
const stores = Number(values.stores);
const concurrency = Number(values.concurrency);
const ms = Number(values.ms);
const script = join(import.meta.dirname, '..', 'scripts', 'pg-test-cluster.sh');

async function run(name: string, open: () => Promise<TokenStorage>[]): Promise<boolean> {
  const opened = await Promise.all(open());
  const first = opened[0] as TokenStorage;
  const t = await first.create({ geolocationPerDay: 1_000_000_000 });
  await new Promise((r) => setTimeout(r, 200));
  let ok = 0;
  const end = Date.now() + ms;
  const loop = async (s: TokenStorage) => {
    while (Date.now() < end) if ((await s.charge(t.token, 'geolocation')).ok) ok++;
  };
  const started = Date.now();
  await Promise.all(opened.flatMap((s) => Array.from({ length: concurrency }, () => loop(s))));
  const seconds = (Date.now() - started) / 1000;
  const used = 1_000_000_000 - (await first.balance(t.token, 'geolocation'));
  for (const s of opened) await s.close();
  const holds = used === ok;
  console.log(
    `${name}: ${opened.length} store(s) x ${concurrency} in flight: ${Math.round(ok / seconds)} charges/s; stored ${used}, ok ${ok}: ${holds ? 'exact' : 'MISMATCH'}`,
  );
  return holds;
}

let url = values.url ?? process.env.WHEREABOUTS_TEST_PG_URL;
let clusterDir: string | undefined;
if (!url) {
  clusterDir = mkdtempSync(join(tmpdir(), 'wb-pg-bench-'));
  const r = spawnSync('bash', [script, 'start', clusterDir], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`cannot start a PostgreSQL cluster: ${r.stderr}`);
  url = r.stdout.trim().split('\n').pop() as string;
}
const dir = mkdtempSync(join(tmpdir(), 'wb-charges-'));
let exact = true;
try {
  exact = (await run('SQLite (one store)', () => [Promise.resolve(TokenStore.open(dir))])) && exact;
  const name = `wbbench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const dbUrl = new URL(url);
  dbUrl.pathname = `/${name}`;
  try {
    exact =
      (await run('PostgreSQL', () =>
        Array.from({ length: stores }, () => PgTokenStore.open(dbUrl.toString())),
      )) && exact;
  } finally {
    await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
    await admin.end();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
  if (clusterDir) spawnSync('bash', [script, 'stop', clusterDir]);
}
process.exitCode = exact ? 0 : 1;
