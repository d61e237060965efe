//! `learnFiles`: runs the core learner on a worker thread (the event loop stays
//! free) and reports progress through a threadsafe callback.

use std::path::PathBuf;

use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Error, Result, Status, Task};
use napi_derive::napi;

use crate::progress::{bad_lines, forward, ProgressFn};
use whereabouts_core::learn::{learn_files as core_learn, LearnOptions, LearnReport};

#[napi(object)]
pub struct LearnFileOptions {
    /// MCC and MNC for files that carry none (G-NetTrack exports).
    pub mcc: Option<u32>,
    pub mnc: Option<u32>,
    /// How long a moved station stays withdrawn, in days.
    pub block_days: Option<f64>,
}

#[napi(object)]
pub struct LearnFileReport {
    pub file: String,
    pub format: String,
    pub rows: f64,
    pub accepted: f64,
    pub rejected: f64,
    pub skipped: f64,
    pub bad_lines: Vec<crate::progress::BadLine>,
}

/// What a learning run did with its observations (counts of stations unless named
/// otherwise): the live learner answers these alone, `learnFiles` within [`LearnSummary`].
#[napi(object)]
pub struct LearnCounts {
    pub observations: f64,
    pub outliers: f64,
    pub added: f64,
    pub refined: f64,
    pub moved: f64,
    pub relearned: f64,
    pub blocked: f64,
    pub seconds: f64,
}

impl From<&LearnReport> for LearnCounts {
    fn from(r: &LearnReport) -> Self {
        LearnCounts {
            observations: r.observations as f64,
            outliers: r.outliers as f64,
            added: r.added as f64,
            refined: r.refined as f64,
            moved: r.moved as f64,
            relearned: r.relearned as f64,
            blocked: r.blocked as f64,
            seconds: r.seconds,
        }
    }
}

/// What `learnFiles` did: per file, the counts, then the new database's totals.
#[napi(object)]
pub struct LearnSummary {
    pub files: Vec<LearnFileReport>,
    pub counts: LearnCounts,
    pub cells: f64,
    pub wifi: f64,
    pub shards: f64,
    pub bytes: f64,
}

pub struct LearnTask {
    db: PathBuf,
    files: Vec<PathBuf>,
    options: LearnOptions,
    progress: Option<ProgressFn>,
}

impl Task for LearnTask {
    type Output = LearnReport;
    type JsValue = LearnSummary;

    fn compute(&mut self) -> Result<LearnReport> {
        let mut report = forward(self.progress.as_ref());
        let (db, files, options) = (&self.db, &self.files, &self.options);
        crate::guarded("learn", move || {
            core_learn(db, files, options, &mut report).map_err(crate::err)
        })
    }

    fn resolve(&mut self, _env: Env, r: LearnReport) -> Result<LearnSummary> {
        Ok(LearnSummary {
            counts: LearnCounts::from(&r),
            files: r
                .files
                .into_iter()
                .map(|f| LearnFileReport {
                    file: f.file,
                    format: format!("{:?}", f.format),
                    rows: f.rows as f64,
                    accepted: f.accepted as f64,
                    rejected: f.rejected as f64,
                    skipped: f.skipped as f64,
                    bad_lines: bad_lines(f.bad_lines),
                })
                .collect(),
            cells: r.cells as f64,
            wifi: r.wifi as f64,
            shards: r.shards as f64,
            bytes: r.bytes as f64,
        })
    }
}

fn code(what: &str, v: Option<u32>, max: u32) -> Result<Option<u16>> {
    match v {
        Some(n) if n > max => Err(Error::new(
            Status::InvalidArg,
            format!("{what} {n} out of range 0..={max}"),
        )),
        v => Ok(v.map(|n| n as u16)),
    }
}

/// Learns station positions from GPS-tagged observation files and merges them
/// into a database directory (see `whereabouts learn`).
#[napi(ts_return_type = "Promise<LearnSummary>")]
pub fn learn_files(
    db: String,
    files: Vec<String>,
    options: Option<LearnFileOptions>,
    #[napi(ts_arg_type = "(progress: FileProgress) => void")] progress: Option<ProgressFn>,
) -> Result<AsyncTask<LearnTask>> {
    let o = options.unwrap_or(LearnFileOptions {
        mcc: None,
        mnc: None,
        block_days: None,
    });
    let mut options = LearnOptions {
        mcc: code("mcc", o.mcc, 999)?,
        mnc: code("mnc", o.mnc, 32_767)?,
        ..LearnOptions::default()
    };
    if let Some(d) = o.block_days {
        if !(d.is_finite() && d >= 0.0) {
            return Err(Error::new(
                Status::InvalidArg,
                format!("block days {d} must be a number >= 0"),
            ));
        }
        options.block_s = (d * 86_400.0) as i64;
    }
    Ok(AsyncTask::new(LearnTask {
        db: PathBuf::from(db),
        files: files.into_iter().map(PathBuf::from).collect(),
        options,
        progress,
    }))
}
