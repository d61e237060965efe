//! GPS submissions of `/process` (`gps_sandbox: 0`), as the server stores them in
//! `observations.sqlite`: each row holds the request's GPS fixes and its normalised cells
//! and access points (JSON, see docs/tokens.md). Every station of a row is observed at the
//! row's most accurate fix.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use serde::Deserialize;

use super::read::{FileReport, ObservationFormat};
use super::{LearnError, LearnOptions, Observation, Source, StationKey};
use crate::radio::Radio;
use crate::store::record::cell_key;

#[derive(Deserialize)]
struct Fix {
    lat: f64,
    lon: f64,
    accuracy: Option<f64>,
    speed: Option<f64>,
    /// Milliseconds since the epoch.
    timestamp: Option<f64>,
}

#[derive(Deserialize)]
struct Cell {
    radio: i64,
    mcc: i64,
    mnc: i64,
    lac: i64,
    cid: i64,
    signal: Option<f64>,
    ta: Option<f64>,
    psc: Option<f64>,
}

#[derive(Deserialize)]
struct Ap {
    bssid: f64,
    signal: Option<f64>,
}

/// True when the file starts with SQLite's header.
pub fn is_sqlite(magic: &[u8]) -> bool {
    magic.starts_with(b"SQLite format 3\0")
}

/// Reads every submission of the `observations` table at `path`.
pub fn read(
    path: &Path,
    label: &str,
    opts: &LearnOptions,
    sink: &mut dyn FnMut(u64, Observation),
    tick: &mut dyn FnMut(u64, u64) -> Result<(), LearnError>,
) -> Result<FileReport, LearnError> {
    let err = |e: rusqlite::Error| LearnError::Io(format!("{label}: {e}"));
    let db = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(err)?;
    let has_table: bool = db
        .query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'observations'",
            [],
            |r| r.get(0),
        )
        .map_err(err)?;
    if !has_table {
        return Err(LearnError::Format(format!(
            "{label}: an SQLite file without an `observations` table (the GPS submissions the server stores)"
        )));
    }
    let mut report = FileReport {
        file: label.to_string(),
        format: ObservationFormat::Submissions,
        rows: 0,
        accepted: 0,
        rejected: 0,
        skipped: 0,
        bad_lines: Vec::new(),
    };
    let mut stmt = db
        .prepare(
            "SELECT id, received_at, gps, cells, wifi, token_hash, device_id FROM observations ORDER BY id",
        )
        .map_err(err)?;
    let mut rows = stmt.query([]).map_err(err)?;
    while let Some(row) = rows.next().map_err(err)? {
        report.rows += 1;
        let id: i64 = row.get(0).map_err(err)?;
        let received_ms: i64 = row.get(1).map_err(err)?;
        let (gps, cells, wifi): (String, String, String) = (
            row.get(2).map_err(err)?,
            row.get(3).map_err(err)?,
            row.get(4).map_err(err)?,
        );
        let token_hash: String = row.get(5).map_err(err)?;
        let device: Option<String> = row.get(6).map_err(err)?;
        // Submitted through a token: an untrusted source, whatever file it is read from.
        let source = Source::of(&token_hash, device.as_deref());
        match observations(received_ms, &gps, &cells, &wifi, Some(source)) {
            Ok(list) if list.is_empty() => report.skipped += 1,
            Ok(list) => {
                report.accepted += 1;
                list.into_iter().for_each(|o| sink(id as u64, o));
            }
            Err(why) => {
                report.rejected += 1;
                if report.bad_lines.len() < opts.max_error_lines {
                    report.bad_lines.push((id as u64, why));
                }
            }
        }
        if report.rows.is_multiple_of(4096) {
            tick(0, report.rows)?;
        }
    }
    tick(0, report.rows)?;
    Ok(report)
}

/// How far past the time the server received it a fix's own timestamp may lie; later
/// timestamps are read as the receiving time. A fix from the future would make every other
/// sighting of its stations look old (older sightings weigh less and expire as suspects).
pub const MAX_FUTURE_MS: i64 = 60_000;

/// The observations of one submission (its JSON columns, see docs/tokens.md): its
/// stations at its most accurate fix, reported by `source` (None: trusted).
pub fn observations(
    received_ms: i64,
    gps: &str,
    cells: &str,
    wifi: &str,
    source: Option<Source>,
) -> Result<Vec<Observation>, String> {
    let fixes: Vec<Fix> = serde_json::from_str(gps).map_err(|e| format!("gps: {e}"))?;
    let cells: Vec<Cell> = serde_json::from_str(cells).map_err(|e| format!("cells: {e}"))?;
    let aps: Vec<Ap> = serde_json::from_str(wifi).map_err(|e| format!("wifi: {e}"))?;
    let fix = fixes
        .iter()
        .filter(|f| (-90.0..=90.0).contains(&f.lat) && (-180.0..=180.0).contains(&f.lon))
        .min_by(|a, b| {
            a.accuracy
                .unwrap_or(f64::MAX)
                .total_cmp(&b.accuracy.unwrap_or(f64::MAX))
        })
        .ok_or("no valid GPS fix")?;
    let time = Some(
        fix.timestamp
            .filter(|t| *t <= (received_ms + MAX_FUTURE_MS) as f64)
            .map_or(received_ms / 1000, |t| (t / 1000.0) as i64),
    );
    let at =
        |key: StationKey, signal: Option<f64>, ta_m: Option<f64>, psc: Option<u16>| Observation {
            key,
            lat: fix.lat,
            lon: fix.lon,
            accuracy_m: fix.accuracy,
            time,
            speed_mps: fix.speed,
            signal_dbm: signal,
            ta_m,
            psc,
            source,
        };
    let mut out = Vec::with_capacity(cells.len() + aps.len());
    for (i, c) in cells.iter().enumerate() {
        // The request validator wrote these; anything else (a CDMA cell without mcc: -1)
        // cannot be keyed and is passed over.
        let radio = u8::try_from(c.radio).ok().and_then(Radio::from_code);
        let (Some(radio), Ok(mcc), Ok(mnc), Ok(lac), Ok(cid)) = (
            radio,
            u16::try_from(c.mcc),
            u16::try_from(c.mnc),
            u32::try_from(c.lac),
            u64::try_from(c.cid),
        ) else {
            continue;
        };
        // The serving cell's advance, as the file readers state it: its step's near edge.
        let ta_m = match (i, c.ta) {
            (0, Some(ta)) => radio.ta_step_m().map(|s| ta * s),
            _ => None,
        };
        let key = StationKey::Cell {
            radio,
            mcc,
            mnc,
            key: cell_key(radio, lac, cid),
        };
        out.push(at(key, c.signal, ta_m, c.psc.map(|p| p as u16)));
    }
    for a in &aps {
        if a.bssid >= 0.0 && a.bssid < 281_474_976_710_656.0 && a.bssid.fract() == 0.0 {
            out.push(at(StationKey::Wifi(a.bssid as u64), a.signal, None, None));
        }
    }
    Ok(out)
}
