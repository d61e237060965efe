//! Learned stations overlaying the immutable database: what live learning has
//! decided since the last compaction, visible to the very next lookup.
//!
//! Each entry replaces the database's station of the same key (cells by
//! radio, mcc, mnc and `store::record::cell_key`, WiFi by BSSID) with a complete
//! estimate (the database's station refined by the new observations), or
//! withdraws it (a moved station, blocklisted). Because entries replace rather
//! than add, folding them into a new generation and dropping them afterwards
//! is idempotent: a crash between the two leaves entries equal to the new
//! database's stations, which changes no answer.
//!
//! The entries live in memory (one hash map behind a presence filter, read under
//! a lock only when it is not empty) and in `DIR/learned.sqlite` (WAL): a batch of observations is
//! applied in memory only after its transaction committed. Several processes
//! (the server's cluster workers) may share the file: a learner first reads
//! the rows other processes wrote since it last looked, inside its write
//! transaction, so no process decides from a stale estimate.
//!
//! Submitted sightings carry their source (a token, a device of it). The overlay remembers
//! what each token gave each station (`contrib`), so that one token adds at most
//! [`TOKEN_CAP_SAMPLES`] sightings to a station (a device at most [`DEVICE_CAP_SAMPLES`]) and
//! its part can be taken out again ([`Overlay::revert_token`]); it keeps per token how many
//! of its sightings of known stations lay far from them (`sources`), and quarantines a token
//! when most did: its sightings then wait as suspects and refine nothing. Moves, blocks and
//! re-learning need the agreement of [`MOVED_MIN_SOURCES`] tokens (`learn::decide`).

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, RwLock, RwLockReadGuard};

use rusqlite::{params, Connection, TransactionBehavior};

use super::{capped, token_label, Observation, Outcome, Source, StationKey};
use super::{
    decide, is_far, refine, station_of, BlockEntry, LearnError, LearnOptions, LearnReport,
};
use super::{DEVICE_CAP_SAMPLES, MOVED_MIN_SOURCES, TOKEN_CAP_SAMPLES};
use crate::sites::SiteKey;
use crate::store::record::Station;
use crate::store::record::StationInfo;
use crate::store::Database;

/// The overlay's file, next to the manifest.
pub const LEARNED_FILE: &str = "learned.sqlite";

const SCHEMA_VERSION: i64 = 3;
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS stations (
  station TEXT PRIMARY KEY,   -- StationKey::label: lte/272/1/40122/11016962, wifi/0011223344aa
  seq INTEGER NOT NULL,       -- the learning batch that wrote the row
  learned_at INTEGER NOT NULL,-- unix seconds (wall clock) of that batch
  folded INTEGER NOT NULL DEFAULT 0, -- 1: already in a database generation (kept for its block)
  lat_e7 INTEGER, lon_e7 INTEGER, meta INTEGER, -- the station record; NULL when withdrawn
  moved_at INTEGER, block_until INTEGER,        -- set while the station is blocklisted
  block_tokens TEXT,          -- the tokens (hex keys, comma-separated) whose agreement made the block; NULL: trusted data
  prev_lat_e7 INTEGER, prev_lon_e7 INTEGER, prev_meta INTEGER -- the station before its block
);
CREATE TABLE IF NOT EXISTS held (
  -- observations of a blocklisted station after its block ended, kept until there are
  -- enough to learn it again; of any other station, its sightings far from it, kept
  -- until enough agree on a move or they expire (learn::SUSPECT_TTL_S)
  station TEXT NOT NULL, lat REAL NOT NULL, lon REAL NOT NULL, accuracy REAL, time INTEGER,
  speed REAL, signal REAL, ta REAL, psc INTEGER,
  token INTEGER, device INTEGER -- the source (learn::Source); NULL: trusted
);
CREATE INDEX IF NOT EXISTS held_station ON held (station);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS contrib (
  -- what one token gave one station: sightings taken (towards the cap), and the samples its
  -- estimates added with their sample-weighted mean position and range (to take them out)
  station TEXT NOT NULL, token INTEGER NOT NULL, used INTEGER NOT NULL, samples INTEGER NOT NULL,
  lat REAL NOT NULL, lon REAL NOT NULL, range REAL NOT NULL,
  PRIMARY KEY (station, token)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS contrib_token ON contrib (token);
CREATE TABLE IF NOT EXISTS contrib_device (
  station TEXT NOT NULL, token INTEGER NOT NULL, device INTEGER NOT NULL, used INTEGER NOT NULL,
  PRIMARY KEY (station, token, device)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS advances (
  -- the operator's own sightings with a timing advance (source NULL), kept until a compaction
  -- fits their site's mast from them (learn::masts); the newest MAX_SITE_ADVANCES a site
  site TEXT NOT NULL, station TEXT NOT NULL, lat REAL NOT NULL, lon REAL NOT NULL,
  ta REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS advances_site ON advances (site);
CREATE TABLE IF NOT EXISTS sources (
  -- per token: its sightings of known stations, how many lay far from them, and its
  -- quarantine (0 none, 1 automatic, 2 set by the operator)
  token INTEGER PRIMARY KEY, sightings INTEGER NOT NULL DEFAULT 0, far INTEGER NOT NULL DEFAULT 0,
  quarantined INTEGER NOT NULL DEFAULT 0
);
";
/// What a version 1 file lacks before [`SCHEMA`] applies.
const MIGRATE_FROM_1: &str = "
ALTER TABLE stations ADD COLUMN block_tokens TEXT;
ALTER TABLE stations ADD COLUMN prev_lat_e7 INTEGER;
ALTER TABLE stations ADD COLUMN prev_lon_e7 INTEGER;
ALTER TABLE stations ADD COLUMN prev_meta INTEGER;
ALTER TABLE held ADD COLUMN token INTEGER;
ALTER TABLE held ADD COLUMN device INTEGER;
";

/// The most sightings with an advance the overlay keeps a site (its newest): enough to fit a
/// mast many times over, and a bound for a site whose advances never fit one (a logger that
/// writes 0 on every row).
const MAX_SITE_ADVANCES: i64 = 2_000;

/// A token is quarantined once it has reported at least this many sightings of known
/// stations ...
pub const QUARANTINE_MIN_SIGHTINGS: i64 = 10;
/// ... and at least half of them lay far from the station (beyond its range and
/// `estimate::MOVED_MIN_M`) without a move confirming them.
const QUARANTINE_FAR_SHARE: f64 = 0.5;

/// One overlay entry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Entry {
    /// The learned station; None: withdrawn (blocklisted as moved).
    pub station: Option<Station>,
    /// The learning batch that wrote it; compaction folds entries up to a batch.
    pub seq: i64,
    /// Unix seconds of that batch, for the age threshold of compaction.
    pub learned_at: i64,
    /// Already written into a database generation (only blocked entries stay after that).
    pub folded: bool,
}

/// What the overlay says about a station.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Lookup {
    /// Not in the overlay: ask the database.
    Unknown,
    /// Use this instead of the database's.
    Learned(Station),
    /// Moved: use neither the overlay's nor the database's.
    Blocked,
}

/// A multiply-rotate hash (the Fx hash of rustc): station keys are integers chosen
/// by operators, not by attackers of a hash table, and SipHash cost a third of an
/// overlay lookup.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(b));
        }
    }

    fn write_u8(&mut self, v: u8) {
        self.write_u64(v as u64);
    }

    fn write_u16(&mut self, v: u16) {
        self.write_u64(v as u64);
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_isize(&mut self, v: isize) {
        self.write_u64(v as u64);
    }
}

/// Bits of the presence filter per entry: with two probes, about 1.4% of the
/// stations not in the overlay still look it up in the map.
const FILTER_BITS_PER_ENTRY: usize = 16;

/// The entries, with a presence filter in front: most stations a request names are
/// not in the overlay, and a probe of a large map is a cache miss where a probe of
/// the filter (2 bytes an entry) mostly is not.
#[derive(Default)]
struct Entries {
    map: HashMap<StationKey, Entry, BuildHasherDefault<KeyHasher>>,
    filter: Vec<u64>,
}

impl Entries {
    fn probes(&self, key: &StationKey) -> (usize, usize) {
        let mut h = KeyHasher(0x9e37_79b9_7f4a_7c15);
        key.hash(&mut h);
        // A second round spreads the Fx state's high bits into both probes.
        let x = h.finish().wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let mask = self.filter.len() * 64 - 1;
        ((x >> 7) as usize & mask, (x >> 37) as usize & mask)
    }

    fn set(&mut self, key: &StationKey) {
        let (a, b) = self.probes(key);
        self.filter[a / 64] |= 1 << (a % 64);
        self.filter[b / 64] |= 1 << (b % 64);
    }

    fn maybe(&self, key: &StationKey) -> bool {
        if self.filter.is_empty() {
            return false;
        }
        let (a, b) = self.probes(key);
        self.filter[a / 64] & (1 << (a % 64)) != 0 && self.filter[b / 64] & (1 << (b % 64)) != 0
    }

    fn rebuild(&mut self) {
        let bits = (self.map.len() * FILTER_BITS_PER_ENTRY)
            .next_power_of_two()
            .max(64);
        self.filter = vec![0; bits / 64];
        let keys: Vec<StationKey> = self.map.keys().copied().collect();
        for k in &keys {
            self.set(k);
        }
    }

    fn get(&self, key: &StationKey) -> Option<&Entry> {
        if !self.maybe(key) {
            return None;
        }
        self.map.get(key)
    }

    fn insert(&mut self, key: StationKey, e: Entry) {
        self.map.insert(key, e);
        if self.filter.len() * 64 < self.map.len() * FILTER_BITS_PER_ENTRY / 2 {
            self.rebuild();
        } else {
            self.set(&key);
        }
    }

    fn retain(&mut self, f: impl FnMut(&StationKey, &mut Entry) -> bool) {
        self.map.retain(f);
        self.rebuild();
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    fn iter(&self) -> impl Iterator<Item = (&StationKey, &Entry)> {
        self.map.iter()
    }
}

#[derive(Default)]
struct State {
    entries: Entries,
    blocks: BTreeMap<StationKey, BlockEntry>,
    held: HashMap<StationKey, Vec<Observation>>,
    /// Highest batch read from the file.
    seq: i64,
    /// Highest batch folded into a generation, by this process or another.
    folded_seq: i64,
}

impl State {
    /// Drops the learned entries up to batch `seq` (now in the database) and marks
    /// the blocked ones folded; returns how many entries that concerned.
    fn fold(&mut self, seq: i64) -> u64 {
        let mut folded = 0;
        let (held, blocks) = (&self.held, &self.blocks);
        self.entries.retain(|k, e| {
            if e.seq > seq || e.folded {
                return true;
            }
            folded += 1;
            e.folded = true;
            // Blocked entries keep guarding their station, and entries with held
            // sightings keep them reachable (the file's held rows hang off them).
            (e.station.is_none() && blocks.contains_key(k)) || held.contains_key(k)
        });
        self.folded_seq = self.folded_seq.max(seq);
        folded
    }
}

/// Read access to the overlay for one request: taken once, consulted per station.
pub struct OverlayView<'a> {
    state: RwLockReadGuard<'a, State>,
}

impl OverlayView<'_> {
    pub fn get(&self, key: &StationKey) -> Lookup {
        match self.state.entries.get(key) {
            None => Lookup::Unknown,
            Some(Entry {
                station: Some(s), ..
            }) => Lookup::Learned(*s),
            Some(Entry { station: None, .. }) => Lookup::Blocked,
        }
    }
}

/// Sizes reported by `stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OverlayStats {
    /// Learned cells and access points not yet folded into the database.
    pub cells: u64,
    pub wifi: u64,
    /// Blocklisted (withdrawn) stations, folded or not.
    pub blocked: u64,
    /// Unix seconds of the oldest entry not yet folded.
    pub oldest: Option<i64>,
}

/// What compaction folds: every entry not yet folded, up to batch `seq`.
pub struct Snapshot {
    pub seq: i64,
    pub stations: BTreeMap<StationKey, Option<Station>>,
}

/// The learned-station overlay of one database directory.
pub struct Overlay {
    path: Option<PathBuf>,
    /// Entries in memory; readers skip the lock entirely while this is 0.
    len: AtomicUsize,
    state: RwLock<State>,
    /// The file's connection, opened on first need; also serialises learners.
    conn: Mutex<Option<Connection>>,
}

fn db_err(path: &Path) -> impl Fn(rusqlite::Error) -> LearnError + '_ {
    move |e| LearnError::Io(format!("{}: {e}", path.display()))
}

impl Overlay {
    /// An overlay held in memory only, for an engine without a writable directory;
    /// learning into it fails with a clear message.
    pub fn none() -> Overlay {
        Overlay {
            path: None,
            len: AtomicUsize::new(0),
            state: RwLock::new(State::default()),
            conn: Mutex::new(None),
        }
    }

    /// The overlay of `dir` (`dir/learned.sqlite`). Reads the file if it exists;
    /// creates it only when something is learned.
    pub fn open(dir: &Path) -> Result<Overlay, LearnError> {
        let o = Overlay {
            path: Some(dir.join(LEARNED_FILE)),
            ..Overlay::none()
        };
        o.reload()?;
        Ok(o)
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    pub fn is_empty(&self) -> bool {
        self.len.load(Ordering::Acquire) == 0
    }

    /// None while the overlay is empty: the lookup then costs one atomic load.
    pub fn view(&self) -> Option<OverlayView<'_>> {
        if self.is_empty() {
            return None;
        }
        Some(OverlayView {
            state: self.state.read().unwrap_or_else(|e| e.into_inner()),
        })
    }

    pub fn stats(&self) -> OverlayStats {
        let st = self.state.read().unwrap_or_else(|e| e.into_inner());
        let mut out = OverlayStats::default();
        for (k, e) in st.entries.iter() {
            if e.station.is_none() {
                out.blocked += 1;
            }
            if e.folded {
                continue;
            }
            out.oldest = Some(out.oldest.map_or(e.learned_at, |o| o.min(e.learned_at)));
            match (k, e.station) {
                (StationKey::Wifi(_), Some(_)) => out.wifi += 1,
                (StationKey::Cell { .. }, Some(_)) => out.cells += 1,
                _ => {}
            }
        }
        out
    }

    fn with_conn<T>(
        &self,
        create: bool,
        f: impl FnOnce(&mut Connection, &Path) -> Result<T, LearnError>,
    ) -> Result<Option<T>, LearnError> {
        let Some(path) = &self.path else {
            return Ok(None);
        };
        let mut guard = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            if !create && !path.exists() {
                return Ok(None);
            }
            *guard = Some(open_file(path)?);
        }
        let conn = guard.as_mut().expect("opened above");
        f(conn, path).map(Some)
    }

    /// Re-reads every entry from the file (after another process compacted).
    pub fn reload(&self) -> Result<(), LearnError> {
        self.read_rows(0)
    }

    /// Reads the rows other processes wrote since this one last looked.
    pub fn refresh(&self) -> Result<(), LearnError> {
        let seq = self.state.read().unwrap_or_else(|e| e.into_inner()).seq;
        self.read_rows(seq)
    }

    /// Applies the rows after batch `after` (all of them, replacing the state, for 0).
    /// Under the connection's lock, so that a batch learned meanwhile is not undone.
    fn read_rows(&self, after: i64) -> Result<(), LearnError> {
        self.with_conn(false, |conn, path| {
            let rows = read_state(conn, path, after)?;
            let folded: i64 = conn
                .query_row(
                    "SELECT coalesce((SELECT value FROM counters WHERE name = 'folded'), 0)",
                    [],
                    |r| r.get(0),
                )
                .map_err(db_err(path))?;
            let mut st = self.state.write().unwrap_or_else(|e| e.into_inner());
            if after == 0 {
                *st = State::default();
            }
            apply_rows(&mut st, rows);
            // Another process compacted: what it folded is in the generation it wrote.
            if folded > st.folded_seq {
                st.fold(folded);
            }
            self.len.store(st.entries.len(), Ordering::Release);
            Ok(())
        })?;
        Ok(())
    }

    /// Learns a batch of observations: each station's estimate combines what the
    /// overlay or else the database holds (its samples as weight) with the new
    /// observations, under the moved-station rule of `learn_files`. Returns once
    /// the batch is committed to the file and visible to lookups.
    pub fn learn(
        &self,
        db: &Database,
        mut obs: Vec<Observation>,
        opts: &LearnOptions,
    ) -> Result<LearnReport, LearnError> {
        let started = std::time::Instant::now();
        let mut report = LearnReport {
            observations: obs.len() as u64,
            ..LearnReport::default()
        };
        if self.path.is_none() {
            return Err(LearnError::Format(
                "this engine has no station database directory to keep learned stations in (open it with `db`)".into(),
            ));
        }
        if obs.is_empty() {
            return Ok(report);
        }
        obs.sort_by(|a, b| a.key.cmp(&b.key).then(a.time.cmp(&b.time)));
        let now = super::wall_clock();
        let result = self.with_conn(true, |conn, path| {
            let e = db_err(path);
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(&e)?;
            // What other processes learned meanwhile: decide from the newest estimates.
            let mine = self.state.read().unwrap_or_else(|p| p.into_inner()).seq;
            let fresh = read_state(&tx, path, mine)?;
            if !fresh.is_empty() {
                let mut st = self.state.write().unwrap_or_else(|p| p.into_inner());
                apply_rows(&mut st, fresh);
                self.len.store(st.entries.len(), Ordering::Release);
            }
            let seq: i64 = tx
                .query_row(
                    "SELECT coalesce((SELECT value FROM counters WHERE name = 'seq'), 0) + 1",
                    [],
                    |r| r.get(0),
                )
                .map_err(&e)?;
            let changes = {
                let st = self.state.read().unwrap_or_else(|p| p.into_inner());
                let mut ledger = Ledger::new(&tx, path);
                decide_batch(&st, db, &obs, opts, now, &mut report, &mut ledger)?
            };
            write_changes(&tx, path, seq, now, &changes)?;
            write_advances(&tx, path, &obs)?;
            tx.commit().map_err(&e)?;
            self.apply_changes(changes, seq, now);
            Ok(())
        });
        result?;
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Applies committed changes of batch `seq` to the memory state.
    fn apply_changes(&self, changes: Vec<Change>, seq: i64, now: i64) {
        let mut st = self.state.write().unwrap_or_else(|p| p.into_inner());
        for c in changes {
            st.held.remove(&c.key);
            if !c.held.is_empty() {
                st.held.insert(c.key, c.held);
            }
            match c.block {
                Some(b) => st.blocks.insert(c.key, b),
                None => st.blocks.remove(&c.key),
            };
            st.entries.insert(
                c.key,
                Entry {
                    station: c.station,
                    seq,
                    learned_at: now,
                    folded: false,
                },
            );
        }
        st.seq = st.seq.max(seq);
        self.len.store(st.entries.len(), Ordering::Release);
    }

    /// What every token (or the one given) gave the learned stations: its record (sightings of
    /// known stations, far ones, quarantine), the stations it refined or added, its held
    /// suspects and the blocks it took part in. Empty when nothing was learned here.
    pub fn contributions(&self, token: Option<u64>) -> Result<Vec<TokenContributions>, LearnError> {
        let out = self.with_conn(false, |conn, path| {
            let e = db_err(path);
            let mut by: BTreeMap<u64, TokenContributions> = BTreeMap::new();
            let wanted = |t: u64| token.is_none_or(|w| w == t);
            fn slot(by: &mut BTreeMap<u64, TokenContributions>, t: u64) -> &mut TokenContributions {
                by.entry(t).or_insert_with(|| TokenContributions {
                    token: token_label(t),
                    ..TokenContributions::default()
                })
            }
            let mut q = conn
                .prepare("SELECT token, sightings, far, quarantined FROM sources")
                .map_err(&e)?;
            let mut rows = q.query([]).map_err(&e)?;
            while let Some(r) = rows.next().map_err(&e)? {
                let t = r.get::<_, i64>(0).map_err(&e)? as u64;
                if !wanted(t) {
                    continue;
                }
                let c = slot(&mut by, t);
                c.sightings = r.get(1).map_err(&e)?;
                c.far = r.get(2).map_err(&e)?;
                c.quarantined = match r.get::<_, i64>(3).map_err(&e)? {
                    1 => Some("automatic".into()),
                    2 => Some("operator".into()),
                    _ => None,
                };
            }
            let mut q = conn
                .prepare("SELECT token, station, used, samples, lat, lon FROM contrib ORDER BY token, station")
                .map_err(&e)?;
            let mut rows = q.query([]).map_err(&e)?;
            while let Some(r) = rows.next().map_err(&e)? {
                let t = r.get::<_, i64>(0).map_err(&e)? as u64;
                if !wanted(t) {
                    continue;
                }
                let c = slot(&mut by, t);
                c.stations.push(StationContribution {
                    station: r.get(1).map_err(&e)?,
                    used: r.get(2).map_err(&e)?,
                    samples: r.get(3).map_err(&e)?,
                    lat: r.get(4).map_err(&e)?,
                    lon: r.get(5).map_err(&e)?,
                });
            }
            let mut q = conn
                .prepare("SELECT token, count(*) FROM held WHERE token IS NOT NULL GROUP BY token")
                .map_err(&e)?;
            let mut rows = q.query([]).map_err(&e)?;
            while let Some(r) = rows.next().map_err(&e)? {
                let t = r.get::<_, i64>(0).map_err(&e)? as u64;
                if !wanted(t) {
                    continue;
                }
                slot(&mut by, t).held = r.get(1).map_err(&e)?;
            }
            let mut q = conn
                .prepare("SELECT station, block_tokens FROM stations WHERE block_tokens IS NOT NULL")
                .map_err(&e)?;
            let mut rows = q.query([]).map_err(&e)?;
            while let Some(r) = rows.next().map_err(&e)? {
                let station: String = r.get(0).map_err(&e)?;
                let tokens: String = r.get(1).map_err(&e)?;
                for t in parse_tokens(&tokens) {
                    if wanted(t) {
                        slot(&mut by, t).blocks.push(station.clone());
                    }
                }
            }
            Ok(by.into_values().collect())
        })?;
        Ok(out.unwrap_or_default())
    }

    /// Quarantines a token by the operator's decision (`on`), or releases it: its counts
    /// start again from zero, and automatic quarantine may come back if it earns it again.
    pub fn set_quarantine(&self, token: u64, on: bool) -> Result<(), LearnError> {
        self.with_conn(true, |conn, path| {
            let sql = if on {
                "INSERT INTO sources (token, quarantined) VALUES (?1, 2)
                 ON CONFLICT (token) DO UPDATE SET quarantined = 2"
            } else {
                "UPDATE sources SET quarantined = 0, sightings = 0, far = 0 WHERE token = ?1"
            };
            conn.execute(sql, [token as i64]).map_err(db_err(path))?;
            Ok(())
        })?;
        Ok(())
    }

    /// Takes out what `token` contributed: its part of every station it refined or added
    /// (the sample-weighted mean it added is subtracted; a station it alone made is
    /// withdrawn), its held suspects, and the blocks that lose their agreement without it
    /// (the station comes back as it was before the block). Its record and quarantine go
    /// too. Other processes see the result within their next refresh.
    pub fn revert_token(
        &self,
        db: Option<&Database>,
        token: u64,
    ) -> Result<RevertReport, LearnError> {
        let mut report = RevertReport {
            token: token_label(token),
            ..RevertReport::default()
        };
        let now = super::wall_clock();
        self.with_conn(false, |conn, path| {
            let e = db_err(path);
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(&e)?;
            let mine = self.state.read().unwrap_or_else(|p| p.into_inner()).seq;
            let fresh = read_state(&tx, path, mine)?;
            let mut st = self.state.write().unwrap_or_else(|p| p.into_inner());
            apply_rows(&mut st, fresh);
            let current = |st: &State, key: &StationKey| match st.entries.get(key) {
                Some(e) => e.station,
                None => db.and_then(|db| super::database_station(db, *key)),
            };
            let mut changes: BTreeMap<StationKey, Change> = BTreeMap::new();
            let change_of = |st: &State, key: StationKey| Change {
                key,
                station: current(st, &key),
                block: st.blocks.get(&key).cloned(),
                held: st.held.get(&key).cloned().unwrap_or_default(),
                prev: None,
            };

            // Its part of the stations it refined or added.
            let mut q = tx
                .prepare("SELECT station, samples, lat, lon, range FROM contrib WHERE token = ?1")
                .map_err(&e)?;
            let parts = q
                .query_map([token as i64], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, f64>(2)?,
                        r.get::<_, f64>(3)?,
                        r.get::<_, f64>(4)?,
                    ))
                })
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(&e)?;
            drop(q);
            for (label, samples, lat, lon, range) in parts {
                let Some(key) = StationKey::parse(&label) else {
                    continue;
                };
                let c = changes.entry(key).or_insert_with(|| change_of(&st, key));
                if c.block.is_some() {
                    // Withdrawn: its part matters only if the block is lifted (below).
                    continue;
                }
                if let Some(s) = c.station {
                    c.station = without(&s, samples, lat, lon, range);
                    report.stations += 1;
                }
            }

            // Its held suspects.
            let keys: Vec<StationKey> = st
                .held
                .iter()
                .filter(|(_, h)| h.iter().any(|o| o.source.is_some_and(|s| s.token == token)))
                .map(|(k, _)| *k)
                .collect();
            for key in keys {
                let c = changes.entry(key).or_insert_with(|| change_of(&st, key));
                let before = c.held.len();
                c.held.retain(|o| o.source.is_none_or(|s| s.token != token));
                report.held += (before - c.held.len()) as u64;
            }

            // Blocks it took part in.
            let keys: Vec<StationKey> = st
                .blocks
                .iter()
                .filter(|(_, b)| b.tokens.as_ref().is_some_and(|t| t.contains(&token)))
                .map(|(k, _)| *k)
                .collect();
            for key in keys {
                let c = changes.entry(key).or_insert_with(|| change_of(&st, key));
                let Some(b) = c.block.as_mut() else {
                    continue;
                };
                let rest: Vec<u64> = b.tokens.iter().flatten().copied().filter(|t| *t != token).collect();
                if rest.len() >= MOVED_MIN_SOURCES {
                    b.tokens = Some(rest);
                    continue;
                }
                let prev: Option<(i32, i32, i64)> = tx
                    .query_row(
                        "SELECT prev_lat_e7, prev_lon_e7, prev_meta FROM stations WHERE station = ?1",
                        [key.label()],
                        |r| Ok((r.get::<_, Option<i32>>(0)?, r.get::<_, Option<i32>>(1)?, r.get::<_, Option<i64>>(2)?)),
                    )
                    .map(|(a, b, c)| Some((a?, b?, c?)))
                    .or_else(|err| match err {
                        rusqlite::Error::QueryReturnedNoRows => Ok(None),
                        other => Err(other),
                    })
                    .map_err(&e)?;
                let restored = match prev {
                    Some((lat_e7, lon_e7, meta)) => Some(Station {
                        key: match key {
                            StationKey::Cell { key, .. } => key,
                            StationKey::Wifi(b) => b,
                        },
                        lat_e7,
                        lon_e7,
                        meta: meta as u64,
                    }),
                    None => db.and_then(|db| super::database_station(db, key)),
                };
                c.block = None;
                c.station = restored;
                // What was seen after the block ended is no suspect of the restored station.
                c.held.clear();
                report.unblocked += 1;
            }

            for sql in [
                "DELETE FROM contrib WHERE token = ?1",
                "DELETE FROM contrib_device WHERE token = ?1",
                "DELETE FROM sources WHERE token = ?1",
            ] {
                tx.execute(sql, [token as i64]).map_err(&e)?;
            }
            let seq: i64 = tx
                .query_row(
                    "SELECT coalesce((SELECT value FROM counters WHERE name = 'seq'), 0) + 1",
                    [],
                    |r| r.get(0),
                )
                .map_err(&e)?;
            let changes: Vec<Change> = changes.into_values().collect();
            write_changes(&tx, path, seq, now, &changes)?;
            tx.commit().map_err(&e)?;
            drop(st);
            self.apply_changes(changes, seq, now);
            Ok(())
        })?;
        Ok(report)
    }

    /// The operator's own sightings with an advance that wait for a compaction to fit their
    /// sites' masts, and the last row read (for [`Overlay::drop_advances`]).
    pub fn advances(&self) -> Result<(Vec<Observation>, i64), LearnError> {
        let read = self.with_conn(false, |conn, path| {
            let e = db_err(path);
            let mut stmt = conn
                .prepare("SELECT rowid, station, lat, lon, ta FROM advances ORDER BY rowid")
                .map_err(&e)?;
            let mut rows = stmt.query([]).map_err(&e)?;
            let (mut out, mut last) = (Vec::new(), 0);
            while let Some(r) = rows.next().map_err(&e)? {
                last = r.get(0).map_err(&e)?;
                let label: String = r.get(1).map_err(&e)?;
                let Some(key) = StationKey::parse(&label) else {
                    continue;
                };
                out.push(Observation {
                    ta_m: Some(r.get(4).map_err(&e)?),
                    ..Observation::bare(key, r.get(2).map_err(&e)?, r.get(3).map_err(&e)?)
                });
            }
            out.sort_by_key(|o| o.key);
            Ok((out, last))
        })?;
        Ok(read.unwrap_or_default())
    }

    /// After a generation holding masts fitted from the advances up to row `last` is
    /// committed: drops those of the sites in `fitted` (the others wait for more).
    pub fn drop_advances(&self, last: i64, fitted: &[SiteKey]) -> Result<(), LearnError> {
        if fitted.is_empty() {
            return Ok(());
        }
        self.with_conn(false, |conn, path| {
            let e = db_err(path);
            let tx = conn.transaction().map_err(&e)?;
            {
                let mut drop = tx
                    .prepare_cached("DELETE FROM advances WHERE site = ?1 AND rowid <= ?2")
                    .map_err(&e)?;
                for site in fitted {
                    drop.execute(params![site_label(site), last]).map_err(&e)?;
                }
            }
            tx.commit().map_err(&e)
        })?;
        Ok(())
    }

    /// Every entry not yet folded, and the batch it reaches.
    pub fn snapshot(&self) -> Snapshot {
        let st = self.state.read().unwrap_or_else(|e| e.into_inner());
        Snapshot {
            seq: st.seq,
            stations: st
                .entries
                .iter()
                .filter(|(_, e)| !e.folded)
                .map(|(k, e)| (*k, e.station))
                .collect(),
        }
    }

    /// After a generation holding `snapshot` is committed and the engine switched
    /// to it: drops the learned entries up to its batch (from the file first),
    /// and marks the blocked ones folded (they keep guarding their stations).
    /// Entries learned again since the snapshot stay.
    pub fn fold(&self, snapshot: &Snapshot) -> Result<u64, LearnError> {
        let folded = self.with_conn(false, |conn, path| {
            let e = db_err(path);
            let tx = conn.transaction().map_err(&e)?;
            tx.execute(
                "DELETE FROM stations WHERE seq <= ?1 AND block_until IS NULL
                 AND station NOT IN (SELECT station FROM held)",
                [snapshot.seq],
            )
            .map_err(&e)?;
            tx.execute(
                "UPDATE stations SET folded = 1 WHERE seq <= ?1",
                [snapshot.seq],
            )
            .map_err(&e)?;
            tx.execute(
                "INSERT INTO counters (name, value) VALUES ('folded', ?1)
                 ON CONFLICT (name) DO UPDATE SET value = max(value, excluded.value)",
                [snapshot.seq],
            )
            .map_err(&e)?;
            tx.commit().map_err(&e)?;
            let mut st = self.state.write().unwrap_or_else(|e| e.into_inner());
            let folded = st.fold(snapshot.seq);
            self.len.store(st.entries.len(), Ordering::Release);
            Ok(folded)
        })?;
        Ok(folded.unwrap_or(0))
    }
}

/// A station without one token's part: `samples` added at the sample-weighted mean
/// (`lat`, `lon`, `range`) taken out of the sample-weighted means the station holds. None when
/// nothing is left of it.
fn without(s: &Station, samples: i64, lat: f64, lon: f64, range: f64) -> Option<Station> {
    let (w, n) = (i64::from(s.samples()), samples);
    if n <= 0 {
        return Some(*s);
    }
    if w <= n {
        return None;
    }
    let (wf, nf, rest) = (w as f64, n as f64, (w - n) as f64);
    let info = StationInfo {
        lat: (s.lat() * wf - lat * nf) / rest,
        lon: (s.lon() * wf - lon * nf) / rest,
        range_m: ((s.range_m() as f64 * wf - range * nf) / rest)
            .round()
            .max(1.0) as u32,
        samples: (w - n) as u32,
        psc: s.psc(),
        created: s.created(),
        updated: s.updated(),
        estimated: s.estimated(),
    };
    Some(Station::new(s.key, &info))
}

/// What one token gave one station.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct StationContribution {
    /// [`StationKey::label`].
    pub station: String,
    /// Sightings taken (towards [`TOKEN_CAP_SAMPLES`]).
    pub used: i64,
    /// Samples its estimates added to the station.
    pub samples: i64,
    /// The sample-weighted mean position of what it added.
    pub lat: f64,
    pub lon: f64,
}

/// What one token gave the learned stations.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct TokenContributions {
    /// The token's key: the first 16 hex digits of its SHA-256 (`tokenHash`).
    pub token: String,
    /// Its sightings of stations already known, and how many of them lay far from them.
    pub sightings: i64,
    pub far: i64,
    /// `automatic` or `operator` while quarantined.
    pub quarantined: Option<String>,
    pub stations: Vec<StationContribution>,
    /// Its sightings held as suspects.
    pub held: i64,
    /// Stations whose block its sightings helped agree on.
    pub blocks: Vec<String>,
}

/// What [`Overlay::revert_token`] took out.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct RevertReport {
    pub token: String,
    /// Stations its part was taken out of.
    pub stations: u64,
    /// Held suspects dropped.
    pub held: u64,
    /// Blocks lifted because they no longer had enough agreeing tokens.
    pub unblocked: u64,
}

struct Change {
    key: StationKey,
    station: Option<Station>,
    block: Option<BlockEntry>,
    held: Vec<Observation>,
    /// The station as it was before a block that this change starts (to lift it again).
    prev: Option<Station>,
}

/// Decides a batch (`obs` sorted by station and time) against the memory state and the
/// file's per-token records, which `ledger` reads and updates inside the batch's transaction.
fn decide_batch(
    st: &State,
    db: &Database,
    obs: &[Observation],
    opts: &LearnOptions,
    now: i64,
    report: &mut LearnReport,
    ledger: &mut Ledger<'_>,
) -> Result<Vec<Change>, LearnError> {
    let mut blocks = st.blocks.clone();
    let mut changes = Vec::new();
    for batch in obs.chunk_by(|a, b| a.key == b.key) {
        let key = batch[0].key;
        let joined;
        let group = match st.held.get(&key) {
            Some(h) => {
                let mut all = h.clone();
                all.extend_from_slice(batch);
                all.sort_by_key(|a| a.time);
                joined = all;
                &joined[..]
            }
            None => batch,
        };
        let existing = match st.entries.get(&key) {
            Some(e) => e.station,
            None => super::database_station(db, key),
        };
        let was_blocked = blocks.contains_key(&key);
        // What each token's new sightings of a known station say about the token.
        if let (Some(s), false) = (existing.as_ref(), was_blocked) {
            let mut per: BTreeMap<u64, (i64, i64)> = BTreeMap::new();
            for o in batch {
                if let Some(src) = o.source {
                    let c = per.entry(src.token).or_default();
                    c.0 += 1;
                    c.1 += i64::from(is_far(o, s));
                }
            }
            for (token, (n, far)) in per {
                ledger.count(token, n, far)?;
            }
        }
        let mut suspects = Vec::new();
        let Some(outcome) = decide(
            key,
            group,
            existing.as_ref(),
            &mut blocks,
            opts,
            report,
            &mut suspects,
        ) else {
            continue;
        };
        let block = blocks.get(&key).cloned();
        let mut prev = None;
        if let (Some(b), Some(s), false) = (&block, existing.as_ref(), was_blocked) {
            prev = Some(*s);
            // A confirmed move vindicates the far sightings of the tokens that reported it.
            for &t in b.tokens.iter().flatten() {
                let far = group
                    .iter()
                    .filter(|o| o.source.map(|x| x.token) == Some(t) && is_far(o, s))
                    .count();
                ledger.forgive(t, far as i64)?;
            }
        }
        let station = match outcome {
            Outcome::Withdraw => {
                report.blocked += 1;
                None
            }
            Outcome::Put(o) | Outcome::Refine(o) => {
                // Re-learning after a block replaces the station; otherwise the estimate
                // refines what is known.
                let start = match outcome_replaces(&block, was_blocked) {
                    true => None,
                    false => existing,
                };
                let (station, applied) = learn_parts(key, start, &o, ledger, now, report)?;
                if applied {
                    if existing.is_none() {
                        report.added += 1;
                    } else if start.is_some() {
                        report.refined += 1;
                    }
                }
                match station {
                    Some(s) => Some(s),
                    None if existing.is_none() => continue,
                    None => existing,
                }
            }
        };
        // A blocked station keeps what was seen after its block ended, to be
        // learned again once there is enough of it; any other keeps its far
        // sightings until they make a move or expire.
        let held = match &block {
            Some(b) => {
                // Bounded like suspects: one token must not grow the file without end.
                let mut fresh: Vec<Observation> = group
                    .iter()
                    .filter(|o| o.time.is_some_and(|t| t >= b.until))
                    .cloned()
                    .collect();
                super::trim_suspects(&mut fresh);
                fresh
            }
            None => suspects,
        };
        changes.push(Change {
            key,
            station,
            block,
            held,
            prev,
        });
    }
    Ok(changes)
}

/// Whether a `Put` or `Refine` replaces the station: it does when it re-learns a station
/// whose block just ended.
fn outcome_replaces(block: &Option<BlockEntry>, was_blocked: bool) -> bool {
    was_blocked && block.is_none()
}

/// Learns `obs` into `start` source by source: the trusted sightings as one estimate, then
/// each token's own (quarantined tokens' left out, each token and device held to what its
/// caps still allow), each estimate combined with the station as it stands. A token's
/// estimate is robust within itself only, so one token's sightings never pull another's
/// median or outlier test; and its part is recorded so that it can be taken out again.
/// Returns the station and whether any estimate was applied.
fn learn_parts(
    key: StationKey,
    start: Option<Station>,
    obs: &[Observation],
    ledger: &mut Ledger<'_>,
    now: i64,
    report: &mut LearnReport,
) -> Result<(Option<Station>, bool), LearnError> {
    let wifi = key.is_wifi();
    let label = key.label();
    let mut parts: BTreeMap<Option<u64>, Vec<Observation>> = BTreeMap::new();
    for o in obs {
        match o.source {
            None => parts.entry(None).or_default().push(o.clone()),
            Some(src) if ledger.quarantined(src.token)? => report.quarantined += 1,
            Some(src) => parts.entry(Some(src.token)).or_default().push(o.clone()),
        }
    }
    let mut station = start;
    let mut applied = false;
    for (token, part) in parts {
        let part = match token {
            None => part,
            Some(_) => {
                let mut allowance = BTreeMap::new();
                for o in &part {
                    let src = o.source.expect("a token's part");
                    if let std::collections::btree_map::Entry::Vacant(v) = allowance.entry(src) {
                        v.insert(ledger.allowance(&label, src)?);
                    }
                }
                capped(&part, |src| allowance[&src], report)
            }
        };
        let Some(est) = super::estimate::estimate(&part, wifi) else {
            continue;
        };
        report.outliers += est.rejected as u64;
        let own = station_of(key, &est, now);
        station = Some(match station {
            None => own,
            Some(s) => refine(key, &s, &est, now),
        });
        applied = true;
        if let Some(t) = token {
            ledger.contribute(&label, t, &part, &own)?;
        }
    }
    Ok((station, applied))
}

/// The file's per-token records, read and written inside one learning transaction.
struct Ledger<'a> {
    conn: &'a Connection,
    path: &'a Path,
    quarantine: HashMap<u64, bool>,
}

impl<'a> Ledger<'a> {
    fn new(conn: &'a Connection, path: &'a Path) -> Ledger<'a> {
        Ledger {
            conn,
            path,
            quarantine: HashMap::new(),
        }
    }

    fn quarantined(&mut self, token: u64) -> Result<bool, LearnError> {
        if let Some(q) = self.quarantine.get(&token) {
            return Ok(*q);
        }
        let q: i64 = self
            .conn
            .prepare_cached(
                "SELECT coalesce((SELECT quarantined FROM sources WHERE token = ?1), 0)",
            )
            .and_then(|mut st| st.query_row([token as i64], |r| r.get(0)))
            .map_err(db_err(self.path))?;
        self.quarantine.insert(token, q != 0);
        Ok(q != 0)
    }

    /// Adds `n` sightings of known stations, `far` of them far from the station, to a token's
    /// record, and quarantines it (automatically) when most of them were far.
    fn count(&mut self, token: u64, n: i64, far: i64) -> Result<(), LearnError> {
        self.update(token, n, far)
    }

    /// Takes `far` sightings that a confirmed move proved right off a token's far count.
    fn forgive(&mut self, token: u64, far: i64) -> Result<(), LearnError> {
        self.update(token, 0, -far)
    }

    fn update(&mut self, token: u64, n: i64, far: i64) -> Result<(), LearnError> {
        let e = db_err(self.path);
        self.conn
            .prepare_cached(
                "INSERT INTO sources (token, sightings, far) VALUES (?1, ?2, max(?3, 0))
                 ON CONFLICT (token) DO UPDATE SET sightings = sightings + excluded.sightings,
                   far = max(far + ?3, 0)",
            )
            .and_then(|mut st| st.execute(params![token as i64, n, far]))
            .map_err(&e)?;
        // Automatic quarantine follows the counts; the operator's (2) stays until released.
        self.conn
            .prepare_cached(
                "UPDATE sources SET quarantined = CASE
                   WHEN quarantined = 2 THEN 2
                   WHEN sightings >= ?2 AND far >= sightings * ?3 THEN 1 ELSE 0 END
                 WHERE token = ?1",
            )
            .and_then(|mut st| {
                st.execute(params![
                    token as i64,
                    QUARANTINE_MIN_SIGHTINGS,
                    QUARANTINE_FAR_SHARE
                ])
            })
            .map_err(&e)?;
        self.quarantine.remove(&token);
        Ok(())
    }

    /// What a token, and one device of it, may still add to a station.
    fn allowance(&mut self, label: &str, src: Source) -> Result<(u32, u32), LearnError> {
        let e = db_err(self.path);
        let used_token: i64 = self
            .conn
            .prepare_cached(
                "SELECT coalesce((SELECT used FROM contrib WHERE station = ?1 AND token = ?2), 0)",
            )
            .and_then(|mut st| st.query_row(params![label, src.token as i64], |r| r.get(0)))
            .map_err(&e)?;
        let used_device: i64 = self
            .conn
            .prepare_cached(
                "SELECT coalesce((SELECT used FROM contrib_device
                   WHERE station = ?1 AND token = ?2 AND device = ?3), 0)",
            )
            .and_then(|mut st| {
                st.query_row(params![label, src.token as i64, src.device as i64], |r| {
                    r.get(0)
                })
            })
            .map_err(&e)?;
        let left = |cap: u32, used: i64| (i64::from(cap) - used).max(0) as u32;
        Ok((
            left(TOKEN_CAP_SAMPLES, used_token),
            left(DEVICE_CAP_SAMPLES, used_device),
        ))
    }

    /// Records that `token` gave the station `part` (sightings used) and the estimate `own`.
    fn contribute(
        &mut self,
        label: &str,
        token: u64,
        part: &[Observation],
        own: &Station,
    ) -> Result<(), LearnError> {
        let e = db_err(self.path);
        let n = own.samples() as f64;
        self.conn
            .prepare_cached(
                "INSERT INTO contrib (station, token, used, samples, lat, lon, range)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (station, token) DO UPDATE SET
                   lat = (lat * samples + excluded.lat * excluded.samples) / max(samples + excluded.samples, 1),
                   lon = (lon * samples + excluded.lon * excluded.samples) / max(samples + excluded.samples, 1),
                   range = (range * samples + excluded.range * excluded.samples) / max(samples + excluded.samples, 1),
                   used = used + excluded.used,
                   samples = samples + excluded.samples",
            )
            .and_then(|mut st| {
                st.execute(params![
                    label,
                    token as i64,
                    part.len() as i64,
                    n as i64,
                    own.lat(),
                    own.lon(),
                    own.range_m() as f64
                ])
            })
            .map_err(&e)?;
        let mut per: BTreeMap<u64, i64> = BTreeMap::new();
        for o in part {
            *per.entry(o.source.map_or(0, |s| s.device)).or_default() += 1;
        }
        for (device, used) in per {
            self.conn
                .prepare_cached(
                    "INSERT INTO contrib_device (station, token, device, used) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (station, token, device) DO UPDATE SET used = used + excluded.used",
                )
                .and_then(|mut st| st.execute(params![label, token as i64, device as i64, used]))
                .map_err(&e)?;
        }
        Ok(())
    }
}

fn open_file(path: &Path) -> Result<Connection, LearnError> {
    let e = db_err(path);
    let mut conn = Connection::open(path).map_err(&e)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(&e)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(&e)?;
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(&e)?;
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(&e)?;
    if version > SCHEMA_VERSION {
        return Err(LearnError::Format(format!(
            "{}: schema version {version}; this build knows up to {SCHEMA_VERSION}",
            path.display()
        )));
    }
    if version < SCHEMA_VERSION {
        // Another process may have migrated meanwhile: the version is read again under the lock.
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&e)?;
        let now: i64 = tx
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(&e)?;
        if now == 1 {
            tx.execute_batch(MIGRATE_FROM_1).map_err(&e)?;
        }
        if now < SCHEMA_VERSION {
            tx.execute_batch(&format!("{SCHEMA} PRAGMA user_version = {SCHEMA_VERSION};"))
                .map_err(&e)?;
        }
        tx.commit().map_err(&e)?;
    }
    Ok(conn)
}

struct Row {
    key: StationKey,
    entry: Entry,
    block: Option<BlockEntry>,
    held: Vec<Observation>,
}

/// Rows written after batch `after`, with their held observations.
fn read_state(conn: &Connection, path: &Path, after: i64) -> Result<Vec<Row>, LearnError> {
    let e = db_err(path);
    let mut stmt = conn
        .prepare_cached(
            "SELECT station, seq, learned_at, folded, lat_e7, lon_e7, meta, moved_at, block_until,
               block_tokens
             FROM stations WHERE seq > ?1",
        )
        .map_err(&e)?;
    let mut rows = stmt.query([after]).map_err(&e)?;
    let mut out = Vec::new();
    while let Some(r) = rows.next().map_err(&e)? {
        let label: String = r.get(0).map_err(&e)?;
        let Some(key) = StationKey::parse(&label) else {
            return Err(LearnError::Format(format!(
                "{}: unreadable station {label:?}",
                path.display()
            )));
        };
        let lat: Option<i32> = r.get(4).map_err(&e)?;
        let lon: Option<i32> = r.get(5).map_err(&e)?;
        let meta: Option<i64> = r.get(6).map_err(&e)?;
        let station = match (lat, lon, meta) {
            (Some(lat_e7), Some(lon_e7), Some(meta)) => Some(Station {
                key: match key {
                    StationKey::Cell { key, .. } => key,
                    StationKey::Wifi(b) => b,
                },
                lat_e7,
                lon_e7,
                meta: meta as u64,
            }),
            _ => None,
        };
        let moved_at: Option<i64> = r.get(7).map_err(&e)?;
        let until: Option<i64> = r.get(8).map_err(&e)?;
        let tokens: Option<String> = r.get(9).map_err(&e)?;
        out.push(Row {
            key,
            entry: Entry {
                station,
                seq: r.get(1).map_err(&e)?,
                learned_at: r.get(2).map_err(&e)?,
                folded: r.get::<_, i64>(3).map_err(&e)? != 0,
            },
            block: until.map(|until| BlockEntry {
                station: label.clone(),
                moved_at: moved_at.unwrap_or(until),
                until,
                tokens: tokens.as_deref().map(parse_tokens),
            }),
            held: Vec::new(),
        });
    }
    let mut held = conn
        .prepare_cached(
            "SELECT lat, lon, accuracy, time, speed, signal, ta, psc, token, device
             FROM held WHERE station = ?1",
        )
        .map_err(&e)?;
    for row in out.iter_mut() {
        let label = row.key.label();
        let key = row.key;
        row.held = held
            .query_map([label], |r| {
                Ok(Observation {
                    key,
                    lat: r.get(0)?,
                    lon: r.get(1)?,
                    accuracy_m: r.get(2)?,
                    time: r.get(3)?,
                    speed_mps: r.get(4)?,
                    signal_dbm: r.get(5)?,
                    ta_m: r.get(6)?,
                    psc: r.get(7)?,
                    source: r.get::<_, Option<i64>>(8)?.map(|t| Source {
                        token: t as u64,
                        device: r.get::<_, Option<i64>>(9).ok().flatten().unwrap_or(0) as u64,
                    }),
                })
            })
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(&e)?;
    }
    Ok(out)
}

/// `a1b2...,c3d4...`: token keys as [`token_label`] spells them.
fn format_tokens(tokens: &[u64]) -> String {
    tokens
        .iter()
        .map(|t| token_label(*t))
        .collect::<Vec<_>>()
        .join(",")
}

fn parse_tokens(text: &str) -> Vec<u64> {
    text.split(',')
        .filter_map(|t| u64::from_str_radix(t, 16).ok())
        .collect()
}

fn apply_rows(st: &mut State, rows: Vec<Row>) {
    for r in rows {
        st.seq = st.seq.max(r.entry.seq);
        st.entries.insert(r.key, r.entry);
        match r.block {
            Some(b) => st.blocks.insert(r.key, b),
            None => st.blocks.remove(&r.key),
        };
        st.held.remove(&r.key);
        if !r.held.is_empty() {
            st.held.insert(r.key, r.held);
        }
    }
}

/// A site's name in the `advances` table: `lte/608/2/264192` (radio, mcc, mnc, first cell).
fn site_label(s: &SiteKey) -> String {
    format!("{}/{}/{}/{}", s.radio, s.mcc, s.mnc, s.site)
}

/// Keeps the operator's own sightings with an advance of a batch for the next compaction's
/// masts ([`MAX_SITE_ADVANCES`] a site, the newest).
fn write_advances(
    tx: &rusqlite::Transaction<'_>,
    path: &Path,
    obs: &[Observation],
) -> Result<(), LearnError> {
    let e = db_err(path);
    let mut put = tx
        .prepare_cached(
            "INSERT INTO advances (site, station, lat, lon, ta) VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .map_err(&e)?;
    let mut sites = std::collections::BTreeSet::new();
    for o in obs {
        let (Some(site), Some(ta)) = (super::masts::mast_site(o), o.ta_m) else {
            continue;
        };
        let label = site_label(&site);
        put.execute(params![label, o.key.label(), o.lat, o.lon, ta])
            .map_err(&e)?;
        sites.insert(label);
    }
    let mut trim = tx
        .prepare_cached(
            "DELETE FROM advances WHERE site = ?1 AND rowid NOT IN
               (SELECT rowid FROM advances WHERE site = ?1 ORDER BY rowid DESC LIMIT ?2)",
        )
        .map_err(&e)?;
    for site in sites {
        trim.execute(params![site, MAX_SITE_ADVANCES]).map_err(&e)?;
    }
    Ok(())
}

fn write_changes(
    tx: &rusqlite::Transaction<'_>,
    path: &Path,
    seq: i64,
    now: i64,
    changes: &[Change],
) -> Result<(), LearnError> {
    let e = db_err(path);
    // The station before its block is kept while the block lasts (a change that does not
    // start a block names none).
    let mut put = tx
        .prepare_cached(
            "INSERT INTO stations
             (station, seq, learned_at, folded, lat_e7, lon_e7, meta, moved_at, block_until,
              block_tokens, prev_lat_e7, prev_lon_e7, prev_meta)
             VALUES (?1, ?2, ?3, 0, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
             ON CONFLICT (station) DO UPDATE SET seq = excluded.seq,
               learned_at = excluded.learned_at, folded = 0, lat_e7 = excluded.lat_e7,
               lon_e7 = excluded.lon_e7, meta = excluded.meta, moved_at = excluded.moved_at,
               block_until = excluded.block_until, block_tokens = excluded.block_tokens,
               prev_lat_e7 = CASE WHEN excluded.block_until IS NULL THEN NULL
                 ELSE coalesce(excluded.prev_lat_e7, prev_lat_e7) END,
               prev_lon_e7 = CASE WHEN excluded.block_until IS NULL THEN NULL
                 ELSE coalesce(excluded.prev_lon_e7, prev_lon_e7) END,
               prev_meta = CASE WHEN excluded.block_until IS NULL THEN NULL
                 ELSE coalesce(excluded.prev_meta, prev_meta) END",
        )
        .map_err(&e)?;
    let mut unhold = tx
        .prepare_cached("DELETE FROM held WHERE station = ?1")
        .map_err(&e)?;
    let mut hold = tx
        .prepare_cached(
            "INSERT INTO held (station, lat, lon, accuracy, time, speed, signal, ta, psc, token, device)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )
        .map_err(&e)?;
    for c in changes {
        let label = c.key.label();
        put.execute(params![
            label,
            seq,
            now,
            c.station.map(|s| s.lat_e7),
            c.station.map(|s| s.lon_e7),
            c.station.map(|s| s.meta as i64),
            c.block.as_ref().map(|b| b.moved_at),
            c.block.as_ref().map(|b| b.until),
            c.block
                .as_ref()
                .and_then(|b| b.tokens.as_deref())
                .map(format_tokens),
            c.prev.map(|s| s.lat_e7),
            c.prev.map(|s| s.lon_e7),
            c.prev.map(|s| s.meta as i64),
        ])
        .map_err(&e)?;
        unhold.execute([&label]).map_err(&e)?;
        for o in &c.held {
            hold.execute(params![
                label,
                o.lat,
                o.lon,
                o.accuracy_m,
                o.time,
                o.speed_mps,
                o.signal_dbm,
                o.ta_m,
                o.psc,
                o.source.map(|s| s.token as i64),
                o.source.map(|s| s.device as i64)
            ])
            .map_err(&e)?;
        }
    }
    tx.execute(
        "INSERT INTO counters (name, value) VALUES ('seq', ?1)
         ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        [seq],
    )
    .map_err(&e)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::radio::Radio;

    fn entry(seq: i64) -> Entry {
        Entry {
            station: None,
            seq,
            learned_at: 0,
            folded: false,
        }
    }

    #[test]
    fn a_version_1_file_is_migrated_with_its_rows() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(LEARNED_FILE);
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE stations (station TEXT PRIMARY KEY, seq INTEGER NOT NULL,
               learned_at INTEGER NOT NULL, folded INTEGER NOT NULL DEFAULT 0, lat_e7 INTEGER,
               lon_e7 INTEGER, meta INTEGER, moved_at INTEGER, block_until INTEGER);
             CREATE TABLE held (station TEXT NOT NULL, lat REAL NOT NULL, lon REAL NOT NULL,
               accuracy REAL, time INTEGER, speed REAL, signal REAL, ta REAL, psc INTEGER);
             CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
             INSERT INTO stations VALUES ('wifi/0011223344aa', 1, 0, 0, NULL, NULL, NULL, 5, 10);
             INSERT INTO held VALUES ('wifi/0011223344aa', 50.0, 8.0, 10, 20, NULL, NULL, NULL, NULL);
             INSERT INTO counters VALUES ('seq', 1);
             PRAGMA user_version = 1;",
        )
        .unwrap();
        drop(conn);
        let o = Overlay::open(tmp.path()).unwrap();
        assert_eq!(o.stats().blocked, 1);
        assert!(o.contributions(None).unwrap().is_empty());
        let key = StationKey::Wifi(0x0011_2233_44aa);
        let st = o.state.read().unwrap();
        assert_eq!(st.held[&key][0].source, None);
        assert_eq!(st.blocks[&key].tokens, None);
        drop(st);
        let conn = Connection::open(&path).unwrap();
        let v: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION);
    }

    #[test]
    fn the_filter_never_hides_an_entry_and_mostly_skips_the_rest() {
        let cell = |i: u64| StationKey::Cell {
            radio: Radio::Lte,
            mcc: 262,
            mnc: 1,
            key: i,
        };
        let mut e = Entries::default();
        for i in 0..20_000u64 {
            e.insert(cell(i), entry(i as i64));
            e.insert(StationKey::Wifi(i << 8), entry(i as i64));
        }
        assert!((0..20_000u64).all(|i| e.get(&cell(i)).is_some()));
        assert!((0..20_000u64).all(|i| e.get(&StationKey::Wifi(i << 8)).is_some()));
        let passed = (20_000..120_000u64).filter(|&i| e.maybe(&cell(i))).count();
        assert!(
            passed < 5_000,
            "{passed} of 100,000 absent keys passed the filter"
        );
        e.retain(|_, v| v.seq % 2 == 0);
        assert!((0..20_000u64).all(|i| e.get(&cell(i)).is_some() == (i % 2 == 0)));
    }
}
