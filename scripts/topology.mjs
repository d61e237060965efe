// Reading world-atlas TopoJSON (Natural Earth) into planar lon/lat rings: shared by
// scripts/build-geodata.mjs (land, countries.csv) and scripts/build-countries.mjs
// (country polygons), so both see the same rings.

export function decodeArcs(topo) {
  return topo.arcs.map((arc) => {
    let x = 0;
    let y = 0;
    // TopoJSON arcs are delta-encoded: a running sum restores absolute grid positions.
    return arc.map(([dx, dy]) => {
      x += dx;
      y += dy;
      return [x, y];
    });
  });
}

export function ringFromArcs(arcs, ids) {
  const out = [];
  for (const id of ids) {
    const a = id < 0 ? arcs[~id].slice().reverse() : arcs[id];
    for (let i = out.length ? 1 : 0; i < a.length; i++) out.push(a[i]);
  }
  return out;
}

export function polygonsOf(geom) {
  if (geom.type === 'Polygon') return [geom.arcs];
  if (geom.type === 'MultiPolygon') return geom.arcs;
  return [];
}

// world-atlas is made for spherical rendering: a few rings (Chukotka, Fiji,
// Wrangel Island) run across the antimeridian, and Antarctica's ring encircles
// the pole, closing with one edge straight across the map. The planar lon/lat
// model needs rings inside [-180, 180]: unwrap each ring into continuous x, close
// a pole-encircling ring along the pole row, and cut it into 360-degree windows.
export function planarRings(ring, xMax, yPoleS, yPoleN) {
  const pts = [];
  let shift = 0;
  for (let i = 0; i < ring.length; i++) {
    const [x, y] = ring[i];
    if (i > 0) {
      const prev = ring[i - 1][0];
      if (x - prev > xMax / 2) shift -= xMax;
      else if (prev - x > xMax / 2) shift += xMax;
    }
    pts.push([x + shift, y]);
  }
  if (pts.length > 1) {
    const first = pts[0];
    const last = pts[pts.length - 1];
    if (last[0] !== first[0] && Math.abs(last[0] - first[0]) >= xMax - 1) {
      const meanY = pts.reduce((s, p) => s + p[1], 0) / pts.length;
      const yPole = Math.abs(meanY - yPoleS) < Math.abs(meanY - yPoleN) ? yPoleS : yPoleN;
      pts.push([last[0], yPole], [first[0], yPole]);
    }
  }
  if (pts.length && pts[0][0] === pts[pts.length - 1][0] && pts[0][1] === pts[pts.length - 1][1]) pts.pop();
  let minX = Infinity;
  let maxX = -Infinity;
  for (const [x] of pts) {
    minX = Math.min(minX, x);
    maxX = Math.max(maxX, x);
  }
  if (minX >= 0 && maxX <= xMax) return [closeRing(pts)];
  const out = [];
  for (let k = Math.floor(minX / xMax); k * xMax < maxX; k++) {
    const lo = k * xMax;
    const hi = lo + xMax;
    let piece = clipX(pts, lo, true);
    piece = clipX(piece, hi, false);
    if (piece.length >= 3) out.push(closeRing(piece.map(([x, y]) => [x - lo, y])));
  }
  return out;
}

function closeRing(pts) {
  const r = pts.slice();
  r.push(pts[0]);
  return r;
}

// Sutherland-Hodgman against one vertical line; keeps x >= c (keepAbove) or x <= c.
function clipX(pts, c, keepAbove) {
  const inside = (p) => (keepAbove ? p[0] >= c : p[0] <= c);
  const out = [];
  for (let i = 0; i < pts.length; i++) {
    const p = pts[i];
    const q = pts[(i + 1) % pts.length];
    const pi = inside(p);
    const qi = inside(q);
    if (pi) out.push(p);
    if (pi !== qi) {
      const t = (c - p[0]) / (q[0] - p[0]);
      const pt = [c, Math.round(p[1] + t * (q[1] - p[1]))];
      const prev = out[out.length - 1];
      if (!prev || prev[0] !== pt[0] || prev[1] !== pt[1]) out.push(pt);
    }
  }
  return out;
}
