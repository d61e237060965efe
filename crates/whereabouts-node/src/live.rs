//! Live learning and compaction of an open engine: both run on a worker thread
//! (AsyncTask), so the event loop keeps answering requests meanwhile.

use std::sync::Arc;

use napi::{Env, Error, Result, Status, Task};
use napi_derive::napi;
use whereabouts_core::learn::compact::{CompactReport, Compactor};
use whereabouts_core::learn::{submission_observations, LearnOptions, LearnReport, Source};
use whereabouts_core::solve::Locator;

use crate::learn::LearnCounts;

/// A GPS submission: the JSON columns the server stores in observations.sqlite.
#[napi(object)]
pub struct Submission {
    /// ms since the epoch: the time of a fix without its own timestamp.
    pub received_at: f64,
    pub gps: String,
    pub cells: String,
    pub wifi: String,
    /// Who submitted it: the hex SHA-256 of the token (`tokenHash`); absent for the
    /// operator's own data (`engine.learn`), which is trusted.
    pub source: Option<String>,
    /// The device id the submission named (spec 2.2 `id`).
    pub device: Option<String>,
}

#[napi(object)]
pub struct CompactSummary {
    pub generation: f64,
    pub folded: f64,
    pub cells: f64,
    pub wifi: f64,
    pub seconds: f64,
}

pub struct LiveLearnTask {
    pub locator: Arc<Locator>,
    pub compactor: Option<Arc<Compactor>>,
    pub submissions: Vec<Submission>,
}

impl Task for LiveLearnTask {
    type Output = LearnReport;
    type JsValue = LearnCounts;

    fn compute(&mut self) -> Result<LearnReport> {
        let (locator, compactor, subs) = (&self.locator, &self.compactor, &self.submissions);
        crate::guarded("learn", move || {
            let mut obs = Vec::new();
            for (i, s) in subs.iter().enumerate() {
                let source = s
                    .source
                    .as_deref()
                    .map(|hash| Source::of(hash, s.device.as_deref()));
                let list = submission_observations(
                    s.received_at as i64,
                    &s.gps,
                    &s.cells,
                    &s.wifi,
                    source,
                )
                .map_err(|why| Error::new(Status::InvalidArg, format!("submission {i}: {why}")))?;
                obs.extend(list);
            }
            let db = locator.database();
            let report = locator
                .overlay()
                .learn(&db, obs, &LearnOptions::default())
                .map_err(crate::err)?;
            if let Some(c) = compactor {
                c.spawn_if_due(locator);
            }
            Ok(report)
        })
    }

    fn resolve(&mut self, _env: Env, r: LearnReport) -> Result<LearnCounts> {
        Ok(LearnCounts::from(&r))
    }
}

pub struct CompactTask {
    pub locator: Arc<Locator>,
    pub compactor: Arc<Compactor>,
}

impl Task for CompactTask {
    type Output = CompactReport;
    type JsValue = CompactSummary;

    fn compute(&mut self) -> Result<CompactReport> {
        let (locator, compactor) = (&self.locator, &self.compactor);
        crate::guarded("compact", move || {
            compactor.run(locator).map_err(crate::err)
        })
    }

    fn resolve(&mut self, _env: Env, r: CompactReport) -> Result<CompactSummary> {
        Ok(CompactSummary {
            generation: r.generation as f64,
            folded: r.folded as f64,
            cells: r.cells as f64,
            wifi: r.wifi as f64,
            seconds: r.seconds,
        })
    }
}
