//! Labelled polygons in a quadtree: "which labelled polygon contains this point?" and
//! "which point of a polygon is nearest, within so many metres?". One index serves the
//! timezones ([`crate::timezone`], label = IANA zone), the countries
//! ([`crate::countries`], label = ISO 3166-1 alpha-2) and the land of border strictness
//! ([`crate::land`], one label, `land`); the files are written by
//! `scripts/polygon-tree.mjs`.
//!
//! # Why a quadtree shaped like geo-tz's
//! The timezone answers must agree with geo-tz on the same data. geo-tz decides by the quad
//! of its quadtree a point falls in: a quad without data is outside every polygon, a quad
//! wholly inside one polygon answers without geometry, other quads test the point against
//! their polygons, clipped to the quad. The builder keeps that tree with the same midpoint
//! arithmetic (so those decisions are identical, bit for bit) and splits quads that hold
//! many vertices further, clipping the polygons to each child, so that a lookup walks about
//! 15 levels and then tests at most a few dozen edges. The country file is built the same
//! way from the root.
//!
//! # Geometry model
//! Vertices sit on a lattice `x = (lon + 180) / q`, `y = (lat + 90) / q` (`q` from the
//! header: 1e-6 degree for timezones, 1e-5 for countries and land). Edges are straight in
//! lon/lat, as geo-tz takes them; a point is inside a feature by the even-odd rule over all
//! its rings. Where features overlap, the first in the leaf wins. A polygon cut by a quad
//! keeps the cut as edges of its piece, along the quad's sides; so do the runs along a side
//! that clipping leaves where a polygon leaves the quad and comes back, and the ring around
//! a quad that a polygon covers. [`PolygonIndex::nearest`] leaves all edges along a side
//! out: the others, the polygon's own edges clipped into the leaves they cross, hold every
//! point of its boundary, which is where the nearest point of a polygon to a point outside
//! it lies. (Before land shared this index, the nearest search counted them: off a
//! coast, a quad's side across the water could pass for the coast.)
//!
//! # File format (integers little-endian)
//! ```text
//! offset size  field
//!      0    8  magic ("WBTZONE1" timezones, "WBCNTRY1" countries, "WBLAND02" land)
//!      8    4  u32 version = 1
//!     12    4  u32 header size = 48
//!     16    8  f64 q                  lattice step in degrees
//!     24    4  u32 n_labels
//!     28    4  u32 names_len          bytes of the name table
//!     32    4  u32 n_nodes            node 0 is the root
//!     36    4  u32 n_leaves
//!     40    4  u32 blob_len
//!     44    4  u32 reserved = 0
//!     48       names:  n_labels x (u8 len, UTF-8 bytes), zero-padded to a multiple of 4
//!              nodes:  n_nodes x 4 x u32 child entries, quads in geo-tz's order
//!                      a (north-east), b (north-west), c (south-west), d (south-east).
//!                      Entry: low 2 bits tag, the rest payload.
//!                      tag 0 outside, 1 fill (payload: label index), 2 node, 3 leaf.
//!              leaves: (n_leaves + 1) x u32 offsets into the blob
//!              blob:   per leaf, varints (LEB128): n_features, then per feature
//!                      label, n_rings, then per ring n_vertices and the vertices as
//!                      zigzag deltas (x then y) from the previous one (the first from 0).
//!                      Zero-padded to a multiple of 4.
//!      end-4    4  u32 FNV-1a (32-bit) over the preceding u32 words
//! ```

use std::fmt;
use std::path::Path;

use crate::datafile::{check_checksum, check_head, f64_at, u32_at};
use crate::geo::EARTH_RADIUS_M;

mod cell_tree;
pub use cell_tree::{CellTree, CELL_LABEL, CELL_MIXED, CELL_NODE, CELL_OUTSIDE};

const HEADER: usize = 48;

const OUTSIDE: u32 = 0;
const FILL: u32 = 1;
const NODE: u32 = 2;
const LEAF: u32 = 3;

/// geo-tz clamps queries into this box before it descends its quadtree.
pub const LAT_EDGE: f64 = 89.9999;
pub const LON_EDGE: f64 = 179.9999;

#[derive(Debug)]
pub enum PolygonError {
    Io(std::io::Error),
    Corrupt(String),
}

impl fmt::Display for PolygonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolygonError::Io(e) => write!(f, "polygon index: {e}"),
            PolygonError::Corrupt(m) => write!(f, "polygon index is corrupt: {m}"),
        }
    }
}

impl std::error::Error for PolygonError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PolygonError::Io(e) => Some(e),
            PolygonError::Corrupt(_) => None,
        }
    }
}

impl From<std::io::Error> for PolygonError {
    fn from(e: std::io::Error) -> Self {
        PolygonError::Io(e)
    }
}

fn corrupt<T>(msg: impl Into<String>) -> Result<T, PolygonError> {
    Err(PolygonError::Corrupt(msg.into()))
}

/// A reader of LEB128 varints over a leaf's bytes.
struct Varints<'a> {
    b: &'a [u8],
    i: usize,
}

impl Varints<'_> {
    /// The next varint; None past the end or on an overlong one (only the loader sees those).
    #[inline]
    fn next(&mut self) -> Option<u64> {
        let mut v: u64 = 0;
        let mut shift = 0;
        loop {
            let byte = *self.b.get(self.i)?;
            self.i += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Some(v);
            }
            shift += 7;
            if shift > 56 {
                return None;
            }
        }
    }

    #[inline]
    fn zigzag(&mut self) -> Option<i64> {
        let v = self.next()?;
        Some((v >> 1) as i64 ^ -((v & 1) as i64))
    }
}

/// What a walk of a leaf reports, in order: a feature's edges, then its end.
enum LeafEvent {
    /// An edge in lattice coordinates (ax, ay, bx, by); rings are closed.
    Edge(f64, f64, f64, f64),
    /// The feature with this label has no more edges; returning true stops the walk.
    FeatureEnd(u32),
}

/// Walks a leaf's features and edges. None when the bytes are malformed.
#[inline]
fn walk_leaf(blob: &[u8], mut f: impl FnMut(LeafEvent) -> bool) -> Option<()> {
    let mut r = Varints { b: blob, i: 0 };
    let n_features = r.next()?;
    for _ in 0..n_features {
        let label = u32::try_from(r.next()?).ok()?;
        let n_rings = r.next()?;
        for _ in 0..n_rings {
            let n = r.next()?;
            if n > blob.len() as u64 {
                return None;
            }
            let (mut x, mut y) = (0i64, 0i64);
            let (mut fx, mut fy, mut px, mut py) = (0.0, 0.0, 0.0, 0.0);
            for k in 0..n {
                x = x.checked_add(r.zigzag()?)?;
                y = y.checked_add(r.zigzag()?)?;
                let (bx, by) = (x as f64, y as f64);
                if k == 0 {
                    (fx, fy) = (bx, by);
                } else {
                    f(LeafEvent::Edge(px, py, bx, by));
                }
                (px, py) = (bx, by);
            }
            if n > 0 {
                f(LeafEvent::Edge(px, py, fx, fy));
            }
        }
        if f(LeafEvent::FeatureEnd(label)) {
            return Some(());
        }
    }
    (r.i == blob.len()).then_some(())
}

/// Whether the edge (a, b) crosses the ray from q to the east.
#[inline]
fn crosses(ax: f64, ay: f64, bx: f64, by: f64, qx: f64, qy: f64) -> bool {
    (ay > qy) != (by > qy) && qx < ax + (qy - ay) * (bx - ax) / (by - ay)
}

/// The even-odd rule over a leaf's events, in lattice coordinates: the first feature that
/// contains the point.
struct EvenOdd {
    qx: f64,
    qy: f64,
    odd: bool,
    found: Hit,
}

impl EvenOdd {
    fn new(qx: f64, qy: f64) -> EvenOdd {
        EvenOdd {
            qx,
            qy,
            odd: false,
            found: Hit::Outside,
        }
    }

    /// Takes the next event; true once a feature contains the point.
    #[inline]
    fn event(&mut self, e: LeafEvent) -> bool {
        match e {
            LeafEvent::Edge(ax, ay, bx, by) => {
                if crosses(ax, ay, bx, by, self.qx, self.qy) {
                    self.odd = !self.odd;
                }
                false
            }
            LeafEvent::FeatureEnd(label) => {
                if self.odd {
                    self.found = Hit::Label(label as usize);
                }
                self.odd = false;
                self.found != Hit::Outside
            }
        }
    }
}

/// Where a point lies in the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hit {
    /// Inside the polygon(s) of this label (an index into [`PolygonIndex::names`]).
    Label(usize),
    /// Outside every polygon.
    Outside,
}

/// A quad of the tree by its bounds in degrees.
#[derive(Clone, Copy)]
struct Quad {
    top: f64,
    bottom: f64,
    left: f64,
    right: f64,
}

impl Quad {
    const ROOT: Quad = Quad {
        top: LAT_EDGE,
        bottom: -LAT_EDGE,
        left: -LON_EDGE,
        right: LON_EDGE,
    };

    /// Child `k` in geo-tz's order, with its midpoint arithmetic.
    #[inline]
    fn child(&self, k: usize) -> Quad {
        let (ml, mo) = (
            (self.top + self.bottom) / 2.0,
            (self.left + self.right) / 2.0,
        );
        match k {
            0 => Quad {
                bottom: ml,
                left: mo,
                ..*self
            },
            1 => Quad {
                bottom: ml,
                right: mo,
                ..*self
            },
            2 => Quad {
                top: ml,
                right: mo,
                ..*self
            },
            _ => Quad {
                top: ml,
                left: mo,
                ..*self
            },
        }
    }
}

/// Metres per degree and the query point, for distances in a local equirectangular frame
/// (accurate to a fraction of a percent over the few kilometres the searches span).
struct Metric {
    lat: f64,
    lon: f64,
    m_lat: f64,
    m_lon: f64,
}

impl Metric {
    fn new(lat: f64, lon: f64) -> Metric {
        let m_lat = EARTH_RADIUS_M.to_radians();
        Metric {
            lat,
            lon,
            m_lat,
            m_lon: m_lat * lat.to_radians().cos().max(1e-6),
        }
    }

    /// Longitude difference from the query to `lon`, across the antimeridian when shorter.
    #[inline]
    fn dlon(&self, lon: f64) -> f64 {
        let d = lon - self.lon;
        if d > 180.0 {
            d - 360.0
        } else if d < -180.0 {
            d + 360.0
        } else {
            d
        }
    }

    /// The nearest point of a quad as (east, north) metres from the query point ((0, 0)
    /// inside it).
    fn to_quad(&self, q: &Quad) -> (f64, f64) {
        let north = if self.lat < q.bottom {
            q.bottom - self.lat
        } else if self.lat > q.top {
            q.top - self.lat
        } else {
            0.0
        };
        let east = if (q.left..=q.right).contains(&self.lon) {
            0.0
        } else {
            let (l, r) = (self.dlon(q.left), self.dlon(q.right));
            if l.abs() <= r.abs() {
                l
            } else {
                r
            }
        };
        (east * self.m_lon, north * self.m_lat)
    }
}

/// The nearest point of the polygons to a query point: [`PolygonIndex::nearest`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Nearest {
    /// The label of the polygon it lies on (an index into [`PolygonIndex::names`]).
    pub label: usize,
    /// Metres from the query point, in its local equirectangular frame
    /// ([`crate::geo::LocalFrame`] around the query point).
    pub dist_m: f64,
    /// The point as metres east and north of the query point, in that frame.
    pub east_m: f64,
    pub north_m: f64,
}

/// A quad or leaf waiting in the best-first search of [`PolygonIndex::nearest`], by its
/// distance from the query point (the smallest first out of the max-heap).
struct Pending {
    dist_m: f64,
    /// A node's or a leaf's index, and its quad.
    what: PendingKind,
}

enum PendingKind {
    Node(usize, Quad),
    Leaf(usize, Quad),
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        self.dist_m.total_cmp(&other.dist_m).is_eq()
    }
}

impl Eq for Pending {}

impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Pending {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.dist_m.total_cmp(&self.dist_m)
    }
}

/// The labelled polygons of one file, loaded (see the module notes).
pub struct PolygonIndex {
    bytes: Vec<u8>,
    q: f64,
    names: Vec<String>,
    nodes_at: usize,
    n_nodes: usize,
    leaves_at: usize,
    n_leaves: usize,
    blob_at: usize,
}

impl fmt::Debug for PolygonIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolygonIndex")
            .field("labels", &self.names.len())
            .field("nodes", &self.n_nodes)
            .field("leaves", &self.n_leaves)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

impl PolygonIndex {
    /// Reads and validates a file of this `magic`; `what` names it in errors.
    pub fn open(path: &Path, magic: &[u8; 8], what: &str) -> Result<PolygonIndex, PolygonError> {
        PolygonIndex::from_bytes(std::fs::read(path)?, magic, what)
    }

    /// Bytes of the header [`PolygonIndex::check_header`] reads.
    pub const HEADER: usize = HEADER;

    /// Checks what the header `head` (at least the first [`PolygonIndex::HEADER`] bytes of a
    /// file of `len` bytes) tells without the rest: magic, version, lattice step and section
    /// sizes against the length, which a foreign or truncated file fails.
    pub fn check_header(
        head: &[u8],
        len: usize,
        magic: &[u8; 8],
        what: &str,
    ) -> Result<(), PolygonError> {
        check_head(head, len, magic, HEADER, what).map_err(PolygonError::Corrupt)?;
        let q = f64_at(head, 16);
        let names_len = u32_at(head, 28) as usize;
        let n_nodes = u32_at(head, 32) as usize;
        let n_leaves = u32_at(head, 36) as usize;
        let blob_len = u32_at(head, 40) as usize;
        if !(q.is_finite() && q > 0.0) || n_nodes == 0 {
            return corrupt("bad lattice step or empty tree");
        }
        let pad = |n: usize| (4 - n % 4) % 4;
        let expect = [
            names_len + pad(names_len),
            n_nodes * 16,
            (n_leaves + 1) * 4,
            blob_len + pad(blob_len),
            4,
        ]
        .iter()
        .try_fold(HEADER, |acc, &n| acc.checked_add(n));
        if expect != Some(len) {
            return corrupt("section sizes do not match the file size");
        }
        Ok(())
    }

    /// Validates the bytes of a file of this `magic`; any inconsistency is an error.
    pub fn from_bytes(
        bytes: Vec<u8>,
        magic: &[u8; 8],
        what: &str,
    ) -> Result<PolygonIndex, PolygonError> {
        let b = &bytes[..];
        PolygonIndex::check_header(b, b.len(), magic, what)?;
        check_checksum(b).map_err(PolygonError::Corrupt)?;
        let q = f64_at(b, 16);
        let n_labels = u32_at(b, 24) as usize;
        let names_len = u32_at(b, 28) as usize;
        let n_nodes = u32_at(b, 32) as usize;
        let n_leaves = u32_at(b, 36) as usize;
        let blob_len = u32_at(b, 40) as usize;
        let pad = |n: usize| (4 - n % 4) % 4;

        let mut names = Vec::with_capacity(n_labels);
        let mut o = HEADER;
        for _ in 0..n_labels {
            let len = *b
                .get(o)
                .ok_or(PolygonError::Corrupt("names cut short".into()))?
                as usize;
            let Some(raw) = b.get(o + 1..o + 1 + len) else {
                return corrupt("names cut short");
            };
            let Ok(name) = std::str::from_utf8(raw) else {
                return corrupt("a label name is not UTF-8");
            };
            names.push(name.to_owned());
            o += 1 + len;
        }
        if o != HEADER + names_len {
            return corrupt("name table length mismatch");
        }
        let nodes_at = HEADER + names_len + pad(names_len);
        let leaves_at = nodes_at + n_nodes * 16;
        let blob_at = leaves_at + (n_leaves + 1) * 4;

        let index = PolygonIndex {
            bytes,
            q,
            names,
            nodes_at,
            n_nodes,
            leaves_at,
            n_leaves,
            blob_at,
        };
        index.validate(blob_len)?;
        Ok(index)
    }

    /// Checks every reference once, so that queries can index without failing.
    fn validate(&self, blob_len: usize) -> Result<(), PolygonError> {
        for i in 0..self.n_nodes * 4 {
            let e = u32_at(&self.bytes, self.nodes_at + 4 * i);
            let p = (e >> 2) as usize;
            let ok = match e & 3 {
                OUTSIDE => true,
                FILL => p < self.names.len(),
                // children come after their parent: the walk always ends
                NODE => p < self.n_nodes && p > i / 4,
                LEAF => p < self.n_leaves,
                _ => false,
            };
            if !ok {
                return corrupt(format!("node entry {i} ({e:#x}) out of range"));
            }
        }
        let mut prev = 0;
        for l in 0..=self.n_leaves {
            let at = u32_at(&self.bytes, self.leaves_at + 4 * l) as usize;
            if at < prev || at > blob_len || (l == 0 && at != 0) {
                return corrupt(format!("leaf offset {l} out of order"));
            }
            prev = at;
        }
        if prev != blob_len {
            return corrupt("leaf offsets do not cover the blob");
        }
        for l in 0..self.n_leaves {
            let mut labels_ok = true;
            let ok = walk_leaf(self.leaf(l), |e| {
                if let LeafEvent::FeatureEnd(label) = e {
                    labels_ok &= (label as usize) < self.names.len();
                }
                false
            });
            if ok.is_none() || !labels_ok {
                return corrupt(format!("leaf {l} is malformed"));
            }
        }
        Ok(())
    }

    #[inline]
    fn leaf(&self, l: usize) -> &[u8] {
        let a = u32_at(&self.bytes, self.leaves_at + 4 * l) as usize;
        let b = u32_at(&self.bytes, self.leaves_at + 4 * l + 4) as usize;
        &self.bytes[self.blob_at + a..self.blob_at + b]
    }

    #[inline]
    fn entry(&self, node: usize, k: usize) -> u32 {
        u32_at(&self.bytes, self.nodes_at + 16 * node + 4 * k)
    }

    /// The label names, in file order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The polygon containing a point; `lat` and `lon` must be finite and within
    /// -90..=90 / -180..=180 (callers check: each has its own answer for a bad point). The
    /// point is first clamped into geo-tz's root box (89.9999 degrees).
    pub fn hit(&self, lat: f64, lon: f64) -> Hit {
        let la = lat.clamp(-LAT_EDGE, LAT_EDGE);
        let lo = lon.clamp(-LON_EDGE, LON_EDGE);
        let (mut top, mut bottom, mut left, mut right) = (LAT_EDGE, -LAT_EDGE, -LON_EDGE, LON_EDGE);
        let (mut mid_lat, mut mid_lon) = (0.0, 0.0);
        let mut node = 0usize;
        loop {
            // the same comparisons and midpoints as geo-tz, in the same order
            let k = if la >= mid_lat && lo >= mid_lon {
                bottom = mid_lat;
                left = mid_lon;
                0
            } else if la >= mid_lat && lo < mid_lon {
                bottom = mid_lat;
                right = mid_lon;
                1
            } else if la < mid_lat && lo < mid_lon {
                top = mid_lat;
                right = mid_lon;
                2
            } else {
                top = mid_lat;
                left = mid_lon;
                3
            };
            let e = self.entry(node, k);
            let p = (e >> 2) as usize;
            match e & 3 {
                FILL => return Hit::Label(p),
                NODE => node = p,
                LEAF => return self.hit_in_leaf(p, la, lo),
                _ => return Hit::Outside,
            }
            mid_lat = (top + bottom) / 2.0;
            mid_lon = (left + right) / 2.0;
        }
    }

    fn hit_in_leaf(&self, leaf: usize, lat: f64, lon: f64) -> Hit {
        let mut rule = EvenOdd::new((lon + 180.0) / self.q, (lat + 90.0) / self.q);
        walk_leaf(self.leaf(leaf), |e| rule.event(e));
        rule.found
    }

    /// The label of the polygon nearest to a point outside every polygon, and its distance
    /// in metres, when one lies within `max_m`. Distances are measured in a local
    /// equirectangular frame, which suits the few kilometres this is meant for.
    pub fn nearest_label(&self, lat: f64, lon: f64, max_m: f64) -> Option<(usize, f64)> {
        self.nearest(lat, lon, max_m).map(|n| (n.label, n.dist_m))
    }

    /// The nearest point of any polygon to a point outside every polygon (for a point
    /// inside one: the nearest point of its boundary, or of the quad it fills), when one
    /// lies within `max_m`; `lat`, `lon` as for [`PolygonIndex::hit`]. Distances are
    /// measured in a local equirectangular frame around the point, which suits the tens of
    /// kilometres border strictness asks for (a fraction of a percent off the great
    /// circle). A polygon cut by a quad keeps the cut as edges of its piece, but for a point
    /// outside every polygon the nearest point of the pieces is the nearest point of the
    /// polygons (see the module notes).
    ///
    /// Best first: quads and leaves come out of a heap nearest first, and the search stops
    /// at the first one farther than the best point found, so a search with a large
    /// `max_m` costs what the answer's distance costs.
    pub fn nearest(&self, lat: f64, lon: f64, max_m: f64) -> Option<Nearest> {
        if !(lat.is_finite() && lon.is_finite() && max_m >= 0.0) {
            return None;
        }
        let m = Metric::new(lat, lon);
        let mut best: Option<Nearest> = None;
        let mut limit = max_m;
        let mut heap = std::collections::BinaryHeap::new();
        heap.push(Pending {
            dist_m: 0.0,
            what: PendingKind::Node(0, Quad::ROOT),
        });
        while let Some(Pending { dist_m, what }) = heap.pop() {
            if dist_m > limit {
                break;
            }
            let (node, quad) = match what {
                PendingKind::Leaf(leaf, quad) => {
                    if let Some(n) = self.nearest_in_leaf(leaf, &quad, &m, limit) {
                        limit = n.dist_m;
                        best = Some(n);
                    }
                    continue;
                }
                PendingKind::Node(node, quad) => (node, quad),
            };
            for k in 0..4 {
                let e = self.entry(node, k);
                let p = (e >> 2) as usize;
                let tag = e & 3;
                if tag == OUTSIDE {
                    continue;
                }
                let child = quad.child(k);
                let (east_m, north_m) = m.to_quad(&child);
                let d = east_m.hypot(north_m);
                if d > limit {
                    continue;
                }
                let what = match tag {
                    FILL => {
                        // the quad is all polygon: its nearest point is the answer in it
                        best = Some(Nearest {
                            label: p,
                            dist_m: d,
                            east_m,
                            north_m,
                        });
                        limit = d;
                        continue;
                    }
                    NODE => PendingKind::Node(p, child),
                    _ => PendingKind::Leaf(p, child),
                };
                heap.push(Pending { dist_m: d, what });
            }
        }
        best
    }

    /// Every edge of the pieces of polygons in the quads that meet the lat/lon box, as
    /// `([lat_a, lon_a, lat_b, lon_b], coast)`: the leaves' rings and a ring around each
    /// fill quad, so that the even-odd rule over all of them (the pieces do not overlap)
    /// tells inside from outside; `coast` is false for the edges along a quad's side, which
    /// a distance must leave out ([`along_side`]). For baselines and diagnostics, not for
    /// queries.
    #[doc(hidden)]
    pub fn pieces_in_box(
        &self,
        lat0: f64,
        lon0: f64,
        lat1: f64,
        lon1: f64,
    ) -> Vec<([f64; 4], bool)> {
        let q = self.q;
        let deg = |x: f64, y: f64| (y * q - 90.0, x * q - 180.0);
        let mut out = Vec::new();
        let mut stack = vec![(0usize, Quad::ROOT)];
        while let Some((node, quad)) = stack.pop() {
            for k in 0..4 {
                let c = quad.child(k);
                if c.top < lat0 || c.bottom > lat1 || c.right < lon0 || c.left > lon1 {
                    continue;
                }
                let e = self.entry(node, k);
                let p = (e >> 2) as usize;
                match e & 3 {
                    NODE => stack.push((p, c)),
                    FILL => {
                        let corners = [
                            (c.bottom, c.left),
                            (c.bottom, c.right),
                            (c.top, c.right),
                            (c.top, c.left),
                        ];
                        for i in 0..4 {
                            let ((la, lo), (lb, lob)) = (corners[i], corners[(i + 1) % 4]);
                            out.push(([la, lo, lb, lob], false));
                        }
                    }
                    LEAF => {
                        let sides = [
                            (c.left + 180.0) / q,
                            (c.right + 180.0) / q,
                            (c.bottom + 90.0) / q,
                            (c.top + 90.0) / q,
                        ];
                        walk_leaf(self.leaf(p), |ev| {
                            if let LeafEvent::Edge(ax, ay, bx, by) = ev {
                                let ((la, lo), (lb, lob)) = (deg(ax, ay), deg(bx, by));
                                out.push(([la, lo, lb, lob], !along_side(ax, ay, bx, by, &sides)));
                            }
                            false
                        });
                    }
                    _ => {}
                }
            }
        }
        out
    }

    /// The nearest point on the edges of a leaf within `limit` metres, leaving out the
    /// edges that run along a side of its quad (see [`along_side`]).
    fn nearest_in_leaf(&self, leaf: usize, quad: &Quad, m: &Metric, limit: f64) -> Option<Nearest> {
        let (q, mx, my) = (self.q, m.m_lon, m.m_lat);
        let to_m = |x: f64, y: f64| (m.dlon(x * q - 180.0) * mx, (y * q - 90.0 - m.lat) * my);
        let sides = [
            (quad.left + 180.0) / q,
            (quad.right + 180.0) / q,
            (quad.bottom + 90.0) / q,
            (quad.top + 90.0) / q,
        ];
        let mut best_d2 = limit * limit;
        let mut point: Option<(f64, f64)> = None;
        let mut feature_best = false;
        let mut best: Option<Nearest> = None;
        walk_leaf(self.leaf(leaf), |e| {
            match e {
                LeafEvent::Edge(ax, ay, bx, by) => {
                    if along_side(ax, ay, bx, by, &sides) {
                        return false;
                    }
                    let (ax, ay) = to_m(ax, ay);
                    let (bx, by) = to_m(bx, by);
                    let (dx, dy) = (bx - ax, by - ay);
                    let len2 = dx * dx + dy * dy;
                    let t = if len2 > 0.0 {
                        (-(ax * dx + ay * dy) / len2).clamp(0.0, 1.0)
                    } else {
                        0.0
                    };
                    let (px, py) = (ax + t * dx, ay + t * dy);
                    let d2 = px * px + py * py;
                    if d2 <= best_d2 {
                        best_d2 = d2;
                        point = Some((px, py));
                        feature_best = true;
                    }
                }
                LeafEvent::FeatureEnd(label) => {
                    if let (true, Some((east_m, north_m))) = (feature_best, point) {
                        best = Some(Nearest {
                            label: label as usize,
                            dist_m: best_d2.sqrt(),
                            east_m,
                            north_m,
                        });
                    }
                    feature_best = false;
                }
            }
            false
        });
        best
    }
}

/// Whether the edge (a, b) (lattice coordinates) runs along a side of its leaf's quad
/// (`sides`: left, right, bottom, top), within the half step that rounding a cut to the
/// lattice moves it. Such edges are not coast: clipping a polygon to a quad leaves its cut
/// along the sides, and where the polygon leaves and re-enters the quad the clipped ring
/// runs along the side between the two (Sutherland-Hodgman), across water; a ring around
/// the whole quad stands for a polygon that covers it, even where one of its holes
/// reaches the side. The point-in-polygon test counts them harmlessly (they cancel or bound
/// the quad), but a distance must not: the polygon's real edges, clipped into the leaves
/// they cross, hold every point of its boundary.
#[inline]
fn along_side(ax: f64, ay: f64, bx: f64, by: f64, sides: &[f64; 4]) -> bool {
    const ROUNDING: f64 = 0.51;
    let on = |v: f64, side: f64| (v - side).abs() <= ROUNDING;
    (on(ax, sides[0]) && on(bx, sides[0]))
        || (on(ax, sides[1]) && on(bx, sides[1]))
        || (on(ay, sides[2]) && on(by, sides[2]))
        || (on(ay, sides[3]) && on(by, sides[3]))
}
