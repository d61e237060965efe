//! The answers of a [`PolygonIndex`] that need no geometry, as a flat quadtree of cells that
//! a caller walks with a few shifts and array reads: JavaScript answers most timezone
//! lookups from it (src/geocoding/zone-lookup.ts), because a call into the core costs more
//! than the lookup itself.
//!
//! # How the cells are found
//! The cells are the polygon tree's own quads, and the tree's filled and empty quads answer
//! alike all over. A leaf's quad is split further, by the same halving: a part of it that no
//! edge of the leaf comes near has one answer (each feature's even-odd count is the same all
//! over it), which its centre gives. Splitting stops at `max_depth`; a cell still crossed
//! there, or where the tree itself goes deeper, is [`CELL_MIXED`]. Four children with one
//! answer are merged into their parent.

use super::{walk_leaf, EvenOdd, Hit, LeafEvent, PolygonIndex, Quad, FILL, NODE, OUTSIDE};

/// A flat quadtree of answers without geometry: [`PolygonIndex::cell_tree`].
///
/// On a uniform grid of `2^max_depth` x `2^max_depth` cells over the box
/// [`super::LAT_EDGE`], [`super::LON_EDGE`] (columns from west to east, rows from north to
/// south) a point falls in cell `x = floor((lon + LON_EDGE) / (2 * LON_EDGE) * 2^max_depth)`,
/// `y` likewise from the north, and in the cell of depth `d` that holds it at
/// `(x, y) >> (max_depth - d)`: the tree's quads halve the box evenly.
///
/// `entries` starts with the grid at `top_depth`, `2^top_depth` cells a row; each entry has
/// a tag in its low 2 bits and a payload above them:
/// - [`CELL_LABEL`]: every point of the cell is inside the polygon of the label `payload`;
/// - [`CELL_OUTSIDE`]: every point of the cell is outside every polygon;
/// - [`CELL_NODE`]: the cell is split: its four children at the next depth are the entries
///   from `payload` on, at `payload + 2 * (y & 1) + (x & 1)`;
/// - [`CELL_MIXED`]: the answer depends on the point: ask [`PolygonIndex::hit`].
///
/// "Every point" means every point farther than `guard` degrees from each side of its cell
/// at `max_depth` (so from each side of every larger cell too): nearer a side, the tree's
/// midpoint arithmetic, the rounding of polygons cut at a quad's side and the rounding of the
/// edge tests can each decide otherwise, so such points must go to [`PolygonIndex::hit`].
#[derive(Clone, Debug)]
pub struct CellTree {
    pub top_depth: u32,
    pub max_depth: u32,
    /// Degrees.
    pub guard: f64,
    pub entries: Vec<u32>,
}

/// [`CellTree`] entry tags.
pub const CELL_LABEL: u32 = 0;
pub const CELL_OUTSIDE: u32 = 1;
pub const CELL_NODE: u32 = 2;
pub const CELL_MIXED: u32 = 3;

/// [`CellTree::guard`] in lattice steps. A polygon cut at a quad's side is rounded to the
/// lattice, so its cut edge lies within half a step of the side; the edge tests keep clear of
/// a cell's sides by [`TEST_INSET`] steps, which leaves half a step for the rounding of
/// coordinates and of the crossing test ([`super::crosses`]: errors of about 1e-7 steps).
const GUARD_STEPS: f64 = 2.0;
const TEST_INSET: f64 = 1.5;

/// Column and row offsets (0 or 1, rows from the north) of child quad `k` in geo-tz's order:
/// north-east, north-west, south-west, south-east.
const CHILD_CELL: [(usize, usize); 4] = [(1, 0), (0, 0), (0, 1), (1, 1)];

impl CellTree {
    /// The entry answering every point near `(lat, lon)`: a [`CELL_LABEL`] or
    /// [`CELL_OUTSIDE`] entry, or None where [`PolygonIndex::hit`] must decide (a mixed
    /// cell, a point within `guard` of its smallest cell's sides, or beyond the box).
    #[inline]
    pub fn answer_at(&self, lat: f64, lon: f64) -> Option<u32> {
        use super::{LAT_EDGE, LON_EDGE};
        if !(lat > -LAT_EDGE && lat < LAT_EDGE && lon > -LON_EDGE && lon < LON_EDGE) {
            return None;
        }
        let cells = (1u64 << self.max_depth) as f64;
        let fx = (lon + LON_EDGE) / (2.0 * LON_EDGE) * cells;
        let fy = (LAT_EDGE - lat) / (2.0 * LAT_EDGE) * cells;
        // both positive inside the box: truncation is the floor, without a call into libm
        let (x, y) = (fx as usize, fy as usize);
        let gx = self.guard / (2.0 * LON_EDGE) * cells;
        let gy = self.guard / (2.0 * LAT_EDGE) * cells;
        let (cx, cy) = (x as f64, y as f64);
        if fx - cx <= gx || cx + 1.0 - fx <= gx || fy - cy <= gy || cy + 1.0 - fy <= gy {
            return None;
        }
        let mut shift = self.max_depth - self.top_depth;
        let n = 1usize << self.top_depth;
        let mut e = self.entries[(y >> shift) * n + (x >> shift)];
        while e & 3 == CELL_NODE {
            shift -= 1;
            e = self.entries[(e >> 2) as usize + 2 * ((y >> shift) & 1) + ((x >> shift) & 1)];
        }
        (e & 3 != CELL_MIXED).then_some(e)
    }
}

impl PolygonIndex {
    /// The answers that need no geometry, as a [`CellTree`] down to `max_depth` (at most 20)
    /// under a grid at `top_depth` (1 to 12). See the module notes.
    pub fn cell_tree(&self, top_depth: u32, max_depth: u32) -> CellTree {
        let top = top_depth.clamp(1, 12);
        let max = max_depth.clamp(top, 20);
        let n = 1usize << top;
        let mut b = Builder {
            index: self,
            tree: CellTree {
                top_depth: top,
                max_depth: max,
                guard: GUARD_STEPS * self.q,
                entries: vec![CELL_MIXED; n * n],
            },
            edges: Vec::new(),
        };
        b.place(Source::Entry(NODE), Quad::ROOT, 0, (0, 0, n));
        b.tree
    }
}

/// A leaf's features decoded once, for the many questions the build asks of it.
struct LeafShape {
    /// Every edge, feature after feature, in lattice coordinates.
    edges: Vec<[f64; 4]>,
    /// Per feature: the end of its edges in `edges`, its label.
    features: Vec<(usize, u32)>,
}

impl LeafShape {
    fn decode(blob: &[u8]) -> LeafShape {
        let mut shape = LeafShape {
            edges: Vec::new(),
            features: Vec::new(),
        };
        walk_leaf(blob, |e| {
            match e {
                LeafEvent::Edge(ax, ay, bx, by) => shape.edges.push([ax, ay, bx, by]),
                LeafEvent::FeatureEnd(label) => shape.features.push((shape.edges.len(), label)),
            }
            false
        });
        shape
    }

    /// [`PolygonIndex::hit`] within this leaf, at lattice coordinates.
    fn hit(&self, qx: f64, qy: f64) -> Hit {
        let mut rule = EvenOdd::new(qx, qy);
        let mut start = 0;
        for &(end, label) in &self.features {
            for &[ax, ay, bx, by] in &self.edges[start..end] {
                rule.event(LeafEvent::Edge(ax, ay, bx, by));
            }
            start = end;
            if rule.event(LeafEvent::FeatureEnd(label)) {
                break;
            }
        }
        rule.found
    }
}

/// What decides the answers in a quad: the tree's entry for it, or, inside a leaf, the
/// leaf's edges that come near the quad (a range of [`Builder::edges`]).
#[derive(Clone, Copy)]
enum Source<'s> {
    Entry(u32),
    Edges(&'s LeafShape, usize, usize),
}

/// A quad split: one answer, a leaf of the tree to decode, or its children's sources.
enum Split<'s> {
    One(u32),
    Leaf(usize),
    Node(usize),
    Edges(&'s LeafShape, usize, usize),
}

impl<'s> Split<'s> {
    fn child(&self, index: &PolygonIndex, k: usize) -> Source<'s> {
        match *self {
            Split::Node(node) => Source::Entry(index.entry(node, k)),
            Split::Edges(shape, a, b) => Source::Edges(shape, a, b),
            Split::One(_) | Split::Leaf(_) => unreachable!("only split quads have children"),
        }
    }
}

struct Builder<'a> {
    index: &'a PolygonIndex,
    tree: CellTree,
    /// A stack of edges: the edges near each quad being split lie above its parent's.
    edges: Vec<[f64; 4]>,
}

impl Builder<'_> {
    /// Fills the top grid's cells under `quad` (cells `x0..x0 + size`, `y0..y0 + size`).
    fn place(
        &mut self,
        source: Source<'_>,
        quad: Quad,
        depth: u32,
        (x0, y0, size): (usize, usize, usize),
    ) {
        let n = 1usize << self.tree.top_depth;
        if depth == self.tree.top_depth {
            self.tree.entries[y0 * n + x0] = self.entry(source, quad, depth);
            return;
        }
        let mark = self.edges.len();
        let split = self.split(source, &quad, true);
        match split {
            Split::One(entry) => {
                for row in y0..y0 + size {
                    self.tree.entries[row * n + x0..row * n + x0 + size].fill(entry);
                }
            }
            Split::Leaf(leaf) => {
                self.with_leaf(leaf, |b, source| {
                    b.place(source, quad, depth, (x0, y0, size))
                });
            }
            Split::Node(_) | Split::Edges(..) => {
                let half = size / 2;
                for (k, &(dx, dy)) in CHILD_CELL.iter().enumerate() {
                    let at = (x0 + dx * half, y0 + dy * half, half);
                    self.place(split.child(self.index, k), quad.child(k), depth + 1, at);
                }
            }
        }
        self.edges.truncate(mark);
    }

    /// The entry of one cell below the top grid, appending the blocks of its children.
    fn entry(&mut self, source: Source<'_>, quad: Quad, depth: u32) -> u32 {
        let at_bottom = depth == self.tree.max_depth;
        let mark = self.edges.len();
        let split = self.split(source, &quad, !at_bottom);
        let entry = match split {
            Split::One(entry) => entry,
            Split::Leaf(leaf) => self.with_leaf(leaf, |b, source| b.entry(source, quad, depth)),
            _ if at_bottom => CELL_MIXED,
            Split::Node(_) | Split::Edges(..) => {
                let block = self.tree.entries.len();
                self.tree.entries.extend([CELL_MIXED; 4]);
                for (k, &(dx, dy)) in CHILD_CELL.iter().enumerate() {
                    let child = self.entry(split.child(self.index, k), quad.child(k), depth + 1);
                    self.tree.entries[block + 2 * dy + dx] = child;
                }
                let first = self.tree.entries[block];
                if first & 3 != CELL_NODE && self.tree.entries[block..].iter().all(|&e| e == first)
                {
                    // four leaves with one answer (no blocks of their own follow): one leaf
                    self.tree.entries.truncate(block);
                    first
                } else {
                    ((block as u32) << 2) | CELL_NODE
                }
            }
        };
        self.edges.truncate(mark);
        entry
    }

    /// Goes on in a leaf of the tree with all of its edges.
    fn with_leaf<R>(&mut self, leaf: usize, go: impl FnOnce(&mut Self, Source<'_>) -> R) -> R {
        let shape = LeafShape::decode(self.index.leaf(leaf));
        let start = self.edges.len();
        self.edges.extend_from_slice(&shape.edges);
        let r = go(self, Source::Edges(&shape, start, self.edges.len()));
        self.edges.truncate(start);
        r
    }

    /// The one answer of every point in `quad`, or what its children come from: for a part
    /// of a leaf, the edges near it, pushed onto [`Builder::edges`] (only when `keep`; else
    /// the quad is just found mixed).
    fn split<'s>(&mut self, source: Source<'s>, quad: &Quad, keep: bool) -> Split<'s> {
        let (shape, a, b) = match source {
            Source::Entry(e) => {
                return match e & 3 {
                    FILL => Split::One((e & !3) | CELL_LABEL),
                    OUTSIDE => Split::One(CELL_OUTSIDE),
                    NODE => Split::Node((e >> 2) as usize),
                    _ => Split::Leaf((e >> 2) as usize),
                }
            }
            Source::Edges(shape, a, b) => (shape, a, b),
        };
        let q = self.index.q;
        let test = [
            (quad.left + 180.0) / q + TEST_INSET,
            (quad.bottom + 90.0) / q + TEST_INSET,
            (quad.right + 180.0) / q - TEST_INSET,
            (quad.top + 90.0) / q - TEST_INSET,
        ];
        let start = self.edges.len();
        for i in a..b {
            let e = self.edges[i];
            if edge_meets_box(&e, &test) {
                if !keep {
                    return Split::Edges(shape, start, start);
                }
                self.edges.push(e);
            }
        }
        if self.edges.len() == start {
            // no edge comes near: its centre answers for all of the quad
            let (lat, lon) = (
                (quad.top + quad.bottom) / 2.0,
                (quad.left + quad.right) / 2.0,
            );
            return Split::One(match shape.hit((lon + 180.0) / q, (lat + 90.0) / q) {
                Hit::Label(l) => ((l as u32) << 2) | CELL_LABEL,
                Hit::Outside => CELL_OUTSIDE,
            });
        }
        Split::Edges(shape, start, self.edges.len())
    }
}

/// Whether the segment `[ax, ay, bx, by]` meets the box `[x0, y0, x1, y1]` (sides
/// included): their bounding boxes overlap and the box's corners are not all strictly on one
/// side of the segment's line (the separating axes of a segment and a box).
#[inline]
fn edge_meets_box(&[ax, ay, bx, by]: &[f64; 4], &[x0, y0, x1, y1]: &[f64; 4]) -> bool {
    if ax.max(bx) < x0 || ax.min(bx) > x1 || ay.max(by) < y0 || ay.min(by) > y1 {
        return false;
    }
    let side = |x: f64, y: f64| (bx - ax) * (y - ay) - (by - ay) * (x - ax);
    let s = [side(x0, y0), side(x1, y0), side(x0, y1), side(x1, y1)];
    !(s.iter().all(|&v| v > 0.0) || s.iter().all(|&v| v < 0.0))
}
