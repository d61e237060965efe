// Builds the embedded geodata in data/ from registry packages, reproducibly:
// the same inputs give the same bytes (no timestamps, no Map/Set iteration order
// that depends on anything but the data, no floating-point output that varies).
//
//   node scripts/build-geodata.mjs
//
// Outputs:
//   data/land.bin          land index for border strictness (format: crates/whereabouts-core/src/land.rs)
//   data/countries.csv     alpha2,lat,lon,radius_m,name for the IP fallback
//   data/NOTICE-geodata.md attribution

import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checksum } from './datafile.mjs';
import { decodeArcs, planarRings, polygonsOf, ringFromArcs } from './topology.mjs';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = path.join(root, 'data');
const countriesLib = require('i18n-iso-countries');

const M_PER_DEG = (6371008.8 * Math.PI) / 180;

// ---------------------------------------------------------------- land.bin

// Lattice: the TopoJSON quantisation grid itself, so vertices are exact integers.
// Grid: T-cells of 8x8 E-cells, E-cells of 4x4 R-cells, R-cells of 8x16 units
// (about 3.2 x 3.0 km at the equator: an R-cell's diagonal stays under 4.4 km).
const RW = 8;
const RH = 16;
const EW = RW * 4;
const EH = RH * 4;
const TW = EW * 8;
const TH = EH * 8;
const DENSIFY_X = 64;
const DENSIFY_Y = 60;
const NEAR_M = 5000;
const MID_M = 15000;
// Bounds come from a local equirectangular frame; this covers its distortion
// over the ~20 km they span, below 80 degrees of latitude.
const SAFETY = 1.03;
const SAFETY_ADD_M = 10;
const MAX_CLASS_LAT = 80;

function buildLand() {
  const topo = JSON.parse(fs.readFileSync(require.resolve('world-atlas/land-10m.json'), 'utf8'));
  const [sx, sy] = topo.transform.scale;
  const [tx, ty] = topo.transform.translate;
  const xMax = Math.round(360 / sx); // lattice x of lon +180
  if (Math.abs(xMax * sx - 360) > 1e-9) throw new Error('unexpected lattice');
  // The grid starts below lat -90 at a whole number of T-cells so every cell row
  // is on the lattice.
  const yPoleExact = (-90 - ty) / sy;
  const y0 = -Math.ceil(-yPoleExact / TH) * TH;
  const yPole = Math.floor(yPoleExact);
  const yTop = Math.round((topo.bbox[3] - ty) / sy);
  const tCols = Math.ceil((xMax + 1) / TW);
  const tRows = Math.ceil((yTop + 1 - y0) / TH);
  const rCols = tCols * (TW / RW);
  const rRows = tRows * (TH / RH);
  const eCols = tCols * 8;
  const eRows = tRows * 8;

  const arcs = decodeArcs(topo);
  // Flat segment arrays; consecutive segments of one ring are consecutive here.
  const segAx = [];
  const segAy = [];
  const segBx = [];
  const segBy = [];
  const segRing = [];
  let ringNo = 0;
  let wraps = 0;
  for (const geom of topo.objects.land.geometries) {
    for (const poly of polygonsOf(geom)) {
      for (const ids of poly) {
        const pieces = planarRings(ringFromArcs(arcs, ids), xMax, yPole, Math.ceil((90 - ty) / sy));
        if (pieces.length !== 1) wraps++;
        for (const ring of pieces) {
          for (let i = 0; i + 1 < ring.length; i++) {
            const [ax, ay] = ring[i];
            const [bx, by] = ring[i + 1];
            if (ax === bx && ay === by) continue;
            const n = Math.max(
              1,
              Math.ceil(Math.max(Math.abs(bx - ax) / DENSIFY_X, Math.abs(by - ay) / DENSIFY_Y)),
            );
            let px = ax;
            let py = ay;
            for (let k = 1; k <= n; k++) {
              const qx = k === n ? bx : Math.round(ax + ((bx - ax) * k) / n);
              const qy = k === n ? by : Math.round(ay + ((by - ay) * k) / n);
              segAx.push(px);
              segAy.push(py);
              segBx.push(qx);
              segBy.push(qy);
              segRing.push(ringNo);
              px = qx;
              py = qy;
            }
          }
          ringNo++;
        }
      }
    }
  }
  const nSeg = segAx.length;
  console.log(`land: ${ringNo} rings, ${nSeg} segments, ${wraps} ring(s) cut at the antimeridian`);

  // Does segment s touch the closed box [x0,x1]x[y0,y1]?
  function touches(s, x0, y0b, x1, y1) {
    const ax = segAx[s];
    const ay = segAy[s];
    const bx = segBx[s];
    const by = segBy[s];
    if (Math.max(ax, bx) < x0 || Math.min(ax, bx) > x1 || Math.max(ay, by) < y0b || Math.min(ay, by) > y1)
      return false;
    const dx = bx - ax;
    const dy = by - ay;
    const c0 = dx * (y0b - ay) - dy * (x0 - ax);
    const c1 = dx * (y0b - ay) - dy * (x1 - ax);
    const c2 = dx * (y1 - ay) - dy * (x0 - ax);
    const c3 = dx * (y1 - ay) - dy * (x1 - ax);
    return !((c0 > 0 && c1 > 0 && c2 > 0 && c3 > 0) || (c0 < 0 && c1 < 0 && c2 < 0 && c3 < 0));
  }

  // Segments per E-cell and touched R-cells.
  const eSegs = new Map(); // eIndex -> [seg ids ascending]
  const rTouched = new Set();
  for (let s = 0; s < nSeg; s++) {
    const minX = Math.min(segAx[s], segBx[s]);
    const maxX = Math.max(segAx[s], segBx[s]);
    const minY = Math.min(segAy[s], segBy[s]) - y0;
    const maxY = Math.max(segAy[s], segBy[s]) - y0;
    for (
      let ey = Math.max(0, Math.floor(minY / EH) - (minY % EH === 0 ? 1 : 0));
      ey <= Math.floor(maxY / EH) && ey < eRows;
      ey++
    ) {
      for (
        let ex = Math.max(0, Math.floor(minX / EW) - (minX % EW === 0 ? 1 : 0));
        ex <= Math.floor(maxX / EW) && ex < eCols;
        ex++
      ) {
        if (!touches(s, ex * EW, y0 + ey * EH, ex * EW + EW, y0 + ey * EH + EH)) continue;
        const key = ey * eCols + ex;
        let list = eSegs.get(key);
        if (!list) {
          list = [];
          eSegs.set(key, list);
        }
        list.push(s);
      }
    }
    for (let ry = Math.max(0, Math.floor(minY / RH) - 1); ry <= Math.floor(maxY / RH) && ry < rRows; ry++) {
      for (let rx = Math.max(0, Math.floor(minX / RW) - 1); rx <= Math.floor(maxX / RW) && rx < rCols; rx++) {
        if (touches(s, rx * RW, y0 + ry * RH, rx * RW + RW, y0 + ry * RH + RH)) rTouched.add(ry * rCols + rx);
      }
    }
  }
  console.log(`land: ${eSegs.size} E-cells and ${rTouched.size} R-cells hold edges`);

  // Even-odd status at R-cell centres from the crossings of each R-row centre line.
  const rowCross = Array.from({ length: rRows }, () => []);
  for (let s = 0; s < nSeg; s++) {
    const ay = segAy[s] - y0;
    const by = segBy[s] - y0;
    const lo = Math.min(ay, by);
    const hi = Math.max(ay, by);
    // centre of row r is r*RH + RH/2; half-open rule lo <= c < hi
    for (let r = Math.max(0, Math.ceil((lo - RH / 2) / RH)); r < rRows && r * RH + RH / 2 < hi; r++) {
      const c = r * RH + RH / 2;
      const t = (c - ay) / (by - ay);
      rowCross[r].push(segAx[s] + t * (segBx[s] - segAx[s]));
    }
  }
  for (const row of rowCross) row.sort((a, b) => a - b);
  function isLandAtCentre(rx, ry) {
    const row = rowCross[ry];
    const xc = rx * RW + RW / 2;
    let lo = 0;
    let hi = row.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (row[mid] <= xc) lo = mid + 1;
      else hi = mid;
    }
    return (row.length - lo) % 2 === 1;
  }

  const tHasEdges = new Uint8Array(tCols * tRows);
  for (const key of eSegs.keys()) {
    const ey = Math.floor(key / eCols);
    const ex = key % eCols;
    tHasEdges[(ey >> 3) * tCols + (ex >> 3)] = 1;
  }
  // Status per R-cell: 0 land, 1 water, 2 edges. Stored per T-cell with edges;
  // T-cells without edges are uniform.
  const tStatus = new Uint8Array(tCols * tRows);
  const rStatus = new Map();
  const RPT = (TW / RW) * (TH / RH);
  for (let ty2 = 0; ty2 < tRows; ty2++) {
    for (let tx2 = 0; tx2 < tCols; tx2++) {
      const t = ty2 * tCols + tx2;
      const rx0 = tx2 * (TW / RW);
      const ry0 = ty2 * (TH / RH);
      if (!tHasEdges[t]) {
        tStatus[t] = isLandAtCentre(rx0, ry0) ? 0 : 1;
        continue;
      }
      const st = new Uint8Array(RPT);
      for (let j = 0; j < TH / RH; j++) {
        for (let i = 0; i < TW / RW; i++) {
          const r = (ry0 + j) * rCols + rx0 + i;
          st[j * (TW / RW) + i] = rTouched.has(r) ? 2 : isLandAtCentre(rx0 + i, ry0 + j) ? 0 : 1;
        }
      }
      rStatus.set(t, st);
    }
  }
  const rPerTRow = TW / RW;
  const rPerTCol = TH / RH;
  function statusOf(rx, ry) {
    const t = Math.floor(ry / rPerTCol) * tCols + Math.floor(rx / rPerTRow);
    const st = rStatus.get(t);
    if (!st) return tStatus[t];
    return st[(ry % rPerTCol) * rPerTRow + (rx % rPerTRow)];
  }

  // Upper bound of the distance from every point of an R-cell to land: the
  // distance to one segment is convex, so its maximum over the cell is at a
  // corner, and any segment gives a valid bound. Candidate segments spread from
  // the edge cells outwards; a better candidate only tightens the bound.
  const best = new Map(); // t -> Float64Array(RPT)
  const bestSeg = new Map(); // t -> Int32Array(RPT)
  function slot(rx, ry, create) {
    const t = Math.floor(ry / rPerTCol) * tCols + Math.floor(rx / rPerTRow);
    let b = best.get(t);
    if (!b) {
      if (!create) return null;
      b = new Float64Array(RPT).fill(Infinity);
      best.set(t, b);
      bestSeg.set(t, new Int32Array(RPT).fill(-1));
    }
    return [b, bestSeg.get(t), (ry % rPerTCol) * rPerTRow + (rx % rPerTRow)];
  }
  function maxCornerDist(rx, ry, s) {
    const cy = y0 + ry * RH + RH / 2;
    const lat = ty + cy * sy;
    if (Math.abs(lat) > MAX_CLASS_LAT) return Infinity;
    const ux = sx * M_PER_DEG * Math.cos((lat * Math.PI) / 180);
    const uy = sy * M_PER_DEG;
    const cx = rx * RW + RW / 2;
    let ax = segAx[s];
    let bx = segBx[s];
    if (ax - cx > xMax / 2) {
      ax -= xMax;
      bx -= xMax;
    } else if (cx - ax > xMax / 2) {
      ax += xMax;
      bx += xMax;
    }
    const axm = (ax - cx) * ux;
    const aym = (segAy[s] - cy) * uy;
    const dxm = (bx - ax) * ux;
    const dym = (segBy[s] - segAy[s]) * uy;
    const len2 = dxm * dxm + dym * dym;
    let worst = 0;
    for (const [ox, oy] of [
      [-RW / 2, -RH / 2],
      [RW / 2, -RH / 2],
      [-RW / 2, RH / 2],
      [RW / 2, RH / 2],
    ]) {
      const px = ox * ux;
      const py = oy * uy;
      let t = len2 > 0 ? ((px - axm) * dxm + (py - aym) * dym) / len2 : 0;
      t = Math.max(0, Math.min(1, t));
      const ex = axm + t * dxm - px;
      const ey = aym + t * dym - py;
      worst = Math.max(worst, Math.hypot(ex, ey));
    }
    return worst;
  }
  const queue = [];
  for (const key of [...rTouched].sort((a, b) => a - b)) {
    const ry = Math.floor(key / rCols);
    const rx = key % rCols;
    const ex = Math.floor(rx / 4);
    const ey = Math.floor(ry / 4);
    const [b, bs, i] = slot(rx, ry, true);
    for (const s of eSegs.get(ey * eCols + ex) || []) {
      if (!touches(s, rx * RW, y0 + ry * RH, rx * RW + RW, y0 + ry * RH + RH)) continue;
      const d = maxCornerDist(rx, ry, s);
      if (d < b[i] || bs[i] < 0) {
        b[i] = d;
        bs[i] = s;
      }
    }
    queue.push(rx, ry);
  }
  const limit = (MID_M - SAFETY_ADD_M) / SAFETY;
  for (let head = 0; head < queue.length; head += 2) {
    const rx = queue[head];
    const ry = queue[head + 1];
    const [, bs, i] = slot(rx, ry, false);
    const s = bs[i];
    for (let dy = -1; dy <= 1; dy++) {
      const ny = ry + dy;
      if (ny < 0 || ny >= rRows) continue;
      for (let dx = -1; dx <= 1; dx++) {
        if (!dx && !dy) continue;
        const nx = (rx + dx + rCols) % rCols;
        if (statusOf(nx, ny) !== 1) continue;
        const d = maxCornerDist(nx, ny, s);
        if (d > limit) continue;
        const [nb, nbs, ni] = slot(nx, ny, true);
        if (d < nb[ni]) {
          nb[ni] = d;
          nbs[ni] = s;
          queue.push(nx, ny);
        }
      }
    }
  }
  console.log(`land: distance bounds for ${queue.length / 2} R-cell visits`);

  function classOf(rx, ry) {
    const st = statusOf(rx, ry);
    if (st === 0) return 0;
    if (st === 2) return 1;
    const sl = slot(rx, ry, false);
    const d = sl ? sl[0][sl[2]] * SAFETY + SAFETY_ADD_M : Infinity;
    return d <= NEAR_M ? 1 : d <= MID_M ? 2 : 3;
  }

  // Serialise.
  const top = new Uint32Array(tCols * tRows);
  const nodes = [];
  const records = [];
  const edgeChunks = [];
  let edgeBytes = 0;
  for (let ty2 = 0; ty2 < tRows; ty2++) {
    for (let tx2 = 0; tx2 < tCols; tx2++) {
      const t = ty2 * tCols + tx2;
      const rx0 = tx2 * rPerTRow;
      const ry0 = ty2 * rPerTCol;
      if (!tHasEdges[t] && (tStatus[t] === 0 || !best.has(t))) {
        top[t] = tStatus[t] === 0 ? 0 : 3;
        continue;
      }
      const classes = new Uint8Array(RPT);
      for (let j = 0; j < rPerTCol; j++)
        for (let i = 0; i < rPerTRow; i++) classes[j * rPerTRow + i] = classOf(rx0 + i, ry0 + j);
      if (!tHasEdges[t] && classes.every((c) => c === classes[0])) {
        top[t] = classes[0];
        continue;
      }
      const node = { edgeBase: edgeBytes, recBase: records.length, eidx: new Uint8Array(64) };
      let recCount = 0;
      for (let b = 0; b < 8; b++) {
        for (let a = 0; a < 8; a++) {
          let raster = 0;
          for (let j = 0; j < 4; j++)
            for (let i = 0; i < 4; i++)
              raster |= classes[(b * 4 + j) * rPerTRow + a * 4 + i] << (2 * (j * 4 + i));
          raster >>>= 0;
          const ex = tx2 * 8 + a;
          const ey = ty2 * 8 + b;
          const segs = eSegs.get(ey * eCols + ex);
          const c0 = raster & 3;
          const uniform = raster === [0, 0x55555555, 0xaaaaaaaa, 0xffffffff][c0];
          if (!segs && uniform) {
            node.eidx[b * 8 + a] = c0;
            continue;
          }
          const bytes = segs ? encodeRuns(segs, ex * EW, y0 + ey * EH) : [];
          const rel = edgeBytes - node.edgeBase;
          if (rel + bytes.length > 0xffff || bytes.length > 0xffff)
            throw new Error(`edge data of T-cell ${t} too large`);
          records.push({ raster, rel, len: bytes.length });
          edgeChunks.push(Uint8Array.from(bytes));
          edgeBytes += bytes.length;
          node.eidx[b * 8 + a] = 4 + recCount++;
        }
      }
      top[t] = 4 + nodes.length;
      nodes.push(node);
    }
  }

  function encodeRuns(segs, ox, oy) {
    const out = [];
    let i = 0;
    while (i < segs.length) {
      let j = i;
      while (
        j + 1 < segs.length &&
        segs[j + 1] === segs[j] + 1 &&
        segRing[segs[j + 1]] === segRing[segs[i]] &&
        j + 1 - i < 254
      )
        j++;
      const verts = [[segAx[segs[i]], segAy[segs[i]]]];
      for (let k = i; k <= j; k++) verts.push([segBx[segs[k]], segBy[segs[k]]]);
      out.push(verts.length);
      for (const [x, y] of verts) {
        const lx = x - ox;
        const ly = y - oy;
        if (lx < -128 || lx > 127 || ly < -128 || ly > 127) throw new Error('vertex out of i8 range');
        out.push(lx & 0xff, ly & 0xff);
      }
      i = j + 1;
    }
    return out;
  }

  const HEADER = 80;
  const size4 = (n) => (n + 3) & ~3;
  const topBytes = top.length * 4;
  const nodeBytes = nodes.length * 72;
  const recBytes = records.length * 8;
  const total = HEADER + topBytes + nodeBytes + recBytes + size4(edgeBytes) + 4;
  const buf = Buffer.alloc(total);
  let o = 0;
  buf.write('WBLAND01', 0, 'latin1');
  o = 8;
  buf.writeUInt32LE(1, o); // version
  buf.writeUInt32LE(HEADER, o + 4);
  o += 8;
  buf.writeDoubleLE(tx, o);
  buf.writeDoubleLE(ty, o + 8);
  buf.writeDoubleLE(sx, o + 16);
  buf.writeDoubleLE(sy, o + 24);
  o += 32;
  buf.writeInt32LE(xMax, o);
  buf.writeInt32LE(y0, o + 4);
  buf.writeUInt32LE(tCols, o + 8);
  buf.writeUInt32LE(tRows, o + 12);
  buf.writeUInt32LE(nodes.length, o + 16);
  buf.writeUInt32LE(records.length, o + 20);
  buf.writeUInt32LE(edgeBytes, o + 24);
  o += 28;
  buf.writeUInt32LE(0, o); // reserved
  o = HEADER;
  for (const v of top) {
    buf.writeUInt32LE(v, o);
    o += 4;
  }
  for (const n of nodes) {
    buf.writeUInt32LE(n.edgeBase, o);
    buf.writeUInt32LE(n.recBase, o + 4);
    buf.set(n.eidx, o + 8);
    o += 72;
  }
  for (const r of records) {
    buf.writeUInt32LE(r.raster, o);
    buf.writeUInt16LE(r.rel, o + 4);
    buf.writeUInt16LE(r.len, o + 6);
    o += 8;
  }
  for (const c of edgeChunks) {
    buf.set(c, o);
    o += c.length;
  }
  o = total - 4;
  buf.writeUInt32LE(checksum(buf.subarray(0, total - 4)), o);
  console.log(
    `land: ${tCols}x${tRows} T-cells, ${nodes.length} nodes, ${records.length} E-records, ${edgeBytes} edge bytes, ${total} bytes`,
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
- \`land.bin\` keeps the TopoJSON quantisation grid (1e5 steps in longitude and
  in latitude, i.e. about 400 m x 190 m at the equator) and treats edges as straight lines in lon/lat.
  Antarctica's ring, drawn for a spherical renderer, is closed along the antimeridian and lat -90
  so that the planar polygon covers the pole. Format: header comment of
  \`crates/whereabouts-core/src/land.rs\`.
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
