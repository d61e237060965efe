//! A database directory opened for lookups: every shard of the manifest mapped.
//! Shards are cut in sorted order, so each holds a contiguous range of networks;
//! a lookup finds the shard by that range, the network by binary search of the
//! shard's network table, and the station through the shard's fence index.
//! Opening builds nothing in proportion to the stations.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::manifest::Manifest;
use super::netstats::{
    AdvancePoint, CellId, LevelPoint, NetworkScale, NetworkStats, NetworkStatsFile,
};
use super::record::{cell_key, key_cid, rank_key, short_cid_ranks, CID_MASK};
use super::record::{Area, Mast, Station, StationRecord};

use super::shard::Shard;
use super::StoreError;
use crate::calibration::{RadiusModel, RadiusTable};
use crate::radio::Radio;
use crate::sites::{SiteKey, SiteMast};

type NetKey = (u8, u16, u16);

/// (radio, mcc, mnc) packed into one integer that sorts as the tuple does: the network
/// search compares one word per step.
fn packed(radio: u8, mcc: u16, mnc: u16) -> u64 {
    (radio as u64) << 32 | (mcc as u64) << 16 | mnc as u64
}

/// One network's cells in one shard (a network is cut across shards only where a shard
/// filled up), with the first and last of their keys: a cell lookup searches only the
/// part whose keys span its key, and misses without a search when none does.
#[derive(Clone, Copy, Debug)]
struct NetPart {
    key: u64,
    shard: u32,
    /// The network's index in its shard (areas refer to it).
    index: u32,
    first: u32,
    count: u32,
    /// Keys of the part's first and last cell (`lo > hi` for a network without cells) when
    /// the network is split across shards, where they tell its parts apart; else the whole
    /// key range. Reading them for every network would make opening touch a page of the
    /// cells per network: with readahead, most of a world database's cells vector.
    lo: u64,
    hi: u64,
    /// The network's own scale ([`NetworkScale`]), copied into every cell found in it.
    scale: NetworkScale,
}

impl NetPart {
    fn cells(&self) -> std::ops::Range<usize> {
        self.first as usize..(self.first + self.count) as usize
    }

    fn may_hold(&self, key: u64) -> bool {
        self.lo <= key && key <= self.hi
    }
}

/// A cell found, with the neighbours asked for (its site's sectors, say).
#[derive(Clone, Copy)]
pub struct CellMatch<'a> {
    pub cell: Station,
    /// The cells whose ids lie in the range asked for, in id order, the cell among them.
    pub neighbours: &'a [StationRecord],
    shard: &'a Shard,
    /// The position of `neighbours[0]` in the shard's cells.
    first: usize,
    /// The scale of the cell's network, from the database's statistics.
    pub scale: NetworkScale,
}

impl CellMatch<'_> {
    /// Where pooling across radios moved the mast of the site that `neighbours` make up
    /// ([`crate::sites::pool`]), if it did. Meaningful when the neighbours asked for were the
    /// cell's site ([`crate::sites::site_cids`]).
    pub fn pooled_mast(&self) -> Option<&Mast> {
        self.shard.mast(self.first)
    }
}

pub struct Database {
    dir: PathBuf,
    manifest: Manifest,
    shards: Vec<Shard>,
    /// Every network part of every shard, by network then shard order: built at open in
    /// time proportional to the networks (one search here replaces one among the shards
    /// and another in the shard's network table, per lookup).
    networks: Vec<NetPart>,
    /// CDMA SID -> mccs, for CDMA requests that come without an mcc (spec 2.2).
    cdma_sids: HashMap<u16, Vec<u16>>,
    /// Shards holding WiFi, with their first and last BSSID: a lookup searches only the
    /// shard whose range holds the key, never a failed search through another first.
    wifi_shards: Vec<(u64, u64, u32)>,
    /// Each network's statistics ([`super::netstats`]); None for a database without them.
    network_stats: Option<NetworkStatsFile>,
    /// The masts our learner fitted from timing advances, from the statistics file.
    learned_masts: HashMap<SiteKey, (f64, f64)>,
    /// Where each learned cell's positions by level are in `network_stats` (network, entry):
    /// they are kept once, in the file as read.
    learned_levels: HashMap<CellId, (u32, u32)>,
    /// Where each learned cell's positions by timing advance are, the same way.
    learned_advances: HashMap<CellId, (u32, u32)>,
    /// The manifest's radius model resolved for answering; None: the solver's radii.
    radius_model: Option<RadiusTable>,
}

/// Where a WiFi lookup will search: a block of one shard's stations (`Database::wifi_block`).
#[derive(Clone, Copy, Debug)]
pub struct WifiBlock {
    shard: u32,
    start: usize,
    end: usize,
}

/// Where a cell lookup will search: a block of one network part (`Database::cell_block`).
#[derive(Clone, Copy, Debug)]
pub struct CellBlock {
    radio: Radio,
    key: u64,
    part: u32,
    start: usize,
    end: usize,
}

/// Where each cell's entry of a per-cell list of the statistics file is (network, entry).
fn index_cells<T>(
    file: Option<&NetworkStatsFile>,
    entries: impl Fn(&NetworkStats) -> &[T],
    cell: impl Fn(&T) -> u64,
) -> HashMap<CellId, (u32, u32)> {
    let mut out = HashMap::new();
    for (n, net) in file.iter().flat_map(|f| f.networks.iter().enumerate()) {
        let Some(radio) = Radio::parse(&net.radio) else {
            continue;
        };
        for (e, entry) in entries(net).iter().enumerate() {
            out.insert((radio, net.mcc, net.mnc, cell(entry)), (n as u32, e as u32));
        }
    }
    out
}

/// The keys of the cells whose ids lie in `around`, a site's id range or one id.
#[inline]
fn key_span(radio: Radio, lac: u32, around: (u64, u64)) -> (u64, u64) {
    (
        cell_key(radio, lac, around.0),
        cell_key(radio, lac, around.1),
    )
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DbStats {
    pub cells: u64,
    pub wifi: u64,
    pub areas: u64,
    pub networks: u64,
    pub shards: u64,
    pub bytes: u64,
}

impl Database {
    pub fn open(dir: &Path) -> Result<Database, StoreError> {
        let manifest = Manifest::read_existing(dir)?;
        let mut shards = Vec::with_capacity(manifest.shards.len());
        for e in &manifest.shards {
            let shard = Shard::open(&e.path_in(dir)?)?;
            if shard.cells().len() as u64 != e.cells || shard.wifi().len() as u64 != e.wifi {
                return Err(StoreError::Corrupt(format!(
                    "{}: station counts differ from the manifest",
                    e.file
                )));
            }
            shards.push(shard);
        }
        let mut cell_shards: Vec<(NetKey, NetKey)> = Vec::new();
        let mut networks = Vec::new();
        let mut cdma_sids: HashMap<u16, Vec<u16>> = HashMap::new();
        let mut wifi_shards = Vec::new();
        for (si, s) in shards.iter().enumerate() {
            let nets = s.networks();
            if let (Some(first), Some(last)) = (nets.first(), nets.last()) {
                cell_shards.push((first.sort_key(), last.sort_key()));
            }
            for (ni, n) in nets.iter().enumerate() {
                networks.push(NetPart {
                    key: packed(n.radio, n.mcc, n.mnc),
                    shard: si as u32,
                    index: ni as u32,
                    first: n.first,
                    count: n.count,
                    lo: 0,
                    hi: u64::MAX,
                    scale: NetworkScale::UNKNOWN,
                });
            }
            // Networks sort by radio first: the CDMA ones are one contiguous run.
            let cdma = Radio::Cdma as u8;
            let start = nets.partition_point(|n| n.radio < cdma);
            for n in nets[start..].iter().take_while(|n| n.radio == cdma) {
                let mccs = cdma_sids.entry(n.mnc).or_default();
                if !mccs.contains(&n.mcc) {
                    mccs.push(n.mcc);
                }
            }
            if let (Some(first), Some(last)) = (s.wifi().first(), s.wifi().last()) {
                wifi_shards.push((first.key(), last.key(), si as u32));
            }
        }
        // The parts' order above is then the networks' order: the table needs no sort.
        if cell_shards.windows(2).any(|w| w[0].1 > w[1].0) {
            return Err(StoreError::Corrupt(
                "cell shards overlap or are out of order".into(),
            ));
        }
        for split in networks.chunk_by_mut(|a, b| a.key == b.key) {
            if split.len() < 2 {
                continue;
            }
            for p in split {
                let cells = &shards[p.shard as usize].cells()[p.cells()];
                (p.lo, p.hi) = match (cells.first(), cells.last()) {
                    (Some(a), Some(b)) => (a.key(), b.key()),
                    _ => (u64::MAX, 0),
                };
            }
        }
        let network_stats = match &manifest.network_stats {
            Some(name) => NetworkStatsFile::read(dir, name)?,
            None => None,
        };
        let learned_masts = network_stats.as_ref().map_or_else(HashMap::new, |file| {
            file.learned_masts()
                .map(|(site, m)| (site, (m.lat, m.lon)))
                .collect()
        });
        let learned_levels = index_cells(network_stats.as_ref(), |n| &n.levels, |l| l.cell);
        let learned_advances = index_cells(network_stats.as_ref(), |n| &n.advances, |a| a.cell);
        if let Some(file) = &network_stats {
            for n in &file.networks {
                let Some(radio) = Radio::parse(&n.radio) else {
                    continue;
                };
                let key = packed(radio as u8, n.mcc, n.mnc);
                let start = networks.partition_point(|p| p.key < key);
                for p in networks[start..].iter_mut().take_while(|p| p.key == key) {
                    p.scale = NetworkScale::of(n);
                }
            }
        }
        let radius_model = match &manifest.radius_model {
            Some(file) => Some(
                RadiusModel::read(dir, file)?
                    .table()
                    .map_err(|e| StoreError::Corrupt(format!("{file}: {e}")))?,
            ),
            None => None,
        };
        Ok(Database {
            dir: dir.to_path_buf(),
            radius_model,
            manifest,
            shards,
            networks,
            cdma_sids,
            wifi_shards,
            network_stats,
            learned_masts,
            learned_levels,
            learned_advances,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Each network's statistics, when the database has them (databases written before
    /// they existed do not).
    pub fn network_stats(&self) -> Option<&NetworkStatsFile> {
        self.network_stats.as_ref()
    }

    /// The radius model stored with the database ([`crate::calibration`]), if any.
    pub fn radius_model(&self) -> Option<&RadiusTable> {
        self.radius_model.as_ref()
    }

    pub fn shards(&self) -> &[Shard] {
        &self.shards
    }

    pub fn stats(&self) -> DbStats {
        let mut st = DbStats {
            shards: self.shards.len() as u64,
            ..DbStats::default()
        };
        for s in &self.shards {
            st.cells += s.cells().len() as u64;
            st.wifi += s.wifi().len() as u64;
            st.areas += s.areas().len() as u64;
            st.networks += s.networks().len() as u64;
            st.bytes += s.bytes() as u64;
        }
        st
    }

    /// The parts of network (radio, mcc, mnc), in shard order: usually one; more only
    /// when the network was split across shards.
    fn nets(&self, radio: Radio, mcc: u16, mnc: u16) -> &[NetPart] {
        &self.networks[self.net_range(radio, mcc, mnc)]
    }

    /// [`Database::nets`] as positions in the table.
    fn net_range(&self, radio: Radio, mcc: u16, mnc: u16) -> std::ops::Range<usize> {
        let key = packed(radio as u8, mcc, mnc);
        let start = self.networks.partition_point(|p| p.key < key);
        let len = self.networks[start..]
            .iter()
            .take_while(|p| p.key == key)
            .count();
        start..start + len
    }

    /// The scale of network (radio, mcc, mnc) from the database's statistics, or
    /// [`NetworkScale::UNKNOWN`].
    pub fn network_scale(&self, radio: Radio, mcc: u16, mnc: u16) -> NetworkScale {
        self.nets(radio, mcc, mnc)
            .first()
            .map_or(NetworkScale::UNKNOWN, |p| p.scale)
    }

    /// The mast our learner fitted from timing advances for the site of cell `cid`
    /// (`learn::masts`), if any.
    pub fn learned_mast(&self, radio: Radio, mcc: u16, mnc: u16, cid: u64) -> Option<SiteMast> {
        if self.learned_masts.is_empty() {
            return None;
        }
        let site = SiteKey::of_cell(radio, mcc, mnc, cid)?;
        self.learned_masts.get(&site).map(|&(lat, lon)| SiteMast {
            radio,
            lat,
            lon,
            spread_m: 0.0,
        })
    }

    /// A learned cell's positions by level, ascending (`learn::estimate`); empty for the
    /// others.
    pub fn learned_levels(&self, radio: Radio, mcc: u16, mnc: u16, key: u64) -> &[LevelPoint] {
        self.cell_entry(&self.learned_levels, (radio, mcc, mnc, key), |n, i| {
            &n.levels[i].points
        })
    }

    /// A learned cell's positions by timing advance, ascending (`learn::estimate`); empty
    /// for the others.
    pub fn learned_advances(&self, radio: Radio, mcc: u16, mnc: u16, key: u64) -> &[AdvancePoint] {
        self.cell_entry(&self.learned_advances, (radio, mcc, mnc, key), |n, i| {
            &n.advances[i].points
        })
    }

    /// A cell's entry of a per-cell list of the statistics file, by its index ([`index_cells`]);
    /// empty when it has none.
    fn cell_entry<'a, T>(
        &'a self,
        index: &HashMap<CellId, (u32, u32)>,
        cell: CellId,
        entry: impl Fn(&'a NetworkStats, usize) -> &'a [T],
    ) -> &'a [T] {
        if index.is_empty() {
            return &[];
        }
        match (index.get(&cell), &self.network_stats) {
            (Some(&(n, e)), Some(file)) => entry(&file.networks[n as usize], e as usize),
            _ => &[],
        }
    }

    /// The mccs under which a CDMA SID is known.
    pub fn cdma_mccs(&self, sid: u16) -> &[u16] {
        self.cdma_sids.get(&sid).map_or(&[], |v| v.as_slice())
    }

    /// The cell of this id ([`Database::cell_among`] without neighbours).
    pub fn cell(&self, radio: Radio, mcc: u16, mnc: u16, lac: u32, cid: u64) -> Option<Station> {
        self.cell_among(radio, mcc, mnc, lac, cid, (cid, cid))
            .map(|m| m.cell)
    }

    /// The cell with its neighbours whose ids lie in `around` (inclusive, holding `cid`): the
    /// cell alone, or its site's sibling sectors as [`crate::sites::site_cids`] gives them.
    /// The neighbours follow the cell in the file ([`cid_rank`](super::record::cid_rank)
    /// keeps a site together), so they cost no search of their own.
    pub fn cell_among(
        &self,
        radio: Radio,
        mcc: u16,
        mnc: u16,
        lac: u32,
        cid: u64,
        around: (u64, u64),
    ) -> Option<CellMatch<'_>> {
        let key = cell_key(radio, lac, cid);
        let span = key_span(radio, lac, around);
        self.nets(radio, mcc, mnc)
            .iter()
            .find_map(|p| self.cell_in_part(p, key, span))
    }

    /// The cells of (radio, mcc, mnc) in `lac` whose ids lie in `around` (inclusive), with
    /// their network's scale: the known sectors of a site ([`crate::sites::site_cids`]) whose
    /// cell the database lacks. None: no cell there.
    pub fn cells_in(
        &self,
        radio: Radio,
        mcc: u16,
        mnc: u16,
        lac: u32,
        around: (u64, u64),
    ) -> Option<(&[StationRecord], NetworkScale)> {
        let (lo, hi) = key_span(radio, lac, around);
        self.nets(radio, mcc, mnc).iter().find_map(|p| {
            let cells = self.part_cells_in(p, lo, hi);
            (!cells.is_empty()).then_some((cells, p.scale))
        })
    }

    /// Every cell of (radio, mcc, mnc) in `lac`, in key order, as one slice a part of the
    /// network: a site's sectors lie together ([`cid_rank`](super::record::cid_rank)). A
    /// LAC/TAC may hold thousands of cells.
    pub fn lac_cells(
        &self,
        radio: Radio,
        mcc: u16,
        mnc: u16,
        lac: u32,
    ) -> impl Iterator<Item = &[StationRecord]> + Clone + '_ {
        let (lo, hi) = (rank_key(lac, 0), rank_key(lac, CID_MASK));
        self.nets(radio, mcc, mnc)
            .iter()
            .map(move |p| self.part_cells_in(p, lo, hi))
    }

    /// The cells of part `p` whose keys lie in `lo..=hi`, in key order.
    fn part_cells_in(&self, p: &NetPart, lo: u64, hi: u64) -> &[StationRecord] {
        let cells = self.shards[p.shard as usize]
            .cells()
            .get(p.cells())
            .unwrap_or_default();
        let start = cells.partition_point(|c| c.key() < lo);
        let end = cells.partition_point(|c| c.key() <= hi);
        &cells[start..end]
    }

    /// The first half of a cell lookup, as `wifi_block`: the block of the first part of the
    /// network that may hold the cell, its lines asked for without waiting. None: no part
    /// may hold it (`cell_among` finds none either). A request takes the blocks of all its
    /// cells first, then searches them (`cell_among_in`): the network and fence searches are
    /// done once, and the cache misses of its cells overlap.
    #[inline]
    pub fn cell_block(
        &self,
        radio: Radio,
        mcc: u16,
        mnc: u16,
        lac: u32,
        cid: u64,
    ) -> Option<CellBlock> {
        let key = cell_key(radio, lac, cid);
        let parts = self.net_range(radio, mcc, mnc);
        let pi = parts.clone().find(|&i| self.networks[i].may_hold(key))?;
        let p = &self.networks[pi];
        let block = self.shards[p.shard as usize].cell_block(p.cells(), key);
        Some(CellBlock {
            radio,
            key,
            part: pi as u32,
            start: block.start,
            end: block.end,
        })
    }

    /// The second half of a cell lookup: [`Database::cell_among`] for the cell whose block
    /// `cell_block` found (with the same radio, mcc, mnc, lac and cid).
    #[inline]
    pub fn cell_among_in(
        &self,
        block: CellBlock,
        lac: u32,
        cid: u64,
        around: (u64, u64),
    ) -> Option<CellMatch<'_>> {
        let key = block.key;
        debug_assert_eq!(key, cell_key(block.radio, lac, cid));
        let span = key_span(block.radio, lac, around);
        let p = self.networks.get(block.part as usize)?;
        let shard = &self.shards[p.shard as usize];
        if let Some(i) = shard.find_cell_in(block.start..block.end, key) {
            return Some(self.with_neighbours(p, i, span));
        }
        // The network's later parts, as `cell_among` would search them (their keys follow
        // this part's, so none holds the key in a database the builder wrote).
        self.networks[block.part as usize + 1..]
            .iter()
            .take_while(|q| q.key == p.key)
            .find_map(|q| self.cell_in_part(q, key, span))
    }

    fn cell_in_part(&self, p: &NetPart, key: u64, span: (u64, u64)) -> Option<CellMatch<'_>> {
        if !p.may_hold(key) {
            return None;
        }
        let i = self.shards[p.shard as usize].find_cell(p.cells(), key)?;
        Some(self.with_neighbours(p, i, span))
    }

    /// Cell `i` of part `p` with the neighbours whose keys lie in `(lo, hi)`.
    #[inline]
    fn with_neighbours(&self, p: &NetPart, i: usize, (lo, hi): (u64, u64)) -> CellMatch<'_> {
        let range = p.cells();
        let shard = &self.shards[p.shard as usize];
        let cells = shard.cells();
        let (mut a, mut b) = (i, i + 1);
        while a > range.start && cells[a - 1].key() >= lo {
            a -= 1;
        }
        while b < range.end && cells[b].key() <= hi {
            b += 1;
        }
        CellMatch {
            cell: cells[i].station(),
            neighbours: &cells[a..b],
            shard,
            first: a,
            scale: p.scale,
        }
    }

    /// Cells of the LAC whose 28-bit id ends in the 16 bits `short`. Cells are stored in the
    /// order of [`cid_rank`](super::record::cid_rank), which puts such cells among a 256th
    /// (LTE) or a 6,554th (UMTS) of their LAC's: a binary search finds that run, and only it
    /// is read.
    pub fn cells_by_short_cid(
        &self,
        radio: Radio,
        mcc: u16,
        mnc: u16,
        lac: u32,
        short: u16,
    ) -> Vec<Station> {
        let Some((lo, hi)) = short_cid_ranks(radio, short) else {
            return Vec::new();
        };
        let (lo, hi) = (rank_key(lac, lo), rank_key(lac, hi));
        let mut out = Vec::new();
        for p in self.nets(radio, mcc, mnc) {
            out.extend(
                self.part_cells_in(p, lo, hi)
                    .iter()
                    .filter(|c| {
                        let cid = key_cid(radio, c.key());
                        cid > 0xffff && cid as u16 == short
                    })
                    .map(StationRecord::station),
            );
        }
        out
    }

    pub fn area(&self, radio: Radio, mcc: u16, mnc: u16, lac: u32) -> Option<&Area> {
        self.nets(radio, mcc, mnc).iter().find_map(|p| {
            let areas = self.shards[p.shard as usize].areas();
            areas
                .binary_search_by_key(&(p.index, lac), |a| (a.network, a.lac))
                .ok()
                .map(|i| &areas[i])
        })
    }

    /// The access point with this BSSID (see `wifi_block`).
    pub fn wifi(&self, bssid: u64) -> Option<Station> {
        self.wifi_in(self.wifi_block(bssid)?, bssid)
    }

    /// The first half of a WiFi lookup: the block of 64 stations that holds `bssid` if
    /// any does, found among the fences of the one shard whose BSSID range holds it
    /// (8-byte keys whose upper levels stay cached), and the block's lines asked for
    /// without waiting. A request takes the blocks of all its APs first, then searches
    /// them (`wifi_in`): their cache misses overlap instead of following each other.
    #[inline]
    pub fn wifi_block(&self, bssid: u64) -> Option<WifiBlock> {
        let &(_, _, si) = self
            .wifi_shards
            .iter()
            .find(|&&(first, last, _)| first <= bssid && bssid <= last)?;
        let range = self.shards[si as usize].wifi_block(bssid);
        Some(WifiBlock {
            shard: si,
            start: range.start,
            end: range.end,
        })
    }

    /// The second half of a WiFi lookup: the station with `bssid` in `block`.
    #[inline]
    pub fn wifi_in(&self, block: WifiBlock, bssid: u64) -> Option<Station> {
        let shard = self.shards.get(block.shard as usize)?;
        shard
            .find_wifi_in(block.start..block.end, bssid)
            .map(|i| shard.wifi()[i].station())
    }

    /// Every cell, in stored order, with its network: the input of a merge into a new database.
    pub fn iter_cells(&self) -> impl Iterator<Item = (Radio, u16, u16, Station)> + '_ {
        self.shards.iter().flat_map(|s| {
            s.expect_sequential_reads();
            s.networks().iter().flat_map(move |n| {
                let radio = n.radio().unwrap_or(Radio::Gsm);
                s.network_cells(n)
                    .iter()
                    .map(move |c| (radio, n.mcc, n.mnc, c.station()))
            })
        })
    }

    /// Every access point, in stored order: the other input of a merge.
    pub fn iter_wifi(&self) -> impl Iterator<Item = Station> + '_ {
        self.wifi_shards.iter().flat_map(|&(_, _, si)| {
            let shard = &self.shards[si as usize];
            shard.expect_sequential_reads();
            shard.wifi().iter().map(StationRecord::station)
        })
    }
}
