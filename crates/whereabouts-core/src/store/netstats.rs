//! Per-network statistics of a database: what each network's (radio, mcc, mnc) own data says
//! about its scale, so that the solver reads its cells in units of their network rather than
//! of one world's. Computed by the builder as the stations stream past (every import, learn
//! and compaction writes them), stored beside the shards in a versioned file the manifest
//! names, and read at open. A database without the file (written before it existed) or a
//! network without enough data answers with the solver's priors.
//!
//! What is measured, per network:
//! - the stored ranges (10th, 50th, 90th percentiles) and sighting counts of its cells;
//! - its sites: how many masts its sibling sectors give ([`SiteMast::of`]), the distance from
//!   each mast to the nearest other mast of its LAC/TAC (the site spacing), and how far a
//!   site's sector estimates lie from their mast relative to their range (the sector offset);
//! - how many of its cells stand at exactly the position of another of their LAC/TAC (a
//!   publisher's sectors on their tower; crowd estimates never coincide), and the distance
//!   from each distinct position to the nearest other: a published network's masts and
//!   their spacing, whatever its cell ids say of sites;
//! - for GSM and UMTS, whose ids carry no site by standard, whether the common numbering
//!   (a site's sectors share all but the last decimal digit) groups cells that stand
//!   together: how much tighter its groups are than the same ids grouped a few digits off;
//! - how many of its cells were placed by our learner from GPS-tagged sightings;
//! - where our learner found its sites' masts from the timing advances of their sightings
//!   (`learn::masts`): positions rather than a statistic, kept here because they too are
//!   what the network's own data says, stored and versioned with the generation they
//!   belong to.
//!
//! Quantiles come from logarithmic histograms (16 bins an octave, under 2.2% from the exact
//! value), so memory stays bounded by the networks, whatever the stations.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use super::StoreError;
use crate::geo::LocalFrame;
use crate::radio::Radio;
use crate::sites::{SiteKey, SiteMast};
use crate::solve::CONFIDENCE;

/// The version of the statistics file's content: raised when a field changes meaning, so that
/// a reader never takes one figure for another. A file of another version is ignored (the
/// solver falls back to its priors) and rewritten by the next import, learn or compaction.
pub const NETWORK_STATS_VERSION: u32 = 1;

/// The file's name for a database generation: a new generation never overwrites the file an
/// open reader's manifest names.
pub fn file_name(generation: u64) -> String {
    format!("network-stats-{generation:06}.json")
}

/// Three quantiles of a distribution.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Quantiles {
    pub p10: f64,
    pub p50: f64,
    pub p90: f64,
}

/// One network's statistics.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct NetworkStats {
    pub radio: String,
    pub mcc: u16,
    pub mnc: u16,
    pub cells: u64,
    /// Cells placed by our learner (GPS-tagged sightings) rather than crowd-averaged.
    pub learned: u64,
    /// Stored ranges in metres of the cells that have one.
    pub range_m: Option<Quantiles>,
    /// Sightings behind each cell's estimate.
    pub samples: Option<Quantiles>,
    /// Sites whose mast the sibling sectors give.
    pub sites: u64,
    /// Metres from a mast to the nearest other mast of the same LAC/TAC (two masts or more).
    pub site_spacing_m: Option<Quantiles>,
    /// How far a site's sector estimates lie from their mast, on average, divided by the
    /// sectors' mean range.
    pub sector_offset: Option<Quantiles>,
    /// Cells, not learned ones, at exactly the position of another cell of their LAC/TAC.
    /// 0 in files written before it was kept.
    #[serde(default)]
    pub colocated: u64,
    /// Learned cells (rows an export marks exact, `changeable` 0, or our learner's) at
    /// exactly the position of another cell of their LAC/TAC.
    #[serde(default)]
    pub colocated_learned: u64,
    /// Metres from each distinct position of the network's cells to the nearest other of the
    /// same LAC/TAC, in the LAC/TACs where cells share a position.
    #[serde(default)]
    pub position_spacing_m: Option<Quantiles>,
    /// GSM and UMTS: the geometric mean spread of the crowd cells grouped by their ids'
    /// decades shifted by one to nine (the largest of the nine), over the same of their
    /// groups as [`crate::sites::site_cids`] groups them (each spread a group's mean distance
    /// from its centre over its mean range). Well above 1: the ids' decades are sites. None:
    /// too few groups, another radio, or a file written before it was kept.
    #[serde(default)]
    pub id_site_contrast: Option<f64>,
    /// How far a sector lies from the mean of its site's other sectors (sites of two sectors
    /// or more, each sector held out in turn): the distance within which 68% of them lie.
    /// What a device on a sector the database lacks is told of where its site's known
    /// sectors are (`solve::cells::site_answer`). None: no such sites, or a file written
    /// before it was kept.
    #[serde(default)]
    pub site_holdout_m: Option<f64>,
    /// How many held-out sectors `site_holdout_m` was read from.
    #[serde(default)]
    pub site_holdouts: u64,
    /// The masts our learner fitted from timing advances (`learn::masts`), sorted by site;
    /// absent from the file when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub masts: Vec<LearnedMast>,
    /// The learned cells' positions by received level (`learn::estimate`), sorted by cell;
    /// absent from the file when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<LearnedLevels>,
    /// The learned cells' positions by timing advance (`learn::estimate`), sorted by cell;
    /// absent from the file when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub advances: Vec<LearnedAdvances>,
}

/// Where a learned cell's sightings lay at each received level: a device that hears the cell
/// at a level is most likely where the learning's devices heard it so.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LearnedLevels {
    /// The cell's store key (`record::cell_key`).
    pub cell: u64,
    /// By level, ascending; in the file as one string ([`levels_text`]): a learned network
    /// holds thousands of them.
    #[serde(
        serialize_with = "serialize_levels",
        deserialize_with = "deserialize_levels"
    )]
    pub points: Vec<LevelPoint>,
}

/// Where a learned cell's sightings lay at each timing advance from its site's learned mast:
/// a device that hears the cell at an advance is most likely where the learning's devices
/// were at that distance from the mast. Kept apart from the levels, so that a reader that
/// does not know them reads the file as before.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LearnedAdvances {
    /// The cell's store key (`record::cell_key`).
    pub cell: u64,
    /// By advance, ascending; in the file as one string ([`advances_text`]).
    #[serde(
        serialize_with = "serialize_advances",
        deserialize_with = "deserialize_advances"
    )]
    pub points: Vec<AdvancePoint>,
}

/// What a learned cell's sightings say of where a device hearing it is, by what the device
/// reports: its level, its timing advance. Either may be empty.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CellPoints {
    pub levels: Vec<LevelPoint>,
    pub advances: Vec<AdvancePoint>,
}

impl CellPoints {
    pub fn is_empty(&self) -> bool {
        self.levels.is_empty() && self.advances.is_empty()
    }
}

/// One level of a [`LearnedLevels`]: the level in whole dBm, the position, and the distance
/// from it holding 68% of the sightings it was found from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LevelPoint {
    pub dbm: i16,
    pub lat: f64,
    pub lon: f64,
    pub spread_m: f32,
}

/// One advance of a [`LearnedAdvances`]: the timing advance in the radio's steps, the position
/// of the sightings within that advance's distances of the site's learned mast, and the
/// distance from it holding 68% of them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdvancePoint {
    pub steps: u16,
    pub lat: f64,
    pub lon: f64,
    pub spread_m: f32,
}

/// The most steps an advance point may have: LTE's largest timing advance (1,282 steps of
/// 78 m, 100 km), more than GSM's 63.
pub const MAX_ADVANCE_STEPS: u16 = 1_282;

/// Points as text: ascending, each `key/lat/lon/spread` (positions to 7 decimals, a
/// centimetre; spreads to the metre), separated by `;`.
fn points_text(points: impl ExactSizeIterator<Item = (i32, f64, f64, f32)>) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(points.len() * 32);
    for (i, (key, lat, lon, spread)) in points.enumerate() {
        let sep = if i == 0 { "" } else { ";" };
        let _ = write!(out, "{sep}{key}/{lat:.7}/{lon:.7}/{}", spread.round());
    }
    out
}

/// Reads [`points_text`], or says why it is not: whole keys within `keys`, strictly
/// ascending, lat within ±90, lon within ±180, spreads of 0 or more metres; one point at
/// least. `what` names a point in the messages (`level`, `advance`), `key` its key in the
/// format (`dbm`, `steps`) and `unit` the key's unit.
fn parse_points(
    text: &str,
    what: &str,
    key: &str,
    unit: &str,
    keys: std::ops::RangeInclusive<i32>,
) -> Result<Vec<(i32, f64, f64, f32)>, String> {
    let mut points: Vec<(i32, f64, f64, f32)> = Vec::new();
    for p in text.split(';') {
        let v: Vec<&str> = p.split('/').map(str::trim).collect();
        let number = |i: usize, max: f64| {
            v.get(i)
                .and_then(|x| x.parse::<f64>().ok())
                .filter(|x| x.is_finite() && x.abs() <= max)
        };
        let (Some(k), Some(lat), Some(lon), Some(spread), 4) = (
            number(0, 1e6).filter(|k| k.fract() == 0.0 && keys.contains(&(*k as i32))),
            number(1, 90.0),
            number(2, 180.0),
            number(3, 1e7).filter(|s| *s >= 0.0),
            v.len(),
        ) else {
            return Err(format!(
                "{what} {p:?} is not {key}/lat/lon/spread (whole {unit} {}..={}, lat ±90, lon \
                 ±180, spread 0 or more metres)",
                keys.start(),
                keys.end()
            ));
        };
        let k = k as i32;
        if let Some(last) = points.last().filter(|l| l.0 >= k) {
            return Err(format!(
                "{what} {k} {unit} does not follow {} {unit}",
                last.0
            ));
        }
        points.push((k, lat, lon, spread as f32));
    }
    Ok(points)
}

/// A cell's levels as text, as the statistics file and the sync pages' level file write them:
/// ascending, each `dbm/lat/lon/spread` (positions to 7 decimals, a centimetre; spreads to the
/// metre), separated by `;`.
pub fn levels_text(points: &[LevelPoint]) -> String {
    points_text(
        points
            .iter()
            .map(|p| (i32::from(p.dbm), p.lat, p.lon, p.spread_m)),
    )
}

/// Reads [`levels_text`], or says why it is not: whole dBm from -200 to 0, strictly
/// ascending, lat within ±90, lon within ±180, spreads of 0 or more metres; one point at least.
pub fn parse_levels_text(text: &str) -> Result<Vec<LevelPoint>, String> {
    Ok(parse_points(text, "level", "dbm", "dBm", -200..=0)?
        .into_iter()
        .map(|(dbm, lat, lon, spread_m)| LevelPoint {
            dbm: dbm as i16,
            lat,
            lon,
            spread_m,
        })
        .collect())
}

/// A cell's advances as text, as the statistics file writes them: ascending, each
/// `steps/lat/lon/spread`, as [`levels_text`] writes levels.
pub fn advances_text(points: &[AdvancePoint]) -> String {
    points_text(
        points
            .iter()
            .map(|p| (i32::from(p.steps), p.lat, p.lon, p.spread_m)),
    )
}

/// Reads [`advances_text`], or says why it is not: whole steps from 0 to
/// [`MAX_ADVANCE_STEPS`], strictly ascending, as [`parse_levels_text`] otherwise.
pub fn parse_advances_text(text: &str) -> Result<Vec<AdvancePoint>, String> {
    Ok(parse_points(
        text,
        "advance",
        "steps",
        "steps",
        0..=i32::from(MAX_ADVANCE_STEPS),
    )?
    .into_iter()
    .map(|(steps, lat, lon, spread_m)| AdvancePoint {
        steps: steps as u16,
        lat,
        lon,
        spread_m,
    })
    .collect())
}

fn serialize_levels<S: serde::Serializer>(points: &[LevelPoint], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&levels_text(points))
}

fn deserialize_levels<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<LevelPoint>, D::Error> {
    let text = String::deserialize(d)?;
    parse_levels_text(&text).map_err(serde::de::Error::custom)
}

fn serialize_advances<S: serde::Serializer>(
    points: &[AdvancePoint],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.serialize_str(&advances_text(points))
}

fn deserialize_advances<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<AdvancePoint>, D::Error> {
    let text = String::deserialize(d)?;
    parse_advances_text(&text).map_err(serde::de::Error::custom)
}

/// A cell of a network: (radio, mcc, mnc, store key).
pub type CellId = (Radio, u16, u16, u64);

/// A site's mast as our learner fitted it from the timing advances of its sectors' sightings.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct LearnedMast {
    /// The site's first sector's cell id (`sites::site_cids`).
    pub site: u64,
    pub lat: f64,
    pub lon: f64,
    /// The sightings with an advance it was fitted from.
    pub sightings: u32,
    /// Unix seconds of the day of the newest of them (the day its fit last changed): what a
    /// sync window reads, as a station's `updated`. 0 in files written before it was kept.
    #[serde(default)]
    pub updated: i64,
}

/// The file: its version and every network, sorted by (radio code, mcc, mnc).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct NetworkStatsFile {
    pub version: u32,
    pub networks: Vec<NetworkStats>,
}

impl NetworkStatsFile {
    /// The statistics of the file `name` in `dir`. A missing file is an error (the manifest
    /// names it); a file of another version is `Ok(None)`.
    pub fn read(dir: &Path, name: &str) -> Result<Option<NetworkStatsFile>, StoreError> {
        if name.contains('/') || name.contains('\\') || name.starts_with('.') {
            return Err(StoreError::Corrupt(format!(
                "manifest names an odd network statistics file {name:?}"
            )));
        }
        let path = dir.join(name);
        let text = fs::read_to_string(&path).map_err(|e| StoreError::io(&path, e))?;
        #[derive(Deserialize)]
        struct Version {
            version: u32,
        }
        let v: Version = serde_json::from_str(&text)
            .map_err(|e| StoreError::Corrupt(format!("{}: {e}", path.display())))?;
        if v.version != NETWORK_STATS_VERSION {
            return Ok(None);
        }
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| StoreError::Corrupt(format!("{}: {e}", path.display())))
    }

    /// Every learned mast of the file with its site.
    pub fn learned_masts(&self) -> impl Iterator<Item = (SiteKey, LearnedMast)> + '_ {
        self.networks.iter().flat_map(|n| {
            let radio = Radio::parse(&n.radio);
            n.masts.iter().filter_map(move |m| {
                SiteKey::of_cell(radio?, n.mcc, n.mnc, m.site).map(|site| (site, *m))
            })
        })
    }

    /// Adds learned masts to their networks' entries (sorted by site within each); returns
    /// how many had one (the builder's networks: all of them).
    pub fn add_masts(&mut self, masts: impl IntoIterator<Item = (SiteKey, LearnedMast)>) -> u64 {
        let mut added = 0;
        for (site, m) in masts {
            let at = self.networks.iter().position(|n| {
                (n.radio.as_str(), n.mcc, n.mnc) == (site.radio.name(), site.mcc, site.mnc)
            });
            if let Some(i) = at {
                self.networks[i].masts.push(m);
                added += 1;
            }
        }
        for n in &mut self.networks {
            n.masts.sort_by_key(|m| m.site);
        }
        added
    }

    /// The levels and advances in the file of the learned cells `keep` takes, by cell (only
    /// those are copied: a sync page reads the cells after its cursor).
    pub fn learned_points(&self, keep: impl Fn(&CellId) -> bool) -> BTreeMap<CellId, CellPoints> {
        let mut out: BTreeMap<CellId, CellPoints> = BTreeMap::new();
        for n in &self.networks {
            let Some(radio) = Radio::parse(&n.radio) else {
                continue;
            };
            let cell = |key| (radio, n.mcc, n.mnc, key);
            for l in n.levels.iter().filter(|l| keep(&cell(l.cell))) {
                out.entry(cell(l.cell)).or_default().levels = l.points.clone();
            }
            for a in n.advances.iter().filter(|a| keep(&cell(a.cell))) {
                out.entry(cell(a.cell)).or_default().advances = a.points.clone();
            }
        }
        out
    }

    /// Adds learned cells' levels and advances to their networks' entries (each network's
    /// sorted by cell); returns how many cells had levels and how many had advances.
    pub fn add_points(
        &mut self,
        points: impl IntoIterator<Item = (CellId, CellPoints)>,
    ) -> (u64, u64) {
        let (mut levels, mut advances) = (0, 0);
        for ((radio, mcc, mnc, cell), p) in points {
            let at = self
                .networks
                .iter()
                .position(|n| (n.radio.as_str(), n.mcc, n.mnc) == (radio.name(), mcc, mnc));
            let Some(i) = at else {
                continue;
            };
            if !p.levels.is_empty() {
                self.networks[i].levels.push(LearnedLevels {
                    cell,
                    points: p.levels,
                });
                levels += 1;
            }
            if !p.advances.is_empty() {
                self.networks[i].advances.push(LearnedAdvances {
                    cell,
                    points: p.advances,
                });
                advances += 1;
            }
        }
        for n in &mut self.networks {
            n.levels.sort_by_key(|l| l.cell);
            n.advances.sort_by_key(|l| l.cell);
        }
        (levels, advances)
    }

    /// The file as JSON with each network's reading by the solver ([`NetworkScale`]) beside
    /// its statistics, under `read_as`: what `whereabouts stats` shows.
    pub fn to_json_read(&self) -> Result<String, serde_json::Error> {
        let mut v = serde_json::to_value(self)?;
        if let Some(networks) = v.get_mut("networks").and_then(|n| n.as_array_mut()) {
            for (json, n) in networks.iter_mut().zip(&self.networks) {
                json["read_as"] = serde_json::to_value(NetworkScale::of(n))?;
            }
        }
        serde_json::to_string(&v)
    }

    /// Writes the file `name` in `dir` (synced; the manifest that names it comes after).
    pub fn write(&self, dir: &Path, name: &str) -> Result<(), StoreError> {
        let path = dir.join(name);
        let text = serde_json::to_string_pretty(self).expect("network statistics serialise");
        let mut f = File::create(&path).map_err(|e| StoreError::io(&path, e))?;
        f.write_all(text.as_bytes())
            .and_then(|_| f.write_all(b"\n"))
            .and_then(|_| f.sync_all())
            .map_err(|e| StoreError::io(&path, e))
    }
}

/// A histogram on a log2 scale, 16 bins an octave from 2^`LOG2_MIN`, its ends catching what
/// lies beyond.
#[derive(Clone, Debug)]
struct LogHistogram {
    counts: Vec<u64>,
    total: u64,
}

const BINS_PER_OCTAVE: f64 = 16.0;
const LOG2_MIN: f64 = -8.0;
const LOG2_MAX: f64 = 20.0;

impl LogHistogram {
    fn new() -> LogHistogram {
        LogHistogram {
            counts: vec![0; ((LOG2_MAX - LOG2_MIN) * BINS_PER_OCTAVE) as usize],
            total: 0,
        }
    }

    fn add(&mut self, v: f64) {
        if v.is_nan() || v <= 0.0 || v.is_infinite() {
            return;
        }
        let bin = ((v.log2() - LOG2_MIN) * BINS_PER_OCTAVE).floor();
        let bin = bin.clamp(0.0, (self.counts.len() - 1) as f64) as usize;
        self.counts[bin] += 1;
        self.total += 1;
    }

    /// The q-quantile as the geometric middle of its bin, to three significant digits (the
    /// bins are 4.4% wide; short decimals also read back from the file bit for bit).
    fn quantile(&self, q: f64) -> f64 {
        let target = (q * self.total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= target {
                let v = (LOG2_MIN + (i as f64 + 0.5) / BINS_PER_OCTAVE).exp2();
                let e = v.log10().floor() as i32 - 2;
                return if e >= 0 {
                    (v / 10f64.powi(e)).round() * 10f64.powi(e)
                } else {
                    // Divided by an exact power of ten: the double nearest the decimal.
                    (v * 10f64.powi(-e)).round() / 10f64.powi(-e)
                };
            }
        }
        f64::NAN
    }

    fn quantiles(&self) -> Option<Quantiles> {
        (self.total > 0).then(|| Quantiles {
            p10: self.quantile(0.1),
            p50: self.quantile(0.5),
            p90: self.quantile(0.9),
        })
    }
}

/// One network's statistics as its stations stream past.
struct Accumulator {
    radio: Radio,
    mcc: u16,
    mnc: u16,
    cells: u64,
    learned: u64,
    sites: u64,
    range: LogHistogram,
    samples: LogHistogram,
    spacing: LogHistogram,
    offset: LogHistogram,
    colocated: u64,
    colocated_learned: u64,
    position_spacing: LogHistogram,
    /// By shift of the ids' decades (0: as `site_cids` groups them), the sum of the groups'
    /// log spreads and their number.
    id_spread: Vec<(f64, u64)>,
    holdout: LogHistogram,
}

/// The statistics of every network a build writes, in the builder's order.
#[derive(Default)]
pub struct NetworkStatsBuilder {
    done: Vec<NetworkStats>,
    current: Option<Accumulator>,
}

impl NetworkStatsBuilder {
    fn network(&mut self, radio: Radio, mcc: u16, mnc: u16) -> &mut Accumulator {
        let same = self
            .current
            .as_ref()
            .is_some_and(|a| (a.radio, a.mcc, a.mnc) == (radio, mcc, mnc));
        if !same {
            self.finish_current();
            self.current = Some(Accumulator {
                radio,
                mcc,
                mnc,
                cells: 0,
                learned: 0,
                sites: 0,
                range: LogHistogram::new(),
                samples: LogHistogram::new(),
                spacing: LogHistogram::new(),
                offset: LogHistogram::new(),
                colocated: 0,
                colocated_learned: 0,
                position_spacing: LogHistogram::new(),
                id_spread: Vec::new(),
                holdout: LogHistogram::new(),
            });
        }
        self.current.as_mut().expect("just set")
    }

    /// A cell of the network, as stored (range in metres, 0 for none).
    pub fn cell(
        &mut self,
        radio: Radio,
        mcc: u16,
        mnc: u16,
        range_m: f64,
        samples: u32,
        learned: bool,
    ) {
        let a = self.network(radio, mcc, mnc);
        a.cells += 1;
        if learned {
            a.learned += 1;
        }
        a.range.add(range_m);
        a.samples.add(samples.max(1) as f64);
    }

    /// The sites of one LAC/TAC of the network: each mast with its sectors' mean range.
    pub fn sites(&mut self, radio: Radio, mcc: u16, mnc: u16, masts: &[(SiteMast, f64)]) {
        let a = self.network(radio, mcc, mnc);
        a.sites += masts.len() as u64;
        for (m, range) in masts {
            if *range > 0.0 {
                // A site whose sectors sit exactly on their mast (published tower positions)
                // counts in the lowest bin, not as nothing.
                a.offset.add((m.spread_m / range).max(f64::MIN_POSITIVE));
            }
        }
        let at: Vec<(f64, f64)> = masts.iter().map(|(m, _)| (m.lat, m.lon)).collect();
        for d in nearest_neighbour_m(&at) {
            a.spacing.add(d);
        }
    }

    /// One site's sectors (two or more, as [`crate::sites::site_cids`] groups them in a
    /// LAC/TAC): each one's distance from the mean position of the others.
    pub fn site_holdouts(&mut self, radio: Radio, mcc: u16, mnc: u16, sectors: &[(f64, f64)]) {
        let n = sectors.len();
        if n < 2 {
            return;
        }
        let a = self.network(radio, mcc, mnc);
        let frame = LocalFrame::new(sectors[0].0, sectors[0].1);
        let xy: SmallVec<[(f64, f64); 8]> = sectors
            .iter()
            .map(|&(lat, lon)| frame.to_xy(lat, lon))
            .collect();
        let (sx, sy) = xy
            .iter()
            .fold((0.0, 0.0), |(sx, sy), p| (sx + p.0, sy + p.1));
        let others = (n - 1) as f64;
        for &(x, y) in &xy {
            let (ox, oy) = ((sx - x) / others, (sy - y) / others);
            // Sectors published on their mast lie at no distance: the lowest bin, not nothing.
            a.holdout.add((x - ox).hypot(y - oy).max(0.01));
        }
    }

    /// The positions of one LAC/TAC's cells of the network, in 1e-7 degrees as stored, each
    /// with whether the cell is learned; reordered. Their spacing is measured only where
    /// some coincide (what reads a network as published): a crowd's LAC/TACs cost a sort.
    pub fn positions(&mut self, radio: Radio, mcc: u16, mnc: u16, at: &mut [(i32, i32, bool)]) {
        let a = self.network(radio, mcc, mnc);
        at.sort_unstable();
        let same_place = |p: &(i32, i32, bool), q: &(i32, i32, bool)| (p.0, p.1) == (q.0, q.1);
        let mut shared = false;
        for same in at.chunk_by(same_place).filter(|same| same.len() > 1) {
            shared = true;
            let learned = same.iter().filter(|p| p.2).count() as u64;
            a.colocated_learned += learned;
            a.colocated += same.len() as u64 - learned;
        }
        if !shared {
            return;
        }
        let distinct: Vec<(f64, f64)> = at
            .chunk_by(same_place)
            .map(|same| (same[0].0 as f64 * 1e-7, same[0].1 as f64 * 1e-7))
            .collect();
        for d in nearest_neighbour_m(&distinct) {
            a.position_spacing.add(d);
        }
    }

    /// GSM and UMTS crowd cells of one LAC/TAC (learned ones left out): each cell's id,
    /// position and range. Grouped by their ids' decades (UMTS: of the C-ID under its RNC),
    /// as they stand and shifted by one to nine; reordered.
    pub fn id_groups(&mut self, radio: Radio, mcc: u16, mnc: u16, cells: &mut [IdCell]) {
        if !matches!(radio, Radio::Gsm | Radio::Umts) {
            return;
        }
        let a = self.network(radio, mcc, mnc);
        if a.id_spread.is_empty() {
            a.id_spread = vec![(0.0, 0); ID_SHIFTS as usize];
        }
        // By (RNC, C-ID) for UMTS, by id for GSM: every shift's decades are runs.
        cells.sort_unstable_by_key(|c| c.cid);
        for shift in 0..ID_SHIFTS {
            let decade = |c: &IdCell| (c.cid >> 16, ((c.cid & 0xffff) + shift) / 10);
            for group in cells.chunk_by(|p, q| decade(p) == decade(q)) {
                if let Some(spread) = group_spread(group) {
                    let sum = &mut a.id_spread[shift as usize];
                    // Sectors published on their mast spread by nothing: a floor for the log.
                    sum.0 += spread.max(1e-3).ln();
                    sum.1 += 1;
                }
            }
        }
    }

    fn finish_current(&mut self) {
        if let Some(a) = self.current.take() {
            self.done.push(NetworkStats {
                radio: a.radio.name().to_string(),
                mcc: a.mcc,
                mnc: a.mnc,
                cells: a.cells,
                learned: a.learned,
                range_m: a.range.quantiles(),
                samples: a.samples.quantiles(),
                sites: a.sites,
                site_spacing_m: a.spacing.quantiles(),
                sector_offset: a.offset.quantiles(),
                colocated: a.colocated,
                colocated_learned: a.colocated_learned,
                position_spacing_m: a.position_spacing.quantiles(),
                id_site_contrast: id_site_contrast(&a.id_spread),
                site_holdout_m: (a.holdout.total > 0).then(|| a.holdout.quantile(CONFIDENCE)),
                site_holdouts: a.holdout.total,
                masts: Vec::new(),
                levels: Vec::new(),
                advances: Vec::new(),
            });
        }
    }

    pub fn finish(mut self) -> NetworkStatsFile {
        self.finish_current();
        NetworkStatsFile {
            version: NETWORK_STATS_VERSION,
            networks: self.done,
        }
    }
}

/// A crowd cell as [`NetworkStatsBuilder::id_groups`] groups it.
#[derive(Clone, Copy, Debug)]
pub struct IdCell {
    pub cid: u64,
    pub lat: f64,
    pub lon: f64,
    pub range_m: f64,
}

/// The shifts of [`NetworkStatsBuilder::id_groups`]: none and one to nine digits.
const ID_SHIFTS: u64 = 10;

/// Fewest groups of two cells or more that [`id_site_contrast`] reads.
const MIN_ID_GROUPS: u64 = 20;

/// A group's mean distance from its centre over its mean range (at least 100 m, as
/// [`SiteMast::of`] bounds it); None for a group of one.
fn group_spread(group: &[IdCell]) -> Option<f64> {
    if group.len() < 2 {
        return None;
    }
    let n = group.len() as f64;
    let lat = group.iter().map(|c| c.lat).sum::<f64>() / n;
    let lon = group.iter().map(|c| c.lon).sum::<f64>() / n;
    let range = group.iter().map(|c| c.range_m).sum::<f64>() / n;
    let frame = LocalFrame::new(lat, lon);
    let spread = group
        .iter()
        .map(|c| {
            let (x, y) = frame.to_xy(c.lat, c.lon);
            x.hypot(y)
        })
        .sum::<f64>()
        / n;
    Some(spread / range.max(100.0))
}

/// The largest geometric mean spread of the shifted groupings over the unshifted one's (a
/// mean over every group: a median or a quartile separated the numberings less where sites
/// stand close for their ranges).
fn id_site_contrast(spreads: &[(f64, u64)]) -> Option<f64> {
    let (&(base, n), shifted) = spreads.split_first()?;
    if n < MIN_ID_GROUPS {
        return None;
    }
    shifted
        .iter()
        .filter(|(_, m)| *m >= MIN_ID_GROUPS)
        .map(|&(sum, m)| (sum / m as f64 - base / n as f64).exp())
        .reduce(f64::max)
}

/// Each point's (lat, lon) distance to its nearest other point (none for fewer than two): a
/// sweep over the points sorted north to south, each scanning outward until the north-south
/// gap alone exceeds the best distance found.
fn nearest_neighbour_m(points: &[(f64, f64)]) -> Vec<f64> {
    if points.len() < 2 {
        return Vec::new();
    }
    let frame = LocalFrame::new(points[0].0, points[0].1);
    let mut xy: Vec<(f64, f64)> = points
        .iter()
        .map(|&(lat, lon)| {
            let (x, y) = frame.to_xy(lat, lon);
            (y, x)
        })
        .collect();
    xy.sort_by(|a, b| a.0.total_cmp(&b.0));
    (0..xy.len())
        .map(|i| {
            let (y, x) = xy[i];
            let mut best = f64::INFINITY;
            for j in (0..i).rev() {
                if y - xy[j].0 > best {
                    break;
                }
                best = best.min((x - xy[j].1).hypot(y - xy[j].0));
            }
            for &(yj, xj) in &xy[i + 1..] {
                if yj - y > best {
                    break;
                }
                best = best.min((x - xj).hypot(y - yj));
            }
            best
        })
        .collect()
}

/// What the solver reads of one network: the figures it scales by, or its priors.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct NetworkScale {
    /// The median stored range of the network's cells, metres; None: unknown.
    pub median_range_m: Option<f32>,
    /// The median site spacing over the median range (networks whose sector estimates stand
    /// apart from their masts: crowd estimates, not published tower positions).
    pub spacing_per_range: Option<f32>,
    /// The median sector offset (a sector estimate's distance from its mast over its range),
    /// for the same networks: how far out from their masts the crowd placed the sectors.
    pub sector_offset: Option<f32>,
    /// The median site spacing of a network published at its masts (every sector estimate
    /// on its mast): its stored ranges and samples are what the publisher wrote, not
    /// measurements, and the spacing of its masts is the geometry the solver reads instead.
    pub published_spacing_m: Option<f32>,
    /// For the same networks, the median over the 10% quantile of that spacing: near 1 where
    /// the masts stand evenly (a grid), larger where they come in strings and clusters.
    pub published_spacing_spread: Option<f32>,
    /// The network's rows carry no sample counts (every cell's 0 or 1: an export without
    /// them): a count says nothing of how well a cell is known.
    pub uncounted: bool,
    /// The network's rows state one range for every cell (an export without ranges, each
    /// given its radio's default at import): a range says nothing of a cell's coverage.
    pub unranged: bool,
    /// False for a GSM or UMTS network whose ids' decades group cells no tighter than
    /// decades shifted a few digits (`id_site_contrast`): its operator numbers sectors
    /// otherwise, so a crowd cell has no siblings to find its mast from (no sector axis)
    /// rather than a mast that mixes sites.
    pub ids_name_sites: bool,
    /// The network's averaged rows are published masts (its sites' sectors on their masts,
    /// or most of its cells on another's position); with `published_spacing_m`.
    pub averaged_rows_published: bool,
    /// The network's exact rows (an export's `changeable` 0, read as learned) stand on one
    /// another's positions, as a publisher's sectors on their towers do and our learner's
    /// cells do not: they are read as published masts, not as learned cells, while the
    /// crowd's rows beside them stay a crowd's.
    pub exact_rows_published: bool,
    /// How far a sector lies from its site's other sectors (`NetworkStats::site_holdout_m`),
    /// read from at least 20 held-out sectors of a network whose ids name its sites.
    pub site_holdout_m: Option<f32>,
}

impl NetworkScale {
    pub const UNKNOWN: NetworkScale = NetworkScale {
        median_range_m: None,
        spacing_per_range: None,
        sector_offset: None,
        published_spacing_m: None,
        published_spacing_spread: None,
        uncounted: false,
        unranged: false,
        ids_name_sites: true,
        averaged_rows_published: false,
        exact_rows_published: false,
        site_holdout_m: None,
    };

    /// The figures of `s` that rest on enough data: a median range of at least
    /// `MIN_CELLS` cells; a sector offset and a spacing of at least `MIN_SITES` sites whose
    /// sectors stand apart from their masts. A network is published at its masts when its
    /// sites' sectors sit on their masts, or when most of its cells share their exact
    /// position with another: GSM and UMTS ids carry no site by standard (`site_cids` reads
    /// a common numbering), and a publisher's tower list may number sectors otherwise.
    pub fn of(s: &NetworkStats) -> NetworkScale {
        const MIN_CELLS: u64 = 20;
        const MIN_SITES: u64 = 10;
        // Sector estimates on their masts (a network published at its towers' positions)
        // say nothing of how its ranges were measured.
        const MIN_SECTOR_OFFSET: f64 = 0.05;
        // Crowd estimates do not coincide, short of a few cells each seen once from one place;
        // a publisher's sectors do, all but its omni sites'.
        const MIN_COLOCATED_SHARE: f64 = 0.5;
        // Every cell 0 or 1 sightings (within the histogram's bin): no counts at all.
        const MAX_UNCOUNTED_SAMPLES: f64 = 1.5;
        // Every cell one range (within the histogram's bins): no ranges of their own.
        const MAX_UNRANGED_SPREAD: f64 = 1.1;
        // Sites by the ids' decades: their groups at least this much tighter than decades
        // shifted. In the world families' crowds (46 worlds, GSM and UMTS) the common
        // numbering gave 1.35 and more (sites close for their ranges give the least), the
        // same cells numbered 1, 2, 3... in id order 1.14 at most: between the two.
        const MIN_ID_SITE_CONTRAST: f64 = 1.25;
        let ids_name_sites = s.id_site_contrast.is_none_or(|c| c >= MIN_ID_SITE_CONTRAST);
        let ranged = s.range_m.filter(|_| s.cells >= MIN_CELLS);
        let by_sites = match (s.sector_offset, s.site_spacing_m) {
            (Some(q), Some(d))
                if ids_name_sites && s.sites >= MIN_SITES && q.p50 < MIN_SECTOR_OFFSET =>
            {
                Some(d)
            }
            _ => None,
        };
        let placed = s.cells.saturating_sub(s.learned);
        let by_position = (placed >= MIN_CELLS
            && s.colocated as f64 >= MIN_COLOCATED_SHARE * placed as f64)
            .then_some(s.position_spacing_m)
            .flatten();
        // An export's exact rows (`changeable` 0) are stored as learned; where they stand on
        // one another's positions they are a publisher's masts, whatever the crowd beside them.
        let exact_rows_published = s.learned >= MIN_CELLS
            && s.colocated_learned as f64 >= MIN_COLOCATED_SHARE * s.learned as f64;
        let by_exact_rows = exact_rows_published
            .then_some(s.position_spacing_m)
            .flatten();
        let averaged_rows = by_sites.or(by_position);
        let published = averaged_rows.or(by_exact_rows);
        let offset = s
            .sector_offset
            .filter(|q| s.sites >= MIN_SITES && q.p50 >= MIN_SECTOR_OFFSET)
            .filter(|_| ids_name_sites && averaged_rows.is_none());
        NetworkScale {
            median_range_m: ranged.map(|q| q.p50 as f32),
            spacing_per_range: match (ranged, s.site_spacing_m, offset) {
                (Some(r), Some(d), Some(_)) if s.sites >= MIN_SITES && r.p50 > 0.0 => {
                    Some((d.p50 / r.p50) as f32)
                }
                _ => None,
            },
            sector_offset: offset.map(|q| q.p50 as f32),
            published_spacing_m: published.map(|d| d.p50 as f32),
            published_spacing_spread: published
                .filter(|d| d.p10 > 0.0)
                .map(|d| (d.p50 / d.p10) as f32),
            uncounted: s.cells >= MIN_CELLS
                && s.learned == 0
                && s.samples.is_none_or(|q| q.p90 <= MAX_UNCOUNTED_SAMPLES),
            unranged: s.cells >= MIN_CELLS
                && s.learned == 0
                && ranged.is_some_and(|q| q.p90 <= MAX_UNRANGED_SPREAD * q.p10),
            ids_name_sites,
            averaged_rows_published: averaged_rows.is_some(),
            exact_rows_published: by_exact_rows.is_some(),
            site_holdout_m: s
                .site_holdout_m
                .filter(|_| ids_name_sites && s.site_holdouts >= MIN_CELLS)
                .map(|d| d as f32),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_are_within_a_bin() {
        let mut h = LogHistogram::new();
        for v in 1..=1000 {
            h.add(v as f64);
        }
        let q = h.quantiles().unwrap();
        for (got, want) in [(q.p10, 100.0), (q.p50, 500.0), (q.p90, 900.0)] {
            assert!((got / want - 1.0).abs() < 0.045, "{got} vs {want}");
        }
        // Nothing, or nothing positive: no quantiles.
        let mut empty = LogHistogram::new();
        empty.add(0.0);
        empty.add(f64::NAN);
        assert_eq!(empty.quantiles(), None);
    }

    #[test]
    fn nearest_neighbours_on_a_grid_are_its_spacing() {
        let frame = LocalFrame::new(52.0, 4.0);
        let mut masts = Vec::new();
        for i in 0..5 {
            for j in 0..4 {
                masts.push(frame.to_latlon(i as f64 * 700.0, j as f64 * 1_000.0));
            }
        }
        let d = nearest_neighbour_m(&masts);
        assert_eq!(d.len(), 20);
        assert!(d.iter().all(|d| (d - 700.0).abs() < 1.0), "{d:?}");
        assert!(nearest_neighbour_m(&masts[..1]).is_empty());
    }

    /// Three equal quantiles: every value `p`.
    fn all(p: f64) -> Option<Quantiles> {
        Some(Quantiles {
            p10: p,
            p50: p,
            p90: p,
        })
    }

    /// A crowd LTE network of 60 cells on 20 sites 400 m apart, its sectors 0.3 of their
    /// 1 km ranges out from their masts, 100 sightings each: what the tests below vary.
    fn crowd_network() -> NetworkStats {
        NetworkStats {
            radio: "lte".into(),
            mcc: 208,
            mnc: 1,
            cells: 60,
            learned: 0,
            range_m: all(1_000.0),
            samples: all(100.0),
            sites: 20,
            site_spacing_m: all(400.0),
            sector_offset: all(0.3),
            colocated: 0,
            colocated_learned: 0,
            position_spacing_m: all(150.0),
            id_site_contrast: None,
            site_holdout_m: Some(450.0),
            site_holdouts: 60,
            masts: Vec::new(),
            levels: Vec::new(),
            advances: Vec::new(),
        }
    }

    #[test]
    fn a_network_whose_cells_share_their_positions_is_published_whatever_its_ids() {
        // Sectors numbered so that no site is found from their ids (or sites of mixed
        // masts, far from their mean), but most cells stand on another's exact position.
        let mixed_ids = NetworkStats {
            sites: 3,
            sector_offset: all(0.9),
            colocated: 45,
            position_spacing_m: all(350.0),
            ..crowd_network()
        };
        let scale = NetworkScale::of(&mixed_ids);
        assert_eq!(scale.published_spacing_m, Some(350.0));
        // Masts as evenly spaced as these: the median spacing is the 10% quantile.
        assert_eq!(scale.published_spacing_spread, Some(1.0));
        assert_eq!((scale.spacing_per_range, scale.sector_offset), (None, None));
        // A crowd network with a few cells seen once from one place stays a crowd.
        let crowd = NetworkStats {
            colocated: 6,
            ..crowd_network()
        };
        assert_eq!(NetworkScale::of(&crowd).published_spacing_m, None);
        assert_eq!(NetworkScale::of(&crowd).published_spacing_spread, None);
        // Learned cells do not count among the cells the share is of.
        let half_learned = NetworkStats {
            learned: 30,
            colocated: 16,
            ..mixed_ids.clone()
        };
        assert_eq!(
            NetworkScale::of(&half_learned).published_spacing_m,
            Some(350.0)
        );
    }

    #[test]
    fn exact_rows_on_shared_positions_are_published_and_the_crowd_beside_them_is_not() {
        // 30 rows marked exact (stored as learned), 24 of them on shared positions, beside
        // a crowd of 60 averaged rows.
        let mixed = NetworkStats {
            cells: 90,
            learned: 30,
            colocated_learned: 24,
            position_spacing_m: all(700.0),
            ..crowd_network()
        };
        let scale = NetworkScale::of(&mixed);
        assert!(scale.exact_rows_published && !scale.averaged_rows_published);
        assert_eq!(scale.published_spacing_m, Some(700.0));
        // The crowd's rows keep their reading in the spacing's units.
        assert_eq!(scale.spacing_per_range, Some(0.4));
        // Our learner's cells, each on a position of its own, stay learned.
        let ours = NetworkStats {
            colocated_learned: 2,
            ..mixed
        };
        let scale = NetworkScale::of(&ours);
        assert!(!scale.exact_rows_published);
        assert_eq!(scale.published_spacing_m, None);
    }

    #[test]
    fn gsm_ids_whose_decades_are_no_sites_give_no_siblings() {
        // 80 three-sector sites 2 km apart in a row, each sector 300 m out from its mast.
        let frame = LocalFrame::new(48.85, 2.35);
        let sector = |site: u64, s: u64, cid: u64| {
            let az = s as f64 * 2.0 * std::f64::consts::PI / 3.0;
            let (lat, lon) =
                frame.to_latlon(site as f64 * 2_000.0 + 300.0 * az.sin(), 300.0 * az.cos());
            IdCell {
                cid,
                lat,
                lon,
                range_m: 800.0,
            }
        };
        let contrast = |number: &dyn Fn(u64, u64) -> u64| {
            let mut b = NetworkStatsBuilder::default();
            let mut cells: Vec<IdCell> = (0..80)
                .flat_map(|site| (0..3).map(move |s| (site, s)))
                .map(|(site, s)| sector(site, s, number(site, s)))
                .collect();
            b.id_groups(Radio::Gsm, 208, 1, &mut cells);
            b.finish().networks[0].id_site_contrast.unwrap()
        };
        // Sectors 1-3 of site N numbered N1-N3: decades are sites.
        let common = contrast(&|site, s| site * 10 + s + 1);
        // Numbered 1, 2, 3... along the row: a decade holds parts of four sites.
        let sequential = contrast(&|site, s| site * 3 + s + 1);
        assert!(common > 3.0, "{common}");
        assert!((0.7..1.3).contains(&sequential), "{sequential}");
        let read = |c: f64| {
            NetworkScale::of(&NetworkStats {
                radio: "gsm".into(),
                id_site_contrast: Some(c),
                ..crowd_network()
            })
        };
        assert!(read(common).ids_name_sites);
        let otherwise = read(sequential);
        assert!(!otherwise.ids_name_sites);
        // Its id sites' figures are not read either.
        assert_eq!(
            (otherwise.spacing_per_range, otherwise.sector_offset),
            (None, None)
        );
        // LTE ids name their eNB by standard: not measured.
        let mut b = NetworkStatsBuilder::default();
        b.id_groups(Radio::Lte, 208, 1, &mut [sector(0, 0, 1), sector(0, 1, 2)]);
        assert!(b.finish().networks.is_empty());
    }

    #[test]
    fn the_builder_counts_cells_on_one_position_and_spaces_the_positions() {
        let mut b = NetworkStatsBuilder::default();
        // Three masts 0.01 degrees of latitude apart (1,112 m), three sectors each, and one
        // cell alone 0.005 degrees north of the last.
        // The last mast's rows marked exact (learned).
        let mut at = Vec::new();
        for mast in 0..3 {
            for _ in 0..3 {
                at.push((500_000_000 + mast * 100_000, 20_000_000, mast == 2));
            }
        }
        at.push((500_250_000, 20_000_000, false));
        b.positions(Radio::Gsm, 208, 1, &mut at);
        let gsm = &b.finish().networks[0];
        assert_eq!((gsm.colocated, gsm.colocated_learned), (6, 3));
        let spacing = gsm.position_spacing_m.unwrap();
        assert!((spacing.p50 / 556.0 - 1.0).abs() < 0.045, "{spacing:?}");
        assert!((spacing.p90 / 1_112.0 - 1.0).abs() < 0.045, "{spacing:?}");
    }

    #[test]
    fn a_network_whose_sectors_sit_on_their_masts_is_read_as_published() {
        let on_masts = NetworkStats {
            sector_offset: all(0.004),
            ..crowd_network()
        };
        // Sectors on their masts: the masts' spacing, and no range units or offset to read.
        let published = NetworkScale::of(&on_masts);
        assert_eq!(published.published_spacing_m, Some(400.0));
        assert_eq!(
            (published.spacing_per_range, published.sector_offset),
            (None, None)
        );
        // A crowd's sectors out from their masts: ranges in the spacing's units.
        let crowd = NetworkScale::of(&crowd_network());
        assert_eq!(crowd.published_spacing_m, None);
        assert_eq!(crowd.spacing_per_range, Some(0.4));
        // Too few sites to tell.
        let few = NetworkScale::of(&NetworkStats {
            sites: 5,
            ..on_masts
        });
        assert_eq!(few.published_spacing_m, None);
    }

    #[test]
    fn a_network_whose_cells_all_have_one_sighting_or_none_is_uncounted() {
        let counted = |samples: Option<Quantiles>, learned: u64| NetworkStats {
            samples,
            learned,
            ..crowd_network()
        };
        assert!(NetworkScale::of(&counted(None, 0)).uncounted);
        assert!(NetworkScale::of(&counted(all(1.02), 0)).uncounted);
        let spread = Quantiles {
            p10: 1.0,
            p50: 1.0,
            p90: 3.0,
        };
        assert!(!NetworkScale::of(&counted(Some(spread), 0)).uncounted);
        // Our learner's cells count their sightings.
        assert!(!NetworkScale::of(&counted(all(1.0), 5)).uncounted);
        // Too few cells to tell.
        let few = NetworkStats {
            cells: 5,
            ..counted(None, 0)
        };
        assert!(!NetworkScale::of(&few).uncounted);
    }

    #[test]
    fn a_network_whose_cells_all_state_one_range_is_unranged() {
        let ranged = |p10: f64, p90: f64| NetworkStats {
            range_m: Some(Quantiles { p10, p50: p10, p90 }),
            ..crowd_network()
        };
        assert!(NetworkScale::of(&ranged(1_500.0, 1_520.0)).unranged);
        assert!(!NetworkScale::of(&ranged(300.0, 2_500.0)).unranged);
        let learned = NetworkStats {
            learned: 3,
            ..ranged(1_500.0, 1_500.0)
        };
        assert!(!NetworkScale::of(&learned).unranged);
    }

    #[test]
    fn a_network_is_summarised_and_round_trips_through_its_file() {
        let mut b = NetworkStatsBuilder::default();
        for i in 0..30 {
            b.cell(Radio::Lte, 208, 1, 500.0 + i as f64, 10, i == 0);
        }
        b.cell(Radio::Gsm, 208, 1, 0.0, 1, false);
        let file = b.finish();
        assert_eq!(file.networks.len(), 2);
        let lte = &file.networks[0];
        assert_eq!((lte.cells, lte.learned, lte.sites), (30, 1, 0));
        let median = lte.range_m.unwrap().p50;
        assert!((median / 515.0 - 1.0).abs() < 0.045, "{median}");
        assert_eq!(lte.site_spacing_m, None);
        let scale = NetworkScale::of(lte);
        assert_eq!(scale.median_range_m, Some(median as f32));
        assert_eq!(scale.spacing_per_range, None);
        // One cell without a range: nothing to scale by.
        assert_eq!(NetworkScale::of(&file.networks[1]), NetworkScale::UNKNOWN);

        let dir = tempfile::tempdir().unwrap();
        file.write(dir.path(), &file_name(3)).unwrap();
        let back = NetworkStatsFile::read(dir.path(), &file_name(3)).unwrap();
        assert_eq!(back.as_ref(), Some(&file));
        // Another version is ignored, a bad name refused.
        let mut other = file.clone();
        other.version += 1;
        other.write(dir.path(), "other.json").unwrap();
        assert_eq!(
            NetworkStatsFile::read(dir.path(), "other.json").unwrap(),
            None
        );
        assert!(NetworkStatsFile::read(dir.path(), "../x.json").is_err());
    }

    #[test]
    fn a_cells_levels_and_advances_round_trip_each_in_its_own_list() {
        let mut b = NetworkStatsBuilder::default();
        b.cell(Radio::Lte, 208, 1, 500.0, 10, true);
        let mut file = b.finish();
        let level = |dbm| LevelPoint {
            dbm,
            lat: 48.1,
            lon: 2.2,
            spread_m: 35.0,
        };
        let advance = |steps| AdvancePoint {
            steps,
            lat: 48.1234567,
            lon: -2.2,
            spread_m: 41.0,
        };
        let cell = |key| (Radio::Lte, 208, 1, key);
        let points: BTreeMap<CellId, CellPoints> = [
            (
                cell(1),
                CellPoints {
                    levels: vec![level(-100), level(-98)],
                    advances: vec![advance(0), advance(7)],
                },
            ),
            (
                cell(2),
                CellPoints {
                    levels: Vec::new(),
                    advances: vec![advance(3)],
                },
            ),
            (
                cell(3),
                CellPoints {
                    levels: vec![level(-80)],
                    advances: Vec::new(),
                },
            ),
        ]
        .into_iter()
        .collect();
        assert_eq!(file.add_points(points.clone()), (2, 2));
        let dir = tempfile::tempdir().unwrap();
        file.write(dir.path(), &file_name(1)).unwrap();
        let back = NetworkStatsFile::read(dir.path(), &file_name(1))
            .unwrap()
            .unwrap();
        assert_eq!(back.learned_points(|_| true), points);
        // A cell with advances only is not in the levels, whose entries a reader that does
        // not know advances needs whole.
        let json: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(dir.path().join(file_name(1))).unwrap())
                .unwrap();
        let net = &json["networks"][0];
        assert_eq!(net["levels"].as_array().unwrap().len(), 2);
        assert_eq!(
            net["advances"][0]["points"],
            "0/48.1234567/-2.2000000/41;7/48.1234567/-2.2000000/41"
        );
        // The text is checked as the levels' is.
        assert_eq!(parse_advances_text("3/1/2/40;4/1.5/2/30").unwrap().len(), 2);
        for bad in [
            "4/1/2/40;3/1/2/40",
            "-1/1/2/40",
            "1283/1/2/40",
            "2.5/1/2/40",
            "3/1/2",
        ] {
            assert!(parse_advances_text(bad).is_err(), "{bad}");
        }
        assert!(parse_levels_text("1/1/2/40").is_err());
    }

    #[test]
    fn every_build_writes_them_beside_its_shards_and_the_next_one_replaces_them() {
        use crate::store::record::{cell_key, Estimated, Station, StationInfo};
        use crate::store::{BuildOptions, Database, DbBuilder};
        let dir = tempfile::tempdir().unwrap();
        let build = |range_m: u32| {
            let mut b = DbBuilder::new(dir.path(), BuildOptions::default()).unwrap();
            for i in 0..25u64 {
                let info = StationInfo {
                    lat: 52.0 + i as f64 * 0.01,
                    lon: 4.0,
                    range_m,
                    samples: 30,
                    psc: None,
                    created: 1_700_000_000,
                    updated: 1_700_000_000,
                    estimated: Estimated::Averaged,
                };
                let key = cell_key(Radio::Lte, 1, (100 + i) << 8);
                b.push_cell(Radio::Lte, 208, 1, Station::new(key, &info))
                    .unwrap();
            }
            b.commit().unwrap().0
        };
        let first = build(800);
        assert_eq!(
            first.network_stats.as_deref(),
            Some("network-stats-000001.json")
        );
        let second = build(1_600);
        assert_eq!(
            second.network_stats.as_deref(),
            Some("network-stats-000002.json")
        );
        assert!(!dir.path().join("network-stats-000001.json").exists());
        let db = Database::open(dir.path()).unwrap();
        let file = db.network_stats().unwrap();
        assert_eq!(file.networks.len(), 1);
        let median = file.networks[0].range_m.unwrap().p50;
        assert!((median / 1_600.0 - 1.0).abs() < 0.045, "{median}");
        // Omni cells (one a site): no sites, no spacing, nothing to scale ranges by.
        assert_eq!(file.networks[0].sites, 0);
        let scale = db.network_scale(Radio::Lte, 208, 1);
        assert_eq!(scale.median_range_m, Some(median as f32));
        assert_eq!(scale.spacing_per_range, None);
        assert_eq!(db.network_scale(Radio::Gsm, 208, 1), NetworkScale::UNKNOWN);
    }
}
