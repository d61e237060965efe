/**
 * Reverse geocoding against geokdbush (kdbush's nearest-neighbour search on the sphere) over
 * the same places (data/places.bin), on the same points in one run:
 *  - agreement: the share of points where both pick the same place. Our answer deliberately
 *    differs from the nearest place: it takes the country from its polygon and ranks that
 *    country's places by distance / (1 + log10 population)^k (crates/whereabouts-core/src/
 *    places.rs), so the agreement of `engine.reverse` with pure nearest measures how often
 *    the ranking changes the answer, and the core's pure-nearest mode (`nearestPlace`, the
 *    same grid walk without ranking or country) must agree with geokdbush but for ties;
 *  - time per lookup (medians of 5 passes after an untimed one, the methods taking turns):
 *    geokdbush `around(index, lon, lat, 1, 50)`, the native lookup alone (one number out,
 *    through the plain function `reverseKeyFunction` makes, and through the class method
 *    `reverseKey`, which costs napi-rs more per call), the lookup with the place's names
 *    (`ReverseLookup.find`, names cached per place), the full `engine.reverse` (adds
 *    validation and the Address object, shaped once per place, zoom band and language) and
 *    the pure-nearest mode.
 *
 * Points: uniform over the sphere, kept where the core answers a country and a place (on
 * land, or within 5 km of it, and within 50 km of a place of that country).
 *
 *   npx tsx bench/reverse.ts [--points N] [--seed S] [--zoom Z]
 */
import { parseArgs } from 'node:util';
import { around } from 'geokdbush';
import KDBush from 'kdbush';
import { readPlaces } from '../scripts/places-file.mjs';
import { countryPolygonsFile, defaultDbDir, placesFile } from '../src/data-files.js';
import { Engine } from '../src/engine.js';
import { native } from '../src/native/binding.js';
import { ReverseLookup } from '../src/native/reverse-lookup.js';
import { mulberry32 } from './random.js';
import { median } from './rounds.js';

const { values } = parseArgs({
  options: {
    points: { type: 'string', default: '20000' },
    seed: { type: 'string', default: '1' },
    zoom: { type: 'string', default: '18' },
  },
});
const n = Number(values.points);
const zoom = Number(values.zoom);

const random = mulberry32(Number(values.seed));

const handle = native().NativeEngine.open({
  db: defaultDbDir,
  places: placesFile,
  countryPolygons: countryPolygonsFile,
});
const lookup = new ReverseLookup(handle);
const engine = await Engine.open();

const places = readPlaces(placesFile);
const index = new KDBush(places.length);
for (const p of places) index.add(p.lon, p.lat);
index.finish();

/** Points uniform over the sphere where the core answers a place. */
const points = new Float64Array(2 * n);
let tried = 0;
for (let i = 0; i < n; ) {
  tried++;
  const lat = (Math.asin(2 * random() - 1) * 180) / Math.PI;
  const lon = random() * 360 - 180;
  if (!lookup.find(lat, lon, zoom)?.place) continue;
  points[2 * i] = lat;
  points[2 * i + 1] = lon;
  i++;
}

/** The same place: places.bin has coordinates at 1e-5 degree, so equal coordinates are equal places. */
const key = (lat: number, lon: number) => `${Math.round(lat * 1e5)},${Math.round(lon * 1e5)}`;

let rankedAgree = 0;
let nearestAgree = 0;
let sameCountry = 0;
for (let i = 0; i < points.length; i += 2) {
  const lat = points[i] as number;
  const lon = points[i + 1] as number;
  const id = around(index, lon, lat, 1, 50)[0];
  const ref = id === undefined ? undefined : places[id];
  const refKey = ref ? key(ref.lat, ref.lon) : 'none';
  const ours = lookup.find(lat, lon, zoom);
  if (ours?.place && key(ours.place.lat, ours.place.lon) === refKey) rankedAgree++;
  if (ours && ref && ours.countryCode === ref.cc) sameCountry++;
  const nearest = lookup.nearest(lat, lon);
  if (nearest && key(nearest.lat, nearest.lon) === refKey) nearestAgree++;
}

/**
 * Median ns per lookup of each method over 5 passes over all points, after one untimed pass
 * (whose time is kept in `coldNs`): every method starts warm, as the agreement loop above
 * warmed geokdbush's index and the native lookups but not `engine.reverse`'s caches. The
 * methods take turns pass by pass, so that the load of this shared machine, which moves
 * within seconds, weighs on all of them alike.
 */
const reverseKey = handle.reverseKeyFunction();
const methods: [string, (lat: number, lon: number) => unknown][] = [
  ['kd', (lat, lon) => around(index, lon, lat, 1, 50)[0]],
  ['native', (lat, lon) => reverseKey(lat, lon, zoom) >= 0],
  ['method', (lat, lon) => handle.reverseKey(lat, lon, zoom) >= 0],
  ['lookup', (lat, lon) => lookup.find(lat, lon, zoom)?.place !== undefined],
  ['engine', (lat, lon) => engine.reverse({ lat, lon, zoom }).status === 'ok'],
  ['nearest', (lat, lon) => handle.nearestPlaceId(lat, lon) >= 0],
];
const coldNs = new Map<string, number>();
const passTimes = new Map<string, number[]>(methods.map(([name]) => [name, []]));
let sink = 0;
for (let p = -1; p < 5; p++) {
  for (const [name, f] of methods) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < points.length; i += 2) {
      if (f(points[i] as number, points[i + 1] as number)) sink++;
    }
    const ns = Number(process.hrtime.bigint() - t0) / n;
    if (p < 0) coldNs.set(name, ns);
    else passTimes.get(name)?.push(ns);
  }
}
if (sink < 0) console.log(sink);
const timeOf = (name: string) => median(passTimes.get(name) ?? []);
const kdNs = timeOf('kd');
const nativeNs = timeOf('native');
const methodNs = timeOf('method');
const lookupNs = timeOf('lookup');
const engineNs = timeOf('engine');
const nearestNs = timeOf('nearest');

const pct = (k: number) => `${((100 * k) / n).toFixed(2)} %`;
const ratio = (ns: number) => `${(kdNs / ns).toFixed(2)}x geokdbush's speed`;
console.log(
  `reverse bench: ${places.length} places, ${n} points (${tried} drawn), zoom ${zoom}, seed ${values.seed}`,
);
console.log(
  `  same place as geokdbush's nearest: engine.reverse ${pct(rankedAgree)}, pure nearest ${pct(nearestAgree)}`,
);
console.log(`  same country as the nearest place's: ${pct(sameCountry)}`);
console.log(`  geokdbush around(1, 50 km): ${kdNs.toFixed(0)} ns/lookup`);
console.log(`  native reverseKeyFunction:  ${nativeNs.toFixed(0)} ns/lookup (${ratio(nativeNs)})`);
console.log(
  `    the same as a class method (reverseKey): ${methodNs.toFixed(0)} ns/lookup (${ratio(methodNs)})`,
);
console.log(`  ReverseLookup.find:         ${lookupNs.toFixed(0)} ns/lookup (${ratio(lookupNs)})`);
console.log(`  engine.reverse:             ${engineNs.toFixed(0)} ns/lookup (${ratio(engineNs)})`);
console.log(
  `    its first, untimed pass (every answer shaped anew): ${(coldNs.get('engine') ?? 0).toFixed(0)} ns/lookup`,
);
console.log(`  native nearestPlaceId:      ${nearestNs.toFixed(0)} ns/lookup (${ratio(nearestNs)})`);
engine.close();
handle.close();
