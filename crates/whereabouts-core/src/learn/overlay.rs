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

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, RwLock, RwLockReadGuard};

use rusqlite::{params, Connection, TransactionBehavior};

use super::{decide, settle, BlockEntry, LearnError, LearnOptions, LearnReport};
use super::{Observation, StationKey};
use crate::store::record::Station;
use crate::store::Database;

/// The overlay's file, next to the manifest.
pub const LEARNED_FILE: &str = "learned.sqlite";

const SCHEMA_VERSION: i64 = 1;
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS stations (
  station TEXT PRIMARY KEY,   -- StationKey::label: lte/272/1/40122/11016962, wifi/0011223344aa
  seq INTEGER NOT NULL,       -- the learning batch that wrote the row
  learned_at INTEGER NOT NULL,-- unix seconds (wall clock) of that batch
  folded INTEGER NOT NULL DEFAULT 0, -- 1: already in a database generation (kept for its block)
  lat_e7 INTEGER, lon_e7 INTEGER, meta INTEGER, -- the station record; NULL when withdrawn
  moved_at INTEGER, block_until INTEGER         -- set while the station is blocklisted
);
CREATE TABLE IF NOT EXISTS held (
  -- observations of a blocklisted station after its block ended, kept until there are
  -- enough to learn it again; of any other station, its sightings far from it, kept
  -- until enough agree on a move or they expire (learn::SUSPECT_TTL_S)
  station TEXT NOT NULL, lat REAL NOT NULL, lon REAL NOT NULL, accuracy REAL, time INTEGER,
  speed REAL, signal REAL, ta REAL, psc INTEGER
);
CREATE INDEX IF NOT EXISTS held_station ON held (station);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
";

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
        let held = &self.held;
        self.entries.retain(|k, e| {
            if e.seq > seq || e.folded {
                return true;
            }
            folded += 1;
            e.folded = true;
            // Blocked entries keep guarding their station, and entries with held
            // sightings keep them reachable (the file's held rows hang off them).
            e.station.is_none() || held.contains_key(k)
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
                self.decide_batch(&st, db, &obs, opts, now, &mut report)
            };
            write_changes(&tx, path, seq, now, &changes)?;
            tx.commit().map_err(&e)?;
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
            Ok(())
        });
        result?;
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    fn decide_batch(
        &self,
        st: &State,
        db: &Database,
        obs: &[Observation],
        opts: &LearnOptions,
        now: i64,
        report: &mut LearnReport,
    ) -> Vec<Change> {
        let mut blocks = st.blocks.clone();
        let mut changes = Vec::new();
        for group in obs.chunk_by(|a, b| a.key == b.key) {
            let key = group[0].key;
            let joined;
            let group = match st.held.get(&key) {
                Some(h) => {
                    let mut all = h.clone();
                    all.extend_from_slice(group);
                    all.sort_by_key(|a| a.time);
                    joined = all;
                    &joined[..]
                }
                None => group,
            };
            let existing = match st.entries.get(&key) {
                Some(e) => e.station,
                None => super::database_station(db, key),
            };
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
            let station = settle(key, outcome, existing.as_ref(), now, report);
            let block = blocks.get(&key).cloned();
            // A blocked station keeps what was seen after its block ended, to be
            // learned again once there is enough of it; any other keeps its far
            // sightings until they make a move or expire.
            let held = match &block {
                Some(b) => group
                    .iter()
                    .filter(|o| o.time.is_some_and(|t| t >= b.until))
                    .cloned()
                    .collect(),
                None => suspects,
            };
            changes.push(Change {
                key,
                station,
                block,
                held,
            });
        }
        changes
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

struct Change {
    key: StationKey,
    station: Option<Station>,
    block: Option<BlockEntry>,
    held: Vec<Observation>,
}

fn open_file(path: &Path) -> Result<Connection, LearnError> {
    let e = db_err(path);
    let conn = Connection::open(path).map_err(&e)?;
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
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
        ))
        .map_err(&e)?;
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
            "SELECT station, seq, learned_at, folded, lat_e7, lon_e7, meta, moved_at, block_until
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
            }),
            held: Vec::new(),
        });
    }
    let mut held = conn
        .prepare_cached(
            "SELECT lat, lon, accuracy, time, speed, signal, ta, psc FROM held WHERE station = ?1",
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
                })
            })
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(&e)?;
    }
    Ok(out)
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

fn write_changes(
    tx: &rusqlite::Transaction<'_>,
    path: &Path,
    seq: i64,
    now: i64,
    changes: &[Change],
) -> Result<(), LearnError> {
    let e = db_err(path);
    let mut put = tx
        .prepare_cached(
            "INSERT OR REPLACE INTO stations
             (station, seq, learned_at, folded, lat_e7, lon_e7, meta, moved_at, block_until)
             VALUES (?1, ?2, ?3, 0, ?4, ?5, ?6, ?7, ?8)",
        )
        .map_err(&e)?;
    let mut unhold = tx
        .prepare_cached("DELETE FROM held WHERE station = ?1")
        .map_err(&e)?;
    let mut hold = tx
        .prepare_cached(
            "INSERT INTO held (station, lat, lon, accuracy, time, speed, signal, ta, psc)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
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
                o.psc
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
