//! Writing a database of an older store format again in the current one, from its own
//! stations: what `whereabouts upgrade` runs. A database may hold what no source file
//! holds any more (stations our learner placed and compaction folded in, a sync's pages), so
//! a format change must not leave re-importing the sources as the only way forward.
//!
//! The stations are read in stored order, which is the order a build takes but for the cells
//! of one LAC (format 8 ranks their ids, `store::record::cid_rank`): each LAC's are sorted
//! again. They are written through the builder as an import writes them: the derived tables
//! (areas, fences, pooled masts) are built anew. Like an import, it writes aside and switches
//! the manifest last: a failed or cancelled upgrade leaves the old database as it was.

use std::path::Path;
use std::time::Instant;

use super::{peak_rss_bytes, ImportError, ImportReport, Phase, Progress};
use crate::progress::Reporter;
use crate::store::layout::FORMAT_VERSION;
use crate::store::legacy::LegacyShard;
use crate::store::record::key_lac;
use crate::store::{BuildOptions, DbBuilder, Manifest};

/// What an upgrade did: the format it found, and the report of the build it wrote (no files;
/// `shards: 0` when the database was current already and nothing was written).
#[derive(Debug)]
pub struct UpgradeReport {
    pub from_format: u32,
    pub build: ImportReport,
}

/// Writes the database in `dir` again in the current store format. A current database is
/// left alone; one of a format [`crate::store::legacy`] does not read is refused with what to
/// do instead.
pub fn upgrade(
    dir: &Path,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<UpgradeReport, ImportError> {
    let started = Instant::now();
    let manifest = Manifest::read_existing(dir)?;
    let empty = |shards| ImportReport {
        files: Vec::new(),
        cells: 0,
        wifi: 0,
        merged_duplicates: 0,
        shards,
        bytes: 0,
        seconds: started.elapsed().as_secs_f64(),
        peak_rss_bytes: peak_rss_bytes(),
    };
    if manifest.format == FORMAT_VERSION {
        return Ok(UpgradeReport {
            from_format: manifest.format,
            build: empty(0),
        });
    }
    let shards = manifest
        .shards
        .iter()
        .map(|e| LegacyShard::open(&e.path_in(dir)?))
        .collect::<Result<Vec<_>, _>>()?;
    let total: u64 = shards.iter().map(|s| s.stations() as u64).sum();
    let mut builder = DbBuilder::new(
        dir,
        BuildOptions {
            simulated: manifest.simulated,
            sources: manifest.sources.clone(),
            created: manifest.created,
            ..BuildOptions::default()
        },
    )?;
    let label = dir.display().to_string();
    let mut reporter = Reporter::<Phase, ImportError>::new(progress);
    let at = |done: u64, phase| Progress {
        file: label.clone(),
        bytes_done: done,
        bytes_total: total,
        rows: done,
        phase,
    };
    reporter.report(true, || at(0, Phase::Merging))?;
    let mut done = 0u64;
    // Cells of every shard first, then WiFi: shards hold consecutive networks, and the APs
    // of the last ones follow all cells. A LAC is gathered across shards, in case one was
    // split.
    let mut cells = shards
        .iter()
        .flat_map(|s| {
            s.networks().iter().flat_map(move |n| {
                let (radio, cells) = s.cells(n);
                cells.map(move |c| ((radio, n.mcc, n.mnc), c))
            })
        })
        .peekable();
    let mut lac = Vec::new();
    while let Some((net, first)) = cells.next() {
        lac.clear();
        lac.push(first);
        while let Some((_, c)) =
            cells.next_if(|&(n, c)| n == net && key_lac(c.key) == key_lac(first.key))
        {
            lac.push(c);
        }
        lac.sort_unstable_by_key(|c| c.key);
        let (radio, mcc, mnc) = net;
        for c in &lac {
            builder.push_cell(radio, mcc, mnc, *c)?;
            done += 1;
            if done.is_multiple_of(65_536) {
                reporter.report(false, || at(done, Phase::Merging))?;
            }
        }
    }
    for s in &shards {
        for w in s.wifi() {
            builder.push_wifi(w)?;
            done += 1;
            if done.is_multiple_of(65_536) {
                reporter.report(false, || at(done, Phase::Merging))?;
            }
        }
    }
    reporter.report(true, || at(done, Phase::Writing))?;
    let (_, stats) = builder.commit()?;
    Ok(UpgradeReport {
        from_format: manifest.format,
        build: ImportReport {
            cells: stats.cells,
            wifi: stats.wifi,
            shards: stats.shards,
            bytes: stats.bytes,
            ..empty(stats.shards)
        },
    })
}
