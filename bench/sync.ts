/**
 * Sync between two Whereabouts servers against a plain import of the same stations, in one run:
 *  - baseline: `importFiles` of one `.csv.gz` export holding the stations, into an empty directory;
 *  - sync: `syncDatabase` from a loopback `GET /v2/sync` server whose database holds them
 *    (pages built in the core, gzip CSV over HTTP, checked, imported in one call);
 *  - the server's page time alone: every page of the window, nothing imported.
 * Medians of `--runs` runs each; the ratio says what the sync costs beyond the import.
 *
 *   npx tsx bench/sync.ts [--rows N] [--runs R]
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { Engine } from '../src/engine.js';
import { native } from '../src/native/binding.js';
import { ObservationStore } from '../src/observations/index.js';
import { buildServer } from '../src/server/app.js';
import { syncDatabase } from '../src/sync/run.js';
import { TokenStore } from '../src/tokens/index.js';

const { values } = parseArgs({
  options: { rows: { type: 'string', default: '500000' }, runs: { type: 'string', default: '3' } },
});
const rows = Number(values.rows);
const runs = Number(values.runs);
const importFiles = native().importFiles;
if (!importFiles) throw new Error('the native addon has no importer');

const work = mkdtempSync(join(tmpdir(), 'wb-bench-sync-'));
const header = 'radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal';
// mulberry32: reproducible stations whose digits vary like real ones (compression is honest)
let seed = 1;
function random(): number {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const lines = [header];
for (let i = 0; i < rows; i++) {
  const lat = (43 + random() * 8).toFixed(7);
  const lon = (-4 + random() * 12).toFixed(7);
  const updated = 1_600_000_000 + Math.floor(random() * 100_000_000);
  lines.push(
    `LTE,208,${1 + (i % 4)},${1 + Math.floor(random() * 60_000)},${Math.floor(random() * 268_435_455)},${Math.floor(random() * 504)},` +
      `${lon},${lat},${Math.floor(100 + random() * 5000)},${1 + Math.floor(random() * 200)},1,1500000000,${updated},0`,
  );
}
const exportFile = join(work, 'export.csv.gz');
writeFileSync(exportFile, gzipSync(`${lines.join('\n')}\n`));
lines.length = 0;

const sourceDb = join(work, 'source');
await importFiles(sourceDb, [exportFile], {}, () => {});
const engine = await Engine.open({ db: sourceDb, land: false, ipDatabases: false });
const tokens = TokenStore.open(join(work, 'store'));
const observations = ObservationStore.open(join(work, 'store'));
const app = buildServer({ engine, tokens, observations });
await app.listen({ port: 0, host: '127.0.0.1' });
const port = (app.server.address() as { port: number }).port;
const token = tokens.create({ scopes: ['sync'] }).token;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
async function time(f: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await f();
  return performance.now() - t;
}

const importMs: number[] = [];
const syncMs: number[] = [];
const pagesMs: number[] = [];
let pageBytes = 0;
for (let r = 0; r < runs; r++) {
  const a = join(work, `import-${r}`);
  importMs.push(await time(() => importFiles(a, [exportFile], {}, () => {})));
  const b = join(work, `sync-${r}`);
  syncMs.push(await time(() => syncDatabase({ db: b, from: `whereabouts+http://127.0.0.1:${port}`, token })));
  pagesMs.push(
    await time(async () => {
      let cursor: string | null = '';
      while (cursor !== null) {
        const q: string = `since=0&token=${token}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const res = await fetch(`http://127.0.0.1:${port}/v2/sync?${q}`);
        pageBytes += (await res.arrayBuffer()).byteLength;
        cursor = res.headers.get('x-sync-next');
      }
    }),
  );
  rmSync(a, { recursive: true });
  rmSync(b, { recursive: true });
}

const perSec = (ms: number) => Math.round(rows / (ms / 1000)).toLocaleString('en');
const m = { imp: median(importMs), sync: median(syncMs), pages: median(pagesMs) };
console.log(
  `${rows.toLocaleString('en')} stations, median of ${runs} runs; pages ${(pageBytes / runs / 1e6).toFixed(1)} MB ` +
    `(${(pageBytes / runs / rows).toFixed(1)} bytes a station)`,
);
console.log(`| case | ms | stations/s | vs import |`);
console.log(`|---|---|---|---|`);
console.log(`| baseline: import of one .csv.gz export | ${m.imp.toFixed(0)} | ${perSec(m.imp)} | 1.00x |`);
console.log(
  `| sync from a loopback server (pages + checks + import) | ${m.sync.toFixed(0)} | ${perSec(m.sync)} | ${(m.imp / m.sync).toFixed(2)}x |`,
);
console.log(
  `| server pages alone (GET /v2/sync, every page) | ${m.pages.toFixed(0)} | ${perSec(m.pages)} | ${(m.imp / m.pages).toFixed(2)}x |`,
);

await app.close();
tokens.close();
observations.close();
engine.close();
rmSync(work, { recursive: true });
