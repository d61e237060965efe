//! Land polygons for border strictness (`bt`).
//!
//! [`LandIndex`] answers "is this point on land?", "how far is the nearest land?"
//! and moves a position that lies too far out to sea back towards land. The data
//! is Natural Earth 1:10m land, prepared by `scripts/build-geodata.mjs` into
//! `data/land.bin`.
//!
//! # Geometry model
//! Polygons are taken as straight edges in lon/lat (as Natural Earth draws them),
//! with even-odd filling. Vertices sit on the TopoJSON quantisation lattice:
//! `lon = tx + x * sx`, `lat = ty + y * sy` with integer `x, y` (1e5 steps across
//! each axis, about 400 m x 190 m at the equator). Rings that crossed the
//! antimeridian are cut at it, and Antarctica is closed along lat -90, so every
//! ring lies in `0 <= x <= x_max` (lon -180..180). Distances are measured in a
//! local equirectangular frame around the query point, which is accurate to a
//! fraction of a percent over the tens of kilometres that border strictness needs.
//!
//! # Grid
//! Grid coordinates are lattice coordinates with `gy = y - y0` (`y0 < 0` puts the
//! grid's first row below the South Pole). Three nested levels:
//! - T-cell: 256 x 512 units (about 0.92 x 0.86 degrees), 8 x 8 E-cells;
//! - E-cell: 32 x 64 units (about 12 km), 4 x 4 R-cells; edges are stored per E-cell;
//! - R-cell: 8 x 16 units (at most 3.2 x 3.0 km; its diagonal is under 4.4 km),
//!   classified in 2 bits:
//!   - 0 `LAND`: no edge touches the cell and it lies inside land;
//!   - 1 `NEAR`: every point is within 5 km of land (any cell an edge touches, and
//!     water cells whose bound says so);
//!   - 2 `MID`: water, every point within 15 km of land;
//!   - 3 `FAR`: water, no such guarantee.
//!
//! The water bounds are conservative: for a water cell the builder takes one land
//! edge and the largest distance from the cell's corners to it (distance to a
//! segment is convex, so that bounds every point of the cell), plus 3 % and 10 m.
//!
//! # File format (`data/land.bin`, all integers little-endian)
//! ```text
//! offset size  field
//!      0    8  magic "WBLAND01"
//!      8    4  u32 version = 1
//!     12    4  u32 header size = 80
//!     16   32  f64 tx, ty, sx, sy          lattice -> lon/lat
//!     48    4  i32 x_max                   lattice x of lon +180 (lon -180 is x = 0)
//!     52    4  i32 y0                      lattice y of grid row 0 (a multiple of 512, <= 0)
//!     56    4  u32 t_cols
//!     60    4  u32 t_rows
//!     64    4  u32 n_nodes
//!     68    4  u32 n_records
//!     72    4  u32 edge_bytes
//!     76    4  u32 reserved = 0
//!     80       top:     t_cols * t_rows x u32, row-major from the south-west.
//!                       v < 4: the whole T-cell has class v and no edges;
//!                       v >= 4: node v - 4.
//!              nodes:   n_nodes x 72 bytes: u32 edge_base, u32 rec_base, u8 eidx[64]
//!                       (E-cells row-major). eidx < 4: the E-cell has class eidx and
//!                       no edges; eidx >= 4: record rec_base + eidx - 4.
//!              records: n_records x 8 bytes: u32 raster (R-cell (i, j) at bits
//!                       2 * (4j + i)), u16 edge_rel, u16 edge_len: the E-cell's edges
//!                       are edges[edge_base + edge_rel ..][.. edge_len].
//!              edges:   edge_bytes bytes, padded with zeros to a multiple of 4.
//!                       An E-cell's edges are runs of connected vertices: u8 n (>= 2),
//!                       then n x (i8 dx, i8 dy) relative to the E-cell's south-west
//!                       corner. Every edge that touches the closed E-cell is present.
//!      end-4    4  u32 FNV-1a (32-bit) over the preceding u32 words
//! ```
//! An E-cell without edges lies wholly in land or wholly in water; so does a
//! T-cell without a node.
//!
//! # Queries
//! - Class lookup: two or three array reads.
//! - Point in polygon: a ray to the east, counting the crossings in each E-cell
//!   (only those whose crossing point falls inside that E-cell, so each crossing is
//!   counted once) until it reaches an E-cell without edges, whose side is known.
//! - Nearest land: E-cells with edges around the point, nearest box first, until
//!   the next box is farther than the best edge found.

use std::fmt;
use std::path::Path;

use crate::datafile::{check_envelope, f64_at, u32_at};
use crate::geo::{distance_m, normalize_lon, LocalFrame, EARTH_RADIUS_M};

const MAGIC: &[u8; 8] = b"WBLAND01";
const HEADER: usize = 80;
const NODE_BYTES: usize = 72;
const REC_BYTES: usize = 8;

const RW: i64 = 8;
const RH: i64 = 16;
const EW: i64 = 32;
const EH: i64 = 64;
const TW: i64 = 256;
const TH: i64 = 512;

const LAND: u8 = 0;
const NEAR: u8 = 1;
const MID: u8 = 2;
const FAR: u8 = 3;
const NEAR_M: f64 = 5000.0;
const MID_M: f64 = 15000.0;

/// The border strictness bands of the spec: `bt=0` on land, `bt=1` within 5 km,
/// `bt=2` within 15 km of land.
pub fn bt_allowed_m(bt: u8) -> f64 {
    match bt {
        0 => 0.0,
        1 => NEAR_M,
        _ => MID_M,
    }
}

#[derive(Debug)]
pub enum LandError {
    Io(std::io::Error),
    Corrupt(String),
}

impl fmt::Display for LandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LandError::Io(e) => write!(f, "land index: {e}"),
            LandError::Corrupt(m) => write!(f, "land index is corrupt: {m}"),
        }
    }
}

impl std::error::Error for LandError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LandError::Io(e) => Some(e),
            LandError::Corrupt(_) => None,
        }
    }
}

impl From<std::io::Error> for LandError {
    fn from(e: std::io::Error) -> Self {
        LandError::Io(e)
    }
}

#[derive(Clone, Copy)]
struct Node {
    edge_base: u32,
    rec_base: u32,
    eidx: [u8; 64],
}

#[derive(Clone, Copy)]
struct Rec {
    raster: u32,
    rel: u16,
    len: u16,
}

/// What a query needs of one E-cell.
#[derive(Clone, Copy)]
struct ECell<'a> {
    raster: u32,
    edges: &'a [u8],
}

const UNIFORM_RASTER: [u32; 4] = [0, 0x5555_5555, 0xaaaa_aaaa, 0xffff_ffff];

/// Great-circle metres from (lat, lon) to the nearest point found around it.
fn great_circle(lat: f64, lon: f64, n: &Nearest) -> f64 {
    let (plat, plon) = LocalFrame::new(lat, lon).to_latlon(n.east_m, n.north_m);
    distance_m(lat, lon, plat, plon)
}

/// The nearest land found by a search, as an offset from the query point.
#[derive(Clone, Copy, Debug)]
struct Nearest {
    dist_m: f64,
    east_m: f64,
    north_m: f64,
}

pub struct LandIndex {
    tx: f64,
    ty: f64,
    inv_sx: f64,
    inv_sy: f64,
    sx: f64,
    sy: f64,
    x_max: i64,
    y0: i64,
    t_cols: i64,
    t_rows: i64,
    top: Vec<u32>,
    nodes: Vec<Node>,
    recs: Vec<Rec>,
    edges: Vec<u8>,
}

impl fmt::Debug for LandIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LandIndex")
            .field("t_cols", &self.t_cols)
            .field("t_rows", &self.t_rows)
            .field("nodes", &self.nodes.len())
            .field("records", &self.recs.len())
            .field("edge_bytes", &self.edges.len())
            .finish()
    }
}

fn corrupt<T>(msg: impl Into<String>) -> Result<T, LandError> {
    Err(LandError::Corrupt(msg.into()))
}

/// Checks that `runs` is a whole number of well-formed runs.
fn runs_ok(runs: &[u8]) -> bool {
    let mut i = 0;
    while i < runs.len() {
        let n = runs[i] as usize;
        if n < 2 || i + 1 + 2 * n > runs.len() {
            return false;
        }
        i += 1 + 2 * n;
    }
    true
}

/// Calls `f(ax, ay, bx, by)` for every edge of an E-cell, in grid coordinates.
#[inline]
fn for_each_edge(runs: &[u8], ox: f64, oy: f64, mut f: impl FnMut(f64, f64, f64, f64)) {
    let mut i = 0;
    while i < runs.len() {
        let n = runs[i] as usize;
        let vs = &runs[i + 1..i + 1 + 2 * n];
        let mut ax = ox + f64::from(vs[0] as i8);
        let mut ay = oy + f64::from(vs[1] as i8);
        for v in vs[2..].chunks_exact(2) {
            let bx = ox + f64::from(v[0] as i8);
            let by = oy + f64::from(v[1] as i8);
            f(ax, ay, bx, by);
            ax = bx;
            ay = by;
        }
        i += 1 + 2 * n;
    }
}

impl LandIndex {
    pub fn open(path: &Path) -> Result<LandIndex, LandError> {
        LandIndex::from_bytes(std::fs::read(path)?)
    }

    pub fn from_bytes(bytes: Vec<u8>) -> Result<LandIndex, LandError> {
        let b = &bytes[..];
        check_envelope(b, MAGIC, HEADER, "land index").map_err(LandError::Corrupt)?;
        let (tx, ty, sx, sy) = (f64_at(b, 16), f64_at(b, 24), f64_at(b, 32), f64_at(b, 40));
        let x_max = u32_at(b, 48) as i32 as i64;
        let y0 = u32_at(b, 52) as i32 as i64;
        let t_cols = u32_at(b, 56) as usize;
        let t_rows = u32_at(b, 60) as usize;
        let n_nodes = u32_at(b, 64) as usize;
        let n_recs = u32_at(b, 68) as usize;
        let edge_bytes = u32_at(b, 72) as usize;
        let finite_pos = |v: f64| v.is_finite() && v > 0.0;
        if !(tx.is_finite() && ty.is_finite() && finite_pos(sx) && finite_pos(sy)) {
            return corrupt("bad lattice transform");
        }
        if x_max <= 0 || y0 > 0 || y0 % TH != 0 || t_cols == 0 || t_rows == 0 {
            return corrupt("bad grid");
        }
        if t_cols > 1 << 16 || t_rows > 1 << 16 || (t_cols as i64) * TW < x_max + 1 {
            return corrupt("grid dimensions out of range");
        }
        let top_len = t_cols * t_rows;
        let pad = (4 - edge_bytes % 4) % 4;
        let expect = [
            top_len * 4,
            n_nodes * NODE_BYTES,
            n_recs * REC_BYTES,
            edge_bytes + pad,
            4,
        ]
        .iter()
        .try_fold(HEADER, |acc, &n| acc.checked_add(n));
        if expect != Some(b.len()) {
            return corrupt("section sizes do not match the file size");
        }

        let mut o = HEADER;
        let mut top = Vec::with_capacity(top_len);
        for _ in 0..top_len {
            let v = u32_at(b, o);
            if v >= 4 && (v - 4) as usize >= n_nodes {
                return corrupt(format!("top entry {v} out of range"));
            }
            top.push(v);
            o += 4;
        }
        let mut nodes = Vec::with_capacity(n_nodes);
        for _ in 0..n_nodes {
            let mut eidx = [0u8; 64];
            eidx.copy_from_slice(&b[o + 8..o + 72]);
            nodes.push(Node {
                edge_base: u32_at(b, o),
                rec_base: u32_at(b, o + 4),
                eidx,
            });
            o += NODE_BYTES;
        }
        let mut recs = Vec::with_capacity(n_recs);
        for _ in 0..n_recs {
            recs.push(Rec {
                raster: u32_at(b, o),
                rel: u16::from_le_bytes([b[o + 4], b[o + 5]]),
                len: u16::from_le_bytes([b[o + 6], b[o + 7]]),
            });
            o += REC_BYTES;
        }
        let edges = b[o..o + edge_bytes].to_vec();

        // Every (node, E-cell) reference must land on a record whose edges are in
        // bounds and well formed, so queries can index without checks failing.
        for (ni, n) in nodes.iter().enumerate() {
            for &e in &n.eidx {
                if e < 4 {
                    continue;
                }
                let r = n.rec_base as usize + (e - 4) as usize;
                let Some(rec) = recs.get(r) else {
                    return corrupt(format!("node {ni} refers to missing record {r}"));
                };
                let start = n.edge_base as usize + rec.rel as usize;
                let end = start + rec.len as usize;
                if end > edge_bytes || !runs_ok(&edges[start..end]) {
                    return corrupt(format!("record {r} has bad edge data"));
                }
            }
        }

        Ok(LandIndex {
            tx,
            ty,
            inv_sx: 1.0 / sx,
            inv_sy: 1.0 / sy,
            sx,
            sy,
            x_max,
            y0,
            t_cols: t_cols as i64,
            t_rows: t_rows as i64,
            top,
            nodes,
            recs,
            edges,
        })
    }

    /// Grid coordinates of a position (lon normalised, lat clamped).
    #[inline]
    fn grid(&self, lat: f64, lon: f64) -> (f64, f64) {
        let lon = if (-180.0..=180.0).contains(&lon) {
            lon
        } else {
            normalize_lon(lon)
        };
        let lat = lat.clamp(-90.0, 90.0);
        let gx = ((lon - self.tx) * self.inv_sx).clamp(0.0, self.x_max as f64);
        let gy = (lat - self.ty) * self.inv_sy - self.y0 as f64;
        (gx, gy)
    }

    #[inline]
    fn e_rows(&self) -> i64 {
        self.t_rows * (TH / EH)
    }

    #[inline]
    fn e_cols(&self) -> i64 {
        self.t_cols * (TW / EW)
    }

    /// The E-cell at E-grid indices; outside the grid is open water.
    #[inline]
    fn ecell(&self, ex: i64, ey: i64) -> ECell<'_> {
        if ex < 0 || ey < 0 || ex >= self.e_cols() || ey >= self.e_rows() {
            return ECell {
                raster: UNIFORM_RASTER[FAR as usize],
                edges: &[],
            };
        }
        let t = self.top[((ey >> 3) * self.t_cols + (ex >> 3)) as usize];
        if t < 4 {
            return ECell {
                raster: UNIFORM_RASTER[t as usize],
                edges: &[],
            };
        }
        let node = &self.nodes[(t - 4) as usize];
        let e = node.eidx[(((ey & 7) << 3) | (ex & 7)) as usize];
        if e < 4 {
            return ECell {
                raster: UNIFORM_RASTER[e as usize],
                edges: &[],
            };
        }
        let rec = &self.recs[node.rec_base as usize + (e - 4) as usize];
        let start = node.edge_base as usize + rec.rel as usize;
        ECell {
            raster: rec.raster,
            edges: &self.edges[start..start + rec.len as usize],
        }
    }

    /// R-cell class at grid coordinates.
    #[inline]
    fn class_at(&self, gx: f64, gy: f64) -> u8 {
        // also rejects NaN
        if gy.is_nan() || gy < 0.0 {
            return FAR;
        }
        let (ix, iy) = (gx as i64, gy as i64);
        let c = self.ecell(ix / EW, iy / EH);
        let shift = 2 * (((iy % EH) / RH) * 4 + (ix % EW) / RW);
        ((c.raster >> shift) & 3) as u8
    }

    /// Even-odd point in polygon by a ray to the east (see the module notes).
    fn inside(&self, gx: f64, gy: f64) -> bool {
        // also rejects NaN
        if gy.is_nan() || gy < 0.0 {
            return false;
        }
        let ey = gy as i64 / EH;
        let oy = (ey * EH) as f64;
        let mut ex = gx as i64 / EW;
        let mut odd = false;
        loop {
            let c = self.ecell(ex, ey);
            if c.edges.is_empty() {
                return odd ^ (c.raster & 3 == LAND as u32);
            }
            let x0 = (ex * EW) as f64;
            let x1 = x0 + EW as f64;
            for_each_edge(c.edges, x0, oy, |ax, ay, bx, by| {
                if (ay > gy) != (by > gy) {
                    let xi = ax + (gy - ay) * (bx - ax) / (by - ay);
                    if xi > gx && xi >= x0 && xi < x1 {
                        odd = !odd;
                    }
                }
            });
            ex += 1;
        }
    }

    fn is_land_grid(&self, gx: f64, gy: f64) -> bool {
        match self.class_at(gx, gy) {
            LAND => true,
            NEAR => self.inside(gx, gy),
            _ => false,
        }
    }

    pub fn is_land(&self, lat: f64, lon: f64) -> bool {
        if !(lat.is_finite() && lon.is_finite()) {
            return false;
        }
        let (gx, gy) = self.grid(lat, lon);
        self.is_land_grid(gx, gy)
    }

    /// The nearest point of any land edge within `max_m`, by E-cells in order of
    /// their distance from the point.
    fn nearest_edge(&self, gx: f64, gy: f64, lat: f64, max_m: f64) -> Option<Nearest> {
        let m_per_deg = EARTH_RADIUS_M.to_radians();
        let ux = self.sx * m_per_deg * lat.to_radians().cos().max(1e-6);
        let uy = self.sy * m_per_deg;
        let period = self.x_max as f64;
        // an edge may reach out of its E-cell, but it is listed in every E-cell it
        // touches, so the boxes bound it exactly
        let reach_y = max_m / uy;
        let reach_x = (max_m / ux).min(period / 2.0 + EW as f64);
        let ey_lo = (((gy - reach_y) / EH as f64).floor() as i64).max(0);
        let ey_hi = (((gy + reach_y) / EH as f64).floor() as i64).min(self.e_rows() - 1);
        if ey_lo > ey_hi {
            return None;
        }
        let mut cand: Vec<(f64, i64, i64, f64)> = Vec::new();
        for shift in [-period, 0.0, period] {
            let qx = gx + shift;
            let lo = (((qx - reach_x) / EW as f64).floor() as i64).max(0);
            let hi = (((qx + reach_x) / EW as f64).floor() as i64).min(self.e_cols() - 1);
            if lo > hi {
                continue;
            }
            for ey in ey_lo..=ey_hi {
                let y0 = (ey * EH) as f64;
                let dy = (y0 - gy).max(gy - (y0 + EH as f64)).max(0.0) * uy;
                if dy > max_m {
                    continue;
                }
                let mut ex = lo;
                while ex <= hi {
                    // skip whole T-cells without edges
                    let t = self.top[((ey >> 3) * self.t_cols + (ex >> 3)) as usize];
                    if t < 4 {
                        ex = (ex | 7) + 1;
                        continue;
                    }
                    let e =
                        self.nodes[(t - 4) as usize].eidx[(((ey & 7) << 3) | (ex & 7)) as usize];
                    if e >= 4 {
                        let x0 = (ex * EW) as f64;
                        let dx = (x0 - qx).max(qx - (x0 + EW as f64)).max(0.0) * ux;
                        let lb = dx.hypot(dy);
                        if lb <= max_m {
                            cand.push((lb, ex, ey, shift));
                        }
                    }
                    ex += 1;
                }
            }
        }
        cand.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut best: Option<Nearest> = None;
        let mut best_d2 = max_m * max_m;
        for &(lb, ex, ey, shift) in &cand {
            if lb * lb > best_d2 {
                break;
            }
            let c = self.ecell(ex, ey);
            let qx = gx + shift;
            for_each_edge(
                c.edges,
                (ex * EW) as f64,
                (ey * EH) as f64,
                |ax, ay, bx, by| {
                    let (axm, aym) = ((ax - qx) * ux, (ay - gy) * uy);
                    let (dxm, dym) = ((bx - ax) * ux, (by - ay) * uy);
                    let len2 = dxm * dxm + dym * dym;
                    let t = if len2 > 0.0 {
                        (-(axm * dxm + aym * dym) / len2).clamp(0.0, 1.0)
                    } else {
                        0.0
                    };
                    let (px, py) = (axm + t * dxm, aym + t * dym);
                    let d2 = px * px + py * py;
                    if d2 <= best_d2 {
                        best_d2 = d2;
                        best = Some(Nearest {
                            dist_m: 0.0,
                            east_m: px,
                            north_m: py,
                        });
                    }
                },
            );
        }
        best.map(|mut n| {
            n.dist_m = best_d2.sqrt();
            n
        })
    }

    /// Metres to the nearest land (0.0 on land); None when no land lies within max_m.
    pub fn distance_to_land_m(&self, lat: f64, lon: f64, max_m: f64) -> Option<f64> {
        if !(lat.is_finite() && lon.is_finite()) {
            return None;
        }
        let (gx, gy) = self.grid(lat, lon);
        if self.is_land_grid(gx, gy) {
            return Some(0.0);
        }
        if max_m.is_nan() || max_m < 0.0 {
            return None;
        }
        let lat = lat.clamp(-90.0, 90.0);
        let n = self.nearest_edge(gx, gy, lat, max_m)?;
        let d = great_circle(lat, lon, &n);
        (d <= max_m).then_some(d)
    }

    /// Border strictness: a point within allowed_m of land (allowed_m = 0: on land) is returned unchanged with moved=false.
    /// Otherwise the point is moved along the line to its nearest land point until it is allowed_m from land
    /// (onto land, slightly inside, for allowed_m = 0) and moved=true. If no land lies within search_m, unchanged, moved=false.
    pub fn constrain(&self, lat: f64, lon: f64, allowed_m: f64, search_m: f64) -> (f64, f64, bool) {
        let unchanged = (lat, lon, false);
        if !(lat.is_finite() && lon.is_finite() && allowed_m >= 0.0) {
            return unchanged;
        }
        let (gx, gy) = self.grid(lat, lon);
        let class = self.class_at(gx, gy);
        match class {
            LAND => return unchanged,
            NEAR if allowed_m >= NEAR_M => return unchanged,
            MID if allowed_m >= MID_M => return unchanged,
            NEAR if self.inside(gx, gy) => return unchanged,
            _ => {}
        }
        if search_m.is_nan() || search_m <= allowed_m {
            return unchanged;
        }
        let lat_c = lat.clamp(-90.0, 90.0);
        let Some(n) = self.nearest_edge(gx, gy, lat_c, search_m) else {
            return unchanged;
        };
        let d = great_circle(lat_c, lon, &n);
        if d <= allowed_m {
            return unchanged;
        }
        // Land a little inside the band, so that measuring again from the new point
        // (in its own local frame) still finds it allowed.
        let target_m = (allowed_m - 1.0 - allowed_m * 3e-3).max(0.0);
        let frame = LocalFrame::new(lat_c, lon);
        // the local frame's east scale drifts with latitude; the great-circle
        // distance is what callers measure
        let (ux, uy) = (n.east_m / n.dist_m, n.north_m / n.dist_m);
        if allowed_m > 0.0 {
            let k = (d - target_m) / d;
            let (la, lo) = frame.to_latlon(n.east_m * k, n.north_m * k);
            return (la, lo, true);
        }
        let (la, lo) = self.step_inside(&frame, n.east_m, n.north_m, ux, uy);
        (la, lo, true)
    }

    /// A land point just past the boundary point (px, py) (metres in `frame`), as
    /// close to the frame's origin as a small search around it finds; the boundary
    /// point itself if the land there is too thin to find.
    fn step_inside(&self, frame: &LocalFrame, px: f64, py: f64, ux: f64, uy: f64) -> (f64, f64) {
        for step in [5.0, 25.0] {
            let (la, lo) = frame.to_latlon(px + ux * step, py + uy * step);
            if self.is_land(la, lo) {
                return (la, lo);
            }
        }
        // A corner of land pointing away from the line: look around the corner.
        for r in [5.0, 25.0, 100.0, 400.0] {
            let mut found: Option<(f64, f64, f64)> = None;
            for k in 0..16 {
                let a = f64::from(k) * std::f64::consts::PI / 8.0;
                let (x, y) = (px + r * a.cos(), py + r * a.sin());
                let (la, lo) = frame.to_latlon(x, y);
                if self.is_land(la, lo) {
                    let d = x.hypot(y);
                    if found.is_none_or(|f| d < f.0) {
                        found = Some((d, la, lo));
                    }
                }
            }
            if let Some((_, la, lo)) = found {
                return (la, lo);
            }
        }
        frame.to_latlon(px, py)
    }

    /// Every land edge touching the lat/lon box, once each, as (lat_a, lon_a,
    /// lat_b, lon_b): for baselines and diagnostics, not for queries.
    #[doc(hidden)]
    pub fn edges_in_box(&self, lat0: f64, lon0: f64, lat1: f64, lon1: f64) -> Vec<[f64; 4]> {
        let (gx0, gy0) = self.grid(lat0, lon0);
        let (gx1, gy1) = self.grid(lat1, lon1);
        let mut raw: Vec<[i64; 4]> = Vec::new();
        let (ey0, ey1) = ((gy0.max(0.0) as i64) / EH, (gy1.max(0.0) as i64) / EH);
        for ey in ey0..=ey1.min(self.e_rows() - 1) {
            for ex in (gx0 as i64) / EW..=(gx1 as i64) / EW {
                let c = self.ecell(ex, ey);
                for_each_edge(
                    c.edges,
                    (ex * EW) as f64,
                    (ey * EH) as f64,
                    |ax, ay, bx, by| {
                        raw.push([ax as i64, ay as i64, bx as i64, by as i64]);
                    },
                );
            }
        }
        raw.sort_unstable();
        raw.dedup();
        let deg = |x: i64, y: i64| {
            (
                self.ty + (y + self.y0) as f64 * self.sy,
                self.tx + x as f64 * self.sx,
            )
        };
        raw.iter()
            .map(|&[ax, ay, bx, by]| {
                let (la, lo) = deg(ax, ay);
                let (lb, lob) = deg(bx, by);
                [la, lo, lb, lob]
            })
            .collect()
    }
}
