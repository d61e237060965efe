//! Importing address files: detecting them, reading each into one [`AddressSet`] together
//! with the existing address file, and writing the merged file atomically.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use super::builder::AddressSet;
use super::store::AddressIndex;
use super::{openaddresses, osm};
use crate::import::source::{io_err, open_text, read_full};
use crate::import::{
    peak_rss_bytes, FileReport, ImportError, Phase, Progress, Reporter, SourceKind,
};
use crate::store::builder::take_lock;

/// How an address import runs.
#[derive(Clone, Debug)]
pub struct AddressImportOptions {
    /// Replace the address file instead of merging into it.
    pub replace: bool,
    /// Rejected rows reported by line number (OSM: element id) per file; all are counted.
    pub max_error_lines: usize,
}

impl Default for AddressImportOptions {
    fn default() -> Self {
        AddressImportOptions {
            replace: false,
            max_error_lines: 20,
        }
    }
}

/// Outcome of an address import; counts are of the new file.
#[derive(Clone, Debug, Serialize)]
pub struct AddressImportReport {
    pub files: Vec<FileReport>,
    pub addresses: u64,
    pub roads: u64,
    pub merged_duplicates: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub peak_rss_bytes: Option<u64>,
}

/// Whether `path` is an address file this importer reads: an `.osm.pbf` by its first bytes,
/// an OpenAddresses CSV (plain or gzip) by its header. `None` for anything else (station
/// exports included), so that front ends can route files by content.
pub fn detect(path: &Path) -> Result<Option<SourceKind>, ImportError> {
    let mut file = File::open(path).map_err(|e| io_err(path, e))?;
    let mut head = [0u8; 32];
    let got = read_full(&mut file, &mut head).map_err(|e| io_err(path, e))?;
    if osm::looks_like_pbf(&head[..got]) {
        return Ok(Some(SourceKind::OsmPbf));
    }
    let (reader, _, _) = open_text(path)?;
    let mut first = Vec::new();
    // The header is the first non-empty line; a binary file has none worth reading far.
    let mut lines = BufReader::new(Read::take(reader, 1 << 16));
    loop {
        first.clear();
        if lines.read_until(b'\n', &mut first).unwrap_or(0) == 0 {
            return Ok(None);
        }
        let text = String::from_utf8_lossy(&first);
        if text.trim().is_empty() {
            continue;
        }
        return Ok(
            openaddresses::is_header(text.trim_end()).then_some(SourceKind::OpenAddressesCsv)
        );
    }
}

/// The lock of an address file's import, removed on every way out.
struct Lock(PathBuf);

impl Lock {
    /// Takes `.NAME.lock` beside `out` (one import at a time: two would each merge into the
    /// old file and the last rename would drop the other's addresses), then removes what a
    /// killed import left (`.NAME.tmp-*`).
    fn take(out: &Path) -> Result<Lock, ImportError> {
        let name = out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = out.parent().filter(|p| !p.as_os_str().is_empty());
        if let Some(d) = dir {
            std::fs::create_dir_all(d).map_err(|e| io_err(d, e))?;
        }
        let lock = out.with_file_name(format!(".{name}.lock"));
        take_lock(&lock)?;
        let stale = format!(".{name}.tmp-");
        if let Ok(entries) = std::fs::read_dir(dir.unwrap_or(Path::new("."))) {
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with(&stale) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        Ok(Lock(lock))
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Imports address `files` into the address file `out`, merging with the one there unless
/// `opts.replace`. `progress` is called at most about ten times a second; returning `false`
/// cancels and leaves the previous file intact.
pub fn import_address_files(
    out: &Path,
    files: &[PathBuf],
    opts: &AddressImportOptions,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<AddressImportReport, ImportError> {
    let started = Instant::now();
    if files.is_empty() {
        return Err(ImportError::Format("no input files given".into()));
    }
    let mut kinds = Vec::with_capacity(files.len());
    for f in files {
        if !f.is_file() {
            return Err(ImportError::Io(format!(
                "{}: not a readable file",
                f.display()
            )));
        }
        kinds.push(detect(f)?.ok_or_else(|| {
            ImportError::Format(format!(
                "{}: not an address file; accepted: an OpenAddresses CSV (plain or gzip) with \
                 the columns LON, LAT, NUMBER, STREET (CITY, POSTCODE and others optional), or \
                 an OpenStreetMap .osm.pbf extract",
                f.display()
            ))
        })?);
    }
    let _lock = Lock::take(out)?;
    let mut set = AddressSet::new();
    if !opts.replace && out.exists() {
        let old = AddressIndex::open(out).map_err(|e| ImportError::Format(format!(
            "{}: the existing address file cannot be merged into ({e}); import with --replace to start anew",
            out.display()
        )))?;
        set.add_index(&old);
    }
    let mut reporter = Reporter::new(progress);
    let mut reports = Vec::with_capacity(files.len());
    for (f, kind) in files.iter().zip(kinds) {
        let report = match kind {
            SourceKind::OsmPbf => osm::read(f, &mut set, opts.max_error_lines, &mut reporter)?,
            _ => openaddresses::read(f, &mut set, opts.max_error_lines, &mut reporter)?,
        };
        reports.push(report);
    }
    let label = out.display().to_string();
    let n = set.address_count() as u64;
    reporter.report(true, || Progress {
        file: label.clone(),
        bytes_done: 0,
        bytes_total: 0,
        rows: n,
        phase: Phase::Writing,
    })?;
    let stats = set.write(out).map_err(|e| ImportError::Io(e.to_string()))?;
    Ok(AddressImportReport {
        files: reports,
        addresses: stats.addresses,
        roads: stats.roads,
        merged_duplicates: stats.merged_duplicates,
        bytes: stats.bytes,
        seconds: started.elapsed().as_secs_f64(),
        peak_rss_bytes: peak_rss_bytes(),
    })
}
