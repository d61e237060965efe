//! Learning station positions from GPS-tagged observations: in batches from
//! files (below), and live into the [`overlay`] that [`compact`] folds into new
//! database generations.
//!
//! [`learn_files`] reads observation files ([`read`]: OpenCelliD measurements,
//! G-NetTrack exports, WiGLE CSV), estimates every station they mention
//! ([`estimate`]: weighted by GPS accuracy, age, speed, signal and timing
//! advance, inconsistent observations dropped), applies the moved-station rule
//! and writes a new database generation in the directory: the stations already
//! there, with learned ones added or refined, and moved ones withdrawn. Like an
//! import, nothing is visible until the new manifest is renamed into place.
//! Formats, weights and rules: `docs/learning.md`.

pub mod compact;
pub mod estimate;
pub mod masts;
pub mod overlay;
pub mod read;
mod submissions;

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::import::default_range_m;
use crate::radio::Radio;
use crate::sites::SiteKey;
use crate::store::record::{key_cid, key_lac, Estimated, Station, StationInfo};
use crate::store::{BuildOptions, Database, DbBuilder, Manifest, StoreError};
pub use estimate::Estimate;
pub use read::{accepted_formats, FileReport, ObservationFormat};
pub use submissions::observations as submission_observations;

/// A station's identity, ordered as the database stores stations: cells by
/// (radio, mcc, mnc, `store::record::cell_key`), then WiFi by BSSID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StationKey {
    Cell {
        radio: Radio,
        mcc: u16,
        mnc: u16,
        /// `store::record::cell_key(radio, lac, cid)`.
        key: u64,
    },
    Wifi(u64),
}

impl StationKey {
    /// `lte/272/1/40122/11016962`, `wifi/0011223344aa`: the blocklist's spelling.
    pub fn label(&self) -> String {
        match *self {
            StationKey::Cell {
                radio,
                mcc,
                mnc,
                key,
            } => format!(
                "{radio}/{mcc}/{mnc}/{}/{}",
                key_lac(key),
                key_cid(radio, key)
            ),
            StationKey::Wifi(b) => format!("wifi/{b:012x}"),
        }
    }

    pub fn parse(s: &str) -> Option<StationKey> {
        let p: Vec<&str> = s.split('/').collect();
        match p.as_slice() {
            ["wifi", b] => u64::from_str_radix(b, 16).ok().map(StationKey::Wifi),
            [r, mcc, mnc, lac, cid] => {
                let radio = Radio::parse(r)?;
                Some(StationKey::Cell {
                    radio,
                    mcc: mcc.parse().ok()?,
                    mnc: mnc.parse().ok()?,
                    key: crate::store::record::cell_key(
                        radio,
                        lac.parse().ok()?,
                        cid.parse().ok()?,
                    ),
                })
            }
            _ => None,
        }
    }

    fn is_wifi(&self) -> bool {
        matches!(self, StationKey::Wifi(_))
    }

    fn radio(&self) -> Option<Radio> {
        match self {
            StationKey::Cell { radio, .. } => Some(*radio),
            StationKey::Wifi(_) => None,
        }
    }
}

/// Who reported an observation that came from outside: an access token (its key, the first
/// 64 bits of the SHA-256 of the token that `tokenHash` writes into observations.sqlite) and
/// the device id it named (64-bit FNV-1a of the id; 0 without one). Device ids are chosen by
/// the client, so only distinct tokens count as independent sources; devices bound what one
/// device of a token adds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Source {
    pub token: u64,
    pub device: u64,
}

impl Source {
    /// The source of a submission: `token_hash` is the hex SHA-256 of its token (at least its
    /// first 16 digits), `device` its device id. A hash that is not hex still names one
    /// source (its FNV-1a).
    pub fn of(token_hash: &str, device: Option<&str>) -> Source {
        Source {
            token: token_key(token_hash).unwrap_or_else(|| device_key(token_hash)),
            device: device.map_or(0, device_key),
        }
    }
}

/// A token's key from its hex SHA-256 (the first 16 hex digits).
pub fn token_key(hash: &str) -> Option<u64> {
    let head = hash.get(..16)?;
    u64::from_str_radix(head, 16).ok()
}

/// A token key as the operator's listings spell it: 16 hex digits, the start of `tokenHash`.
pub fn token_label(token: u64) -> String {
    format!("{token:016x}")
}

/// 64-bit FNV-1a of a device id; never 0 (0 is "no device id").
fn device_key(id: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h.max(1)
}

/// One sighting of a station by a device that knew where it was.
#[derive(Clone, Debug, PartialEq)]
pub struct Observation {
    pub key: StationKey,
    pub lat: f64,
    pub lon: f64,
    /// GPS accuracy in metres, if the source states it.
    pub accuracy_m: Option<f64>,
    /// Unix seconds.
    pub time: Option<i64>,
    pub speed_mps: Option<f64>,
    pub signal_dbm: Option<f64>,
    /// Distance from the mast implied by a timing advance: its step's near edge (advance x
    /// [`Radio::ta_step_m`]).
    pub ta_m: Option<f64>,
    pub psc: Option<u16>,
    /// Who submitted it; None: the operator's own data (files given to `learn`, the library's
    /// `engine.learn`), trusted as a whole.
    pub source: Option<Source>,
}

impl Observation {
    /// A sighting of `key` at a position and nothing else known (stored sightings read back,
    /// tests).
    pub fn bare(key: StationKey, lat: f64, lon: f64) -> Observation {
        Observation {
            key,
            lat,
            lon,
            accuracy_m: None,
            time: None,
            speed_mps: None,
            signal_dbm: None,
            ta_m: None,
            psc: None,
            source: None,
        }
    }
}

/// How long a moved station stays withdrawn after the move was first seen.
/// Observations in that period are ignored: right after a re-planning, phones
/// and caches still mix the old and new identities.
pub const DEFAULT_BLOCK_S: i64 = 30 * 86_400;
/// Fresh observations needed to publish a station again after its block.
pub const RELEARN_MIN_OBS: usize = 3;
/// Where the blocklist of moved stations lives, next to the manifest.
pub const BLOCKLIST_FILE: &str = "learn-blocklist.json";

#[derive(Clone, Debug)]
pub struct LearnOptions {
    /// MCC and MNC for files that carry none (G-NetTrack).
    pub mcc: Option<u16>,
    pub mnc: Option<u16>,
    /// Withdrawal period of moved stations, seconds.
    pub block_s: i64,
    /// Rejected rows reported by line number per file (all are counted).
    pub max_error_lines: usize,
    /// Shard size limit; `None` keeps the store's default.
    pub max_shard_bytes: Option<u64>,
    /// Per input file (by position), the sorted line numbers whose observations are
    /// not learned: the rows an evaluation holds out for testing. Files past the end
    /// of the list are learned whole.
    pub held_out: Vec<Vec<u64>>,
}

impl Default for LearnOptions {
    fn default() -> Self {
        LearnOptions {
            mcc: None,
            mnc: None,
            block_s: DEFAULT_BLOCK_S,
            max_error_lines: 20,
            max_shard_bytes: None,
            held_out: Vec::new(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LearnPhase {
    Reading,
    Estimating,
    /// Fitting site masts from timing advances ([`masts`]); `rows` counts sightings.
    Masts,
    Writing,
}

/// A progress report of learning from files.
pub type LearnProgress = crate::progress::Progress<LearnPhase>;

/// Outcome of learning. Station counts are of stations the files mention;
/// `cells` and `wifi` count the stations of the new database.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LearnReport {
    pub files: Vec<FileReport>,
    pub observations: u64,
    /// Observations dropped as inconsistent with the rest of their station's.
    pub outliers: u64,
    /// Stations not in the database before.
    pub added: u64,
    /// Stations in the database whose estimate was refined.
    pub refined: u64,
    /// Stations found moved in this run (withdrawn, or re-learned if fresh
    /// observations after the block period were at hand).
    pub moved: u64,
    /// Stations published again from fresh observations after a move.
    pub relearned: u64,
    /// Stations withdrawn until their block ends (in the blocklist file).
    pub blocked: u64,
    /// Sightings not learned because their token or device had given the station its
    /// [`TOKEN_CAP_SAMPLES`] or [`DEVICE_CAP_SAMPLES`] already.
    pub capped: u64,
    /// Sightings of quarantined tokens: held as suspects, never learned (see `overlay`).
    pub quarantined: u64,
    /// Site masts fitted from timing advances ([`masts`]) that the new database keeps:
    /// this run's and earlier runs' of the sites that still have a learned cell.
    pub masts: u64,
    /// Learned cells placed by received level ([`estimate`]) that the new database keeps.
    pub levels: u64,
    /// Learned cells placed by timing advance around their site's mast
    /// ([`estimate::advance_points`]) that the new database keeps.
    pub advances: u64,
    pub cells: u64,
    pub wifi: u64,
    pub shards: u64,
    pub bytes: u64,
    pub seconds: f64,
}

#[derive(Debug)]
pub enum LearnError {
    Io(String),
    Format(String),
    Store(StoreError),
    Cancelled,
}

impl fmt::Display for LearnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LearnError::Io(m) => write!(f, "I/O error: {m}"),
            LearnError::Format(m) => write!(f, "{m}"),
            LearnError::Store(e) => write!(f, "{e}"),
            LearnError::Cancelled => write!(f, "learning cancelled; the database is unchanged"),
        }
    }
}

impl std::error::Error for LearnError {}

impl From<StoreError> for LearnError {
    fn from(e: StoreError) -> Self {
        LearnError::Store(e)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
struct BlockEntry {
    station: String,
    /// Unix seconds of the first observation at the new place.
    moved_at: i64,
    /// Observations before this are ignored for the station.
    until: i64,
    /// The tokens whose agreeing sightings made the move; absent when trusted data did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tokens: Option<Vec<u64>>,
}

fn read_blocklist(dir: &Path) -> Result<BTreeMap<StationKey, BlockEntry>, LearnError> {
    let path = dir.join(BLOCKLIST_FILE);
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(LearnError::Io(format!("{}: {e}", path.display()))),
    };
    let entries: Vec<BlockEntry> = serde_json::from_str(&text)
        .map_err(|e| LearnError::Format(format!("{}: {e}", path.display())))?;
    Ok(entries
        .into_iter()
        .filter_map(|e| Some((StationKey::parse(&e.station)?, e)))
        .collect())
}

fn write_blocklist(dir: &Path, list: &BTreeMap<StationKey, BlockEntry>) -> Result<(), LearnError> {
    let path = dir.join(BLOCKLIST_FILE);
    let tmp = dir.join(format!(".{BLOCKLIST_FILE}.tmp"));
    let entries: Vec<&BlockEntry> = list.values().collect();
    let io = |e: std::io::Error| LearnError::Io(format!("{}: {e}", path.display()));
    let json = serde_json::to_string_pretty(&entries).map_err(|e| LearnError::Io(e.to_string()))?;
    fs::write(&tmp, json).map_err(io)?;
    fs::rename(&tmp, &path).map_err(io)
}

/// The rate limit of learning's progress callback; a `false` from it is [`LearnError::Cancelled`].
type Reporter<'a> = crate::progress::Reporter<'a, LearnPhase, LearnError>;

impl From<crate::progress::Cancelled> for LearnError {
    fn from(_: crate::progress::Cancelled) -> Self {
        LearnError::Cancelled
    }
}

/// What learning decided for one station, before estimating.
#[derive(Debug)]
enum Outcome {
    /// Publish an estimate of these sightings, replacing the database's station.
    Put(Vec<Observation>),
    /// Combine an estimate of these sightings with the database's station (or add one).
    Refine(Vec<Observation>),
    /// Withdraw the station (blocked).
    Withdraw,
}

/// An [`Outcome`] with its sightings estimated in one piece (a file run's way).
#[derive(Debug)]
enum Decided {
    Put(Estimate),
    Refine(Estimate),
    Withdraw,
    /// Leave the station as it is: every observation was a suspect (see [`SUSPECT_TTL_S`]).
    Keep,
}

impl Outcome {
    /// None: nothing to publish (too few consistent sightings to re-learn from).
    fn estimated(self, wifi: bool) -> Option<Decided> {
        match self {
            Outcome::Put(obs) => estimate::estimate(&obs, wifi).map(Decided::Put),
            Outcome::Refine(obs) => {
                Some(estimate::estimate(&obs, wifi).map_or(Decided::Keep, Decided::Refine))
            }
            Outcome::Withdraw => Some(Decided::Withdraw),
        }
    }
}

/// Sightings of a known station far from it, too few or too uniform to say it
/// moved: one bad GPS fix must not withdraw a cell for the block period. They
/// are kept out of the station's estimate and held (the overlay persists them
/// in `learned.sqlite`) until enough agree on a new place, or dropped as
/// outliers once they are older than [`SUSPECT_TTL_S`] before the station's
/// newest sighting.
pub const SUSPECT_TTL_S: i64 = estimate::RECENT_S;
/// A move needs far sightings at this many distinct times at least (a
/// submission's stations share its one fix and its one time).
pub const MOVED_MIN_TIMES: usize = 2;
/// Held suspects per station, the newest kept: a client replaying one
/// submission must not grow the file without bound.
pub const MAX_SUSPECTS: usize = 64;
/// Held suspects per station and token, the newest kept: one token must not crowd out
/// the sightings of others that could agree on a move.
pub const MAX_SUSPECTS_PER_TOKEN: usize = 8;
/// Distinct tokens whose sightings must agree before submitted (untrusted) data moves,
/// blocks or re-learns a station: one token, however many submissions or device ids it
/// sends, is one source.
pub const MOVED_MIN_SOURCES: usize = 3;
/// Most sightings one token adds to one station's estimate, over all its submissions (the
/// overlay remembers what each token gave each station); more are counted as `capped`.
pub const TOKEN_CAP_SAMPLES: u32 = 10;
/// Most sightings one device of a token adds to one station's estimate.
pub const DEVICE_CAP_SAMPLES: u32 = 3;

/// Whether `obs` speak with enough independent voices to move, block or re-learn a station:
/// any trusted sighting (the operator's own data), or sightings of at least
/// [`MOVED_MIN_SOURCES`] distinct tokens.
fn agreed<'a>(obs: impl IntoIterator<Item = &'a Observation>) -> bool {
    match tokens_of(obs) {
        None => true,
        Some(t) => t.len() >= MOVED_MIN_SOURCES,
    }
}

/// The distinct tokens of `obs`, sorted; None when any of them is trusted.
fn tokens_of<'a>(obs: impl IntoIterator<Item = &'a Observation>) -> Option<Vec<u64>> {
    let mut t = Vec::new();
    for o in obs {
        t.push(o.source?.token);
    }
    t.sort_unstable();
    t.dedup();
    Some(t)
}

/// The sightings a station learns from, with each token and device held to what it may still
/// add (`allowance`: per token and per device of a token, what is left of the caps); trusted
/// sightings are all kept. The newest sightings are the ones kept; the dropped ones are
/// counted in `report.capped`.
fn capped(
    obs: &[Observation],
    mut allowance: impl FnMut(Source) -> (u32, u32),
    report: &mut LearnReport,
) -> Vec<Observation> {
    use std::collections::HashMap;
    let mut left_token: HashMap<u64, u32> = HashMap::new();
    let mut left_device: HashMap<Source, u32> = HashMap::new();
    let mut keep = vec![false; obs.len()];
    for (i, o) in obs.iter().enumerate().rev() {
        let Some(src) = o.source else {
            keep[i] = true;
            continue;
        };
        if !left_token.contains_key(&src.token) || !left_device.contains_key(&src) {
            let (t, d) = allowance(src);
            left_token.entry(src.token).or_insert(t);
            left_device.entry(src).or_insert(d);
        }
        let t = left_token.get_mut(&src.token).expect("inserted");
        let d = left_device.get_mut(&src).expect("inserted");
        if *t > 0 && *d > 0 {
            *t -= 1;
            *d -= 1;
            keep[i] = true;
        } else {
            report.capped += 1;
        }
    }
    obs.iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(o, _)| o.clone())
        .collect()
}

/// `suspects` cut to the newest [`MAX_SUSPECTS_PER_TOKEN`] per token (trusted ones are not
/// limited so) and the newest [`MAX_SUSPECTS`] in all; `suspects` is sorted by time.
fn trim_suspects(suspects: &mut Vec<Observation>) {
    use std::collections::HashMap;
    let mut per: HashMap<u64, usize> = HashMap::new();
    let mut keep = vec![true; suspects.len()];
    for (i, o) in suspects.iter().enumerate().rev() {
        if let Some(s) = o.source {
            let n = per.entry(s.token).or_default();
            *n += 1;
            keep[i] = *n <= MAX_SUSPECTS_PER_TOKEN;
        }
    }
    let mut k = keep.into_iter();
    suspects.retain(|_| k.next().unwrap_or(true));
    let excess = suspects.len().saturating_sub(MAX_SUSPECTS);
    suspects.drain(..excess);
}

/// Whether `o` lies far enough from the station `s` to speak for a move.
fn is_far(o: &Observation, s: &Station) -> bool {
    let d = crate::geo::distance_m(o.lat, o.lon, s.lat(), s.lon());
    d >= estimate::MOVED_MIN_M && d > s.range_m() as f64
}

/// How many distinct observation times `obs` holds (unknown times not counted).
fn distinct_times(obs: &[Observation]) -> usize {
    let mut t: Vec<i64> = obs.iter().filter_map(|o| o.time).collect();
    t.sort_unstable();
    t.dedup();
    t.len()
}

fn wall_clock() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Decides one station's fate. `obs` is sorted by time (unknown times first).
/// Far sightings of a known station that do not (yet) make a move are left in
/// `suspects` (timed ones only, the newest [`MAX_SUSPECTS`]); the caller holds
/// them for the next batch or, for files, counts them as outliers.
fn decide(
    key: StationKey,
    obs: &[Observation],
    existing: Option<&Station>,
    block: &mut BTreeMap<StationKey, BlockEntry>,
    opts: &LearnOptions,
    report: &mut LearnReport,
    suspects: &mut Vec<Observation>,
) -> Option<Outcome> {
    let wifi = key.is_wifi();
    let fresh_after = |until: i64| {
        let i = obs.partition_point(|o| o.time.is_none_or(|t| t < until));
        &obs[i..]
    };
    let mut withdraw = |block: &mut BTreeMap<StationKey, BlockEntry>,
                        at: i64,
                        until: i64,
                        tokens: Option<Vec<u64>>| {
        let fresh = fresh_after(until);
        // Submitted data re-learns a station only when independent sources agree on it.
        if fresh.len() >= RELEARN_MIN_OBS && agreed(fresh) {
            report.relearned += 1;
            block.remove(&key);
            return Some(Outcome::Put(fresh.to_vec()));
        }
        block.insert(
            key,
            BlockEntry {
                station: key.label(),
                moved_at: at,
                until,
                tokens,
            },
        );
        Some(Outcome::Withdraw)
    };

    if let Some(entry) = block.get(&key) {
        let (at, until, tokens) = (entry.moved_at, entry.until, entry.tokens.clone());
        return withdraw(block, at, until, tokens);
    }
    if let Some((at, tokens)) = estimate::moved_at(obs, wifi) {
        report.moved += 1;
        return withdraw(block, at, at.saturating_add(opts.block_s), tokens);
    }
    let Some(s) = existing else {
        return Some(Outcome::Put(obs.to_vec()));
    };
    // Sightings far from the known station are no evidence of where it is, only,
    // if enough of them agree, of a move; the near ones refine it as usual.
    let (far, near): (Vec<Observation>, Vec<Observation>) =
        obs.iter().cloned().partition(|o| is_far(o, s));
    let newest = obs.iter().filter_map(|o| o.time).max();
    let (far, stale): (Vec<Observation>, Vec<Observation>) =
        far.into_iter().partition(|o| match (o.time, newest) {
            (Some(t), Some(n)) => t >= n - SUSPECT_TTL_S,
            _ => true,
        });
    report.outliers += stale.len() as u64;
    if !far.is_empty() {
        let old = Estimate::of_station(s);
        let first_far = far.iter().filter_map(|o| o.time).min();
        // Sightings at the old place since the far ones began still vouch for it.
        let vouching = near
            .iter()
            .filter(|o| match (o.time, first_far) {
                (Some(t), Some(f)) => t >= f,
                _ => false,
            })
            .count();
        // The far sightings that speak for the new place: those within its reach.
        let agreeing = |e: &Estimate| -> Vec<&Observation> {
            let reach = e.range_m.max(estimate::MOVED_MIN_M / 10.0);
            far.iter()
                .filter(|o| crate::geo::distance_m(o.lat, o.lon, e.lat, e.lon) <= reach)
                .collect()
        };
        let moved = estimate::estimate(&far, wifi).filter(|e| {
            e.samples as usize >= estimate::MOVED_MIN_OBS
                && distinct_times(&far) >= MOVED_MIN_TIMES
                && e.samples as usize > vouching
                && estimate::far_apart(&old, e)
                // Only what we saw after the station's last update can say it moved.
                && e.last.is_none_or(|t| t > s.updated())
                // Submitted sightings move a station only when independent tokens agree.
                && agreed(agreeing(e))
        });
        if let Some(e) = moved {
            report.moved += 1;
            let at = e.first.unwrap_or_else(wall_clock);
            let tokens = tokens_of(agreeing(&e));
            return withdraw(block, at, at.saturating_add(opts.block_s), tokens);
        }
        let timed = far.into_iter().filter(|o| o.time.is_some());
        suspects.extend(timed);
        suspects.sort_by_key(|o| o.time);
        trim_suspects(suspects);
    }
    Some(Outcome::Refine(near))
}

fn station_of(key: StationKey, e: &Estimate, now: i64) -> Station {
    let k = match key {
        StationKey::Cell { key, .. } => key,
        StationKey::Wifi(b) => b,
    };
    Station::new(
        k,
        &StationInfo {
            lat: e.lat,
            lon: e.lon,
            range_m: if e.samples < 2 {
                // One fix says nothing about reach: the import's default for the radio.
                default_range_m(key.radio()) as u32
            } else {
                e.range_m.round() as u32
            },
            samples: e.samples,
            psc: e.psc,
            created: e.first.unwrap_or(now),
            updated: e.last.unwrap_or(now),
            estimated: Estimated::Learned,
        },
    )
}

/// Combines a learned estimate with the database's station, weighted by
/// samples, as an import merges duplicates (docs/import.md).
fn refine(key: StationKey, old: &Station, e: &Estimate, now: i64) -> Station {
    let new = station_of(key, e, now);
    let (wo, wn) = (old.samples().max(1) as f64, new.samples().max(1) as f64);
    let w = wo + wn;
    let info = StationInfo {
        lat: (old.lat() * wo + new.lat() * wn) / w,
        lon: (old.lon() * wo + new.lon() * wn) / w,
        range_m: ((old.range_m() as f64 * wo + new.range_m() as f64 * wn) / w).round() as u32,
        samples: old.samples().saturating_add(new.samples()),
        psc: new.psc().or(old.psc()),
        created: old.created().min(new.created()),
        updated: old.updated().max(new.updated()),
        // The mean is mostly what the heavier side says it is, as an import's merge decides.
        estimated: if wn > wo {
            Estimated::Learned
        } else {
            old.estimated()
        },
    };
    Station::new(new.key, &info)
}

/// The database's record of a station.
fn database_station(db: &Database, key: StationKey) -> Option<Station> {
    match key {
        StationKey::Cell {
            radio,
            mcc,
            mnc,
            key,
        } => db.cell(radio, mcc, mnc, key_lac(key), key_cid(radio, key)),
        StationKey::Wifi(b) => db.wifi(b),
    }
}

/// The station an outcome publishes (None: withdrawn), counted in `report`.
fn settle(
    key: StationKey,
    outcome: Decided,
    existing: Option<&Station>,
    now: i64,
    report: &mut LearnReport,
) -> Option<Station> {
    match outcome {
        Decided::Withdraw => {
            report.blocked += 1;
            None
        }
        Decided::Keep => existing.copied(),
        Decided::Put(e) | Decided::Refine(e) if existing.is_none() => {
            report.added += 1;
            report.outliers += e.rejected as u64;
            Some(station_of(key, &e, now))
        }
        Decided::Put(e) => {
            report.outliers += e.rejected as u64;
            Some(station_of(key, &e, now))
        }
        Decided::Refine(e) => {
            report.refined += 1;
            report.outliers += e.rejected as u64;
            existing.map(|s| refine(key, s, &e, now))
        }
    }
}

/// Writes the database's stations with `learned` ones replacing (Some) or
/// withdrawing (None) those of the same key, in store order: the new generation
/// of a learn run or of a compaction.
fn write_merged(
    builder: &mut DbBuilder,
    db: Option<&Database>,
    learned: &BTreeMap<StationKey, Option<Station>>,
) -> Result<(), StoreError> {
    let existing_iter: Box<dyn Iterator<Item = (StationKey, Station)>> = match db {
        Some(db) => Box::new(
            db.iter_cells()
                .map(|(radio, mcc, mnc, s)| {
                    (
                        StationKey::Cell {
                            radio,
                            mcc,
                            mnc,
                            key: s.key,
                        },
                        s,
                    )
                })
                .chain(db.iter_wifi().map(|s| (StationKey::Wifi(s.key), s))),
        ),
        None => Box::new(std::iter::empty()),
    };
    let mut existing_iter = existing_iter.peekable();
    let mut learned_iter = learned.iter().map(|(k, s)| (*k, *s)).peekable();
    let push = |builder: &mut DbBuilder, key: StationKey, s: Station| match key {
        StationKey::Cell {
            radio, mcc, mnc, ..
        } => builder.push_cell(radio, mcc, mnc, s),
        StationKey::Wifi(_) => builder.push_wifi(s),
    };
    loop {
        let take_learned = match (existing_iter.peek(), learned_iter.peek()) {
            (None, None) => break,
            (Some(_), None) => false,
            (None, Some(_)) => true,
            (Some((ek, _)), Some((lk, _))) => lk <= ek,
        };
        if take_learned {
            let (k, s) = learned_iter.next().expect("peeked");
            if existing_iter.peek().is_some_and(|(ek, _)| *ek == k) {
                existing_iter.next();
            }
            if let Some(s) = s {
                push(builder, k, s)?;
            }
        } else {
            let (k, s) = existing_iter.next().expect("peeked");
            push(builder, k, s)?;
        }
    }
    Ok(())
}

/// Learns from `files` and merges the result into the database in `dir`
/// (created if missing). `progress` returning `false` cancels, leaving the
/// database as it was.
pub fn learn_files(
    dir: &Path,
    files: &[PathBuf],
    opts: &LearnOptions,
    progress: &mut dyn FnMut(&LearnProgress) -> bool,
) -> Result<LearnReport, LearnError> {
    let started = Instant::now();
    if files.is_empty() {
        return Err(LearnError::Format("no input files given".into()));
    }
    if let Some(why) = files
        .iter()
        .find_map(|f| crate::import::source::unstreamable(f))
    {
        return Err(LearnError::Io(why));
    }
    let mut reporter = Reporter::new(progress);
    let mut report = LearnReport::default();
    let mut obs: Vec<Observation> = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let held_out = opts.held_out.get(i).map_or(&[][..], Vec::as_slice);
        let label = f.display().to_string();
        let total = fs::metadata(f).map(|m| m.len()).unwrap_or(0);
        reporter.report(true, || LearnProgress {
            file: label.clone(),
            bytes_done: 0,
            bytes_total: total,
            rows: 0,
            phase: LearnPhase::Reading,
        })?;
        let mut keep = |line: u64, o: Observation| {
            if held_out.binary_search(&line).is_err() {
                obs.push(o);
            }
        };
        let r = read::read_file(f, opts, &mut keep, &mut |bytes, rows| {
            reporter.report(false, || LearnProgress {
                file: label.clone(),
                bytes_done: bytes,
                bytes_total: total,
                rows,
                phase: LearnPhase::Reading,
            })
        })?;
        report.files.push(r);
    }
    report.observations = obs.len() as u64;
    obs.sort_by(|a, b| a.key.cmp(&b.key).then(a.time.cmp(&b.time)));

    fs::create_dir_all(dir).map_err(|e| LearnError::Io(format!("{}: {e}", dir.display())))?;
    let old = Manifest::read(dir)?;
    let mut build = BuildOptions::default();
    if let Some(m) = opts.max_shard_bytes {
        build.max_shard_bytes = m;
    }
    if let Some(m) = &old {
        build.simulated = m.simulated;
        build.sources = m.sources.clone();
    }
    for f in files {
        let label = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !build.sources.contains(&label) {
            build.sources.push(label);
        }
    }
    let builder = DbBuilder::new(dir, build)?;
    let db = match builder.previous() {
        Some(_) => Some(Database::open(dir)?),
        None => None,
    };
    let mut block = read_blocklist(dir)?;
    let now = wall_clock();

    let label = dir.display().to_string();
    // The masts first: a learned cell's positions by advance are read around its site's.
    let fitted = masts::fit_masts(&obs, now, &mut |done, total| {
        reporter.report(done == 0, || LearnProgress {
            file: label.clone(),
            bytes_done: done,
            bytes_total: total,
            rows: done,
            phase: LearnPhase::Masts,
        })
    })?;
    let mut builder = builder;
    masts::keep(builder.learned_masts(), &fitted);

    // Decide every station the files mention.
    let mut learned: BTreeMap<StationKey, Option<Station>> = BTreeMap::new();
    let mut points = Vec::new();
    let groups = obs.chunk_by(|a, b| a.key == b.key);
    let stations_total = obs.len() as u64;
    let mut done = 0u64;
    for g in groups {
        let key = g[0].key;
        done += g.len() as u64;
        reporter.report(false, || LearnProgress {
            file: label.clone(),
            bytes_done: done,
            bytes_total: stations_total,
            rows: done,
            phase: LearnPhase::Estimating,
        })?;
        let existing = db.as_ref().and_then(|db| database_station(db, key));
        // Submissions (observations.sqlite) are held to the caps of one token and device
        // within a run; the operator's own files are taken whole.
        let limited;
        let g = if g.iter().any(|o| o.source.is_some()) {
            limited = capped(g, |_| (TOKEN_CAP_SAMPLES, DEVICE_CAP_SAMPLES), &mut report);
            &limited[..]
        } else {
            g
        };
        let mut suspects = Vec::new();
        let Some(outcome) = decide(
            key,
            g,
            existing.as_ref(),
            &mut block,
            opts,
            &mut report,
            &mut suspects,
        )
        .and_then(|o| o.estimated(key.is_wifi())) else {
            continue;
        };
        // A file run is all the evidence there is: far sightings that made no
        // move are outliers.
        report.outliers += suspects.len() as u64;
        if matches!(outcome, Decided::Keep) {
            continue;
        }
        let mut outcome = outcome;
        if let StationKey::Cell {
            radio,
            mcc,
            mnc,
            key: cell,
        } = key
        {
            // A new estimate brings its own levels and advances; a refined one keeps the old
            // ones unless this run heard it at levels (or advances); a withdrawn cell has none.
            let mut advances = || {
                let site = SiteKey::of_cell(radio, mcc, mnc, key_cid(radio, cell))?;
                let mast = builder.learned_masts().get(&site)?;
                // Only where a request's advance is read: another radio's points would answer
                // nothing.
                let step = crate::solve::read_advance_step_m(radio)?;
                Some(estimate::advance_points(g, (mast.lat, mast.lon), step))
            };
            let update = match &mut outcome {
                Decided::Put(e) => Some((
                    Some(std::mem::take(&mut e.levels)),
                    Some(advances().unwrap_or_default()),
                )),
                Decided::Refine(e) => {
                    let levels = Some(std::mem::take(&mut e.levels)).filter(|l| !l.is_empty());
                    let advances = advances().filter(|a| !a.is_empty());
                    (levels.is_some() || advances.is_some()).then_some((levels, advances))
                }
                Decided::Withdraw => Some((Some(Vec::new()), Some(Vec::new()))),
                _ => None,
            };
            if let Some(update) = update {
                points.push(((radio, mcc, mnc, cell), update));
            }
        }
        let station = settle(key, outcome, existing.as_ref(), now, &mut report);
        learned.insert(key, station);
    }

    // Merge the database's stations with the learned ones, in store order.
    reporter.report(true, || LearnProgress {
        file: label.clone(),
        bytes_done: 0,
        bytes_total: 0,
        rows: learned.len() as u64,
        phase: LearnPhase::Writing,
    })?;
    for (cell, (levels, advances)) in points {
        builder.set_learned_points(cell, levels, advances);
    }
    write_merged(&mut builder, db.as_ref(), &learned)?;
    write_blocklist(dir, &block)?;
    let (_, stats) = builder.commit()?;
    drop(db);
    report.cells = stats.cells;
    report.masts = stats.learned_masts;
    report.levels = stats.learned_levels;
    report.advances = stats.learned_advances;
    report.wifi = stats.wifi;
    report.shards = stats.shards;
    report.bytes = stats.bytes;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}
