//! `importFiles`: runs the core importer on a worker thread (the event loop stays
//! free) and reports progress through a threadsafe callback.

use std::path::PathBuf;

use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Error, Result, Status, Task};
use napi_derive::napi;

use crate::progress::{bad_lines, forward, ProgressFn};
use whereabouts_core::import::{
    import_files as core_import, upgrade as core_upgrade, ImportOptions, ImportReport,
    UpgradeReport,
};
use whereabouts_core::radio::Radio;

#[napi(object)]
pub struct ImportFileOptions {
    pub replace: Option<bool>,
    pub simulated: Option<bool>,
    /// Radio of SQLite `cells` rows, which carry none (gsm, umts, lte, ...).
    pub sqlite_radio: Option<String>,
    pub max_shard_bytes: Option<f64>,
}

#[napi(object)]
pub struct FileReport {
    pub file: String,
    pub kind: String,
    pub rows: f64,
    pub accepted: f64,
    pub rejected: f64,
    pub bad_lines: Vec<crate::progress::BadLine>,
}

#[napi(object)]
pub struct ImportSummary {
    pub files: Vec<FileReport>,
    pub cells: f64,
    pub wifi: f64,
    pub merged_duplicates: f64,
    pub shards: f64,
    pub bytes: f64,
    pub seconds: f64,
    pub peak_rss_bytes: Option<f64>,
}

/// The core's per-file reports (station or address imports) as JS objects.
pub fn file_reports(files: Vec<whereabouts_core::import::FileReport>) -> Vec<FileReport> {
    files
        .into_iter()
        .map(|f| FileReport {
            file: f.file,
            kind: format!("{:?}", f.kind),
            rows: f.rows as f64,
            accepted: f.accepted as f64,
            rejected: f.rejected as f64,
            bad_lines: bad_lines(f.bad_lines),
        })
        .collect()
}

pub struct ImportTask {
    db: PathBuf,
    files: Vec<PathBuf>,
    options: ImportOptions,
    progress: Option<ProgressFn>,
}

impl Task for ImportTask {
    type Output = ImportReport;
    type JsValue = ImportSummary;

    fn compute(&mut self) -> Result<ImportReport> {
        let mut report = forward(self.progress.as_ref());
        let (db, files, options) = (&self.db, &self.files, &self.options);
        crate::guarded("import", move || {
            core_import(db, files, options, &mut report).map_err(crate::err)
        })
    }

    fn resolve(&mut self, _env: Env, r: ImportReport) -> Result<ImportSummary> {
        Ok(ImportSummary {
            files: file_reports(r.files),
            cells: r.cells as f64,
            wifi: r.wifi as f64,
            merged_duplicates: r.merged_duplicates as f64,
            shards: r.shards as f64,
            bytes: r.bytes as f64,
            seconds: r.seconds,
            peak_rss_bytes: r.peak_rss_bytes.map(|b| b as f64),
        })
    }
}

/// Imports station files into a database directory (see `whereabouts import`).
#[napi(ts_return_type = "Promise<ImportSummary>")]
pub fn import_files(
    db: String,
    files: Vec<String>,
    options: Option<ImportFileOptions>,
    #[napi(ts_arg_type = "(progress: FileProgress) => void")] progress: Option<ProgressFn>,
) -> Result<AsyncTask<ImportTask>> {
    let o = options.unwrap_or(ImportFileOptions {
        replace: None,
        simulated: None,
        sqlite_radio: None,
        max_shard_bytes: None,
    });
    let sqlite_radio = match o.sqlite_radio.as_deref() {
        None | Some("") => None,
        Some(name) => Some(Radio::parse(name).ok_or_else(|| {
            Error::new(
                Status::InvalidArg,
                format!("unknown radio {name:?} for SQLite cells"),
            )
        })?),
    };
    let options = ImportOptions {
        replace: o.replace.unwrap_or(false),
        simulated: o.simulated.unwrap_or(false),
        max_shard_bytes: o.max_shard_bytes.map(|b| b as u64),
        sqlite_radio,
        ..ImportOptions::default()
    };
    Ok(AsyncTask::new(ImportTask {
        db: PathBuf::from(db),
        files: files.into_iter().map(PathBuf::from).collect(),
        options,
        progress,
    }))
}

#[napi(object)]
pub struct UpgradeSummary {
    /// The store format the database was in (the current one: nothing was written).
    pub from_format: u32,
    pub cells: f64,
    pub wifi: f64,
    pub shards: f64,
    pub bytes: f64,
    pub seconds: f64,
}

pub struct UpgradeTask {
    db: PathBuf,
    progress: Option<ProgressFn>,
}

impl Task for UpgradeTask {
    type Output = UpgradeReport;
    type JsValue = UpgradeSummary;

    fn compute(&mut self) -> Result<UpgradeReport> {
        let mut report = forward(self.progress.as_ref());
        let db = &self.db;
        crate::guarded("upgrade", move || {
            core_upgrade(db, &mut report).map_err(crate::err)
        })
    }

    fn resolve(&mut self, _env: Env, r: UpgradeReport) -> Result<UpgradeSummary> {
        Ok(UpgradeSummary {
            from_format: r.from_format,
            cells: r.build.cells as f64,
            wifi: r.build.wifi as f64,
            shards: r.build.shards as f64,
            bytes: r.build.bytes as f64,
            seconds: r.build.seconds,
        })
    }
}

/// Writes a database of an older store format again in the current one, from its own
/// stations (see `whereabouts upgrade`).
#[napi(ts_return_type = "Promise<UpgradeSummary>")]
pub fn upgrade_database(
    db: String,
    #[napi(ts_arg_type = "(progress: FileProgress) => void")] progress: Option<ProgressFn>,
) -> AsyncTask<UpgradeTask> {
    AsyncTask::new(UpgradeTask {
        db: PathBuf::from(db),
        progress,
    })
}
