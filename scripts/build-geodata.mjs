// Builds the embedded geodata in data/ from registry packages, reproducibly:
// the same inputs give the same bytes (no timestamps, no Map/Set iteration order
// that depends on anything but the data, no floating-point output that varies).
//
//   node scripts/build-geodata.mjs
//
// Outputs:
//   data/land.bin          land polygons for border strictness (format: crates/whereabouts-core/src/polygons.rs)
//   data/countries.csv     alpha2,lat,lon,radius_m,name for the IP fallback
//   data/NOTICE-geodata.md attribution

import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PolygonTree, quantiseRing } from './polygon-tree.mjs';
import { decodeArcs, planarRings, polygonsOf, ringFromArcs } from './topology.mjs';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = path.join(root, 'data');
const countriesLib = require('i18n-iso-countries');

// ---------------------------------------------------------------- land.bin

// Natural Earth 1:10m land as a labelled-polygon quadtree with one label, "land" (the
// tree of scripts/polygon-tree.mjs, read by crates/whereabouts-core/src/polygons.rs):
// vertices rounded from the TopoJSON quantisation to a 1e-5 degree lattice (under 0.6 m),
// unsimplified; at most LAND_MAX_VERTICES per leaf, as the country file.
const LAND_QUANTUM = 1e-5;
const LAND_MAX_VERTICES = 32;

function buildLand() {
  const topo = JSON.parse(fs.readFileSync(require.resolve('world-atlas/land-10m.json'), 'utf8'));
  const [sx, sy] = topo.transform.scale;
  const [tx, ty] = topo.transform.translate;
  const xMax = Math.round(360 / sx); // lattice x of lon +180
  if (Math.abs(xMax * sx - 360) > 1e-9) throw new Error('unexpected lattice');
  const arcs = decodeArcs(topo);
  // Below lat -90 and above lat 90: Antarctica is closed along its pole row, and the
  // tree's root box (89.9999 degrees) clips it there.
  const poleS = Math.floor((-90 - ty) / sy);
  const poleN = Math.ceil((90 - ty) / sy);
  const tree = new PolygonTree({ quantum: LAND_QUANTUM, maxVertices: LAND_MAX_VERTICES, maxDepth: 22 });
  // One feature per polygon (its outer ring and holes), all labelled "land": the first
  // feature containing a point answers, so polygons that touch or overlap make a union.
  const features = [];
  let wraps = 0;
  let slivers = 0;
  for (const geom of topo.objects.land.geometries) {
    for (const poly of polygonsOf(geom)) {
      const rings = [];
      for (const ids of poly) {
        const pieces = planarRings(ringFromArcs(arcs, ids), xMax, poleS, poleN);
        if (pieces.length !== 1) wraps++;
        for (const r of pieces) {
          // closed by planarRings: drop the repeated first point
          const ring = quantiseRing(
            r
              .slice(0, -1)
              .map(([x, y]) => [Math.round(tree.lx(tx + x * sx)), Math.round(tree.ly(ty + y * sy))]),
          );
          if (ring.length === 2) {
            // Natural Earth's quantisation flattens some reefs and islets to a line there and
            // back; a sliver one lattice step wide keeps them as coast for the distance.
            const [[ax, ay], [bx, by]] = ring;
            const wide = Math.abs(bx - ax) >= Math.abs(by - ay);
            ring.push([
              Math.round((ax + bx) / 2) + (wide ? 0 : 1),
              Math.round((ay + by) / 2) + (wide ? 1 : 0),
            ]);
            slivers++;
          }
          if (ring.length >= 3) rings.push(ring);
        }
      }
      if (rings.length) features.push({ label: 0, rings });
    }
  }
  tree.buildFrom(features);
  const buf = tree.toBuffer('WBLAND02', ['land']);
  const { stats, nodes } = tree;
  console.log(
    `land: ${features.length} polygons, ${wraps} ring(s) cut at the antimeridian, ${slivers} flat islet(s) widened; ${nodes.length} nodes, ` +
      `${stats.leaves} leaves, ${stats.fills} fills, ${stats.sea} sea, ${stats.vertices} vertices, ${buf.length} bytes`,
  );
  return buf;
}

// ---------------------------------------------------------------- countries.csv

function buildCountries() {
  const topo = JSON.parse(fs.readFileSync(require.resolve('world-atlas/countries-10m.json'), 'utf8'));
  const [sx, sy] = topo.transform.scale;
  const [tx, ty] = topo.transform.translate;
  const xMax = Math.round(360 / sx);
  const arcs = decodeArcs(topo);
  const toLonLat = (ring) => ring.map(([x, y]) => [tx + x * sx, ty + y * sy]);
  const poleY = (lat) => Math.round((lat - ty) / sy);

  const byCode = new Map();
  for (const g of topo.objects.countries.geometries) {
    const name = g.properties?.name;
    let code = g.id !== undefined ? countriesLib.numericToAlpha2(g.id) : undefined;
    // Natural Earth gives Kosovo no ISO number; XK is the code in common use.
    if (!code && name === 'Kosovo') code = 'XK';
    if (!code) continue;
    const polys = [];
    for (const poly of polygonsOf(g)) {
      const [outer, ...holes] = poly.map((ids) =>
        planarRings(ringFromArcs(arcs, ids), xMax, poleY(-90), poleY(90)).map(toLonLat),
      );
      const pieces = outer.map((r) => [r]);
      for (const hole of holes.flat()) {
        const home = pieces.find((p) => insidePoly([p[0]], hole[0][0], hole[0][1])) || pieces[0];
        if (home) home.push(hole);
      }
      polys.push(...pieces);
    }
    const entry = byCode.get(code) || { code, names: [], polys: [] };
    entry.names.push(name);
    entry.polys.push(...polys);
    byCode.set(code, entry);
  }

  const rows = [];
  for (const code of [...byCode.keys()].sort()) {
    const e = byCode.get(code);
    let total = 0;
    let largest = null;
    let largestArea = -1;
    for (const poly of e.polys) {
      const a = polygonArea(poly);
      total += a;
      if (a > largestArea) {
        largestArea = a;
        largest = poly;
      }
    }
    const [lat, lon] = representativePoint(largest);
    // Microstates (the Vatican) quantise to almost no area at 1:10m; an IP answer's radius
    // is never tighter than a kilometre anyway.
    const radius = Math.max(1000, Math.round(Math.sqrt(total / Math.PI)));
    // The official English name, falling back to Natural Earth's.
    const name = countriesLib.getName(code, 'en') || e.names[0];
    rows.push(`${code},${lat.toFixed(5)},${lon.toFixed(5)},${radius},${csv(name)}`);
  }
  return `alpha2,lat,lon,radius_m,name\n${rows.join('\n')}\n`;
}

function csv(s) {
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

// Area on the sphere of a ring whose edges follow the lon/lat grid in between
// vertices; good to well under a percent at 1:10m.
function ringArea(ring) {
  const R = 6371008.8;
  let s = 0;
  for (let i = 0; i < ring.length; i++) {
    const [l1, p1] = ring[i];
    const [l2, p2] = ring[(i + 1) % ring.length];
    s += (((l2 - l1) * Math.PI) / 180) * (Math.sin((p1 * Math.PI) / 180) + Math.sin((p2 * Math.PI) / 180));
  }
  return (Math.abs(s) / 2) * R * R;
}

function polygonArea(poly) {
  return Math.max(0, ringArea(poly[0]) - poly.slice(1).reduce((s, r) => s + ringArea(r), 0));
}

function insidePoly(poly, lon, lat) {
  let inside = false;
  for (const ring of poly) {
    for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
      const [xi, yi] = ring[i];
      const [xj, yj] = ring[j];
      if (yi > lat !== yj > lat && lon < ((xj - xi) * (lat - yi)) / (yj - yi) + xi) inside = !inside;
    }
  }
  return inside;
}

// Distance in scaled degrees (lon shrunk by cos(lat0)) from a point to the boundary.
function boundaryDist(poly, lon, lat, k) {
  let best = Infinity;
  for (const ring of poly) {
    for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
      const ax = ring[j][0] * k;
      const ay = ring[j][1];
      const bx = ring[i][0] * k;
      const by = ring[i][1];
      const px = lon * k;
      const dx = bx - ax;
      const dy = by - ay;
      const l2 = dx * dx + dy * dy;
      let t = l2 ? ((px - ax) * dx + (lat - ay) * dy) / l2 : 0;
      t = Math.max(0, Math.min(1, t));
      best = Math.min(best, Math.hypot(ax + t * dx - px, ay + t * dy - lat));
    }
  }
  return best;
}

// Area-weighted centroid of the polygon (in a frame with lon scaled by cos of the
// mean latitude) when it lies inside; otherwise the best point of a grid search
// for the point farthest from the boundary, refined twice around the winner.
function representativePoint(poly) {
  const outer = poly[0];
  let minX = Infinity;
  let maxX = -Infinity;
  let minY = Infinity;
  let maxY = -Infinity;
  for (const [x, y] of outer) {
    minX = Math.min(minX, x);
    maxX = Math.max(maxX, x);
    minY = Math.min(minY, y);
    maxY = Math.max(maxY, y);
  }
  const k = Math.max(0.05, Math.cos((((minY + maxY) / 2) * Math.PI) / 180));
  let a = 0;
  let cx = 0;
  let cy = 0;
  poly.forEach((ring, ri) => {
    let ra = 0;
    let rx = 0;
    let ry = 0;
    for (let i = 0; i < ring.length; i++) {
      const [x1, y1] = ring[i];
      const [x2, y2] = ring[(i + 1) % ring.length];
      const c = x1 * k * y2 - x2 * k * y1;
      ra += c;
      rx += (x1 * k + x2 * k) * c;
      ry += (y1 + y2) * c;
    }
    // holes subtract whatever their orientation
    const sign = (ri === 0 ? 1 : -1) * Math.sign(ra || 1);
    a += (sign * ra) / 2;
    cx += (sign * rx) / 6;
    cy += (sign * ry) / 6;
  });
  if (a !== 0) {
    const lon = cx / a / k;
    const lat = cy / a;
    if (insidePoly(poly, lon, lat) && boundaryDist(poly, lon, lat, k) > 1e-6) return [lat, lon];
  }
  let bestP = null;
  let bestD = -1;
  let [x0, x1, y0, y1] = [minX, maxX, minY, maxY];
  for (let pass = 0; pass < 3; pass++) {
    const n = 40;
    for (let j = 0; j <= n; j++) {
      for (let i = 0; i <= n; i++) {
        const lon = x0 + ((x1 - x0) * (i + 0.5)) / (n + 1);
        const lat = y0 + ((y1 - y0) * (j + 0.5)) / (n + 1);
        if (!insidePoly(poly, lon, lat)) continue;
        const d = boundaryDist(poly, lon, lat, k);
        if (d > bestD) {
          bestD = d;
          bestP = [lat, lon];
        }
      }
    }
    if (!bestP) break;
    const wx = (x1 - x0) / 8;
    const wy = (y1 - y0) / 8;
    [x0, x1, y0, y1] = [bestP[1] - wx, bestP[1] + wx, bestP[0] - wy, bestP[0] + wy];
  }
  if (!bestP) {
    const [x, y] = outer[0];
    return [y, x];
  }
  return bestP;
}

// ---------------------------------------------------------------- NOTICE

const NOTICE = `# Embedded geodata: sources and licences

Generated by \`node scripts/build-geodata.mjs\` from npm packages in \`node_modules\`;
re-running it gives byte-identical files.

| file | built from | licence |
|---|---|---|
| \`land.bin\` | Natural Earth 1:10m land (\`world-atlas\` \`land-10m.json\`) | Natural Earth: public domain; world-atlas packaging: ISC (Mike Bostock) |
| \`countries.csv\` | Natural Earth 1:10m admin-0 countries (\`world-atlas\` \`countries-10m.json\`); alpha-2 codes and English names from \`i18n-iso-countries\` | Natural Earth: public domain; world-atlas: ISC; i18n-iso-countries: MIT |
| \`countries.bin\` | Natural Earth 1:10m admin-0 countries (\`world-atlas\` \`countries-10m.json\`), labelled with ISO 3166-1 alpha-2 codes from \`i18n-iso-countries\`; built by \`node scripts/build-countries.mjs\` after \`data/places.bin\` | Natural Earth: public domain; world-atlas: ISC; i18n-iso-countries: MIT |

Made with Natural Earth. Free vector and raster map data @ naturalearthdata.com.

## Notes
- \`land.bin\` keeps the TopoJSON quantisation (1e5 steps in longitude and in latitude, i.e. about
  400 m x 190 m at the equator), rounded to a 1e-5 degree lattice, unsimplified, and treats edges as
  straight lines in lon/lat. Antarctica's ring, drawn for a spherical renderer, is closed along the
  antimeridian and lat -90 so that the planar polygon covers the pole; the 13 islets the quantisation
  flattens to a line are widened to a sliver one lattice step wide. It is the labelled-polygon quadtree
  of \`crates/whereabouts-core/src/polygons.rs\` with one label, \`land\` (magic \`WBLAND02\`), as
  \`timezones.bin\` and \`countries.bin\` are.
- \`countries.csv\`: \`lat,lon\` is a point inside the country's largest polygon (its centroid when
  that lies inside, else a point far from its edges); \`radius_m\` is the radius of the disc with the
  country's total area. Kosovo, which Natural Earth lists without an ISO number, is given \`XK\`;
  other Natural Earth units without an ISO number (Somaliland, Northern Cyprus, sovereign base areas...) are left out.
  Territories that share a number (Ashmore and Cartier Islands with Australia) are merged.
- \`countries.bin\` (reverse geocoding's country): the same admin-0 polygons on a 1e-5 degree lattice,
  unsimplified, in the labelled-polygon quadtree of \`crates/whereabouts-core/src/polygons.rs\`.
  Units without an ISO number get the code of the country ISO 3166 puts their land in (Kosovo \`XK\`,
  Northern Cyprus and the UN buffer zone \`CY\`, Somaliland \`SO\`, Siachen \`IN\`, Baikonur \`KZ\`, Guantanamo
  \`CU\`, Akrotiri and Dhekelia \`GB\`, Australia's Indian Ocean and Coral Sea territories \`AU\`, Clipperton
  \`FR\`); the uninhabited disputed reefs (Spratly Is., Scarborough Reef, Bajo Nuevo, Serranilla) are left
  out. Polygons whose GeoNames places mostly carry another code take it when that code has no
  Natural Earth unit of its own (France's overseas departments \`GF\`, \`GP\`, \`MQ\`, \`RE\`, \`YT\`; Caribbean
  Netherlands \`BQ\`) or when at least 20 places say so (Crimea, drawn as Russia's, \`UA\` as in ISO 3166
  and GeoNames). The build prints every such change.

## Rebuild
\`\`\`
node scripts/build-geodata.mjs
node scripts/build-countries.mjs   # after scripts/build-places.mjs
\`\`\`
`;

// ---------------------------------------------------------------- main

fs.mkdirSync(dataDir, { recursive: true });
const land = buildLand();
fs.writeFileSync(path.join(dataDir, 'land.bin'), land);
const countries = buildCountries();
fs.writeFileSync(path.join(dataDir, 'countries.csv'), countries);
fs.writeFileSync(path.join(dataDir, 'NOTICE-geodata.md'), NOTICE);
console.log(`countries: ${countries.split('\n').length - 2} rows`);
