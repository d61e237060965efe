//! Timezone of a point: the timezone-boundary-builder polygons that `geo-tz` ships
//! (its default "1970" product), prepared by `scripts/build-timezones.mjs` into
//! `data/timezones.bin`.
//!
//! [`TimezoneIndex::zone_at`] answers the IANA name of the zone containing a point, and
//! for a point at sea outside every polygon the nautical zone of its longitude
//! (`Etc/GMT-1` for 7.5 E to 22.5 E: the Etc zones name the offset with the sign
//! inverted, POSIX style).
//!
//! # Why a quadtree shaped like geo-tz's
//! The answers must agree with geo-tz on the same data. geo-tz decides by the quad of its
//! quadtree a point falls in: a quad without data is sea, a quad wholly inside one zone
//! answers without geometry, other quads test the point against their polygons, clipped to
//! the quad. The builder keeps that tree with the same midpoint arithmetic (so those
//! decisions are identical, bit for bit) and splits quads that hold many vertices further,
//! clipping the polygons to each child, so that a lookup walks about 15 levels and then
//! tests at most a few dozen edges.
//!
//! # Geometry model
//! Vertices sit on a lattice `x = (lon + 180) / q`, `y = (lat + 90) / q` (`q` from the
//! header, 1e-5 degree by default) after Douglas-Peucker simplification in the builder, so
//! answers can differ from geo-tz's only within a few metres of a border
//! (`bench/timezone.ts` measures how often). Edges are straight in lon/lat, as geo-tz
//! takes them; a point is inside a feature by the even-odd rule over all its rings.
//! Where features overlap, the first in the leaf wins, as geo-tz lists it first.
//!
//! # File format (`data/timezones.bin`, integers little-endian)
//! ```text
//! offset size  field
//!      0    8  magic "WBTZONE1"
//!      8    4  u32 version = 1
//!     12    4  u32 header size = 48
//!     16    8  f64 q                  lattice step in degrees
//!     24    4  u32 n_zones
//!     28    4  u32 names_len          bytes of the name table
//!     32    4  u32 n_nodes            node 0 is the root
//!     36    4  u32 n_leaves
//!     40    4  u32 blob_len
//!     44    4  u32 reserved = 0
//!     48       names:  n_zones x (u8 len, UTF-8 bytes), zero-padded to a multiple of 4
//!              nodes:  n_nodes x 4 x u32 child entries, quads in geo-tz's order
//!                      a (north-east), b (north-west), c (south-west), d (south-east).
//!                      Entry: low 2 bits tag, the rest payload.
//!                      tag 0 sea, 1 zone (payload: zone index), 2 node, 3 leaf.
//!              leaves: (n_leaves + 1) x u32 offsets into the blob
//!              blob:   per leaf, varints (LEB128): n_features, then per feature
//!                      zone, n_rings, then per ring n_vertices and the vertices as
//!                      zigzag deltas (x then y) from the previous one (the first from 0).
//!                      Zero-padded to a multiple of 4.
//!      end-4    4  u32 FNV-1a (32-bit) over the preceding u32 words
//! ```

use std::fmt;
use std::path::Path;

use crate::datafile::{check_envelope, f64_at, u32_at};

const MAGIC: &[u8; 8] = b"WBTZONE1";
const HEADER: usize = 48;

const SEA: u32 = 0;
const ZONE: u32 = 1;
const NODE: u32 = 2;
const LEAF: u32 = 3;

/// geo-tz clamps queries into this box before it descends its quadtree.
const LAT_EDGE: f64 = 89.9999;
const LON_EDGE: f64 = 179.9999;

/// Nautical zones, index = hours east of Greenwich + 12. Etc zone names carry the POSIX
/// sign: `Etc/GMT-1` is UTC+1.
const NAUTICAL: [&str; 25] = [
    "Etc/GMT+12",
    "Etc/GMT+11",
    "Etc/GMT+10",
    "Etc/GMT+9",
    "Etc/GMT+8",
    "Etc/GMT+7",
    "Etc/GMT+6",
    "Etc/GMT+5",
    "Etc/GMT+4",
    "Etc/GMT+3",
    "Etc/GMT+2",
    "Etc/GMT+1",
    "Etc/GMT",
    "Etc/GMT-1",
    "Etc/GMT-2",
    "Etc/GMT-3",
    "Etc/GMT-4",
    "Etc/GMT-5",
    "Etc/GMT-6",
    "Etc/GMT-7",
    "Etc/GMT-8",
    "Etc/GMT-9",
    "Etc/GMT-10",
    "Etc/GMT-11",
    "Etc/GMT-12",
];

/// The nautical zone of a longitude (-180..=180): 15-degree bands centred on multiples of
/// 15 degrees; a longitude on a band edge belongs to the band east of it, and both
/// antimeridian edges to UTC-12, as geo-tz answers first.
pub fn nautical_zone(lon: f64) -> &'static str {
    if lon <= -180.0 || lon >= 180.0 {
        return NAUTICAL[0];
    }
    let h = ((lon + 7.5) / 15.0).floor().clamp(-12.0, 12.0) as i64;
    NAUTICAL[(h + 12) as usize]
}

#[derive(Debug)]
pub enum TimezoneError {
    Io(std::io::Error),
    Corrupt(String),
}

impl fmt::Display for TimezoneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimezoneError::Io(e) => write!(f, "timezone index: {e}"),
            TimezoneError::Corrupt(m) => write!(f, "timezone index is corrupt: {m}"),
        }
    }
}

impl std::error::Error for TimezoneError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TimezoneError::Io(e) => Some(e),
            TimezoneError::Corrupt(_) => None,
        }
    }
}

impl From<std::io::Error> for TimezoneError {
    fn from(e: std::io::Error) -> Self {
        TimezoneError::Io(e)
    }
}

fn corrupt<T>(msg: impl Into<String>) -> Result<T, TimezoneError> {
    Err(TimezoneError::Corrupt(msg.into()))
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

/// Walks a leaf; `f(zone, inside)` is called per feature until it returns true.
/// Returns None when the bytes are malformed.
fn scan_leaf(
    blob: &[u8],
    point: Option<(f64, f64)>,
    mut f: impl FnMut(u32, bool) -> bool,
) -> Option<()> {
    let mut r = Varints { b: blob, i: 0 };
    let n_features = r.next()?;
    for _ in 0..n_features {
        let zone = u32::try_from(r.next()?).ok()?;
        let n_rings = r.next()?;
        let mut odd = false;
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
                if let Some((qx, qy)) = point {
                    if k == 0 {
                        (fx, fy) = (bx, by);
                    } else if crosses(px, py, bx, by, qx, qy) {
                        odd = !odd;
                    }
                }
                (px, py) = (bx, by);
            }
            if let Some((qx, qy)) = point {
                if n > 0 && crosses(px, py, fx, fy, qx, qy) {
                    odd = !odd;
                }
            }
        }
        if f(zone, odd) {
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

/// The timezone polygons, loaded (see the module notes).
pub struct TimezoneIndex {
    bytes: Vec<u8>,
    q: f64,
    names: Vec<String>,
    nodes_at: usize,
    n_nodes: usize,
    leaves_at: usize,
    n_leaves: usize,
    blob_at: usize,
}

impl fmt::Debug for TimezoneIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimezoneIndex")
            .field("zones", &self.names.len())
            .field("nodes", &self.n_nodes)
            .field("leaves", &self.n_leaves)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

impl TimezoneIndex {
    pub fn open(path: &Path) -> Result<TimezoneIndex, TimezoneError> {
        TimezoneIndex::from_bytes(std::fs::read(path)?)
    }

    pub fn from_bytes(bytes: Vec<u8>) -> Result<TimezoneIndex, TimezoneError> {
        let b = &bytes[..];
        check_envelope(b, MAGIC, HEADER, "timezone index").map_err(TimezoneError::Corrupt)?;
        let q = f64_at(b, 16);
        let n_zones = u32_at(b, 24) as usize;
        let names_len = u32_at(b, 28) as usize;
        let n_nodes = u32_at(b, 32) as usize;
        let n_leaves = u32_at(b, 36) as usize;
        let blob_len = u32_at(b, 40) as usize;
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
        if expect != Some(b.len()) {
            return corrupt("section sizes do not match the file size");
        }

        let mut names = Vec::with_capacity(n_zones);
        let mut o = HEADER;
        for _ in 0..n_zones {
            let len = *b
                .get(o)
                .ok_or(TimezoneError::Corrupt("names cut short".into()))?
                as usize;
            let Some(raw) = b.get(o + 1..o + 1 + len) else {
                return corrupt("names cut short");
            };
            let Ok(name) = std::str::from_utf8(raw) else {
                return corrupt("a zone name is not UTF-8");
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

        let index = TimezoneIndex {
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
    fn validate(&self, blob_len: usize) -> Result<(), TimezoneError> {
        for i in 0..self.n_nodes * 4 {
            let e = u32_at(&self.bytes, self.nodes_at + 4 * i);
            let p = (e >> 2) as usize;
            let ok = match e & 3 {
                SEA => true,
                ZONE => p < self.names.len(),
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
            let mut zones_ok = true;
            let ok = scan_leaf(self.leaf(l), None, |zone, _| {
                zones_ok &= (zone as usize) < self.names.len();
                false
            });
            if ok.is_none() || !zones_ok {
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

    /// Every zone name the polygons use, in file order (nautical zones not included).
    pub fn zone_names(&self) -> &[String] {
        &self.names
    }

    /// The IANA name of the timezone at a point; the nautical `Etc/GMT±N` zone at sea.
    /// None for a latitude outside -90..=90, a longitude outside -180..=180, or NaN.
    pub fn zone_at(&self, lat: f64, lon: f64) -> Option<&str> {
        let i = self.zone_index_at(lat, lon)?;
        Some(match self.names.get(i) {
            Some(n) => n,
            None => NAUTICAL[i - self.names.len()],
        })
    }

    /// Every name [`TimezoneIndex::zone_index_at`] can answer: the polygons' zones in file
    /// order, then the 25 nautical zones from `Etc/GMT+12` (UTC-12) to `Etc/GMT-12`.
    pub fn all_names(&self) -> Vec<&str> {
        self.names
            .iter()
            .map(String::as_str)
            .chain(NAUTICAL.iter().copied())
            .collect()
    }

    /// The zone at a point as an index into [`TimezoneIndex::all_names`]: the form that
    /// crosses into JavaScript without building a string per lookup.
    pub fn zone_index_at(&self, lat: f64, lon: f64) -> Option<usize> {
        if !((-90.0..=90.0).contains(&lat) && (-180.0..=180.0).contains(&lon)) {
            return None;
        }
        let nautical = |lon: f64| {
            let name = nautical_zone(lon);
            self.names.len() + NAUTICAL.iter().position(|n| *n == name).unwrap_or(12)
        };
        if lat == 90.0 {
            // geo-tz lists every nautical zone for the pole itself; its longitude's is one
            return Some(nautical(lon));
        }
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
                SEA => return Some(nautical(lon)),
                ZONE => return Some(p),
                NODE => node = p,
                LEAF => {
                    let qx = (lo + 180.0) / self.q;
                    let qy = (la + 90.0) / self.q;
                    let mut found = None;
                    scan_leaf(self.leaf(p), Some((qx, qy)), |zone, inside| {
                        if inside {
                            found = Some(zone as usize);
                        }
                        inside
                    });
                    return Some(found.unwrap_or_else(|| nautical(lon)));
                }
                _ => return None,
            }
            mid_lat = (top + bottom) / 2.0;
            mid_lon = (left + right) / 2.0;
        }
    }
}
