//! Land polygons for border strictness (`bt`).
//!
//! [`LandIndex`] answers "is this point on land?", "how far is the nearest land?"
//! and moves a position that lies too far out to sea back towards land. The data
//! is Natural Earth 1:10m land (`world-atlas` `land-10m.json`), prepared by
//! `scripts/build-geodata.mjs` into `data/land.bin`: a [`PolygonIndex`] with one label,
//! `land` (magic `WBLAND02`), the same quadtree that answers timezones and countries.
//!
//! # Geometry model
//! That of [`crate::polygons`]: straight edges in lon/lat on a 1e-5 degree lattice (the
//! TopoJSON quantisation, about 400 m x 190 m at the equator, rounded to it), one feature
//! per Natural Earth polygon, even-odd within a feature. The builder cuts the rings that
//! cross the antimeridian at it and closes Antarctica along lat -90, so the planar
//! polygons cover the South Pole. Distances come from [`PolygonIndex::nearest`], measured
//! in a local equirectangular frame around the query point (a fraction of a percent off
//! over the tens of kilometres border strictness needs), and are then reported as the
//! great-circle distance to the point found.
//!
//! # Queries
//! - On land: the index's [`CellTree`] answers most points with a few array reads; points
//!   in its mixed cells (near a coast), and every point while the tree is being built after
//!   the first lookup, take [`PolygonIndex::hit`].
//! - Nearest land: [`PolygonIndex::nearest`], best first, so it costs what the distance of
//!   the answer costs, whatever the search radius.

use std::path::Path;
use std::sync::{Arc, Once, OnceLock};

use crate::geo::{distance_m, normalize_lon, LocalFrame};
use crate::polygons::{CellTree, Hit, Nearest, PolygonError, PolygonIndex, CELL_LABEL};

const MAGIC: &[u8; 8] = b"WBLAND02";

/// The cell tree's top grid: 256 x 256 cells of 1.4 x 0.7 degrees (256 kB).
const CELL_TOP_DEPTH: u32 = 8;
/// Its smallest cells: 4096 x 4096 of 0.09 x 0.04 degrees (about 10 x 5 km at the
/// equator). Of points within 20 km of a coast, depth 10 answers 28 % and builds in 28 ms,
/// 11 55 % in 60 ms, 12 74 % in 109 ms (617,000 entries, 2.5 MB), 13 86 % in 228 ms (5.6
/// MB); the others take [`PolygonIndex::hit`], about 750 ns there (one noisy run). The
/// build runs beside the lookups, so its time costs no request.
const CELL_MAX_DEPTH: u32 = 12;

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

/// Errors opening the land file.
pub type LandError = PolygonError;

/// The land polygons, loaded.
#[derive(Debug)]
pub struct LandIndex {
    polygons: Arc<PolygonIndex>,
    /// The answers that need no geometry ([`PolygonIndex::cell_tree`]), built by a thread
    /// of their own from the first lookup: the build takes 55 to 110 ms of CPU, which neither
    /// open nor the first request should wait for (every locate request with border
    /// strictness asks for land), and which an engine that never locates, or is opened and
    /// closed again at once, should not spend. Until it is ready, lookups take
    /// [`PolygonIndex::hit`] (0.25 to 0.75 us).
    cells: Arc<OnceLock<CellTree>>,
    build_started: Once,
}

impl LandIndex {
    /// Reads and checks `data/land.bin` (or another file of its kind); the first lookup
    /// starts building the cell tree beside the lookups.
    pub fn open(path: &Path) -> Result<LandIndex, LandError> {
        LandIndex::from_bytes(std::fs::read(path)?)
    }

    /// [`LandIndex::open`] on the file's bytes; any inconsistency is an error.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<LandIndex, LandError> {
        let polygons = PolygonIndex::from_bytes(bytes, MAGIC, "land index")?;
        if polygons.names() != ["land"] {
            return Err(PolygonError::Corrupt(format!(
                "land index labels {:?}, expected [\"land\"]",
                polygons.names()
            )));
        }
        Ok(LandIndex {
            polygons: Arc::new(polygons),
            cells: Arc::new(OnceLock::new()),
            build_started: Once::new(),
        })
    }

    /// Starts building the cell tree beside the lookups, once.
    #[cold]
    fn start_cell_tree(&self) {
        self.build_started.call_once(|| {
            let (p, c) = (Arc::clone(&self.polygons), Arc::clone(&self.cells));
            let build = move || {
                c.get_or_init(|| p.cell_tree(CELL_TOP_DEPTH, CELL_MAX_DEPTH));
            };
            if std::thread::Builder::new()
                .name("land-cells".into())
                .spawn(build.clone())
                .is_err()
            {
                // no thread to be had: build it here rather than never
                build();
            }
        });
    }

    /// Builds the cell tree in the calling thread now (or waits for the thread building
    /// it), rather than beside the first lookups: for measurements of the steady state
    /// (benches/locate.rs, whose profile under callgrind otherwise ran on the slower path
    /// throughout) and for callers that would rather pay the build at start.
    pub fn prepare(&self) {
        self.build_started.call_once(|| {});
        self.cells
            .get_or_init(|| self.polygons.cell_tree(CELL_TOP_DEPTH, CELL_MAX_DEPTH));
    }

    /// On land, for a position already in range (lat clamped, lon normalised).
    #[inline]
    fn on_land(&self, lat: f64, lon: f64) -> bool {
        let answer = match self.cells.get() {
            Some(cells) => cells.answer_at(lat, lon),
            None => {
                self.start_cell_tree();
                None
            }
        };
        match answer {
            Some(e) => e & 3 == CELL_LABEL,
            None => self.polygons.hit(lat, lon) != Hit::Outside,
        }
    }

    /// Whether a point lies on land (lon taken modulo 360, lat clamped; false for a
    /// non-finite one). Lakes are land in Natural Earth's land layer.
    pub fn is_land(&self, lat: f64, lon: f64) -> bool {
        match in_range(lat, lon) {
            Some((lat, lon)) => self.on_land(lat, lon),
            None => false,
        }
    }

    /// Metres to the nearest land (0.0 on land); None when no land lies within max_m.
    pub fn distance_to_land_m(&self, lat: f64, lon: f64, max_m: f64) -> Option<f64> {
        let (lat, lon) = in_range(lat, lon)?;
        if self.on_land(lat, lon) {
            return Some(0.0);
        }
        let n = self.polygons.nearest(lat, lon, max_m)?;
        let d = great_circle(lat, lon, &n);
        (d <= max_m).then_some(d)
    }

    /// Border strictness: a point within allowed_m of land (allowed_m = 0: on land) is returned unchanged with moved=false.
    /// Otherwise the point is moved along the line to its nearest land point until it is allowed_m from land
    /// (onto land, slightly inside, for allowed_m = 0) and moved=true. If no land lies within search_m, unchanged, moved=false.
    pub fn constrain(&self, lat: f64, lon: f64, allowed_m: f64, search_m: f64) -> (f64, f64, bool) {
        let unchanged = (lat, lon, false);
        // also refuses a NaN allowed_m
        let Some((lat_c, lon_c)) = in_range(lat, lon).filter(|_| allowed_m >= 0.0) else {
            return unchanged;
        };
        if self.on_land(lat_c, lon_c) || search_m.is_nan() || search_m <= allowed_m {
            return unchanged;
        }
        let Some(n) = self.polygons.nearest(lat_c, lon_c, search_m) else {
            return unchanged;
        };
        let d = great_circle(lat_c, lon_c, &n);
        if d <= allowed_m {
            return unchanged;
        }
        // Land a little inside the band, so that measuring again from the new point
        // (in its own local frame) still finds it allowed.
        let target_m = (allowed_m - 1.0 - allowed_m * 3e-3).max(0.0);
        let frame = LocalFrame::new(lat_c, lon_c);
        if allowed_m > 0.0 {
            let k = (d - target_m) / d;
            let (la, lo) = frame.to_latlon(n.east_m * k, n.north_m * k);
            return (la, lo, true);
        }
        // the local frame's east scale drifts with latitude; the great-circle
        // distance is what callers measure
        let (ux, uy) = (n.east_m / n.dist_m, n.north_m / n.dist_m);
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

    /// Whether the cell tree is built, starting its build if no lookup has (lookups answer
    /// the same either way, only slower before): for benchmarks, which measure the steady
    /// state.
    #[doc(hidden)]
    pub fn cells_ready(&self) -> bool {
        if self.cells.get().is_none() {
            self.start_cell_tree();
        }
        self.cells.get().is_some()
    }

    /// The polygons, for baselines and diagnostics.
    #[doc(hidden)]
    pub fn polygons(&self) -> &PolygonIndex {
        &self.polygons
    }
}

/// A finite position with lat clamped to -90..=90 and lon normalised to -180..=180.
#[inline]
fn in_range(lat: f64, lon: f64) -> Option<(f64, f64)> {
    if !(lat.is_finite() && lon.is_finite()) {
        return None;
    }
    let lon = if (-180.0..=180.0).contains(&lon) {
        lon
    } else {
        normalize_lon(lon)
    };
    Some((lat.clamp(-90.0, 90.0), lon))
}

/// Great-circle metres from (lat, lon) to the nearest point found around it.
fn great_circle(lat: f64, lon: f64, n: &Nearest) -> f64 {
    let (plat, plon) = LocalFrame::new(lat, lon).to_latlon(n.east_m, n.north_m);
    distance_m(lat, lon, plat, plon)
}
