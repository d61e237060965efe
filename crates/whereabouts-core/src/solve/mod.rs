//! The solver: from a validated query to a position with an accuracy radius.
//!
//! Order of evidence (docs/positioning.md, "Order of evidence"):
//! 1. look up every cell and access point;
//! 2. WiFi: the largest consistent cluster of known APs (never a cluster of one);
//! 3. cells: each cell placed on its sector's axis from the mast (inferred from
//!    sibling sectors) by its signal and a serving cell's timing advance, then a
//!    signal- and range-weighted robust mean, bounded by the serving sector (its timing
//!    advance's ring and its wedge);
//! 4. WiFi wins when it agrees with the cells; otherwise the cells answer;
//! 5. fallbacks in order: short CID (`scf`), LAC/TAC area (`lacf`), IP (`ipf`);
//! 6. border strictness (`bt`) moves the answer toward land.
//!
//! [`batch`] solves many requests over several threads; `params` holds the fitted
//! constants and priors of the cell and WiFi models.

mod adapters;
pub mod batch;
mod cells;
mod lookup;
mod params;
pub mod query;
mod weights;
mod wifi;

pub(crate) use cells::{read_advance_step_m, ta_interval, ta_middle_m, ta_steps};
pub(crate) use params::MIN_CELL_ACCURACY_M;
pub use query::{Answer, CellObs, Fallback, Options, Query, Source, WifiObs};

use std::sync::{Arc, RwLock};

use crate::calibration::{self, RadiusClass, RadiusTable};
use crate::learn::overlay::Overlay;
use crate::store::{Database, Manifest, StoreError};

/// The confidence of every reported accuracy radius: the Android convention
/// (one standard deviation of a 2-D normal holds 39%, so this is wider: about 1.5 sigma).
pub const CONFIDENCE: f64 = 0.68;

/// Stations not updated for this long make an answer `aged` (spec 2.8).
pub const AGED_AFTER_S: i64 = 90 * 86_400;

/// Border strictness: moves a point toward land (implemented by [`crate::land::LandIndex`]).
pub trait Border: Send + Sync {
    /// Returns the point unchanged (moved = false) when it lies within `allowed_m`
    /// of land, else the nearest point that does.
    fn constrain(&self, lat: f64, lon: f64, allowed_m: f64, search_m: f64) -> (f64, f64, bool);
}

/// The IP fallback (implemented by [`crate::ip::IpLocator`]).
pub trait IpFallback: Send + Sync {
    /// (lat, lon, accuracy in metres at [`CONFIDENCE`]).
    fn locate_ip(&self, ip: &str) -> Option<(f64, f64, f64)>;
}

/// How far border strictness searches for land before leaving a point alone:
/// a cell or WiFi answer is never this far out at sea unless its data is wrong.
const BORDER_SEARCH_M: f64 = 200_000.0;

/// An opened engine: the station database, the learned-station overlay, and
/// optional land and IP data. Shared across threads; every method takes `&self`.
pub struct Locator {
    /// The generation being read; [`Locator::reload`] swaps it while lookups in
    /// flight keep their own reference to the old one.
    db: RwLock<Arc<Database>>,
    overlay: Overlay,
    border: Option<Box<dyn Border>>,
    ip: Option<Box<dyn IpFallback>>,
    /// Unix seconds used for the `aged` rule; None: the clock at each call.
    now: Option<i64>,
}

impl Locator {
    pub fn new(db: Database) -> Locator {
        Locator {
            db: RwLock::new(Arc::new(db)),
            overlay: Overlay::none(),
            border: None,
            ip: None,
            now: None,
        }
    }

    pub fn with_border(mut self, border: Box<dyn Border>) -> Locator {
        self.border = Some(border);
        self
    }

    pub fn with_ip(mut self, ip: Box<dyn IpFallback>) -> Locator {
        self.ip = Some(ip);
        self
    }

    /// Fixes the clock for the `aged` rule (reproducible evaluations and tests).
    pub fn with_now(mut self, now: i64) -> Locator {
        self.now = Some(now);
        self
    }

    /// Consults `overlay` before the database on every lookup.
    pub fn with_overlay(mut self, overlay: Overlay) -> Locator {
        self.overlay = overlay;
        self
    }

    /// The generation being read now.
    pub fn database(&self) -> Arc<Database> {
        Arc::clone(&self.db.read().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn overlay(&self) -> &Overlay {
        &self.overlay
    }

    /// Switches to the newest generation of the directory's manifest, or to its new radius
    /// model; true when either changed. Lookups in flight finish on the generation they started with, whose
    /// files stay mapped until the last of them lets go.
    pub fn reload(&self) -> Result<bool, StoreError> {
        let current = self.database();
        let dir = current.dir();
        // A new generation, or a new radius model stored with the same stations.
        let newest = Manifest::read(dir)?.map(|m| (m.generation, m.radius_model));
        let now = (
            current.manifest().generation,
            current.manifest().radius_model.clone(),
        );
        if newest.is_none_or(|n| n == now) {
            return Ok(false);
        }
        // A commit may unlink the files of the manifest just read: read it again then.
        let db = Database::open(dir).or_else(|_| Database::open(dir))?;
        *self.db.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(db);
        Ok(true)
    }

    pub fn has_ip(&self) -> bool {
        self.ip.is_some()
    }

    pub fn has_border(&self) -> bool {
        self.border.is_some()
    }

    /// Unix seconds for the `aged` rule: the fixed clock, or the system clock.
    pub fn now(&self) -> i64 {
        self.now.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64)
        })
    }

    /// Locates one query; None means "No matches found".
    pub fn locate(&self, q: &Query) -> Option<Answer> {
        self.locate_at(q, self.now())
    }

    /// Locates one query with the clock already read (a batch reads it once).
    pub fn locate_at(&self, q: &Query, now: i64) -> Option<Answer> {
        self.locate_in(&self.database(), q, now)
    }

    /// [`Locator::locate_at`] in `db`, a generation the caller took from
    /// [`Locator::database`]: a thread answering many requests takes it once, since taking
    /// it writes a lock and a reference count that every thread shares, and threads taking
    /// it per request slow each other down.
    pub fn locate_in(&self, db: &Database, q: &Query, now: i64) -> Option<Answer> {
        self.locate_classed(db, q, now, db.radius_model(), false)
            .map(|(a, _)| a)
    }

    /// The answer without the database's radius model, with its class in that model: a row of
    /// a calibration ([`crate::calibration::fit`]).
    pub fn radius_sample(
        &self,
        db: &Database,
        q: &Query,
        now: i64,
    ) -> Option<(Answer, RadiusClass)> {
        self.locate_classed(db, q, now, None, true)
    }

    /// [`Locator::locate_in`] with `model`'s factor on the radius, and the answer's class
    /// when `classed` (else the default class).
    #[inline(always)]
    fn locate_classed(
        &self,
        db: &Database,
        q: &Query,
        now: i64,
        model: Option<&RadiusTable>,
        classed: bool,
    ) -> Option<(Answer, RadiusClass)> {
        let opts = q.options;
        let mut seen = lookup::Seen {
            cells: Default::default(),
            wifi: Default::default(),
        };
        let overlay = self.overlay.view();
        lookup::resolve(db, overlay.as_ref(), q.cells, q.wifi, opts.scf, &mut seen);
        drop(overlay);

        let mut answer = if opts.lacf == 2 {
            cells::area_answer(db, q.cells)
        } else {
            let from_wifi = wifi::solve(&seen.wifi, now);
            let mut best = choose(from_wifi, &seen.cells, || cells::solve(&seen.cells, now));
            if best.is_none() && opts.lacf == 1 {
                best = cells::site_answer(db, q.cells).or_else(|| cells::area_answer(db, q.cells));
            }
            best
        };
        if answer.is_none() && opts.ipf {
            answer =
                q.ip.and_then(|ip| self.ip.as_ref()?.locate_ip(ip))
                    .map(|(lat, lon, acc)| Answer {
                        lat,
                        lon,
                        accuracy_m: acc,
                        fallback: Fallback::Ipf,
                        aged: false,
                        source: Source::Ip,
                        ring: false,
                        level: false,
                    });
        }
        let mut a = answer?;
        let class = if classed || model.is_some() {
            radius_class(&a, &seen, q)
        } else {
            RadiusClass::default()
        };
        a.accuracy_m = calibrated_radius(model, class, a.accuracy_m);
        if let Some(border) = &self.border {
            let allowed = match opts.bt {
                0 => 0.0,
                2 => 15_000.0,
                _ => 5_000.0,
            };
            let (lat, lon, moved) = border.constrain(a.lat, a.lon, allowed, BORDER_SEARCH_M);
            if moved {
                // The move took the estimate toward where the device can be: the
                // radius keeps covering the original estimate's region.
                let shift = crate::geo::distance_m(a.lat, a.lon, lat, lon);
                a.accuracy_m = a.accuracy_m.max(shift);
                a.lat = lat;
                a.lon = lon;
            }
        }
        a.accuracy_m = a.accuracy_m.round().max(1.0);
        Some((a, class))
    }
}

/// The radius an answer reports under the database's radius model: the solver's radius times
/// the factor of the answer's class. The one point where a calibration touches an answer.
#[inline]
fn calibrated_radius(model: Option<&RadiusTable>, class: RadiusClass, radius_m: f64) -> f64 {
    match model {
        Some(m) => radius_m * m.factor(class),
        None => radius_m,
    }
}

/// The class of an answer in the radius model: what answered, the serving cell's radio, how
/// many stations were known, and the quality of the serving one (the first AP for WiFi).
fn radius_class(a: &Answer, seen: &lookup::Seen, q: &Query) -> RadiusClass {
    match a.source {
        Source::Wifi => RadiusClass::wifi(
            seen.wifi.len(),
            seen.wifi.first().map_or(0, |w| w.samples.max(1)),
        ),
        Source::Cells => {
            let first = seen.cells.first();
            let kind = if a.fallback == Fallback::Scf {
                calibration::KIND_SCF
            } else {
                calibration::KIND_CELLS
            };
            RadiusClass::cells(
                kind,
                first.map(|c| c.radio),
                seen.cells.len(),
                cells::effective_count(&seen.cells),
                first.is_some_and(|c| c.learned),
                first.map_or(0, |c| c.samples.max(1)),
                a.ring,
                a.level,
            )
        }
        Source::Area => RadiusClass::cells(
            calibration::KIND_LACF,
            q.cells.first().and_then(|c| c.radio),
            0,
            0.0,
            false,
            0,
            false,
            false,
        ),
        Source::Site => RadiusClass::site(q.cells.first().and_then(|c| c.radio)),
        Source::Ip => RadiusClass::ip(),
    }
}

/// WiFi answers are an order of magnitude sharper than cell answers, but a cluster
/// of APs far from every cell the device sees is a sign of moved or spoofed APs.
/// The cells are solved only when they answer (`cells`): a WiFi answer near a seen cell needs
/// no cell position.
fn choose(
    wifi: Option<Answer>,
    seen: &[lookup::SeenCell],
    cells: impl FnOnce() -> Option<Answer>,
) -> Option<Answer> {
    match wifi {
        Some(w) => {
            // With no seen cell, the WiFi answers (there is nothing to disagree with it).
            let near_a_cell = seen.is_empty()
                || seen.iter().any(|s| {
                    let reach = (s.range_m * 2.0).max(3_000.0);
                    crate::geo::distance_m(w.lat, w.lon, s.lat, s.lon) <= reach
                });
            if near_a_cell {
                Some(w)
            } else {
                cells().or(Some(w))
            }
        }
        None => cells(),
    }
}
