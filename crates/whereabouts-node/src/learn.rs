//! `learnFiles`: runs the core learner on a worker thread (the event loop stays
//! free) and reports progress through a threadsafe callback.

use std::path::PathBuf;

use napi::bindgen_prelude::{AsyncTask, Float64Array, Uint8Array};
use napi::{Env, Error, Result, Status, Task};
use napi_derive::napi;

use crate::progress::{bad_lines, forward, ProgressFn};
use whereabouts_core::learn::read::{read_observations, FileReport};
use whereabouts_core::learn::{
    learn_files as core_learn, LearnOptions, LearnReport, Observation, StationKey,
};
use whereabouts_core::radio::Radio;
use whereabouts_core::store::record::{key_cid, key_lac};

#[napi(object)]
pub struct LearnFileOptions {
    /// MCC and MNC for files that carry none (G-NetTrack exports).
    pub mcc: Option<u32>,
    pub mnc: Option<u32>,
    /// How long a moved station stays withdrawn, in days.
    pub block_days: Option<f64>,
    /// Per file (by position), the sorted line numbers not to learn from: the rows an
    /// evaluation tests on.
    pub held_out: Option<Vec<Vec<f64>>>,
}

#[napi(object)]
pub struct LearnFileReport {
    pub file: String,
    pub format: String,
    pub rows: f64,
    pub accepted: f64,
    pub rejected: f64,
    pub skipped: f64,
    pub bad_lines: Vec<crate::progress::BadLine>,
}

/// What a learning run did with its observations (counts of stations unless named
/// otherwise): the live learner answers these alone, `learnFiles` within [`LearnSummary`].
#[napi(object)]
pub struct LearnCounts {
    pub observations: f64,
    pub outliers: f64,
    pub added: f64,
    pub refined: f64,
    pub moved: f64,
    pub relearned: f64,
    pub blocked: f64,
    /// Sightings beyond what their token or device may add to a station.
    pub capped: f64,
    /// Sightings of quarantined tokens (held, not learned).
    pub quarantined: f64,
    pub seconds: f64,
}

impl From<&LearnReport> for LearnCounts {
    fn from(r: &LearnReport) -> Self {
        LearnCounts {
            observations: r.observations as f64,
            outliers: r.outliers as f64,
            added: r.added as f64,
            refined: r.refined as f64,
            moved: r.moved as f64,
            relearned: r.relearned as f64,
            blocked: r.blocked as f64,
            capped: r.capped as f64,
            quarantined: r.quarantined as f64,
            seconds: r.seconds,
        }
    }
}

/// What `learnFiles` did: per file, the counts, then the new database's totals.
#[napi(object)]
pub struct LearnSummary {
    pub files: Vec<LearnFileReport>,
    pub counts: LearnCounts,
    /// Site masts fitted from timing advances that the new database keeps.
    pub masts: f64,
    /// Learned cells placed by received level that the new database keeps.
    pub levels: f64,
    /// Learned cells placed by timing advance around their site's mast that the new database
    /// keeps.
    pub advances: f64,
    pub cells: f64,
    pub wifi: f64,
    pub shards: f64,
    pub bytes: f64,
}

pub struct LearnTask {
    db: PathBuf,
    files: Vec<PathBuf>,
    options: LearnOptions,
    progress: Option<ProgressFn>,
}

impl Task for LearnTask {
    type Output = LearnReport;
    type JsValue = LearnSummary;

    fn compute(&mut self) -> Result<LearnReport> {
        let mut report = forward(self.progress.as_ref());
        let (db, files, options) = (&self.db, &self.files, &self.options);
        crate::guarded("learn", move || {
            core_learn(db, files, options, &mut report).map_err(crate::err)
        })
    }

    fn resolve(&mut self, _env: Env, r: LearnReport) -> Result<LearnSummary> {
        Ok(LearnSummary {
            counts: LearnCounts::from(&r),
            files: r.files.into_iter().map(file_report).collect(),
            masts: r.masts as f64,
            levels: r.levels as f64,
            advances: r.advances as f64,
            cells: r.cells as f64,
            wifi: r.wifi as f64,
            shards: r.shards as f64,
            bytes: r.bytes as f64,
        })
    }
}

fn file_report(f: FileReport) -> LearnFileReport {
    LearnFileReport {
        file: f.file,
        format: format!("{:?}", f.format),
        rows: f.rows as f64,
        accepted: f.accepted as f64,
        rejected: f.rejected as f64,
        skipped: f.skipped as f64,
        bad_lines: bad_lines(f.bad_lines),
    }
}

fn code(what: &str, v: Option<u32>, max: u32) -> Result<Option<u16>> {
    match v {
        Some(n) if n > max => Err(Error::new(
            Status::InvalidArg,
            format!("{what} {n} out of range 0..={max}"),
        )),
        v => Ok(v.map(|n| n as u16)),
    }
}

/// Learns station positions from GPS-tagged observation files and merges them
/// into a database directory (see `whereabouts learn`).
#[napi(ts_return_type = "Promise<LearnSummary>")]
pub fn learn_files(
    db: String,
    files: Vec<String>,
    options: Option<LearnFileOptions>,
    #[napi(ts_arg_type = "(progress: FileProgress) => void")] progress: Option<ProgressFn>,
) -> Result<AsyncTask<LearnTask>> {
    let o = options.unwrap_or(LearnFileOptions {
        mcc: None,
        mnc: None,
        block_days: None,
        held_out: None,
    });
    let mut options = LearnOptions {
        mcc: code("mcc", o.mcc, 999)?,
        mnc: code("mnc", o.mnc, 32_767)?,
        ..LearnOptions::default()
    };
    for lines in o.held_out.unwrap_or_default() {
        let mut lines: Vec<u64> = lines.into_iter().map(|l| l as u64).collect();
        lines.sort_unstable();
        options.held_out.push(lines);
    }
    if let Some(d) = o.block_days {
        if !(d.is_finite() && d >= 0.0) {
            return Err(Error::new(
                Status::InvalidArg,
                format!("block days {d} must be a number >= 0"),
            ));
        }
        options.block_s = (d * 86_400.0) as i64;
    }
    Ok(AsyncTask::new(LearnTask {
        db: PathBuf::from(db),
        files: files.into_iter().map(PathBuf::from).collect(),
        options,
        progress,
    }))
}

/// The accepted observations of one file as columns (one entry per observation, in
/// file order), for `whereabouts eval`: numbers absent from a row are NaN.
#[napi(object)]
pub struct ObservationColumns {
    pub report: LearnFileReport,
    /// 1-based line number (the submission id for `observations.sqlite`).
    pub line: Float64Array,
    /// Unix seconds.
    pub time: Float64Array,
    pub lat: Float64Array,
    pub lon: Float64Array,
    /// GPS accuracy in metres.
    pub accuracy: Float64Array,
    /// Metres a second.
    pub speed: Float64Array,
    /// The radio's name (`gsm`, `lte`, ...) or `wifi`, as an index into `kinds`.
    pub kind: Uint8Array,
    pub kinds: Vec<String>,
    pub mcc: Float64Array,
    pub mnc: Float64Array,
    pub lac: Float64Array,
    /// The cell id, or the access point's BSSID as a 48-bit number.
    pub id: Float64Array,
    /// dBm.
    pub signal: Float64Array,
    /// Timing advance in the radio's steps.
    pub ta: Float64Array,
}

type FileObservations = (FileReport, Vec<(u64, Observation)>);

pub struct ReadTask {
    files: Vec<PathBuf>,
    options: LearnOptions,
}

impl Task for ReadTask {
    type Output = Vec<FileObservations>;
    type JsValue = Vec<ObservationColumns>;

    fn compute(&mut self) -> Result<Vec<FileObservations>> {
        let (files, options) = (&self.files, &self.options);
        crate::guarded("readObservations", move || {
            files
                .iter()
                .map(|f| read_observations(f, options).map_err(crate::err))
                .collect()
        })
    }

    fn resolve(
        &mut self,
        _env: Env,
        out: Vec<FileObservations>,
    ) -> Result<Vec<ObservationColumns>> {
        Ok(out.into_iter().map(|(r, obs)| columns(r, obs)).collect())
    }
}

const WIFI_KIND: u8 = Radio::ALL.len() as u8;

fn columns(r: FileReport, obs: Vec<(u64, Observation)>) -> ObservationColumns {
    let n = obs.len();
    let nan = f64::NAN;
    let mut c: [Vec<f64>; 12] = std::array::from_fn(|_| Vec::with_capacity(n));
    let mut kind = Vec::with_capacity(n);
    for (line, o) in obs {
        let (k, mcc, mnc, lac, id, step) = match o.key {
            StationKey::Cell {
                radio,
                mcc,
                mnc,
                key,
            } => (
                radio as u8,
                mcc as f64,
                mnc as f64,
                key_lac(key) as f64,
                key_cid(radio, key) as f64,
                radio.ta_step_m().unwrap_or(nan),
            ),
            StationKey::Wifi(b) => (WIFI_KIND, nan, nan, nan, b as f64, nan),
        };
        let values = [
            line as f64,
            o.time.map_or(nan, |t| t as f64),
            o.lat,
            o.lon,
            o.accuracy_m.unwrap_or(nan),
            o.speed_mps.unwrap_or(nan),
            mcc,
            mnc,
            lac,
            id,
            o.signal_dbm.unwrap_or(nan),
            o.ta_m.map_or(nan, |m| (m / step).round()),
        ];
        for (col, v) in c.iter_mut().zip(values) {
            col.push(v);
        }
        kind.push(k);
    }
    let [line, time, lat, lon, accuracy, speed, mcc, mnc, lac, id, signal, ta] = c;
    let mut kinds: Vec<String> = Radio::ALL.iter().map(|r| r.name().to_string()).collect();
    kinds.push("wifi".into());
    ObservationColumns {
        report: file_report(r),
        line: line.into(),
        time: time.into(),
        lat: lat.into(),
        lon: lon.into(),
        accuracy: accuracy.into(),
        speed: speed.into(),
        kind: kind.into(),
        kinds,
        mcc: mcc.into(),
        mnc: mnc.into(),
        lac: lac.into(),
        id: id.into(),
        signal: signal.into(),
        ta: ta.into(),
    }
}

/// Reads GPS-tagged observation files (the formats of `learnFiles`) without learning
/// from them: their accepted rows as columns, with each file's report.
#[napi(ts_return_type = "Promise<Array<ObservationColumns>>")]
pub fn read_observation_files(
    files: Vec<String>,
    options: Option<LearnFileOptions>,
) -> Result<AsyncTask<ReadTask>> {
    let o = options.unwrap_or(LearnFileOptions {
        mcc: None,
        mnc: None,
        block_days: None,
        held_out: None,
    });
    Ok(AsyncTask::new(ReadTask {
        files: files.into_iter().map(PathBuf::from).collect(),
        options: LearnOptions {
            mcc: code("mcc", o.mcc, 999)?,
            mnc: code("mnc", o.mnc, 32_767)?,
            ..LearnOptions::default()
        },
    }))
}

/// A token's key as the overlay counts it: the first 16 hex digits of its `tokenHash`.
fn token_arg(hash: &str) -> Result<u64> {
    whereabouts_core::learn::token_key(hash).ok_or_else(|| {
        Error::new(
            Status::InvalidArg,
            format!("{hash:?} is not a token hash (hex SHA-256, at least 16 digits)"),
        )
    })
}

fn overlay_of(db: &str) -> Result<whereabouts_core::learn::overlay::Overlay> {
    whereabouts_core::learn::overlay::Overlay::open(std::path::Path::new(db)).map_err(crate::err)
}

/// What tokens gave the learned stations of `db` (all of them, or the one whose hash is
/// `token_hash`), as JSON: see `Overlay::contributions`.
#[napi]
pub fn learned_contributions(db: String, token_hash: Option<String>) -> Result<String> {
    crate::guarded("learnedContributions", || {
        let token = token_hash.as_deref().map(token_arg).transpose()?;
        let list = overlay_of(&db)?.contributions(token).map_err(crate::err)?;
        serde_json::to_string(&list).map_err(|e| Error::from_reason(e.to_string()))
    })
}

/// Takes out what the token whose hash is `token_hash` contributed to the learned stations
/// of `db`; the report as JSON (see `Overlay::revert_token`).
#[napi]
pub fn revert_learned_token(db: String, token_hash: String) -> Result<String> {
    crate::guarded("revertLearnedToken", || {
        let token = token_arg(&token_hash)?;
        let dir = std::path::Path::new(&db);
        let database = if whereabouts_core::store::Manifest::read(dir)
            .map_err(crate::err)?
            .is_some()
        {
            Some(whereabouts_core::store::Database::open(dir).map_err(crate::err)?)
        } else {
            None
        };
        let report = overlay_of(&db)?
            .revert_token(database.as_ref(), token)
            .map_err(crate::err)?;
        serde_json::to_string(&report).map_err(|e| Error::from_reason(e.to_string()))
    })
}

/// Quarantines (`on`) or releases the token whose hash is `token_hash` in `db`'s learning.
#[napi]
pub fn quarantine_learned_token(db: String, token_hash: String, on: bool) -> Result<()> {
    crate::guarded("quarantineLearnedToken", || {
        let token = token_arg(&token_hash)?;
        overlay_of(&db)?
            .set_quarantine(token, on)
            .map_err(crate::err)
    })
}
