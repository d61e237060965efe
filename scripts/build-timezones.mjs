// Builds data/timezones.bin from the timezone polygons that `geo-tz` ships (the
// timezone-boundary-builder "1970" product, geo-tz's default), reproducibly: the same
// inputs and options give the same bytes.
//
//   node scripts/build-timezones.mjs [--quantum DEG] [--tolerance DEG] [--max-vertices N]
//
// Why start from geo-tz's own quadtree: our answers must agree with geo-tz's, and geo-tz
// decides a point by the quad it falls in (a quad with no data is sea, a quad wholly inside
// one zone answers without geometry). Reusing its quads, with the same midpoint arithmetic,
// makes those decisions identical; inside a quad that holds geometry we split further
// until every leaf has few vertices, so a lookup tests a few dozen edges at most.
//
// Size and agreement: the source holds 6.9 million vertices at 1e-6 degree. By default they
// are kept as they are (--tolerance 0: no Douglas-Peucker simplification) on geo-tz's own
// 1e-6 degree lattice (--quantum), 33 MB: 99.997 % agreement with geo-tz within 1 km of a
// border (bench/timezone.ts). Simplifying to 2e-4 degree (about 22 m) on a 1e-5 lattice made
// a 9.9 MB file but moved borders by up to 22 m: 99.63 % there; no simplification on the
// 1e-5 lattice (25 MB) rounds borders by up to 0.7 m: 99.96 %.
//
// File format: crates/whereabouts-core/src/polygons.rs (the tree, shared with
// data/countries.bin: scripts/polygon-tree.mjs).

import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  children,
  clipFeatures,
  FILL,
  NODE,
  PolygonTree,
  quantiseRing,
  rootQuad,
  SEA,
  simplifyRing,
} from './polygon-tree.mjs';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const geobuf = require('geobuf');
const PbfModule = require('pbf');
const Pbf = PbfModule.default ?? PbfModule;

function option(name, fallback) {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}
const QUANTUM = option('--quantum', 1e-6);
const TOLERANCE = option('--tolerance', 0);
const MAX_VERTICES = option('--max-vertices', 128);
// Depth limit of the split: geo-tz's quads go to depth 9; 2^-22 of the world is ~9 m.
const MAX_DEPTH = 22;
const out = process.argv.includes('--out')
  ? process.argv[process.argv.indexOf('--out') + 1]
  : path.join(root, 'data', 'timezones.bin');

const geoTzDir = path.join(path.dirname(path.dirname(require.resolve('geo-tz'))), 'data');
const index = JSON.parse(fs.readFileSync(path.join(geoTzDir, 'timezones-1970.geojson.index.json'), 'utf8'));
const dat = fs.readFileSync(path.join(geoTzDir, 'timezones-1970.geojson.geo.dat'));
const zoneNames = index.timezones;
const zoneIds = new Map(zoneNames.map((n, i) => [n, i]));

const tree = new PolygonTree({ quantum: QUANTUM, maxVertices: MAX_VERTICES, maxDepth: MAX_DEPTH });
let sourceVertices = 0;

/** Decodes one geo-tz leaf into features with rings in lattice space, simplified. */
function sourceFeatures(pos, len) {
  const fc = geobuf.decode(new Pbf(dat.subarray(pos, pos + len)));
  const res = [];
  for (const f of fc.features) {
    const zone = zoneIds.get(f.properties.tzid);
    if (zone === undefined) throw new Error(`unknown zone ${f.properties.tzid}`);
    const g = f.geometry;
    const polys = g.type === 'Polygon' ? [g.coordinates] : g.type === 'MultiPolygon' ? g.coordinates : [];
    const rings = [];
    for (const p of polys) {
      for (const r of p) {
        sourceVertices += r.length;
        let pts = r.map(([lon, lat]) => [tree.lx(lon), tree.ly(lat)]);
        const f0 = pts[0];
        const fl = pts[pts.length - 1];
        if (pts.length > 1 && f0[0] === fl[0] && f0[1] === fl[1]) pts = pts.slice(0, -1);
        pts = quantiseRing(simplifyRing(pts, TOLERANCE / QUANTUM));
        if (pts.length >= 3) rings.push(pts);
      }
    }
    res.push({ label: zone, rings });
  }
  return res;
}

function walk(src, q, depth) {
  const id = tree.newNode();
  const kids = children(q);
  for (let k = 0; k < 4; k++) {
    const c = src['abcd'[k]];
    let entry;
    if (!c) entry = SEA;
    else if (Array.isArray(c)) {
      // several zones overlap the whole quad: geo-tz lists them all, we answer its first
      entry = (c[0] << 2) | FILL;
    } else if (c.pos >= 0 && c.len) {
      const box = tree.boxOf(kids[k]);
      entry = tree.place(kids[k], clipFeatures(sourceFeatures(c.pos, c.len), box), depth + 1);
    } else entry = (walk(c, kids[k], depth + 1) << 2) | NODE;
    tree.nodes[id][k] = entry;
  }
  return id;
}

walk(index.lookup, rootQuad, 0);

// ---------------------------------------------------------------- file

const buf = tree.toBuffer('WBTZONE1', zoneNames);
fs.writeFileSync(out, buf);
const { stats, nodes } = tree;
console.log(
  `${path.relative(root, out)}: ${buf.length} bytes; ${zoneNames.length} zones, ${nodes.length} nodes, ` +
    `${stats.leaves} leaves, ${stats.fills} fills, ${stats.sea} sea; ` +
    `${stats.vertices} vertices from ${sourceVertices} (quantum ${QUANTUM}, tolerance ${TOLERANCE})`,
);
