/**
 * Street-level addresses, on a generated OpenAddresses CSV (a city-like grid of streets,
 * reproducible by seed), in one run:
 *  - import: rows per second and peak RSS of `importAddresses` (the core's importer),
 *    and bytes of the address file per address;
 *  - nearest address within 75 m: the core over napi (`nearestAddress`) against kdbush +
 *    geokdbush `around(..., 1, 0.075)` on the same points (the baseline), median of passes;
 *  - `engine.reverse` at zoom 18 (places + address file) and `engine.searchAddresses`.
 *
 *   npx tsx bench/addresses.ts [--rows 2000000] [--lookups 200000] [--seed 1]
 */
import { createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { around } from 'geokdbush';
import KDBush from 'kdbush';
import { defaultDbDir } from '../src/data-files.js';
import { Engine } from '../src/engine.js';
import { ADDRESS_RADIUS_M } from '../src/geocoding/addresses.js';
import { native } from '../src/native/binding.js';
import { mulberry32 } from './random.js';
import { median } from './rounds.js';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '2000000' },
    lookups: { type: 'string', default: '200000' },
    seed: { type: 'string', default: '1' },
  },
});
const rows = Number(values.rows);
const lookups = Number(values.lookups);

const random = mulberry32(Number(values.seed));

const HOUSES_PER_STREET = 40;
const SUFFIXES = ['Street', 'Road', 'Avenue', 'Lane', 'Straße', 'Way'];
const CITIES = ['Northtown', 'Southport', 'Eastfield', 'Westbury', 'Midvale', 'Lakeside'];
const dir = mkdtempSync(join(tmpdir(), 'wb-bench-addr-'));
const csv = join(dir, 'addresses.csv');
const lats = new Float64Array(rows);
const lons = new Float64Array(rows);

async function generate(): Promise<void> {
  const out = createWriteStream(csv);
  out.write('LON,LAT,NUMBER,STREET,UNIT,CITY,DISTRICT,REGION,POSTCODE,ID,HASH\n');
  let chunk: string[] = [];
  let lat = 0;
  let lon = 0;
  let dLat = 0;
  let dLon = 0;
  let street = '';
  let city = '';
  for (let i = 0; i < rows; i++) {
    if (i % HOUSES_PER_STREET === 0) {
      // a street: a straight run of houses 15 m apart somewhere in a 60 x 60 km area
      lat = 52.0 + random() * 0.54;
      lon = 4.0 + random() * 0.88;
      const angle = random() * Math.PI;
      dLat = (Math.sin(angle) * 15) / 111_195;
      dLon = (Math.cos(angle) * 15) / (111_195 * Math.cos((lat * Math.PI) / 180));
      const s = Math.floor(i / HOUSES_PER_STREET);
      street = `${s % 997} ${SUFFIXES[s % SUFFIXES.length]}`;
      city = CITIES[Math.floor(random() * CITIES.length)] as string;
    }
    const k = i % HOUSES_PER_STREET;
    lats[i] = Math.round((lat + k * dLat) * 1e7) / 1e7;
    lons[i] = Math.round((lon + k * dLon) * 1e7) / 1e7;
    chunk.push(
      `${lons[i]?.toFixed(7)},${lats[i]?.toFixed(7)},${k + 1},${street},,${city},,,${1000 + (i % 9000)},${i},h${i}`,
    );
    if (chunk.length === 10_000) {
      if (!out.write(`${chunk.join('\n')}\n`)) await new Promise<void>((r) => out.once('drain', () => r()));
      chunk = [];
    }
  }
  out.write(chunk.length ? `${chunk.join('\n')}\n` : '');
  await new Promise<void>((resolve, reject) =>
    out.end((err?: Error | null) => (err ? reject(err) : resolve())),
  );
}

/** Median nanoseconds per call of `f` over `passes` passes of all query points. */
function time(qLat: Float64Array, qLon: Float64Array, f: (lat: number, lon: number) => unknown, passes = 5) {
  const per: number[] = [];
  for (let p = 0; p < passes; p++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < qLat.length; i++) f(qLat[i] as number, qLon[i] as number);
    per.push(Number(process.hrtime.bigint() - t0) / qLat.length);
  }
  return median(per);
}

async function main(): Promise<void> {
  const t0 = Date.now();
  await generate();
  const csvBytes = statSync(csv).size;
  process.stdout.write(
    `generated ${rows.toLocaleString('en')} rows (${(csvBytes / 1e6).toFixed(0)} MB) in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`,
  );

  const out = join(dir, 'addresses.bin');
  const importAddresses = native().importAddresses;
  if (!importAddresses) throw new Error('the native addon has no address importer');
  const report = (await importAddresses(out, [csv], { replace: true }, () => {})) as {
    addresses: number;
    bytes: number;
    seconds: number;
    peakRssBytes?: number | null;
  };
  process.stdout.write(
    `import: ${report.addresses.toLocaleString('en')} addresses in ${report.seconds.toFixed(2)} s = ` +
      `${Math.round(rows / report.seconds).toLocaleString('en')} rows/s; file ${(report.bytes / 1e6).toFixed(1)} MB = ` +
      `${(report.bytes / report.addresses).toFixed(1)} bytes/address; peak RSS ${((report.peakRssBytes ?? 0) / 1e6).toFixed(0)} MB ` +
      `(the bench's own arrays included)\n`,
  );

  // query points: a house moved up to 30 m, so that most have an answer within 75 m
  const qLat = new Float64Array(lookups);
  const qLon = new Float64Array(lookups);
  for (let i = 0; i < lookups; i++) {
    const j = Math.floor(random() * rows);
    qLat[i] = (lats[j] as number) + ((random() - 0.5) * 60) / 111_195;
    qLon[i] = (lons[j] as number) + ((random() - 0.5) * 60) / 68_000;
  }

  const handle = native().NativeEngine.open({ db: defaultDbDir, addresses: out });
  const index = new KDBush(rows);
  for (let i = 0; i < rows; i++) index.add(lons[i] as number, lats[i] as number);
  index.finish();

  // both must agree on which house is nearest (to 0.1 m ties) before their speed is compared
  let agree = 0;
  const checks = Math.min(lookups, 20_000);
  for (let i = 0; i < checks; i++) {
    const ours = handle.nearestAddress(qLat[i] as number, qLon[i] as number, ADDRESS_RADIUS_M);
    const theirs = around(index, qLon[i] as number, qLat[i] as number, 1, ADDRESS_RADIUS_M / 1000)[0];
    if (
      ours === null
        ? theirs === undefined
        : theirs !== undefined &&
          Math.abs((lats[theirs] as number) - ours.lat) < 2e-6 &&
          Math.abs((lons[theirs] as number) - ours.lon) < 2e-6
    )
      agree++;
  }
  const baseline = time(qLat, qLon, (lat, lon) => around(index, lon, lat, 1, ADDRESS_RADIUS_M / 1000));
  const core = time(qLat, qLon, (lat, lon) => handle.nearestAddress(lat, lon, ADDRESS_RADIUS_M));
  const engine = await Engine.open({ addresses: out, timezones: false });
  const reverse = time(qLat.subarray(0, 50_000), qLon.subarray(0, 50_000), (lat, lon) =>
    engine.reverse({ lat, lon, zoom: 18 }),
  );
  const queries = Array.from({ length: 2000 }, (_, i) => {
    const s = Math.floor(random() * (rows / HOUSES_PER_STREET));
    return `${(i % HOUSES_PER_STREET) + 1} ${s % 997} ${SUFFIXES[s % SUFFIXES.length]}, ${CITIES[i % CITIES.length]}`;
  });
  const searchPer: number[] = [];
  for (let p = 0; p < 3; p++) {
    const t = process.hrtime.bigint();
    for (const q of queries) engine.searchAddresses(q, 10);
    searchPer.push(Number(process.hrtime.bigint() - t) / queries.length);
  }
  engine.close();
  handle.close();

  const rate = (ns: number) => Math.round(1e9 / ns).toLocaleString('en');
  process.stdout.write(
    `agreement with geokdbush on the nearest house: ${((100 * agree) / checks).toFixed(2)} % of ${checks}\n` +
      `nearest address within ${ADDRESS_RADIUS_M} m, median of 5 passes over ${lookups.toLocaleString('en')} points:\n` +
      `  kdbush + geokdbush (baseline) ${(baseline / 1000).toFixed(2)} us = ${rate(baseline)}/s\n` +
      `  core nearestAddress over napi ${(core / 1000).toFixed(2)} us = ${rate(core)}/s (${(baseline / core).toFixed(1)}x)\n` +
      `engine.reverse zoom 18 (places + addresses): ${(reverse / 1000).toFixed(2)} us = ${rate(reverse)}/s\n` +
      `engine.searchAddresses ("12 345 Road, Midvale"): ${(median(searchPer) / 1000).toFixed(1)} us = ${rate(median(searchPer))}/s ` +
      `(the first search builds the street index, included in pass 1 only)\n`,
  );
  rmSync(dir, { recursive: true, force: true });
}

await main();
