/**
 * Throughput of `/v1/geolocate` beside `/v2/process` on the same requests: one
 * `whereabouts serve` (built CLI) on 127.0.0.1, autocannon on the same machine, the request mix
 * of bench/load.ts (the simulator's scenarios against the embedded demo database), each request
 * sent in both shapes. Rounds alternate the routes so that both see the same neighbours on a
 * shared machine; the figures are the median of each route's rounds, and their ratio: requests/s,
 * and the server's CPU time per request (all its processes, from /proc), which depends less on
 * what else the machine runs.
 *
 *   npx tsx bench/ichnaea.ts [--workers N] [--connections N] [--duration S] [--rounds N] [--sync full|normal]
 *
 * Three variants: `/v2/process` as sent (with its default `address: 1`, a reverse geocode per
 * located answer), `/v2/process` with `address: 0` (the same work as a geolocate, which has no
 * address), and `/v1/geolocate`. Every 40th request's answer is also checked to be the same
 * location in both shapes before the load starts. First, in this process, what the translation
 * itself costs: the time to read and validate each body in either shape (the median of 5 rounds).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { readGeolocate } from '../src/locating/ichnaea.js';
import { parseRequestText } from '../src/locating/request/index.js';
import { TokenStore } from '../src/tokens/index.js';
import { autocannon, requestMix, startServe, treeCpuSeconds } from './load.js';

type Obj = Record<string, unknown>;

/** A `/process` request body as the Ichnaea interface's: the same cells, access points and fallbacks. */
function asGeolocate(body: Obj): Obj {
  const out: Obj = {};
  if (body.radio !== undefined) out.radioType = body.radio;
  const cells = body.cells as Obj[] | undefined;
  if (cells) {
    out.cellTowers = cells.map((c) => ({
      radioType: c.radio,
      mobileCountryCode: c.mcc ?? body.mcc,
      mobileNetworkCode: c.mnc ?? body.mnc,
      locationAreaCode: c.lac,
      cellId: c.cid,
      signalStrength: c.signal,
      timingAdvance: c.ta,
      psc: c.psc,
      asu: c.asu,
    }));
  }
  const wifi = body.wifi as Obj[] | undefined;
  if (wifi) {
    out.wifiAccessPoints = wifi.map((w) => ({
      macAddress: w.bssid,
      signalStrength: w.signal,
      channel: w.channel,
      frequency: w.frequency,
      signalToNoiseRatio: w.signalToNoiseRatio,
    }));
  }
  const f = (body.fallbacks ?? {}) as Obj;
  // `/process` has the IP fallback off and the LAC fallback on unless asked otherwise.
  out.fallbacks = { ipf: f.ipf === 1 || f.ipf === true, lacf: f.lacf === undefined ? true : f.lacf !== 0 };
  return out;
}

const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: '2' },
    connections: { type: 'string', default: '64' },
    duration: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    requests: { type: 'string', default: '4000' },
    sync: { type: 'string', default: 'normal' },
  },
});

const mix = requestMix(undefined, Number(values.requests));

// The translation's own cost: JSON text to a validated request, in each shape.
const processTexts = mix.bodies.map((b) => JSON.stringify({ ...b, token: 'x', address: 0 }));
const geolocateTexts = mix.bodies.map((b) => JSON.stringify(asGeolocate(b as Obj)));
const parseUs: { process: number[]; geolocate: number[] } = { process: [], geolocate: [] };
for (let round = 0; round < 5; round++) {
  let t = performance.now();
  for (let k = 0; k < 5; k++) for (const text of processTexts) parseRequestText(text);
  parseUs.process.push(((performance.now() - t) * 1000) / (5 * processTexts.length));
  t = performance.now();
  for (let k = 0; k < 5; k++) for (const text of geolocateTexts) readGeolocate(JSON.parse(text));
  parseUs.geolocate.push(((performance.now() - t) * 1000) / (5 * geolocateTexts.length));
}
const store = mkdtempSync(join(tmpdir(), 'wb-ichnaea-'));
const tokens = TokenStore.open(store);
const token = tokens.create({ label: 'load', geolocationPerDay: 1_000_000_000 }).token;
tokens.close();
const served = await startServe([
  '--db',
  mix.db,
  '--store',
  store,
  '--workers',
  values.workers,
  '--log-level',
  'warn',
  '--sync',
  values.sync,
]);

const json = { 'content-type': 'application/json' };
const variants = {
  process: mix.bodies.map((b) => ({
    method: 'POST',
    path: '/v2/process',
    headers: json,
    body: JSON.stringify({ ...b, token }),
  })),
  'process address 0': mix.bodies.map((b) => ({
    method: 'POST',
    path: '/v2/process',
    headers: json,
    body: JSON.stringify({ ...b, token, address: 0 }),
  })),
  geolocate: mix.bodies.map((b) => ({
    method: 'POST',
    path: `/v1/geolocate?key=${token}`,
    headers: json,
    body: JSON.stringify(asGeolocate(b as Obj)),
  })),
};

// The same requests, the same answers: a sample checked in both shapes.
let same = 0;
let checked = 0;
for (let i = 0; i < mix.bodies.length; i += 40) {
  const p = (await (
    await fetch(`${served.url}/v2/process`, { method: 'POST', body: variants['process address 0'][i]?.body })
  ).json()) as Obj;
  const g = (await (
    await fetch(`${served.url}/v1/geolocate?key=${token}`, {
      method: 'POST',
      body: variants.geolocate[i]?.body,
    })
  ).json()) as Obj;
  const loc = g.location as { lat: number; lng: number } | undefined;
  checked++;
  if (p.status === 'ok' ? loc?.lat === p.lat && loc?.lng === p.lon : loc === undefined) same++;
}

console.log(
  `serve: ${mix.db}, ${values.workers} workers, --sync ${values.sync}; ${mix.bodies.length} distinct requests; ` +
    `autocannon: ${values.connections} connections, ${values.duration} s a round, ${values.rounds} rounds; ` +
    `same answer in both shapes: ${same} of ${checked}`,
);

await autocannon({ url: served.url, connections: 16, duration: 1, requests: variants.geolocate });
await autocannon({ url: served.url, connections: 16, duration: 1, requests: variants.process });
const rates: Record<string, number[]> = {};
const p99: Record<string, number[]> = {};
const cpu: Record<string, number[]> = {};
for (const name of Object.keys(variants)) {
  rates[name] = [];
  p99[name] = [];
  cpu[name] = [];
}
for (let round = 0; round < Number(values.rounds); round++) {
  for (const [name, requests] of Object.entries(variants)) {
    const cpu0 = treeCpuSeconds(served.child.pid as number);
    const r = await autocannon({
      url: served.url,
      connections: Number(values.connections),
      duration: Number(values.duration),
      requests,
    });
    const cpuUs = ((treeCpuSeconds(served.child.pid as number) - cpu0) * 1e6) / Math.max(1, r.requests.total);
    if (r.non2xx > 0 && name !== 'geolocate') console.log(`${name}: ${r.non2xx} non-2xx answers`);
    rates[name]?.push(Math.round(r.requests.average));
    p99[name]?.push(r.latency.p99);
    cpu[name]?.push(Math.round(cpuUs));
  }
}
served.child.kill('SIGTERM');
await served.exited;
rmSync(store, { recursive: true, force: true });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
console.log(
  `reading a body, median of 5 rounds: /process ${median(parseUs.process).toFixed(2)} us, ` +
    `geolocate (JSON.parse + translation + the same rules) ${median(parseUs.geolocate).toFixed(2)} us`,
);
const summary = Object.fromEntries(
  Object.entries(rates).map(([name, xs]) => [
    name,
    {
      rounds: xs,
      median: median(xs),
      p99ms: median(p99[name] ?? []),
      serverMicrosPerRequest: median(cpu[name] ?? []),
    },
  ]),
);
const ratio = median(rates.geolocate ?? []) / median(rates['process address 0'] ?? []);
const cpuRatio = median(cpu.geolocate ?? []) / median(cpu['process address 0'] ?? []);
console.log(JSON.stringify({ ...summary, loadAverage: loadavg().map((l) => Number(l.toFixed(2))) }, null, 2));
console.log(
  `geolocate / process (address 0): ${ratio.toFixed(3)}; geolocate / process (as sent): ` +
    `${(median(rates.geolocate ?? []) / median(rates.process ?? [])).toFixed(3)}; server CPU a request, ` +
    `geolocate / process (address 0): ${cpuRatio.toFixed(3)}; target within 10%: ` +
    `${ratio >= 0.9 && cpuRatio <= 1.1 ? 'met' : 'not met'}`,
);
