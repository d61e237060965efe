//! Compaction: folds the learned-station overlay into a new database generation
//! (database + overlay - withdrawn), switches the engine to it, and only then
//! drops the folded entries. Readers keep answering throughout: lookups in flight
//! hold the old generation's mapping until they finish, and the overlay keeps
//! every entry until the generation that holds it is the one being read.
//!
//! One compaction at a time: within a process by [`Compactor`], across processes
//! (an import, a learn run, another server) by the directory's `.import.lock`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Serialize;

use super::estimate::{self, Estimate};
use super::{database_station, masts, write_merged, LearnError, StationKey};
use crate::solve::Locator;
use crate::store::{BuildOptions, DbBuilder, StoreError};

/// What the manifest lists as the source of stations folded from the overlay.
pub const OVERLAY_SOURCE: &str = "learned (live)";

/// When the overlay is folded without being asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thresholds {
    /// Learned stations waiting to be folded (cells + WiFi + newly withdrawn).
    pub stations: u64,
    /// Age in seconds of the oldest entry waiting to be folded (checked when
    /// observations arrive and whenever the engine reloads).
    pub age_s: i64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            stations: 10_000,
            age_s: 3_600,
        }
    }
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct CompactReport {
    /// The generation the engine reads after the compaction (unchanged when
    /// there was nothing to fold).
    pub generation: u64,
    /// Overlay entries written into that generation.
    pub folded: u64,
    pub cells: u64,
    pub wifi: u64,
    /// Unix seconds when it finished.
    pub finished: i64,
    pub seconds: f64,
}

/// Folds everything the overlay holds into a new generation of the engine's
/// database directory and switches the engine to it. Blocking: run it off the
/// request thread ([`Compactor::spawn_if_due`]).
pub fn compact(locator: &Locator) -> Result<CompactReport, LearnError> {
    let started = Instant::now();
    let overlay = locator.overlay();
    let dir = locator.database().dir().to_path_buf();
    overlay.refresh()?;
    if overlay.snapshot().stations.is_empty() {
        let db = locator.database();
        let stats = db.stats();
        return Ok(CompactReport {
            generation: db.manifest().generation,
            cells: stats.cells,
            wifi: stats.wifi,
            finished: super::wall_clock(),
            ..CompactReport::default()
        });
    }
    let mut opts = BuildOptions::default();
    if let Some(m) = crate::store::Manifest::read(&dir)? {
        opts.simulated = m.simulated;
        opts.sources = m.sources;
    }
    if !opts.sources.iter().any(|s| s == OVERLAY_SOURCE) {
        opts.sources.push(OVERLAY_SOURCE.to_string());
    }
    let mut builder = DbBuilder::new(&dir, opts)?;
    // Under the lock: merge onto the newest generation (an import may just have
    // finished), with everything learned up to now, by any process.
    locator.reload()?;
    overlay.refresh()?;
    let snapshot = overlay.snapshot();
    // The masts of the operator's own sightings with an advance (`engine.learn`), as a learn
    // run fits them from its files.
    let (advances, last) = overlay.advances()?;
    let fitted =
        masts::fit_masts::<LearnError>(&advances, super::wall_clock(), &mut |_, _| Ok(()))?;
    masts::keep(builder.learned_masts(), &fitted);
    // A cell refined where it was keeps the levels its file runs heard it at (the overlay has
    // none to add). One withdrawn, or learned again at another place after a move, loses
    // them: they describe where it was.
    let db = locator.database();
    for (key, station) in &snapshot.stations {
        if let StationKey::Cell {
            radio,
            mcc,
            mnc,
            key: cell,
        } = *key
        {
            let moved = match (station, database_station(&db, *key)) {
                (Some(new), Some(old)) => {
                    estimate::far_apart(&Estimate::of_station(&old), &Estimate::of_station(new))
                }
                _ => true,
            };
            if moved {
                builder.learned_points().remove(&(radio, mcc, mnc, cell));
            }
        }
    }
    write_merged(&mut builder, Some(&db), &snapshot.stations)?;
    drop(db);
    let (manifest, stats) = builder.commit()?;
    locator.reload()?;
    // Only now, with the engine reading the new generation, may entries and the advances
    // behind its masts go.
    let folded = overlay.fold(&snapshot)?;
    overlay.drop_advances(last, &fitted.into_keys().collect::<Vec<_>>())?;
    Ok(CompactReport {
        generation: manifest.generation,
        folded,
        cells: stats.cells,
        wifi: stats.wifi,
        finished: super::wall_clock(),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Runs compactions one at a time, in the background when the overlay passes
/// its thresholds, and remembers the last one.
pub struct Compactor {
    thresholds: Thresholds,
    running: AtomicBool,
    last: Mutex<Option<Result<CompactReport, String>>>,
}

impl Compactor {
    pub fn new(thresholds: Thresholds) -> Compactor {
        Compactor {
            thresholds,
            running: AtomicBool::new(false),
            last: Mutex::new(None),
        }
    }

    pub fn thresholds(&self) -> Thresholds {
        self.thresholds
    }

    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }

    /// The outcome of the last compaction (its error message if it failed).
    pub fn last(&self) -> Option<Result<CompactReport, String>> {
        self.last.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether the overlay has grown or aged past the thresholds.
    pub fn due(&self, locator: &Locator, now: i64) -> bool {
        let s = locator.overlay().stats();
        let waiting = s.cells + s.wifi;
        waiting >= self.thresholds.stations
            || s.oldest.is_some_and(|t| now - t >= self.thresholds.age_s)
    }

    /// Compacts now, on this thread; fails at once if a compaction is running.
    pub fn run(&self, locator: &Locator) -> Result<CompactReport, LearnError> {
        if self.running.swap(true, Ordering::AcqRel) {
            return Err(LearnError::Format("a compaction is already running".into()));
        }
        self.run_claimed(locator, true)
    }

    /// Compacts once `running` is ours. A background compaction that finds the
    /// directory busy (another worker compacting, an import) is not a failure worth
    /// reporting: whoever holds the lock folds, or the next attempt does.
    fn run_claimed(
        &self,
        locator: &Locator,
        report_busy: bool,
    ) -> Result<CompactReport, LearnError> {
        let result = compact(locator);
        let busy = matches!(result, Err(LearnError::Store(StoreError::Busy(_))));
        if report_busy || !busy {
            *self.last.lock().unwrap_or_else(|e| e.into_inner()) =
                Some(result.as_ref().map(Clone::clone).map_err(|e| e.to_string()));
        }
        self.running.store(false, Ordering::Release);
        result
    }

    /// Starts a compaction on a thread of its own when one is due and none is
    /// running; returns whether it started one.
    pub fn spawn_if_due(self: &Arc<Self>, locator: &Arc<Locator>) -> bool {
        if self.is_running()
            || !self.due(locator, super::wall_clock())
            || self.running.swap(true, Ordering::AcqRel)
        {
            return false;
        }
        let (me, locator) = (Arc::clone(self), Arc::clone(locator));
        let started = std::thread::Builder::new()
            .name("whereabouts-compact".into())
            .spawn(move || {
                // The outcome is kept in `last` for stats; a failure leaves the overlay whole.
                let _ = me.run_claimed(&locator, false);
            })
            .is_ok();
        if !started {
            self.running.store(false, Ordering::Release);
        }
        started
    }
}
