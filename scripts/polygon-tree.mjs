// The labelled-polygon quadtree shared by data/timezones.bin (scripts/build-timezones.mjs),
// data/countries.bin (scripts/build-countries.mjs) and data/land.bin (the land section of
// scripts/build-geodata.mjs): polygons with a label each (a zone, a country, "land"),
// clipped into the quads of a quadtree with geo-tz's midpoint arithmetic until every leaf
// holds few vertices, written in the layout that crates/whereabouts-core/src/polygons.rs
// reads. One builder, so that the reader's one index serves all three files.

import { checksum } from './datafile.mjs';

// ---------------------------------------------------------------- geometry

/** Douglas-Peucker on an open run of points (kept: first and last). */
function simplifyRun(pts, tol) {
  const n = pts.length;
  if (n <= 2 || tol <= 0) return pts.slice();
  const keep = new Uint8Array(n);
  keep[0] = 1;
  keep[n - 1] = 1;
  const stack = [[0, n - 1]];
  const tol2 = tol * tol;
  while (stack.length) {
    const [a, b] = stack.pop();
    const [ax, ay] = pts[a];
    const [bx, by] = pts[b];
    const dx = bx - ax;
    const dy = by - ay;
    const len2 = dx * dx + dy * dy;
    let best = -1;
    let bestD = tol2;
    for (let i = a + 1; i < b; i++) {
      const [px, py] = pts[i];
      let t = len2 > 0 ? ((px - ax) * dx + (py - ay) * dy) / len2 : 0;
      t = t < 0 ? 0 : t > 1 ? 1 : t;
      const ex = ax + t * dx - px;
      const ey = ay + t * dy - py;
      const d = ex * ex + ey * ey;
      if (d > bestD) {
        bestD = d;
        best = i;
      }
    }
    if (best >= 0) {
      keep[best] = 1;
      stack.push([a, best], [best, b]);
    }
  }
  return pts.filter((_, i) => keep[i]);
}

/** Simplifies a closed ring (no repeated closing point), split at its farthest point from vertex 0. */
export function simplifyRing(ring, tol) {
  if (ring.length <= 4) return ring;
  let far = 0;
  let farD = -1;
  for (let i = 1; i < ring.length; i++) {
    const d = (ring[i][0] - ring[0][0]) ** 2 + (ring[i][1] - ring[0][1]) ** 2;
    if (d > farD) {
      farD = d;
      far = i;
    }
  }
  const a = simplifyRun(ring.slice(0, far + 1), tol);
  const b = simplifyRun([...ring.slice(far), ring[0]], tol);
  return [...a, ...b.slice(1, -1)];
}

/** Rounds to the lattice and drops repeated points. */
export function quantiseRing(ring) {
  const outRing = [];
  for (const [x, y] of ring) {
    const q = [Math.round(x), Math.round(y)];
    const last = outRing[outRing.length - 1];
    if (!last || last[0] !== q[0] || last[1] !== q[1]) outRing.push(q);
  }
  while (outRing.length > 1) {
    const f = outRing[0];
    const l = outRing[outRing.length - 1];
    if (f[0] === l[0] && f[1] === l[1]) outRing.pop();
    else break;
  }
  return outRing;
}

/** Sutherland-Hodgman against one half-plane: axis 0 = x, 1 = y; keep >= c when `above`. */
function clipHalf(ring, axis, c, above) {
  const res = [];
  const n = ring.length;
  for (let i = 0; i < n; i++) {
    const p = ring[i];
    const q = ring[(i + 1) % n];
    const pin = above ? p[axis] >= c : p[axis] <= c;
    const qin = above ? q[axis] >= c : q[axis] <= c;
    if (pin) res.push(p);
    if (pin !== qin) {
      const t = (c - p[axis]) / (q[axis] - p[axis]);
      const o = axis === 0 ? 1 : 0;
      const pt = [0, 0];
      pt[axis] = c;
      pt[o] = p[o] + t * (q[o] - p[o]);
      res.push(pt);
    }
  }
  return res;
}

function clipRing(ring, box) {
  let r = ring;
  r = clipHalf(r, 0, box.x0, true);
  if (r.length) r = clipHalf(r, 0, box.x1, false);
  if (r.length) r = clipHalf(r, 1, box.y0, true);
  if (r.length) r = clipHalf(r, 1, box.y1, false);
  return r;
}

function side(p, box) {
  if (p[0] === box.x0) return 0;
  if (p[0] === box.x1) return 1;
  if (p[1] === box.y0) return 2;
  if (p[1] === box.y1) return 3;
  return -1;
}

/** True when some edge of the clipped ring runs through the box's interior (not along a side). */
function hasInteriorEdge(ring, box) {
  for (let i = 0; i < ring.length; i++) {
    const p = ring[i];
    const q = ring[(i + 1) % ring.length];
    const sp = side(p, box);
    if (sp < 0 || side(q, box) < 0) return true;
    // both on the boundary: an edge along one side, or a chord between two sides
    const along =
      (p[0] === box.x0 && q[0] === box.x0) ||
      (p[0] === box.x1 && q[0] === box.x1) ||
      (p[1] === box.y0 && q[1] === box.y0) ||
      (p[1] === box.y1 && q[1] === box.y1);
    if (!along) return true;
  }
  return false;
}

function ringArea(ring) {
  let a = 0;
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
    a += (ring[j][0] - ring[i][0]) * (ring[j][1] + ring[i][1]);
  }
  return a / 2;
}

/** Even-odd test of a point against rings (the same rule the Rust reader applies). */
export function insideRings(rings, px, py) {
  let odd = false;
  for (const ring of rings) {
    for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
      const [ax, ay] = ring[j];
      const [bx, by] = ring[i];
      if (ay > py !== by > py && px < ax + ((py - ay) * (bx - ax)) / (by - ay)) odd = !odd;
    }
  }
  return odd;
}

// ---------------------------------------------------------------- tree

// Child entries (u32): low 2 bits tag, the rest payload.
export const SEA = 0;
export const FILL = 1;
export const NODE = 2;
export const LEAF = 3;

/** geo-tz's root quad: it clamps queries to these bounds before descending. */
export const rootQuad = {
  top: 89.9999,
  bottom: -89.9999,
  left: -179.9999,
  right: 179.9999,
  midLat: 0,
  midLon: 0,
};

/** The four child quads of a quad, in geo-tz's order a (NE), b (NW), c (SW), d (SE). */
export function children(q) {
  const { top, bottom, left, right, midLat, midLon } = q;
  const next = (t, b, l, r) => ({
    top: t,
    bottom: b,
    left: l,
    right: r,
    midLat: (t + b) / 2,
    midLon: (l + r) / 2,
  });
  return [
    next(top, midLat, midLon, right),
    next(top, midLat, left, midLon),
    next(midLat, bottom, left, midLon),
    next(midLat, bottom, midLon, right),
  ];
}

/**
 * Geometry of one quad as [{ label, rings }] clipped to it, in feature order (a lookup
 * answers the first feature that contains the point).
 */
export function clipFeatures(features, box) {
  const res = [];
  for (const f of features) {
    const rings = [];
    let fullParity = false;
    for (const ring of f.rings) {
      const c = clipRing(ring, box);
      if (c.length < 3) continue;
      if (hasInteriorEdge(c, box)) rings.push(c);
      else if (Math.abs(ringArea(c)) > 0) fullParity = !fullParity;
    }
    if (fullParity) {
      // the feature's rings cover the whole quad: one ring around it keeps the even-odd count
      rings.push([
        [box.x0, box.y0],
        [box.x1, box.y0],
        [box.x1, box.y1],
        [box.x0, box.y1],
      ]);
    }
    if (rings.length) res.push({ label: f.label, rings, real: rings.length > (fullParity ? 1 : 0) });
  }
  return res;
}

function vertexCount(features) {
  let n = 0;
  for (const f of features) for (const r of f.rings) n += r.length;
  return n;
}

/**
 * A quadtree under construction. Vertices are lattice coordinates
 * `x = (lon + 180) / quantum`, `y = (lat + 90) / quantum`; a quad holding more than
 * `maxVertices` is split until `maxDepth`.
 */
export class PolygonTree {
  constructor({ quantum, maxVertices, maxDepth }) {
    this.quantum = quantum;
    this.maxVertices = maxVertices;
    this.maxDepth = maxDepth;
    this.nodes = []; // each: [e0, e1, e2, e3] for quads a, b, c, d
    this.leafBlobs = [];
    this.stats = { fills: 0, sea: 0, leaves: 0, vertices: 0 };
  }

  lx(lon) {
    return (lon + 180) / this.quantum;
  }

  ly(lat) {
    return (lat + 90) / this.quantum;
  }

  boxOf(q) {
    return { x0: this.lx(q.left), x1: this.lx(q.right), y0: this.ly(q.bottom), y1: this.ly(q.top) };
  }

  newNode() {
    this.nodes.push([0, 0, 0, 0]);
    return this.nodes.length - 1;
  }

  /** Builds the whole tree from `features` ([{ label, rings }] in lattice space). */
  buildFrom(features) {
    const id = this.newNode();
    const kids = children(rootQuad);
    for (let k = 0; k < 4; k++) {
      this.nodes[id][k] = this.place(kids[k], clipFeatures(features, this.boxOf(kids[k])), 1);
    }
  }

  /** Entry for a quad holding `features` (already clipped to it). */
  place(q, features, depth) {
    const box = this.boxOf(q);
    if (!features.some((f) => f.real)) {
      // no edge crosses the quad: one answer for all of it
      const cx = (box.x0 + box.x1) / 2;
      const cy = (box.y0 + box.y1) / 2;
      const f = features.find((g) => insideRings(g.rings, cx, cy));
      if (!f) {
        this.stats.sea++;
        return SEA;
      }
      this.stats.fills++;
      return (f.label << 2) | FILL;
    }
    if (vertexCount(features) > this.maxVertices && depth < this.maxDepth) {
      const id = this.newNode();
      const kids = children(q);
      for (let k = 0; k < 4; k++) {
        this.nodes[id][k] = this.place(kids[k], clipFeatures(features, this.boxOf(kids[k])), depth + 1);
      }
      return (id << 2) | NODE;
    }
    return this.leafEntry(features);
  }

  leafEntry(features) {
    const bytes = [];
    const varint = (v) => {
      while (v >= 0x80) {
        bytes.push((v & 0x7f) | 0x80);
        v = Math.floor(v / 128);
      }
      bytes.push(v);
    };
    const zig = (v) => (v < 0 ? -2 * v - 1 : 2 * v);
    varint(features.length);
    for (const f of features) {
      const rings = f.rings.map(quantiseRing).filter((r) => r.length >= 3);
      varint(f.label);
      varint(rings.length);
      for (const r of rings) {
        varint(r.length);
        let px = 0;
        let py = 0;
        for (const [x, y] of r) {
          varint(zig(x - px));
          varint(zig(y - py));
          px = x;
          py = y;
        }
        this.stats.vertices += r.length;
      }
    }
    this.stats.leaves++;
    this.leafBlobs.push(Uint8Array.from(bytes));
    return ((this.leafBlobs.length - 1) << 2) | LEAF;
  }

  /** The file: `magic` (8 ASCII bytes), the label names, the tree (layout in polygons.rs). */
  toBuffer(magic, labelNames) {
    const names = labelNames.map((n) => Buffer.from(n, 'utf8'));
    const namesLen = names.reduce((s, b) => s + 1 + b.length, 0);
    const blobLen = this.leafBlobs.reduce((s, b) => s + b.length, 0);
    const HEADER = 48;
    const pad4 = (n) => (4 - (n % 4)) % 4;
    const size =
      HEADER +
      namesLen +
      pad4(namesLen) +
      this.nodes.length * 16 +
      (this.leafBlobs.length + 1) * 4 +
      blobLen +
      pad4(blobLen) +
      4;
    const buf = Buffer.alloc(size);
    buf.write(magic, 0, 'latin1');
    buf.writeUInt32LE(1, 8); // version
    buf.writeUInt32LE(HEADER, 12);
    buf.writeDoubleLE(this.quantum, 16);
    buf.writeUInt32LE(labelNames.length, 24);
    buf.writeUInt32LE(namesLen, 28);
    buf.writeUInt32LE(this.nodes.length, 32);
    buf.writeUInt32LE(this.leafBlobs.length, 36);
    buf.writeUInt32LE(blobLen, 40);
    buf.writeUInt32LE(0, 44);
    let o = HEADER;
    for (const b of names) {
      buf[o++] = b.length;
      b.copy(buf, o);
      o += b.length;
    }
    o += pad4(namesLen);
    for (const n of this.nodes) for (const e of n) o = buf.writeUInt32LE(e >>> 0, o);
    let at = 0;
    for (const b of this.leafBlobs) {
      o = buf.writeUInt32LE(at, o);
      at += b.length;
    }
    o = buf.writeUInt32LE(at, o);
    for (const b of this.leafBlobs) {
      buf.set(b, o);
      o += b.length;
    }
    o += pad4(blobLen);
    buf.writeUInt32LE(checksum(buf.subarray(0, o)), o);
    return buf;
  }
}
