/**
 * Map tiles over HTTP: `whereabouts serve` (built CLI, embedded basemap) on 127.0.0.1 with the
 * load generator beside it on the same cores (wrk where installed, else autocannon).
 *  - cached: raster tiles already in the server's cache (at low zooms, whose PNGs are large, and
 *    at street zooms), and stored vector tiles, in turn;
 *  - cold: raster tiles never asked before, each rendered on arrival;
 *  - memory: the server's resident memory (primary and workers) before, and after rendering
 *    `--memory-tiles` distinct raster tiles (the cache is bounded by --raster-cache-mb).
 *
 *   npx tsx bench/tiles-http.ts [--workers N] [--connections N] [--duration S] [--memory-tiles N]
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { autocannon, serveDemoWithKey } from './load.js';

const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: '2' },
    connections: { type: 'string', default: '64' },
    duration: { type: 'string', default: '10' },
    'memory-tiles': { type: 'string', default: '10000' },
  },
});

/** Resident memory (bytes) of `pid` and its child processes (Linux /proc). */
function treeRss(pid: number): number {
  let total = 0;
  const visit = (p: number) => {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      total += Number(m?.[1] ?? 0) * 1024;
      const children = readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim();
      for (const c of children.split(/\s+/).filter(Boolean)) visit(Number(c));
    } catch {
      // gone
    }
  };
  visit(pid);
  return total;
}

/** Tiles z/x/y at zoom `z` around a point (a `side` x `side` block). */
function block(z: number, lon: number, lat: number, side: number): [number, number, number][] {
  const n = 2 ** z;
  const r = (lat * Math.PI) / 180;
  const x0 = Math.floor(((lon + 180) / 360) * n);
  const y0 = Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n);
  const out: [number, number, number][] = [];
  for (let dy = 0; dy < side; dy++) {
    for (let dx = 0; dx < side; dx++) out.push([z, (x0 + dx) % n, Math.min(n - 1, y0 + dy)]);
  }
  return out;
}

/**
 * wrk (Debian's package) where it is installed: autocannon's HTTP parser, in JavaScript on the
 * same cores, is slower than the server on binary bodies (a cached 45 KB PNG: about 1,900/s
 * through autocannon, 27,800/s through wrk, from one server process).
 */
const hasWrk = spawnSync('wrk', ['--version']).error === undefined;

/** wrk over `paths` in turn (a Lua script), as autocannon's result fields. */
async function wrk(url: string, paths: string[], connections: number, seconds: number) {
  const script = join(store, 'paths.lua');
  writeFileSync(
    script,
    `local paths = {${paths.map((p) => JSON.stringify(p)).join(',')}}\nlocal i = 0\n` +
      'request = function() i = i % #paths + 1; return wrk.format("GET", paths[i]) end\n' +
      'done = function(summary, latency)\n' +
      '  io.write(string.format("RESULT %f %f %f %d\\n", summary.requests / (summary.duration / 1e6),\n' +
      '    latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.errors.status))\n' +
      'end\n',
  );
  const out = spawnSync('wrk', ['-t2', `-c${connections}`, `-d${seconds}s`, '-s', script, url], {
    encoding: 'utf8',
  });
  const m = /RESULT (\S+) (\S+) (\S+) (\d+)/.exec(out.stdout);
  if (!m) throw new Error(`wrk: ${out.stderr || out.stdout}`);
  return {
    requests: { average: Number(m[1]) },
    latency: { p50: Number(Number(m[2]).toFixed(2)), p99: Number(Number(m[3]).toFixed(2)) },
    non2xx: Number(m[4]),
  };
}

const { served, key, store } = await serveDemoWithKey('tiles-http', values.workers);
const pid = served.child.pid as number;
try {
  const rssStart = treeRss(pid);
  const connections = Number(values.connections);
  const duration = Number(values.duration);

  // cached: 64 tiles of zooms 3 to 6 (large PNGs: whole countries' coasts and labels) and 64
  // of zooms 9 to 12 (street zooms: small PNGs) over Europe, each asked once first
  const paths = (zooms: number[], kind: 'r' | 'v') =>
    zooms
      .flatMap((z) => block(z, 2, 48, 4))
      .map(([z, x, y]) => `/v3/streets/${kind}/${z}/${x}/${y}.${kind === 'r' ? 'png' : 'pbf'}?key=${key}`);
  const sets = {
    'raster z3-6': paths([3, 4, 5, 6], 'r'),
    'raster z9-12': paths([9, 10, 11, 12], 'r'),
    'vector z3-6 (stored)': paths([3, 4, 5, 6], 'v'),
  };
  const hot: Record<string, { rate: number; p50: number; p99: number; kb: number; non2xx: number }> = {};
  for (const [name, list] of Object.entries(sets)) {
    let bytes = 0;
    for (const p of list) {
      const r = await fetch(`${served.url}${p}`, { headers: { 'accept-encoding': 'gzip' } });
      if (r.status !== 200) throw new Error(`${p}: HTTP ${r.status}`);
      bytes += (await r.arrayBuffer()).byteLength;
    }
    const res = hasWrk
      ? await wrk(served.url, list, connections, duration)
      : await autocannon({
          url: served.url,
          connections,
          duration,
          requests: list.map((path) => ({ method: 'GET', path })),
        });
    hot[name] = {
      rate: res.requests.average,
      p50: res.latency.p50,
      p99: res.latency.p99,
      kb: bytes / list.length / 1024,
      non2xx: res.non2xx,
    };
  }

  // cold: distinct tiles of zooms 8 to 10 over land and coasts, none asked before
  const cold = [8, 9, 10].flatMap((z) => [
    ...block(z, 4.3, 52.1, 8),
    ...block(z, -74.0, 40.7, 8),
    ...block(z, 139.7, 35.7, 8),
  ]);
  let next = 0;
  const started = performance.now();
  const lat: number[] = [];
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < cold.length) {
        const [z, x, y] = cold[next++] as [number, number, number];
        const t = performance.now();
        const r = await fetch(`${served.url}/v3/streets/r/${z}/${x}/${y}.png?key=${key}`);
        await r.arrayBuffer();
        lat.push(performance.now() - t);
      }
    }),
  );
  const coldSeconds = (performance.now() - started) / 1000;
  lat.sort((a, b) => a - b);

  // memory after rendering many distinct tiles (zoom 11 to 12, a band over Europe)
  const wanted = Number(values['memory-tiles']);
  const many: [number, number, number][] = [];
  for (let z = 11; z <= 13 && many.length < wanted; z++) {
    for (const t of block(z, -5, 55, 64)) if (many.length < wanted) many.push(t);
  }
  next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < many.length) {
        const [z, x, y] = many[next++] as [number, number, number];
        await (await fetch(`${served.url}/v3/light/r/${z}/${x}/${y}.png?key=${key}`)).arrayBuffer();
      }
    }),
  );
  const rssEnd = treeRss(pid);

  const mb = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MB`;
  console.log(
    `serve: embedded basemap, ${values.workers} workers; ${hasWrk ? 'wrk' : 'autocannon'} ${connections} connections, ${duration} s`,
  );
  for (const [name, h] of Object.entries(hot)) {
    console.log(
      `cached ${name}: ${h.rate.toFixed(0)} req/s, p50 ${h.p50} ms, p99 ${h.p99} ms, ${h.kb.toFixed(1)} KB a tile, non-2xx ${h.non2xx}`,
    );
  }
  console.log(
    `cold raster tiles, 8 at a time: ${(cold.length / coldSeconds).toFixed(0)} tiles/s over ${cold.length}; ` +
      `p50 ${lat[Math.floor(lat.length / 2)]?.toFixed(1)} ms, p99 ${lat[Math.floor(lat.length * 0.99)]?.toFixed(1)} ms`,
  );
  console.log(
    `memory (primary + workers): ${mb(rssStart)} at start, ${mb(rssEnd)} after ${many.length} more distinct tiles`,
  );
} finally {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
  rmSync(store, { recursive: true, force: true });
}
