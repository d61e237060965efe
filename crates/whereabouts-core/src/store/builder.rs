//! Builds a database directory from station streams that arrive sorted: cells by
//! (radio, mcc, mnc, lac, cid), then WiFi by BSSID. Memory stays bounded by one
//! LAC group plus the per-shard network and area tables; site masts are staged in a side
//! file. Shards stay open until the commit, which writes their pooled masts
//! (`store::masts`) last. Nothing is visible to readers until [`DbBuilder::commit`] renames
//! the shards into place and replaces the manifest.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::layout::{VectorField, FENCE_STRIDE};
use super::manifest::{sync_dir, Manifest, ShardEntry};
use super::masts::MastSpill;
use super::netstats::{
    self, AdvancePoint, CellId, CellPoints, IdCell, LearnedMast, LevelPoint, NetworkStatsBuilder,
    NetworkStatsFile,
};
use super::record::{key_cid, key_lac, Area, Estimated, Network, Station, StationRecord, KEY_BITS};
use super::writer::ShardWriter;
use super::StoreError;
use crate::geo;
use crate::radio::Radio;
use crate::sites::{self, SiteKey, SiteMast};

#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// Shards are cut at LAC-group boundaries once they pass this size.
    pub max_shard_bytes: u64,
    pub simulated: bool,
    pub sources: Vec<String>,
    /// Unix seconds recorded as the database's creation time.
    pub created: u64,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            // Comfortably under the FlatBuffers 2 GiB limit, leaving room for indexes (the
            // pooled masts, written last, add at most 8 bytes for two cells: 250 MB).
            max_shard_bytes: 1_500_000_000,
            simulated: false,
            sources: Vec::new(),
            created: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BuildStats {
    pub cells: u64,
    pub wifi: u64,
    pub areas: u64,
    pub shards: u64,
    pub bytes: u64,
    /// Site masts our learner fitted that the database keeps (`learn::masts`).
    pub learned_masts: u64,
    /// Learned cells with levels ([`netstats::LearnedLevels`]).
    pub learned_levels: u64,
    /// Learned cells with advances ([`netstats::LearnedAdvances`]).
    pub learned_advances: u64,
}

struct OpenShard {
    writer: ShardWriter,
    file: String,
    networks: Vec<Network>,
    areas: Vec<Area>,
    cells: u64,
    wifi: u64,
    cell_fences: Vec<u64>,
    wifi_fences: Vec<u64>,
}

/// A shard whose stations and indexes are written, waiting for its masts.
struct PendingShard {
    writer: ShardWriter,
    file: String,
    cells: u64,
    wifi: u64,
}

/// `VectorField::MastBlocks` as the masts stream past: the first mast of each block of
/// `FENCE_STRIDE` cells.
#[derive(Default)]
struct MastBlocks {
    starts: Vec<u32>,
    masts: u32,
}

impl MastBlocks {
    fn push(&mut self, cell: u32) {
        while self.starts.len() * FENCE_STRIDE <= cell as usize {
            self.starts.push(self.masts);
        }
        self.masts += 1;
    }

    /// The starts of all `cells.div_ceil(FENCE_STRIDE)` blocks and the end of the last.
    fn finish(mut self, cells: u64) -> Vec<u32> {
        let blocks = (cells as usize).div_ceil(FENCE_STRIDE);
        while self.starts.len() <= blocks {
            self.starts.push(self.masts);
        }
        self.starts
    }
}

pub struct DbBuilder {
    dir: PathBuf,
    staging: PathBuf,
    lock: PathBuf,
    opts: BuildOptions,
    generation: u64,
    old: Option<Manifest>,
    shard: Option<OpenShard>,
    pending: Vec<PendingShard>,
    /// Every site's mast so far; taken by the commit to pool them.
    masts: Option<MastSpill>,
    stats: BuildStats,
    /// Current network (radio, mcc, mnc) and LAC group being accumulated.
    net_key: Option<(u8, u16, u16)>,
    group: Vec<Station>,
    /// The current group's cell positions and whether each is learned, for the statistics
    /// (a buffer kept between groups).
    positions: Vec<(i32, i32, bool)>,
    /// The current group's GSM or UMTS crowd cells, for the statistics (a kept buffer).
    id_cells: Vec<IdCell>,
    /// One site's sector positions, for the statistics (a kept buffer).
    sectors: Vec<(f64, f64)>,
    last_cell: Option<(u8, u16, u16, u64)>,
    last_wifi: Option<u64>,
    in_wifi: bool,
    /// Each network's statistics ([`netstats`]) as its stations pass.
    network_stats: NetworkStatsBuilder,
    /// The masts our learner fitted (`learn::masts`): the previous generation's, and what a
    /// learn run adds ([`DbBuilder::learned_masts`]). The commit keeps those of the sites
    /// that still have a learned cell.
    learned_masts: BTreeMap<SiteKey, LearnedMast>,
    /// The sites of the learned cells written, while there are learned masts to keep.
    learned_sites: BTreeSet<SiteKey>,
    /// The learned cells' levels and advances (`learn::estimate`): the previous generation's,
    /// and what a learn run sets ([`DbBuilder::learned_points`]). The commit keeps those of
    /// the cells written as learned.
    learned_points: BTreeMap<CellId, CellPoints>,
    /// The learned cells written, while there are learned points to keep.
    learned_cells: BTreeSet<CellId>,
}

impl DbBuilder {
    /// Prepares a staging directory inside `dir` (created if missing). Only one
    /// builder may work on a directory at a time.
    pub fn new(dir: &Path, opts: BuildOptions) -> Result<DbBuilder, StoreError> {
        fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
        let lock = dir.join(".import.lock");
        take_lock(&lock)?;
        // Leftovers of an import that died before its commit: never referenced by a manifest.
        if let Ok(rd) = fs::read_dir(dir) {
            for e in rd.flatten() {
                if e.file_name().to_string_lossy().starts_with(".staging-") {
                    let _ = fs::remove_dir_all(e.path());
                }
            }
        }
        let old = Manifest::read(dir)?;
        let generation = old.as_ref().map_or(0, |m| m.generation) + 1;
        let previous = match old.as_ref().and_then(|m| m.network_stats.as_ref()) {
            Some(name) => NetworkStatsFile::read(dir, name)?,
            None => None,
        };
        let learned_masts = previous
            .as_ref()
            .map(|file| file.learned_masts().collect())
            .unwrap_or_default();
        let learned_points = previous
            .as_ref()
            .map(|file| file.learned_points(|_| true))
            .unwrap_or_default();
        let staging = dir.join(format!(".staging-{}", std::process::id()));
        fs::create_dir_all(&staging).map_err(|e| StoreError::io(&staging, e))?;
        let masts_path = staging.join("masts.tmp");
        let masts = MastSpill::create(&masts_path).map_err(|e| StoreError::io(&masts_path, e))?;
        Ok(DbBuilder {
            dir: dir.to_path_buf(),
            staging,
            lock,
            opts,
            generation,
            old,
            shard: None,
            pending: Vec::new(),
            masts: Some(masts),
            stats: BuildStats::default(),
            net_key: None,
            group: Vec::new(),
            positions: Vec::new(),
            id_cells: Vec::new(),
            sectors: Vec::new(),
            last_cell: None,
            last_wifi: None,
            in_wifi: false,
            network_stats: NetworkStatsBuilder::default(),
            learned_masts,
            learned_sites: BTreeSet::new(),
            learned_points,
            learned_cells: BTreeSet::new(),
        })
    }

    /// The learned masts the commit will keep (for the sites that still have a learned
    /// cell): the previous generation's, for a learn run to add to before its cells.
    pub fn learned_masts(&mut self) -> &mut BTreeMap<SiteKey, LearnedMast> {
        &mut self.learned_masts
    }

    /// The learned cells' levels and advances the commit will keep (for the cells still
    /// written as learned): the previous generation's, for a learn run to set or remove before
    /// its cells.
    pub fn learned_points(&mut self) -> &mut BTreeMap<CellId, CellPoints> {
        &mut self.learned_points
    }

    /// Sets what a learn run or an import found of a learned cell: each of its levels and
    /// advances that is given replaces the cell's earlier ones, one not given leaves them; a
    /// cell left with neither keeps none.
    pub fn set_learned_points(
        &mut self,
        cell: CellId,
        levels: Option<Vec<LevelPoint>>,
        advances: Option<Vec<AdvancePoint>>,
    ) {
        let kept = self.learned_points.entry(cell).or_default();
        if let Some(levels) = levels {
            kept.levels = levels;
        }
        if let Some(advances) = advances {
            kept.advances = advances;
        }
        if kept.is_empty() {
            self.learned_points.remove(&cell);
        }
    }

    /// The manifest of the database this builder will replace, if any.
    pub fn previous(&self) -> Option<&Manifest> {
        self.old.as_ref()
    }

    pub fn stats(&self) -> BuildStats {
        self.stats
    }

    fn open_shard(&mut self) -> Result<(), StoreError> {
        let i = self.pending.len();
        let file = format!("stations-g{:06}-{:03}.fb", self.generation, i);
        let path = self.staging.join(&file);
        let writer =
            ShardWriter::create(&path, self.opts.created).map_err(|e| StoreError::io(&path, e))?;
        let mut shard = OpenShard {
            writer,
            file,
            networks: Vec::new(),
            areas: Vec::new(),
            cells: 0,
            wifi: 0,
            cell_fences: Vec::new(),
            wifi_fences: Vec::new(),
        };
        let first = if self.in_wifi {
            VectorField::Wifi
        } else {
            VectorField::Cells
        };
        if first == VectorField::Wifi {
            shard
                .writer
                .begin(VectorField::Cells)
                .map_err(|e| StoreError::io(&path, e))?;
        }
        shard
            .writer
            .begin(first)
            .map_err(|e| StoreError::io(&path, e))?;
        self.shard = Some(shard);
        Ok(())
    }

    /// Opens the first shard, or closes the current one and opens the next once it has
    /// reached [`BuildOptions::max_shard_bytes`]. Callers decide where a shard may end (cells
    /// only between LAC groups).
    fn next_shard_if_full(&mut self) -> Result<(), StoreError> {
        if self
            .shard
            .as_ref()
            .is_none_or(|s| s.writer.len() as u64 >= self.opts.max_shard_bytes)
        {
            self.close_shard()?;
            self.open_shard()?;
        }
        Ok(())
    }

    fn close_shard(&mut self) -> Result<(), StoreError> {
        let Some(mut s) = self.shard.take() else {
            return Ok(());
        };
        let path = self.staging.join(&s.file);
        let io = |e| StoreError::io(&path, e);
        if !self.in_wifi {
            s.writer.begin(VectorField::Wifi).map_err(io)?;
        }
        s.writer.begin(VectorField::Areas).map_err(io)?;
        for a in &s.areas {
            s.writer.push(a).map_err(io)?;
        }
        s.writer.begin(VectorField::Networks).map_err(io)?;
        for n in &s.networks {
            s.writer.push(n).map_err(io)?;
        }
        s.writer.begin(VectorField::CellFences).map_err(io)?;
        for f in &s.cell_fences {
            s.writer.push(f).map_err(io)?;
        }
        s.writer.begin(VectorField::WifiFences).map_err(io)?;
        for f in &s.wifi_fences {
            s.writer.push(f).map_err(io)?;
        }
        s.writer.begin(VectorField::Masts).map_err(io)?;
        self.stats.areas += s.areas.len() as u64;
        self.pending.push(PendingShard {
            writer: s.writer,
            file: s.file,
            cells: s.cells,
            wifi: s.wifi,
        });
        Ok(())
    }

    /// Pools the sites' masts and finishes every shard with its share of them.
    fn finish_shards(&mut self) -> Result<Vec<ShardEntry>, StoreError> {
        let shifts_path = self.staging.join("mast-shifts.tmp");
        let spill_io = |e| StoreError::io(&shifts_path, e);
        let spill = self
            .masts
            .take()
            .ok_or_else(|| StoreError::Invalid("the masts were pooled already".into()))?;
        let mut pooled = spill.pool(&shifts_path).map_err(spill_io)?.peekable();
        let mut entries = Vec::with_capacity(self.pending.len());
        for (i, mut s) in std::mem::take(&mut self.pending).into_iter().enumerate() {
            let path = self.staging.join(&s.file);
            let io = |e| StoreError::io(&path, e);
            let mut blocks = MastBlocks::default();
            while let Some(next) =
                pooled.next_if(|m| m.as_ref().map_or(true, |(shard, _)| *shard as usize == i))
            {
                let (_, mast) = next.map_err(spill_io)?;
                blocks.push(mast.cell);
                s.writer.push(&mast).map_err(io)?;
            }
            s.writer.begin(VectorField::MastBlocks).map_err(io)?;
            for start in blocks.finish(s.cells) {
                s.writer.push(&start).map_err(io)?;
            }
            let bytes = s.writer.finish().map_err(io)? as u64;
            self.stats.shards += 1;
            self.stats.bytes += bytes;
            entries.push(ShardEntry {
                file: s.file,
                cells: s.cells,
                wifi: s.wifi,
                bytes,
            });
        }
        Ok(entries)
    }

    /// Adds a cell. Cells must arrive strictly increasing in (radio, mcc, mnc, key).
    pub fn push_cell(
        &mut self,
        radio: Radio,
        mcc: u16,
        mnc: u16,
        station: Station,
    ) -> Result<(), StoreError> {
        if self.in_wifi {
            return Err(StoreError::Invalid("cells must come before WiFi".into()));
        }
        let k = (radio as u8, mcc, mnc, station.key);
        if self.last_cell.is_some_and(|l| l >= k) {
            return Err(StoreError::Invalid(format!(
                "cells out of order or duplicated at {radio} {mcc} {mnc} lac {} cid {}",
                key_lac(station.key),
                key_cid(radio, station.key)
            )));
        }
        let record = record_of(&station)?;
        // What lookups will read: the area and the site's mast are derived from it too.
        let station = record.station();
        self.last_cell = Some(k);
        let net = (radio as u8, mcc, mnc);
        let same_group = self.net_key == Some(net)
            && self
                .group
                .last()
                .is_some_and(|g| key_lac(g.key) == key_lac(station.key));
        if !same_group {
            self.flush_group()?;
            self.next_shard_if_full()?;
        }
        let shard = self.shard.as_mut().expect("shard is open");
        if shard.networks.last().is_none_or(|n| n.sort_key() != net) {
            shard.networks.push(Network {
                radio: radio as u8,
                mcc,
                mnc,
                first: shard.cells as u32,
                ..Network::default()
            });
        }
        self.net_key = Some(net);
        let path = &self.staging;
        if (shard.cells as usize).is_multiple_of(FENCE_STRIDE) {
            shard.cell_fences.push(station.key);
        }
        shard
            .writer
            .push(&record)
            .map_err(|e| StoreError::io(path, e))?;
        shard.cells += 1;
        if let Some(n) = shard.networks.last_mut() {
            n.count += 1;
        }
        self.stats.cells += 1;
        if station.estimated() == Estimated::Learned {
            if !self.learned_masts.is_empty() {
                if let Some(site) = SiteKey::of_cell(radio, mcc, mnc, key_cid(radio, station.key)) {
                    self.learned_sites.insert(site);
                }
            }
            if !self.learned_points.is_empty() {
                self.learned_cells.insert((radio, mcc, mnc, station.key));
            }
        }
        self.network_stats.cell(
            radio,
            mcc,
            mnc,
            station.range_m() as f64,
            station.samples(),
            station.estimated() == Estimated::Learned,
        );
        self.group.push(station);
        Ok(())
    }

    /// Closes the current LAC group: derives its area and spills its sites' masts.
    fn flush_group(&mut self) -> Result<(), StoreError> {
        if self.group.is_empty() {
            return Ok(());
        }
        let shard = self.shard.as_mut().expect("a group implies an open shard");
        let net_index = (shard.networks.len() - 1) as u32;
        let net = shard.networks[net_index as usize];
        let lac = key_lac(self.group[0].key);
        if let Some(area) = derive_area(net_index, lac, &self.group) {
            shard.areas.push(area);
        }
        let first_cell = shard.cells as u32 - self.group.len() as u32;
        if let Some(radio) = net.radio() {
            let shard_index = self.pending.len() as u32;
            let site_of = |s: &Station| sites::site_of_key(radio, s.key);
            let mut at = 0;
            let mut group_masts = Vec::new();
            for site in self.group.chunk_by(|a, b| site_of(a) == site_of(b)) {
                let mast = site_of(&site[0]).and_then(|_| SiteMast::of(radio, site));
                if let Some(mast) = mast {
                    let averaged = site.iter().filter(|s| s.estimated() == Estimated::Averaged);
                    let (n, sum) = averaged.fold((0.0, 0.0), |(n, sum), s| {
                        (n + 1.0, sum + s.range_m() as f64)
                    });
                    group_masts.push((mast, sum / f64::max(n, 1.0)));
                }
                if let (Some(mast), Some(spill)) = (mast, self.masts.as_mut()) {
                    spill
                        .push(
                            (radio, net.mcc, net.mnc),
                            shard_index,
                            first_cell + at,
                            &mast,
                        )
                        .map_err(|e| StoreError::io(&self.staging, e))?;
                }
                if site_of(&site[0]).is_some() && site.len() > 1 {
                    self.sectors.clear();
                    self.sectors.extend(site.iter().map(|s| (s.lat(), s.lon())));
                    self.network_stats
                        .site_holdouts(radio, net.mcc, net.mnc, &self.sectors);
                }
                at += site.len() as u32;
            }
            self.network_stats
                .sites(radio, net.mcc, net.mnc, &group_masts);
            self.positions.clear();
            self.positions.extend(
                self.group
                    .iter()
                    .map(|s| (s.lat_e7, s.lon_e7, s.estimated() == Estimated::Learned)),
            );
            self.network_stats
                .positions(radio, net.mcc, net.mnc, &mut self.positions);
            if matches!(radio, Radio::Gsm | Radio::Umts) {
                self.id_cells.clear();
                self.id_cells.extend(
                    self.group
                        .iter()
                        .filter(|s| s.estimated() == Estimated::Averaged)
                        .map(|s| IdCell {
                            cid: key_cid(radio, s.key),
                            lat: s.lat(),
                            lon: s.lon(),
                            range_m: s.range_m() as f64,
                        }),
                );
                self.network_stats
                    .id_groups(radio, net.mcc, net.mnc, &mut self.id_cells);
            }
        }
        self.group.clear();
        Ok(())
    }

    /// Adds a WiFi access point. APs come after all cells, strictly increasing by BSSID.
    pub fn push_wifi(&mut self, station: Station) -> Result<(), StoreError> {
        if self.last_wifi.is_some_and(|l| l >= station.key) {
            return Err(StoreError::Invalid(format!(
                "WiFi out of order or duplicated at {:012x}",
                station.key
            )));
        }
        if !self.in_wifi {
            self.flush_group()?;
            self.close_shard()?;
            self.in_wifi = true;
        }
        let record = record_of(&station)?;
        self.last_wifi = Some(station.key);
        self.next_shard_if_full()?;
        let shard = self.shard.as_mut().expect("shard is open");
        if (shard.wifi as usize).is_multiple_of(FENCE_STRIDE) {
            shard.wifi_fences.push(station.key);
        }
        shard
            .writer
            .push(&record)
            .map_err(|e| StoreError::io(&self.staging, e))?;
        shard.wifi += 1;
        self.stats.wifi += 1;
        Ok(())
    }

    /// Publishes the database: shards are synced and renamed into the directory,
    /// then the manifest is replaced atomically and the previous shards removed.
    pub fn commit(mut self) -> Result<(Manifest, BuildStats), StoreError> {
        self.flush_group()?;
        self.close_shard()?;
        if self.pending.is_empty() {
            self.in_wifi = false;
            self.open_shard()?;
            self.close_shard()?;
        }
        let entries = self.finish_shards()?;
        sync_dir(&self.staging)?;
        for e in &entries {
            let from = self.staging.join(&e.file);
            let to = self.dir.join(&e.file);
            fs::rename(&from, &to).map_err(|err| StoreError::io(&to, err))?;
        }
        let stats_file = netstats::file_name(self.generation);
        let mut stats = std::mem::take(&mut self.network_stats).finish();
        let learned_sites = std::mem::take(&mut self.learned_sites);
        let masts = std::mem::take(&mut self.learned_masts)
            .into_iter()
            .filter(|(site, _)| learned_sites.contains(site));
        self.stats.learned_masts = stats.add_masts(masts);
        let learned_cells = std::mem::take(&mut self.learned_cells);
        let points = std::mem::take(&mut self.learned_points)
            .into_iter()
            .filter(|(cell, _)| learned_cells.contains(cell));
        (self.stats.learned_levels, self.stats.learned_advances) = stats.add_points(points);
        stats.write(&self.dir, &stats_file)?;
        sync_dir(&self.dir)?;
        let manifest = Manifest {
            format: super::layout::FORMAT_VERSION,
            generation: self.generation,
            created: self.opts.created,
            shards: entries,
            simulated: self.opts.simulated,
            sources: self.opts.sources.clone(),
            network_stats: Some(stats_file),
            // Calibrated on the user's ground truth, not on these stations: it stays until
            // recalibrated or reset.
            radius_model: self.old.as_ref().and_then(|m| m.radius_model.clone()),
        };
        manifest.write_atomic(&self.dir)?;
        // Open readers keep their mappings of the old files; unlinking is safe.
        if let Some(old) = &self.old {
            for e in &old.shards {
                if !manifest.shards.iter().any(|n| n.file == e.file) {
                    let _ = fs::remove_file(self.dir.join(&e.file));
                }
            }
            if let Some(f) = &old.network_stats {
                if manifest.network_stats.as_ref() != Some(f) && !f.contains('/') {
                    let _ = fs::remove_file(self.dir.join(f));
                }
            }
        }
        Ok((manifest, self.stats))
    }
}

impl Drop for DbBuilder {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.staging);
        let _ = fs::remove_file(&self.lock);
    }
}

/// Takes an import lock file holding our pid; a lock whose process is gone is taken over.
pub(crate) fn take_lock(lock: &Path) -> Result<(), StoreError> {
    for _ in 0..2 {
        match OpenOptions::new().write(true).create_new(true).open(lock) {
            Ok(mut f) => {
                let _ = writeln!(f, "{}", std::process::id());
                return Ok(());
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let pid: Option<u32> = fs::read_to_string(lock)
                    .ok()
                    .and_then(|s| s.trim().parse().ok());
                let alive = pid.is_some_and(|p| {
                    p != std::process::id() && Path::new(&format!("/proc/{p}")).exists()
                });
                if alive {
                    return Err(StoreError::Busy(format!(
                        "another import (pid {}) is writing to this database; remove {} if it is not",
                        pid.unwrap_or(0),
                        lock.display()
                    )));
                }
                let _ = fs::remove_file(lock);
            }
            Err(e) => return Err(StoreError::io(lock, e)),
        }
    }
    Err(StoreError::Invalid(format!(
        "cannot take {}",
        lock.display()
    )))
}

/// The record of `station`, refused where its key passes the record's 60 bits (no importer
/// lets one through: an NR cell's key, the widest, takes 60).
fn record_of(station: &Station) -> Result<StationRecord, StoreError> {
    if station.key >> KEY_BITS != 0 {
        return Err(StoreError::Invalid(format!(
            "station key {:#x} passes {KEY_BITS} bits",
            station.key
        )));
    }
    Ok(StationRecord::pack(station))
}

/// A LAC area: a robust centre (cells far from the median dropped as bad
/// estimates) and its radius: the distance from the centre within which 90% of its
/// cells' positions lie; a lone cell's area is its coverage, its range. Cell positions,
/// not their ranges: published ranges mean different things in different sources (an
/// OpenCelliD-like export's coverage, a drive test's farthest sighting, several site
/// spacings), and a radius built on them fits one source and fails the other; positions
/// fit both (docs/positioning.md). With the cells' median range as a floor on every area,
/// the second generator's exports (ranges of the farthest sighting, several spacings long)
/// held 92.8% inside on `lacf` (held-out worlds), 81.0% without; the families' held-out
/// worlds 70.3% and 69.2%, their fit worlds and Cork's areas the same either way
/// (docs/experiments.md).
fn derive_area(network: u32, lac: u32, cells: &[Station]) -> Option<Area> {
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mlat = median(cells.iter().map(|c| c.lat()).collect());
    let mlon = median(cells.iter().map(|c| c.lon()).collect());
    let dists: Vec<f64> = cells
        .iter()
        .map(|c| geo::distance_m(mlat, mlon, c.lat(), c.lon()))
        .collect();
    let cut = (median(dists.clone()) * 4.0).max(20_000.0);
    let (mut sw, mut sx, mut sy) = (0.0, 0.0, 0.0);
    let frame = geo::LocalFrame::new(mlat, mlon);
    let kept: Vec<&Station> = cells
        .iter()
        .zip(&dists)
        .filter(|(_, d)| **d <= cut)
        .map(|(c, _)| c)
        .collect();
    for c in &kept {
        let w = 1.0 + (c.samples() as f64).sqrt();
        let (x, y) = frame.to_xy(c.lat(), c.lon());
        sw += w;
        sx += w * x;
        sy += w * y;
    }
    if sw == 0.0 {
        return None;
    }
    let (lat, lon) = frame.to_latlon(sx / sw, sy / sw);
    let mut spread: Vec<f64> = kept
        .iter()
        .map(|c| geo::distance_m(lat, lon, c.lat(), c.lon()))
        .collect();
    spread.sort_by(f64::total_cmp);
    let p90 = spread[((spread.len() - 1) as f64 * 0.9).round() as usize];
    let radius = match kept.as_slice() {
        [only] => only.range_m() as f64,
        _ => p90,
    };
    Some(Area {
        network,
        lac,
        lat_e7: (lat * 1e7).round() as i32,
        lon_e7: (lon * 1e7).round() as i32,
        range_m: radius.round().clamp(1.0, u32::MAX as f64) as u32,
        cells: cells.len() as u32,
    })
}
