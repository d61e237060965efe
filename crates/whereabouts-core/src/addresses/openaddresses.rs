//! OpenAddresses CSV (`LON,LAT,NUMBER,STREET,UNIT,CITY,DISTRICT,REGION,POSTCODE`, plain or
//! gzip). Columns are found by name in any case and order, so that extra columns (HASH, ID)
//! and lower-case headers are fine. UNIT, DISTRICT and REGION are not kept: answers are at
//! the house, and OpenAddresses' DISTRICT is a county as often as a suburb.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::atomic::Ordering;

use super::builder::{AddressExtra, AddressSet};
use crate::import::parse::{parse_e7, split_quoted};
use crate::import::source::{io_err, keep_bad, open_text};
use crate::import::{FileReport, ImportError, Phase, Progress, Reporter, SourceKind};

/// Columns an OpenAddresses file must have.
pub const REQUIRED: [&str; 4] = ["lon", "lat", "number", "street"];

/// Where each column we read is, by name.
#[derive(Clone, Copy, Debug)]
struct Columns {
    lon: usize,
    lat: usize,
    number: usize,
    street: usize,
    city: Option<usize>,
    postcode: Option<usize>,
}

fn header_names(line: &str) -> Vec<String> {
    line.trim_start_matches('\u{feff}')
        .split(',')
        .map(|s| s.trim().trim_matches('"').to_ascii_lowercase())
        .collect()
}

fn columns(line: &str) -> Option<Columns> {
    let names = header_names(line);
    let at = |n: &str| names.iter().position(|h| h == n);
    Some(Columns {
        lon: at("lon")?,
        lat: at("lat")?,
        number: at("number")?,
        street: at("street")?,
        city: at("city"),
        postcode: at("postcode"),
    })
}

/// Whether a first line is an OpenAddresses header.
pub fn is_header(line: &str) -> bool {
    columns(line).is_some()
}

fn split(line: &str) -> Result<Vec<String>, String> {
    if line.contains('"') {
        split_quoted(line.as_bytes())
            .map_err(|_| "unbalanced double quote".to_string())?
            .into_iter()
            .map(|f| String::from_utf8(f).map_err(|_| "not UTF-8".to_string()))
            .collect()
    } else {
        Ok(line.split(',').map(str::to_string).collect())
    }
}

fn coordinate(name: &str, text: &str, max_e7: i64) -> Result<i32, String> {
    match parse_e7(text.as_bytes()) {
        Ok(Some(v)) if v.abs() <= max_e7 => Ok(v as i32),
        Ok(Some(_)) => Err(format!("{name}: out of range {text:?}")),
        Ok(None) => Err(format!("{name}: missing")),
        Err(()) => Err(format!("{name}: not a number {text:?}")),
    }
}

/// Reads one OpenAddresses file into `set`.
pub(crate) fn read(
    path: &Path,
    set: &mut AddressSet,
    max_bad: usize,
    reporter: &mut Reporter,
) -> Result<FileReport, ImportError> {
    let name = path.display().to_string();
    let (reader, counter, total) = open_text(path)?;
    let mut reader = BufReader::with_capacity(1 << 18, reader);
    let mut report = FileReport {
        file: name.clone(),
        kind: SourceKind::OpenAddressesCsv,
        rows: 0,
        accepted: 0,
        rejected: 0,
        bad_lines: Vec::new(),
    };
    let progress = |rows: u64| Progress {
        file: name.clone(),
        bytes_done: counter.load(Ordering::Relaxed),
        bytes_total: total,
        rows,
        phase: Phase::Reading,
    };
    reporter.report(true, || progress(0))?;
    let mut line: Vec<u8> = Vec::new();
    let mut line_no = 0u64;
    let mut cols: Option<Columns> = None;
    loop {
        line.clear();
        if reader
            .read_until(b'\n', &mut line)
            .map_err(|e| io_err(path, e))?
            == 0
        {
            break;
        }
        line_no += 1;
        let Ok(text) = std::str::from_utf8(&line) else {
            report.rows += 1;
            keep_bad(&mut report, max_bad, line_no, || "not UTF-8".into());
            continue;
        };
        let text = text.trim_end_matches(['\n', '\r']);
        if text.trim().is_empty() {
            continue;
        }
        let Some(c) = cols else {
            cols = Some(columns(text).ok_or_else(|| {
                ImportError::Format(format!(
                    "{name}: line {line_no}: not an OpenAddresses header (it needs the columns \
                     LON, LAT, NUMBER and STREET)"
                ))
            })?);
            continue;
        };
        report.rows += 1;
        match parse_row(text, c) {
            Ok((lat, lon, f)) => {
                report.accepted += 1;
                let field = |i: Option<usize>| i.and_then(|i| f.get(i)).map(String::as_str);
                set.add_address(
                    lat,
                    lon,
                    &f[c.number],
                    &f[c.street],
                    AddressExtra {
                        postcode: field(c.postcode),
                        city: field(c.city),
                        suburb: None,
                    },
                );
            }
            Err(why) => keep_bad(&mut report, max_bad, line_no, || why),
        }
        if report.rows.is_multiple_of(8192) {
            let rows = report.rows;
            reporter.report(false, || progress(rows))?;
        }
    }
    if cols.is_none() {
        return Err(ImportError::Format(format!(
            "{name}: empty file (an OpenAddresses CSV starts with a header)"
        )));
    }
    let rows = report.rows;
    reporter.report(true, || progress(rows))?;
    Ok(report)
}

fn parse_row(text: &str, c: Columns) -> Result<(i32, i32, Vec<String>), String> {
    let f = split(text)?;
    let need = c.lon.max(c.lat).max(c.number).max(c.street) + 1;
    if f.len() < need {
        return Err(format!("{} fields, expected at least {need}", f.len()));
    }
    let lon = coordinate("lon", &f[c.lon], 1_800_000_000)?;
    let lat = coordinate("lat", &f[c.lat], 900_000_000)?;
    if lat == 0 && lon == 0 {
        return Err("lat/lon: 0,0 is a placeholder, not a position".into());
    }
    if f[c.number].trim().is_empty() {
        return Err("number: missing".into());
    }
    if f[c.street].trim().is_empty() {
        return Err("street: missing".into());
    }
    Ok((lat, lon, f))
}
