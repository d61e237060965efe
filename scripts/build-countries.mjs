// Builds data/countries.bin, the country polygons of reverse geocoding, reproducibly: the
// same installed packages and the same data/places.bin give the same bytes.
//
//   node scripts/build-countries.mjs [--max-vertices N]     (after scripts/build-places.mjs)
//
// Source: Natural Earth 1:10m admin-0 countries (`world-atlas` `countries-10m.json`), whose
// ids are ISO 3166-1 numeric codes, mapped to alpha-2 by `i18n-iso-countries`.
//
// Labels, in this order:
// 1. A feature with an ISO number takes its alpha-2 code.
// 2. A feature without one takes the code of the country ISO 3166 puts its land in (NO_ISO
//    below: Kosovo XK, Northern Cyprus CY, Somaliland SO...); the disputed reefs and islets
//    without people (Spratly Islands, Scarborough Reef, Bajo Nuevo, Serranilla) are left out,
//    so a point there is sea.
// 3. Natural Earth draws some countries with their overseas parts (France with Réunion and
//    French Guiana, the Netherlands with Bonaire) where ISO 3166 and GeoNames give those
//    parts codes of their own, and draws Crimea as Russia's where ISO 3166 and GeoNames
//    have it Ukraine's. A polygon (an outer ring and its holes) takes another code when
//    most of the GeoNames places inside it (data/places.bin) carry that code and either
//    the code has no Natural Earth feature of its own (an overseas part) or at least
//    MIN_EVIDENCE places carry it. Fewer is too weak: the coarse 1:10m Monaco holds 3
//    French places of 4, an Azerbaijani exclave one Armenian place. The changes are printed.
//
// The polygons keep the TopoJSON quantisation (about 400 m x 190 m at the equator) on a
// 1e-5 degree lattice, unsimplified, in the labelled-polygon quadtree of
// scripts/polygon-tree.mjs (format: crates/whereabouts-core/src/polygons.rs).

import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readPlaces } from './places-file.mjs';
import { insideRings, PolygonTree } from './polygon-tree.mjs';
import { decodeArcs, planarRings, polygonsOf, ringFromArcs } from './topology.mjs';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const countriesLib = require('i18n-iso-countries');

const QUANTUM = 1e-5;
const MIN_EVIDENCE = 20;
// Vertices per leaf at most: 32 makes lookups 1.8x faster than 128 for a 4.5 MB file instead
// of 2.7 MB (cargo bench -p whereabouts-core --bench polygons).
const mvi = process.argv.indexOf('--max-vertices');
const MAX_VERTICES = mvi > 0 ? Number(process.argv[mvi + 1]) : 32;
const out = path.join(root, 'data', 'countries.bin');

/** Natural Earth units without an ISO number: the country whose land they are, or null to leave out. */
const NO_ISO = {
  Kosovo: 'XK', // the code in common use (GeoNames, the EU)
  'N. Cyprus': 'CY',
  'Cyprus U.N. Buffer Zone': 'CY',
  Akrotiri: 'GB', // UK sovereign base areas, without an ISO code of their own
  Dhekelia: 'GB',
  Somaliland: 'SO',
  'Siachen Glacier': 'IN', // administered by India
  Baikonur: 'KZ', // leased to Russia, Kazakh territory
  'USNB Guantanamo Bay': 'CU',
  'Indian Ocean Ter.': 'AU',
  'Coral Sea Is.': 'AU',
  'Clipperton I.': 'FR',
  'Spratly Is.': null,
  'Scarborough Reef': null,
  'Bajo Nuevo Bank': null,
  'Serranilla Bank': null,
};

/** The code most of `places` inside `rings` (lon/lat) carry, with its count and the total. */
function majorityInside(rings, places) {
  let [x0, x1, y0, y1] = [Infinity, -Infinity, Infinity, -Infinity];
  for (const r of rings) {
    for (const [x, y] of r) {
      x0 = Math.min(x0, x);
      x1 = Math.max(x1, x);
      y0 = Math.min(y0, y);
      y1 = Math.max(y1, y);
    }
  }
  const counts = new Map();
  let total = 0;
  for (const p of places) {
    if (p.lon < x0 || p.lon > x1 || p.lat < y0 || p.lat > y1) continue;
    if (!insideRings(rings, p.lon, p.lat)) continue;
    counts.set(p.cc, (counts.get(p.cc) ?? 0) + 1);
    total++;
  }
  let best = null;
  for (const [cc, n] of [...counts].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    if (!best || n > best.n) best = { cc, n };
  }
  return { best, total };
}

const topo = JSON.parse(fs.readFileSync(require.resolve('world-atlas/countries-10m.json'), 'utf8'));
const [sx, sy] = topo.transform.scale;
const [tx, ty] = topo.transform.translate;
const xMax = Math.round(360 / sx);
const arcs = decodeArcs(topo);
const poleY = (lat) => Math.round((lat - ty) / sy);
const places = readPlaces(path.join(root, 'data', 'places.bin'));

/** The alpha-2 code of a feature; null to leave it out. */
function codeOf(g) {
  const name = g.properties?.name ?? '';
  const code = g.id !== undefined ? countriesLib.numericToAlpha2(g.id) : undefined;
  if (code) return code;
  if (NO_ISO[name] === undefined)
    throw new Error(`no code for Natural Earth feature ${JSON.stringify(g.id)} ${name}`);
  return NO_ISO[name];
}
const featureCodes = new Set(topo.objects.countries.geometries.map(codeOf));

const polygons = []; // { code, rings (lon/lat) }
const reassigned = [];
const leftOut = [];
for (const g of topo.objects.countries.geometries) {
  const name = g.properties?.name ?? '';
  const code = codeOf(g);
  if (code === null) {
    leftOut.push(name);
    continue;
  }
  for (const poly of polygonsOf(g)) {
    const rings = poly.flatMap((ids) =>
      planarRings(ringFromArcs(arcs, ids), xMax, poleY(-90), poleY(90)).map((r) =>
        // closed by planarRings: drop the repeated first point
        r
          .slice(0, -1)
          .map(([x, y]) => [tx + x * sx, ty + y * sy]),
      ),
    );
    const { best, total } = majorityInside(rings, places);
    let label = code;
    const overseas = best && !featureCodes.has(best.cc);
    if (best && best.cc !== code && 2 * best.n > total && (overseas || best.n >= MIN_EVIDENCE)) {
      label = best.cc;
      reassigned.push(`${name} ${code}->${label} (${best.n}/${total} places)`);
    }
    polygons.push({ code: label, rings });
  }
}

const codes = [...new Set(polygons.map((p) => p.code))].sort();
const labelOf = new Map(codes.map((c, i) => [c, i]));
const tree = new PolygonTree({ quantum: QUANTUM, maxVertices: MAX_VERTICES, maxDepth: 22 });
tree.buildFrom(
  polygons.map((p) => ({
    label: labelOf.get(p.code),
    rings: p.rings.map((r) => r.map(([lon, lat]) => [Math.round(tree.lx(lon)), Math.round(tree.ly(lat))])),
  })),
);
const buf = tree.toBuffer('WBCNTRY1', codes);
fs.writeFileSync(out, buf);
const { stats, nodes } = tree;
console.log(`left out: ${leftOut.join(', ')}`);
console.log(`overseas parts relabelled by their places: ${reassigned.join('; ') || 'none'}`);
console.log(
  `${path.relative(root, out)}: ${buf.length} bytes; ${codes.length} countries, ${polygons.length} polygons, ` +
    `${nodes.length} nodes, ${stats.leaves} leaves, ${stats.fills} fills, ${stats.sea} sea, ${stats.vertices} vertices`,
);
