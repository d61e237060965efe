/**
 * What the remote layer costs, each case beside its baseline in the same run:
 *  - `engine.locate` in `local` mode against `engine.process` (the price of the Promise);
 *  - an answer from the remote cache against `engine.process`;
 *  - a fresh remote call (the client: keep-alive node:http, reply checks, breaker, regions)
 *    against a bare global `fetch` POST of the same body to the same loopback server.
 * The remote is a Whereabouts server in this process over the embedded demo data; the demo
 * requests cycle. Prints medians (these machines are shared).
 *
 *   npx tsx bench/remote.ts [--time MS]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Bench } from 'tinybench';
import { Engine } from '../src/engine.js';
import { ObservationStore } from '../src/observations/index.js';
import { buildServer } from '../src/server/app.js';
import { TokenStore } from '../src/tokens/index.js';

const { values } = parseArgs({ options: { time: { type: 'string', default: '2000' } } });
const root = join(import.meta.dirname, '..');
/** The demo requests that are JSON (one line shows the spec's invalid leading zero). */
const requests: Record<string, unknown>[] = [];
for (const line of readFileSync(join(root, 'data', 'demo-requests.jsonl'), 'utf8').split('\n')) {
  try {
    requests.push(JSON.parse(line) as Record<string, unknown>);
  } catch {}
}

// The remote: a real server on loopback with a token that will not run out. Its charges are
// not fsynced (synchronous NORMAL): a disk flush per answer would hide what the client costs.
const store = mkdtempSync(join(tmpdir(), 'wb-bench-remote-'));
const remoteEngine = await Engine.open();
const tokens = TokenStore.open(store, { synchronous: 'NORMAL' });
const observations = ObservationStore.open(store);
const token = tokens.create({ geolocationPerDay: 1_000_000_000 }).token;
const app = buildServer({ engine: remoteEngine, tokens, observations });
await app.listen({ port: 0, host: '127.0.0.1' });
const { port } = app.server.address() as { port: number };
const base = `http://127.0.0.1:${port}/v2`;

const local = await Engine.open();
const viaLocal = await Engine.open({ remote: { urls: [base], token, mode: 'local' } });
const cached = await Engine.open({ remote: { urls: [base], token, mode: 'remote-first' } });
const fresh = await Engine.open({ remote: { urls: [base], token, mode: 'remote-first', cacheTtlMs: 0 } });
for (const r of requests) await cached.locate(r); // fills the cache

let i = 0;
const next = () => requests[i++ % requests.length] as Record<string, unknown>;
const names = {
  process: 'engine.process (local, sync)',
  locateLocal: "engine.locate, mode 'local'",
  cacheHit: "engine.locate, mode 'remote-first', cache hit",
  fetch: 'bare fetch POST to the loopback remote',
  fresh: "engine.locate, mode 'remote-first', fresh remote call",
};
const bench = new Bench({ time: Number(values.time), warmupTime: 300 });
bench
  .add(names.process, () => {
    local.process(next());
  })
  .add(names.locateLocal, async () => {
    await viaLocal.locate(next());
  })
  .add(names.cacheHit, async () => {
    await cached.locate(next());
  })
  .add(names.fetch, async () => {
    const res = await fetch(`${base}/process`, {
      method: 'POST',
      body: JSON.stringify({ ...next(), token }),
    });
    await res.json();
  })
  .add(names.fresh, async () => {
    await fresh.locate(next());
  });
await bench.run();

const us = (name: string) =>
  (bench.tasks.find((t) => t.name === name)?.result?.latency.p50 ?? Number.NaN) * 1e3;
console.log(`Remote layer on ${requests.length} demo requests (median latency; ${process.version})`);
console.table(
  Object.values(names).map((n) => ({ case: n, 'µs/request (p50)': Math.round(us(n) * 10) / 10 })),
);
console.log(
  `locate (local) vs process:          ${(us(names.locateLocal) / us(names.process)).toFixed(2)}x the time`,
);
console.log(
  `cache hit vs process:               ${(us(names.cacheHit) / us(names.process)).toFixed(2)}x the time`,
);
console.log(
  `fresh remote call vs bare fetch:    ${(us(names.fresh) / us(names.fetch)).toFixed(2)}x the time`,
);
console.log(
  `fresh status: ${JSON.stringify(fresh.remoteStatus()?.breaker)}, cache: ${JSON.stringify(cached.remoteStatus()?.cache)}`,
);

for (const e of [local, viaLocal, cached, fresh]) e.close();
await app.close();
tokens.close();
observations.close();
remoteEngine.close();
rmSync(store, { recursive: true, force: true });
