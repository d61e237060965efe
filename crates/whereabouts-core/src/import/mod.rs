//! Streaming import of station exports into a station database.
//!
//! Rows are parsed into fixed-size records, gathered into sorted runs of
//! [`ImportOptions::run_rows`] (spilled to temp files while the next run fills),
//! then k-way merged together with the existing database into a
//! [`crate::store::DbBuilder`]. Memory is bounded by the run size,
//! whatever the input size; nothing is visible until the builder commits, so a
//! failed or cancelled import leaves the previous database as it was.
//! Formats, validation and merge rules: `docs/import.md`.

mod csv;
mod levels;
mod masts;
mod merge;
pub(crate) mod parse;
mod rec;
mod runs;
pub(crate) mod source;
mod upgrade;

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::radio::Radio;
use crate::store::{BuildOptions, Database, DbBuilder, Manifest, StoreError};
use merge::{is_wifi, reduce_runs, split_cell_key, Merger, Source};
use rec::{full_key, wifi_full_key, Acc, Rec};
use runs::Runs;

pub use levels::{LEVELS_ADVANCES_HEADER, LEVELS_HEADER};
pub use masts::MAST_HEADER;
pub use parse::{default_range_m, CELL_HEADER, WIFI_HEADER};
pub use upgrade::{upgrade, UpgradeReport};

/// How an import runs. `Default` gives a merging import with 4M-row runs.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// Replace the database in the directory instead of merging into it.
    pub replace: bool,
    /// Mark the database as built from simulated stations.
    pub simulated: bool,
    /// Shard size limit; `None` keeps the store's default.
    pub max_shard_bytes: Option<u64>,
    /// Rows per sorted run: memory use is about `2 * run_rows * 32` bytes.
    pub run_rows: usize,
    /// Where runs are spilled; by default a hidden directory inside the database directory.
    pub temp_dir: Option<PathBuf>,
    /// Rejected rows reported by line number per file (all are counted).
    pub max_error_lines: usize,
    /// Radio assumed for SQLite `cells` tables without a `radio` column; when
    /// `None`, cell ids up to 65535 are taken as GSM and larger ones as UMTS.
    pub sqlite_radio: Option<Radio>,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            replace: false,
            simulated: false,
            max_shard_bytes: None,
            run_rows: 4 << 20,
            temp_dir: None,
            max_error_lines: 20,
            sqlite_radio: None,
        }
    }
}

/// What the import is doing when it reports progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Reading and parsing `file`; bytes are of the file as stored (compressed for gzip).
    Reading,
    /// Waiting for the last runs to be sorted and spilled.
    Sorting,
    /// Merging runs and the existing database into new shards; bytes count 32-byte records.
    Merging,
    /// Syncing and publishing the new shards and manifest.
    Writing,
}

/// A progress report of an import (stations or addresses).
pub type Progress = crate::progress::Progress<Phase>;

/// What an input file turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum SourceKind {
    CellCsv,
    WifiCsv,
    SqliteCells,
    /// Learned site masts (`GET /v2/sync` pages, [`MAST_HEADER`]).
    MastCsv,
    /// Learned cells' positions by level, and by advance (`GET /v2/sync` pages,
    /// [`LEVELS_HEADER`], [`LEVELS_ADVANCES_HEADER`]).
    LevelsCsv,
    /// Addresses in the OpenAddresses CSV layout (see [`crate::addresses`]).
    OpenAddressesCsv,
    /// Addresses and named roads from an OpenStreetMap `.osm.pbf` extract.
    OsmPbf,
}

/// Per-file outcome. `rows = accepted + rejected`; blank lines and headers are not rows.
#[derive(Clone, Debug, Serialize)]
pub struct FileReport {
    pub file: String,
    pub kind: SourceKind,
    pub rows: u64,
    pub accepted: u64,
    pub rejected: u64,
    /// The first `max_error_lines` rejected rows: 1-based line number (SQLite: rowid) and reason.
    pub bad_lines: Vec<(u64, String)>,
}

/// Outcome of an import. `cells` and `wifi` count the stations of the new database.
#[derive(Clone, Debug, Serialize)]
pub struct ImportReport {
    pub files: Vec<FileReport>,
    pub cells: u64,
    pub wifi: u64,
    /// Records folded into another with the same key (within the inputs or with the database).
    pub merged_duplicates: u64,
    pub shards: u64,
    pub bytes: u64,
    pub seconds: f64,
    /// The process's peak resident set (VmHWM), where the OS tells it.
    pub peak_rss_bytes: Option<u64>,
}

#[derive(Debug)]
pub enum ImportError {
    Io(String),
    /// An input that is not one of the accepted formats; the message says which are.
    Format(String),
    Store(StoreError),
    /// The progress callback asked to stop; the previous database is untouched.
    Cancelled,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportError::Io(m) => write!(f, "I/O error: {m}"),
            ImportError::Format(m) => write!(f, "{m}"),
            ImportError::Store(e) => write!(f, "{e}"),
            ImportError::Cancelled => write!(f, "import cancelled; the database is unchanged"),
        }
    }
}

impl std::error::Error for ImportError {}

impl From<StoreError> for ImportError {
    fn from(e: StoreError) -> Self {
        ImportError::Store(e)
    }
}

fn io_error(e: std::io::Error) -> ImportError {
    ImportError::Io(e.to_string())
}

/// The rate limit of an import's progress callback; a `false` from it is [`ImportError::Cancelled`].
pub(crate) type Reporter<'a> = crate::progress::Reporter<'a, Phase, ImportError>;

impl From<crate::progress::Cancelled> for ImportError {
    fn from(_: crate::progress::Cancelled) -> Self {
        ImportError::Cancelled
    }
}

/// A temp directory removed on every way out, including errors and cancellation.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

const TEMP_PREFIX: &str = ".import-tmp-";

fn make_temp_dir(dir: &Path, opts: &ImportOptions) -> Result<TempDir, ImportError> {
    if opts.temp_dir.is_none() {
        // We hold the database lock, so any such directory is a dead import's.
        if let Ok(rd) = fs::read_dir(dir) {
            for e in rd.flatten() {
                if e.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
                    let _ = fs::remove_dir_all(e.path());
                }
            }
        }
    }
    let base = opts.temp_dir.clone().unwrap_or_else(|| dir.to_path_buf());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let path = base.join(format!("{TEMP_PREFIX}{}-{nanos}", std::process::id()));
    fs::create_dir_all(&path).map_err(|e| ImportError::Io(format!("{}: {e}", path.display())))?;
    Ok(TempDir(path))
}

/// Peak resident set size of this process, from `/proc/self/status` (Linux).
pub fn peak_rss_bytes() -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

pub(crate) fn file_label(p: &Path) -> String {
    if p.as_os_str() == source::STANDARD_INPUT {
        return source::input_name(p);
    }
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

/// Reads and validates `files` as an import would, without writing anything:
/// a dry run that reports every file's rows, rejects and reasons. A gzipped
/// SQLite file is inflated into `opts.temp_dir` (default: the system temp dir).
pub fn check_files(
    files: &[PathBuf],
    opts: &ImportOptions,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Vec<FileReport>, ImportError> {
    let base = opts.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
    let tmp = make_temp_dir(
        &base,
        &ImportOptions {
            temp_dir: Some(base.clone()),
            ..opts.clone()
        },
    )?;
    let mut reporter = Reporter::new(progress);
    let mut reports = Vec::with_capacity(files.len());
    for f in files {
        let mut ctx = source::Ctx {
            opts,
            runs: None,
            masts: None,
            levels: None,
            reporter: &mut reporter,
            tmp: &tmp.0,
        };
        reports.push(source::import_file(f, &mut ctx)?);
    }
    Ok(reports)
}

/// Imports `files` into the database in `dir` (created if missing), merging with
/// the stations already there unless `opts.replace`. `progress` is called at most
/// about ten times a second (plus at file and phase boundaries); returning
/// `false` cancels, leaving the previous database intact.
pub fn import_files(
    dir: &Path,
    files: &[PathBuf],
    opts: &ImportOptions,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<ImportReport, ImportError> {
    let started = Instant::now();
    if files.is_empty() {
        return Err(ImportError::Format("no input files given".into()));
    }
    if let Some(why) = files.iter().find_map(|f| source::unstreamable(f)) {
        return Err(ImportError::Io(why));
    }
    fs::create_dir_all(dir).map_err(|e| ImportError::Io(format!("{}: {e}", dir.display())))?;
    let old = Manifest::read(dir)?;
    let merging = !opts.replace && old.is_some();
    let mut build = BuildOptions::default();
    if let Some(m) = opts.max_shard_bytes {
        build.max_shard_bytes = m;
    }
    build.simulated = opts.simulated || (merging && old.as_ref().is_some_and(|m| m.simulated));
    if merging {
        build.sources = old.as_ref().map(|m| m.sources.clone()).unwrap_or_default();
    }
    for f in files {
        let label = file_label(f);
        if !build.sources.contains(&label) {
            build.sources.push(label);
        }
    }
    let builder = DbBuilder::new(dir, build)?;
    if builder.previous() != old.as_ref() {
        return Err(ImportError::Store(StoreError::Invalid(format!(
            "the database in {} changed while the import started; try again",
            dir.display()
        ))));
    }
    let tmp = make_temp_dir(dir, opts)?;
    let mut reporter = Reporter::new(progress);

    let mut runs = Runs::new(&tmp.0, opts.run_rows).map_err(io_error)?;
    let mut reports = Vec::with_capacity(files.len());
    let mut read_masts = masts::ReadMasts::new();
    let mut read_levels = levels::ReadLevels::new();
    for f in files {
        let mut ctx = source::Ctx {
            opts,
            runs: Some(&mut runs),
            masts: Some(&mut read_masts),
            levels: Some(&mut read_levels),
            reporter: &mut reporter,
            tmp: &tmp.0,
        };
        reports.push(source::import_file(f, &mut ctx)?);
    }

    let label = dir.display().to_string();
    let pending = runs.pending() as u64 + runs.spilled_rows;
    reporter.report(true, || Progress {
        file: label.clone(),
        bytes_done: 0,
        bytes_total: pending * rec::REC_BYTES as u64,
        rows: 0,
        phase: Phase::Sorting,
    })?;
    let (run_files, last) = runs.finish().map_err(io_error)?;
    let db = if merging {
        Some(Database::open(dir)?)
    } else {
        None
    };
    let run_files = reduce_runs(run_files, 2, &tmp.0).map_err(io_error)?;

    let mut total = run_files.iter().map(|r| r.rows).sum::<u64>() + last.len() as u64;
    let mut sources = Vec::with_capacity(run_files.len() + 2);
    for r in &run_files {
        sources.push(Source::File(runs::RunReader::open(r).map_err(io_error)?));
    }
    sources.push(Source::Mem(last.into_iter()));
    if let Some(db) = &db {
        let st = db.stats();
        total += st.cells + st.wifi;
        let cells = db.iter_cells().map(|(radio, mcc, mnc, s)| {
            let net = if mcc < 1024 && mnc < 32768 {
                rec::pack_net(radio, mcc, mnc)
            } else {
                0
            };
            (
                full_key(radio as u8, mcc, mnc, s.key),
                Rec::from_station(net, &s),
            )
        });
        let wifi = db
            .iter_wifi()
            .map(|s| (wifi_full_key(s.key), Rec::from_station(rec::WIFI_NET, &s)));
        sources.push(Source::Keyed(Box::new(cells.chain(wifi))));
    }

    let mut builder = builder;
    crate::learn::masts::keep(builder.learned_masts(), &read_masts);
    // Kept by the commit while their cells are written as learned.
    // A cell's levels replace its earlier ones, and so do its advances when the file carries
    // them (else the cell's own stay).
    for (cell, (levels, advances)) in read_levels {
        builder.set_learned_points(cell, Some(levels), advances);
    }
    let mut merger = Merger::new(sources).map_err(io_error)?;
    let mut merged_duplicates = 0u64;
    let mut done = 0u64;
    let mut current: Option<(u128, Acc)> = None;
    let merging_progress = |done: u64| Progress {
        file: label.clone(),
        bytes_done: done * rec::REC_BYTES as u64,
        bytes_total: total * rec::REC_BYTES as u64,
        rows: done,
        phase: Phase::Merging,
    };
    reporter.report(true, || merging_progress(0))?;
    loop {
        let next = merger.next().map_err(io_error)?;
        if current.as_ref().map(|c| c.0) != next.map(|n| n.0) {
            if let Some((key, acc)) = current.take() {
                merged_duplicates += acc.count - 1;
                emit(&mut builder, key, &acc)?;
            }
        }
        let Some((key, r)) = next else { break };
        current
            .get_or_insert_with(|| (key, Acc::default()))
            .1
            .add(&r);
        done += 1;
        if done.is_multiple_of(65_536) {
            reporter.report(false, || merging_progress(done))?;
        }
    }
    reporter.report(true, || merging_progress(done))?;
    reporter.report(true, || Progress {
        file: label.clone(),
        bytes_done: 0,
        bytes_total: 0,
        rows: done,
        phase: Phase::Writing,
    })?;
    drop(merger);
    let (_, stats) = builder.commit()?;
    drop(db);
    drop(tmp);
    Ok(ImportReport {
        files: reports,
        cells: stats.cells,
        wifi: stats.wifi,
        merged_duplicates,
        shards: stats.shards,
        bytes: stats.bytes,
        seconds: started.elapsed().as_secs_f64(),
        peak_rss_bytes: peak_rss_bytes(),
    })
}

fn emit(builder: &mut DbBuilder, key: u128, acc: &Acc) -> Result<(), ImportError> {
    if is_wifi(key) {
        builder.push_wifi(acc.station(key as u64))?;
        return Ok(());
    }
    let (radio, mcc, mnc, k) = split_cell_key(key);
    let radio = Radio::from_code(radio).ok_or_else(|| {
        ImportError::Store(StoreError::Invalid(format!("unknown radio code {radio}")))
    })?;
    builder.push_cell(radio, mcc, mnc, acc.station(k))?;
    Ok(())
}

/// One sentence naming the accepted input formats, for front ends' help and errors.
pub fn accepted_formats() -> String {
    source::accepted_formats()
}
