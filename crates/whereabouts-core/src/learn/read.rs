//! Readers of GPS-tagged observation files, detected by their first line:
//! OpenCelliD measurements, G-NetTrack exports (the CSV dialect with `RAWCELLID` and
//! the tab-separated one with `Node`/`CellID`) and WiGLE CSV. Each row becomes
//! at most one [`Observation`]; rows that cannot are counted as rejected (with a
//! reason) or skipped (rows that are valid but not for us: other WiGLE types,
//! `_nomap` networks), never silently dropped.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::atomic::Ordering;

use super::{LearnError, LearnOptions, Observation, StationKey};
use crate::import::source::{open_input, peek, GZIP_MAGIC};
use crate::radio::Radio;
use crate::store::record::cell_key;

/// What an input file turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum ObservationFormat {
    OpenCellIdMeasurements,
    GNetTrack,
    /// G-NetTrack Pro's tab-separated log: `Operator` (MCC and MNC run together),
    /// `NetworkTech`, the cell identity split into `Node` and `CellID`, `Level`, `TA`.
    GNetTrackLog,
    Wigle,
    /// The server's `observations.sqlite` (GPS submissions of `/process`).
    Submissions,
}

/// Per-file outcome: `rows = accepted + rejected + skipped`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FileReport {
    pub file: String,
    pub format: ObservationFormat,
    pub rows: u64,
    pub accepted: u64,
    pub rejected: u64,
    /// Valid rows that are not station observations for us (non-WiFi WiGLE
    /// rows, networks that opted out with `_nomap`).
    pub skipped: u64,
    /// The first `max_error_lines` rejected rows: 1-based line number and reason.
    pub bad_lines: Vec<(u64, String)>,
}

/// The header of OpenCelliD measurement files.
pub const OPENCELLID_HEADER: &str =
    "mcc,mnc,lac,cellid,lat,lon,signal,measured_at,rating,speed,direction,act,ta,psc,tac,pci,sid,nid,bid";
/// Columns a G-NetTrack export must have for us (it has many more).
const GNETTRACK_NEEDED: [&str; 7] = [
    "timestamp",
    "longitude",
    "latitude",
    "speed",
    "networkmode",
    "lachex",
    "rawcellid",
];
/// Columns of G-NetTrack Pro's tab-separated log that we read (`TA` when present).
const GNETTRACK_LOG_NEEDED: [&str; 9] = [
    "timestamp",
    "longitude",
    "latitude",
    "operator",
    "node",
    "cellid",
    "lac",
    "networktech",
    "level",
];
const WIGLE_PREAMBLE: &str = "wiglewifi-";
const WIGLE_NEEDED: [&str; 8] = [
    "mac",
    "ssid",
    "firstseen",
    "rssi",
    "currentlatitude",
    "currentlongitude",
    "accuracymeters",
    "type",
];

/// Splits one line: tab-separated when `tabs` (no quoting), else CSV.
fn split_row(line: &str, tabs: bool, out: &mut Vec<String>) {
    if tabs {
        out.clear();
        out.extend(line.split('\t').map(|s| s.trim().to_string()));
    } else {
        split_csv(line, out);
    }
}

/// Splits one CSV line; fields may be double-quoted with `""` escapes (WiGLE
/// quotes SSIDs holding commas).
fn split_csv(line: &str, out: &mut Vec<String>) {
    out.clear();
    if !line.contains('"') {
        out.extend(line.split(',').map(|s| s.trim().to_string()));
        return;
    }
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut field).trim().to_string()),
            _ => field.push(c),
        }
    }
    out.push(field.trim().to_string());
}

fn norm_header(h: &str) -> String {
    h.trim()
        .trim_start_matches('\u{feff}')
        .trim_matches('"')
        .trim()
        .to_ascii_lowercase()
}

/// Column positions by lower-case name.
struct Columns(Vec<String>);

impl Columns {
    /// A header line's columns: tab-separated when it holds a tab and no comma.
    fn new(header: &str) -> Columns {
        let mut f = Vec::new();
        split_row(header, is_tabbed(header), &mut f);
        Columns(f.iter().map(|h| norm_header(h)).collect())
    }
    fn has_all(&self, names: &[&str]) -> bool {
        names.iter().all(|n| self.0.iter().any(|c| c == n))
    }
    fn idx(&self, name: &str) -> Option<usize> {
        self.0.iter().position(|c| c == name)
    }
}

fn is_tabbed(header: &str) -> bool {
    header.contains('\t') && !header.contains(',')
}

/// A field that may be absent, empty or a placeholder (`-`, `NaN`).
fn opt(fields: &[String], i: Option<usize>) -> Option<&str> {
    let s = fields.get(i?)?.as_str();
    if s.is_empty() || s == "-" || s.eq_ignore_ascii_case("nan") || s.eq_ignore_ascii_case("null") {
        None
    } else {
        Some(s)
    }
}

fn num(fields: &[String], i: Option<usize>) -> Option<f64> {
    opt(fields, i)?
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
}

fn int(fields: &[String], i: Option<usize>) -> Option<i64> {
    let v = num(fields, i)?;
    (v.fract() == 0.0).then_some(v as i64)
}

fn position(lat: Option<f64>, lon: Option<f64>) -> Result<(f64, f64), String> {
    match (lat, lon) {
        (Some(la), Some(lo)) if la == 0.0 && lo == 0.0 => Err("position 0,0 (no fix)".into()),
        (Some(la), Some(lo)) if (-90.0..=90.0).contains(&la) && (-180.0..=180.0).contains(&lo) => {
            Ok((la, lo))
        }
        (Some(la), Some(lo)) => Err(format!("position {la},{lo} out of range")),
        _ => Err("missing or malformed latitude/longitude".into()),
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY?MM?DD?hh?mm?ss` with any single separators (`2019.12.01_12.11.21`,
/// `2019-12-01 12:11:21`), read as UTC: neither format says its zone.
pub fn parse_datetime(s: &str) -> Option<i64> {
    let parts: Vec<i64> = s
        .split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    if parts.len() < 6 {
        return None;
    }
    let (y, mo, d, h, mi, se) = (parts[0], parts[1], parts[2], parts[3], parts[4], parts[5]);
    if !(1970..=2200).contains(&y)
        || !(1..=12).contains(&mo)
        || !(1..=31).contains(&d)
        || h > 23
        || mi > 59
        || se > 60
    {
        return None;
    }
    Some(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se)
}

/// 12 hex digits, bare or in pairs joined by `:` or `-`; never a group address or zero.
pub fn parse_bssid(s: &str) -> Option<u64> {
    let hex: String = s.chars().filter(|c| *c != ':' && *c != '-').collect();
    if hex.len() != 12 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let v = u64::from_str_radix(&hex, 16).ok()?;
    // The group bit of the first octet: multicast/broadcast, never an access point.
    if v == 0 || (v >> 40) & 1 == 1 {
        return None;
    }
    Some(v)
}

/// Networks whose owners asked not to be mapped.
pub fn opted_out(ssid: &str) -> bool {
    ssid.ends_with("_nomap") || ssid.ends_with("_optout")
}

fn cell(radio: Radio, mcc: i64, mnc: i64, lac: i64, cid: i64) -> Result<StationKey, String> {
    if !(0..=999).contains(&mcc) {
        return Err(format!("mcc {mcc} out of range 0..=999"));
    }
    if mnc < 0 || mnc > radio.max_mnc() as i64 {
        return Err(format!("mnc {mnc} out of range for {radio}"));
    }
    if lac < 0 || lac > radio.max_lac() as i64 {
        return Err(format!("lac {lac} out of range for {radio}"));
    }
    if cid < 0 || cid as u64 > radio.max_cid() {
        return Err(format!("cid {cid} out of range for {radio}"));
    }
    Ok(StationKey::Cell {
        radio,
        mcc: mcc as u16,
        mnc: mnc as u16,
        key: cell_key(radio, lac as u32, cid as u64),
    })
}

/// G-NetTrack's `NetworkMode` names; 5G here is non-standalone, which reports
/// its LTE anchor cell.
pub fn radio_of_network_mode(mode: &str) -> Option<Radio> {
    match mode.trim().to_ascii_uppercase().as_str() {
        "5G" | "LTE" | "LTE-A" | "LTE+" | "4G" => Some(Radio::Lte),
        "HSPA+" | "HSPA" | "UMTS" | "HSUPA" | "HSDPA" | "WCDMA" | "3G" => Some(Radio::Umts),
        "GPRS" | "EDGE" | "GSM" | "2G" => Some(Radio::Gsm),
        _ => None,
    }
}

type RowFn<'a> = dyn FnMut(&[String]) -> Row + 'a;

enum Row {
    Accept(Observation),
    Reject(String),
    Skip,
}

/// Reads `path`, calling `sink` for each accepted observation with its 1-based line
/// number (the submission id for `observations.sqlite`) and `tick` with (bytes read,
/// rows) now and then.
pub fn read_file(
    path: &Path,
    opts: &LearnOptions,
    sink: &mut dyn FnMut(u64, Observation),
    tick: &mut dyn FnMut(u64, u64) -> Result<(), LearnError>,
) -> Result<FileReport, LearnError> {
    let label = crate::import::file_label(path);
    let io = |e: std::io::Error| LearnError::Io(format!("{}: {e}", path.display()));
    let opened = open_input(path).map_err(|e| LearnError::Io(e.to_string()))?;
    let bytes_read = opened.counter;
    let (head, rest) = peek(opened.reader, 16).map_err(io)?;
    if super::submissions::is_sqlite(&head) {
        if opened.length == 0 {
            return Err(LearnError::Format(format!(
                "{label}: a SQLite file is read in place: name the file, not a pipe"
            )));
        }
        return super::submissions::read(path, &label, opts, sink, tick);
    }
    let reader: Box<dyn BufRead> = if head.starts_with(&GZIP_MAGIC) {
        Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(rest)))
    } else {
        Box::new(BufReader::with_capacity(1 << 20, rest))
    };
    let bytes = || bytes_read.load(Ordering::Relaxed);
    let mut lines = reader.lines().enumerate();
    let mut first = None;
    for (i, l) in lines.by_ref() {
        let l = l.map_err(io)?;
        if !l.trim().is_empty() {
            first = Some((i, l));
            break;
        }
    }
    let Some((_, first)) = first else {
        return Err(LearnError::Format(format!("{label}: empty file")));
    };
    let first_norm = norm_header(&first);
    let (format, header) = if first_norm.starts_with(WIGLE_PREAMBLE) {
        let mut header = None;
        for (_, l) in lines.by_ref() {
            let l = l.map_err(io)?;
            if !l.trim().is_empty() {
                header = Some(l);
                break;
            }
        }
        (ObservationFormat::Wigle, header.unwrap_or_default())
    } else {
        let cols = Columns::new(&first);
        if cols.has_all(&["mcc", "mnc", "lac", "cellid", "lat", "lon"]) {
            (ObservationFormat::OpenCellIdMeasurements, first.clone())
        } else if cols.has_all(&GNETTRACK_NEEDED) {
            (ObservationFormat::GNetTrack, first.clone())
        } else if cols.has_all(&GNETTRACK_LOG_NEEDED) {
            (ObservationFormat::GNetTrackLog, first.clone())
        } else {
            return Err(LearnError::Format(format!(
                "{label}: unknown observation format (first line {:?}); {}",
                first.chars().take(120).collect::<String>(),
                accepted_formats()
            )));
        }
    };
    let cols = Columns::new(&header);
    if format == ObservationFormat::Wigle && !cols.has_all(&WIGLE_NEEDED) {
        return Err(LearnError::Format(format!(
            "{label}: WiGLE preamble without the expected header (found {:?})",
            header.chars().take(120).collect::<String>()
        )));
    }
    let mut row_fn: Box<RowFn> = match format {
        ObservationFormat::OpenCellIdMeasurements => Box::new(opencellid_row(&cols)),
        ObservationFormat::GNetTrack => {
            let (Some(mcc), Some(mnc)) = (opts.mcc, opts.mnc) else {
                return Err(LearnError::Format(format!(
                    "{label}: G-NetTrack exports carry no MCC/MNC; give them (--mcc N --mnc N)"
                )));
            };
            Box::new(gnettrack_row(&cols, mcc, mnc))
        }
        ObservationFormat::GNetTrackLog => Box::new(gnettrack_log_row(&cols, opts.mcc, opts.mnc)),
        ObservationFormat::Wigle => Box::new(wigle_row(&cols)),
        // Detected from the SQLite header before any line is read.
        ObservationFormat::Submissions => {
            unreachable!("SQLite submissions are read by learn::submissions")
        }
    };

    let mut report = FileReport {
        file: label,
        format,
        rows: 0,
        accepted: 0,
        rejected: 0,
        skipped: 0,
        bad_lines: Vec::new(),
    };
    let mut fields = Vec::new();
    let width = cols.0.len();
    let tabs = is_tabbed(&header);
    for (i, l) in lines {
        let l = l.map_err(io)?;
        if l.trim().is_empty() {
            continue;
        }
        report.rows += 1;
        split_row(&l, tabs, &mut fields);
        let row = if fields.len() < width && format != ObservationFormat::Wigle {
            Row::Reject(format!("{} fields, expected {width}", fields.len()))
        } else {
            row_fn(&fields)
        };
        match row {
            Row::Accept(o) => {
                report.accepted += 1;
                sink(i as u64 + 1, o);
            }
            Row::Skip => report.skipped += 1,
            Row::Reject(reason) => {
                report.rejected += 1;
                if report.bad_lines.len() < opts.max_error_lines {
                    report.bad_lines.push((i as u64 + 1, reason));
                }
            }
        }
        if report.rows.is_multiple_of(4096) {
            tick(bytes(), report.rows)?;
        }
    }
    tick(bytes(), report.rows)?;
    Ok(report)
}

fn opencellid_row(cols: &Columns) -> impl FnMut(&[String]) -> Row {
    let c = |n: &str| cols.idx(n);
    let (mcc, mnc, lac, cellid, lat, lon) = (
        c("mcc"),
        c("mnc"),
        c("lac"),
        c("cellid"),
        c("lat"),
        c("lon"),
    );
    let (signal, measured_at, rating, speed, act, ta) = (
        c("signal"),
        c("measured_at"),
        c("rating"),
        c("speed"),
        c("act"),
        c("ta"),
    );
    let (psc, tac, pci, sid, nid, bid) =
        (c("psc"), c("tac"), c("pci"), c("sid"), c("nid"), c("bid"));
    move |f: &[String]| {
        let (la, lo) = match position(num(f, lat), num(f, lon)) {
            Ok(p) => p,
            Err(e) => return Row::Reject(e),
        };
        let radio = match opt(f, act) {
            Some(a) => match Radio::parse(a).or_else(|| radio_of_network_mode(a)) {
                Some(r) => r,
                None => return Row::Reject(format!("unknown radio {a:?}")),
            },
            // Files without `act` are GSM-era exports; the id width tells UMTS apart.
            None => match int(f, cellid) {
                Some(id) if id > 65_535 => Radio::Umts,
                _ => Radio::Gsm,
            },
        };
        let key = if radio == Radio::Cdma {
            match (int(f, sid), int(f, nid), int(f, bid), int(f, mcc)) {
                (Some(s), Some(n), Some(b), Some(m)) => cell(radio, m, s, n, b),
                _ => Err("CDMA row without mcc, sid, nid and bid".into()),
            }
        } else {
            let area = if matches!(radio, Radio::Lte | Radio::Nr | Radio::Nbiot) {
                int(f, tac).or_else(|| int(f, lac))
            } else {
                int(f, lac)
            };
            match (int(f, mcc), int(f, mnc), area, int(f, cellid)) {
                (Some(m), Some(n), Some(a), Some(id)) => cell(radio, m, n, a, id),
                _ => Err("missing or malformed mcc, mnc, lac/tac or cellid".into()),
            }
        };
        let key = match key {
            Ok(k) => k,
            Err(e) => return Row::Reject(e),
        };
        // measured_at is milliseconds in OpenCelliD's files; accept seconds too.
        let time = int(f, measured_at).map(|t| if t > 100_000_000_000 { t / 1000 } else { t });
        let signal = num(f, signal).filter(|s| (-150.0..0.0).contains(s));
        let step = radio.ta_step_m();
        let ta_m = step.and_then(|s| {
            int(f, ta)
                .filter(|t| (0..=2047).contains(t))
                .map(|t| t as f64 * s)
        });
        let code = int(f, pci).or_else(|| int(f, psc));
        Row::Accept(Observation {
            key,
            lat: la,
            lon: lo,
            accuracy_m: num(f, rating).filter(|a| *a > 0.0),
            time,
            speed_mps: num(f, speed).filter(|s| *s >= 0.0),
            signal_dbm: signal,
            ta_m,
            psc: code.filter(|c| (0..=1007).contains(c)).map(|c| c as u16),
            source: None,
        })
    }
}

fn gnettrack_row(cols: &Columns, mcc: u16, mnc: u16) -> impl FnMut(&[String]) -> Row {
    let c = |n: &str| cols.idx(n);
    let (ts, lon, lat, speed, mode, lachex, raw, rsrp, rssi) = (
        c("timestamp"),
        c("longitude"),
        c("latitude"),
        c("speed"),
        c("networkmode"),
        c("lachex"),
        c("rawcellid"),
        c("rsrp"),
        c("rssi"),
    );
    move |f: &[String]| {
        let (la, lo) = match position(num(f, lat), num(f, lon)) {
            Ok(p) => p,
            Err(e) => return Row::Reject(e),
        };
        let Some(m) = opt(f, mode) else {
            return Row::Reject("no NetworkMode".into());
        };
        let Some(radio) = radio_of_network_mode(m) else {
            return Row::Reject(format!("unknown NetworkMode {m:?}"));
        };
        let Some(area) = opt(f, lachex).and_then(|h| i64::from_str_radix(h, 16).ok()) else {
            return Row::Reject("missing or malformed LACHEX".into());
        };
        // G-NetTrack writes 0 when the phone did not report the area.
        if area == 0 {
            return Row::Reject("LAC/TAC 0 (not reported)".into());
        }
        let Some(id) = int(f, raw) else {
            return Row::Reject("missing or malformed RAWCELLID".into());
        };
        let key = match cell(radio, mcc as i64, mnc as i64, area, id) {
            Ok(k) => k,
            Err(e) => return Row::Reject(e),
        };
        let signal = num(f, rsrp)
            .or_else(|| num(f, rssi))
            .filter(|s| (-150.0..0.0).contains(s));
        Row::Accept(Observation {
            key,
            lat: la,
            lon: lo,
            accuracy_m: None,
            time: opt(f, ts).and_then(parse_datetime),
            // G-NetTrack reports km/h.
            speed_mps: num(f, speed).filter(|s| *s >= 0.0).map(|s| s / 3.6),
            signal_dbm: signal,
            ta_m: None,
            psc: None,
            source: None,
        })
    }
}

/// MCC and MNC from G-NetTrack's `Operator` (`60801`: MCC 608, MNC 01; six digits
/// give a three-digit MNC).
fn split_operator(s: &str) -> Option<(i64, i64)> {
    if !(5..=6).contains(&s.len()) || !s.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some((s[..3].parse().ok()?, s[3..].parse().ok()?))
}

/// The cell id of a G-NetTrack log row from its split identity: LTE's 28-bit ECI is the
/// eNB (`Node`) times 256 plus the sector (`CellID`); UMTS's 28-bit UTRAN cell id is the
/// RNC (`Node`) times 65,536 plus the 16-bit cell (`CellID`); GSM's is `CellID` alone.
/// The convention was checked on the Dakar logs (`../shared/data/gnettrack-dakar`): LTE
/// `CellID`s there are small sector numbers (1 to 42) under a few eNBs, UMTS `CellID`s
/// run to 60,957 under one `Node` a network (an RNC), as OpenCelliD's long UMTS ids split.
fn split_cell_id(radio: Radio, node: Option<i64>, id: i64) -> Result<i64, String> {
    match radio {
        Radio::Lte => match node {
            Some(n) if (0..256).contains(&id) && n >= 0 => Ok(n * 256 + id),
            Some(_) => Err(format!("LTE CellID {id} is not a sector number (0..=255)")),
            None => Err("LTE row without Node (eNB)".into()),
        },
        Radio::Umts => match node {
            Some(n) if (0..65_536).contains(&id) && n >= 0 => Ok(n * 65_536 + id),
            Some(_) => Err(format!("UMTS CellID {id} out of range 0..=65535")),
            // Without the RNC the id is all there is.
            None => Ok(id),
        },
        _ => Ok(id),
    }
}

/// G-NetTrack Pro's tab-separated log. The network is each row's `Operator`; the
/// `--mcc`/`--mnc` options stand in where a row's is missing.
fn gnettrack_log_row(
    cols: &Columns,
    mcc: Option<u16>,
    mnc: Option<u16>,
) -> impl FnMut(&[String]) -> Row {
    let c = |n: &str| cols.idx(n);
    let (ts, lon, lat, operator, node, cellid, lac, tech, level, ta, psc) = (
        c("timestamp"),
        c("longitude"),
        c("latitude"),
        c("operator"),
        c("node"),
        c("cellid"),
        c("lac"),
        c("networktech"),
        c("level"),
        c("ta"),
        c("psc"),
    );
    move |f: &[String]| {
        let (la, lo) = match position(num(f, lat), num(f, lon)) {
            Ok(p) => p,
            Err(e) => return Row::Reject(e),
        };
        let Some(t) = opt(f, tech) else {
            return Row::Reject("no NetworkTech".into());
        };
        let Some(radio) = radio_of_network_mode(t) else {
            return Row::Reject(format!("unknown NetworkTech {t:?}"));
        };
        let net = match opt(f, operator) {
            Some(o) => match split_operator(o) {
                Some(p) => p,
                None => {
                    return Row::Reject(format!(
                        "Operator {o:?} is not MCC and MNC (5 or 6 digits)"
                    ))
                }
            },
            None => match (mcc, mnc) {
                (Some(m), Some(n)) => (i64::from(m), i64::from(n)),
                _ => return Row::Reject("no Operator (MCC and MNC); give --mcc and --mnc".into()),
            },
        };
        let (Some(area), Some(id)) = (int(f, lac), int(f, cellid)) else {
            return Row::Reject("missing or malformed LAC or CellID".into());
        };
        // The phone writes 0 for both when it did not report the cell.
        if area == 0 || id == 0 {
            return Row::Reject("LAC or CellID 0 (not reported)".into());
        }
        let key = match split_cell_id(radio, int(f, node), id)
            .and_then(|cid| cell(radio, net.0, net.1, area, cid))
        {
            Ok(k) => k,
            Err(e) => return Row::Reject(e),
        };
        let step = radio.ta_step_m();
        let ta_m = step.and_then(|s| {
            int(f, ta)
                .filter(|t| (0..=2047).contains(t))
                .map(|t| t as f64 * s)
        });
        let code = int(f, psc).filter(|c| (0..=1007).contains(c) && radio != Radio::Gsm);
        Row::Accept(Observation {
            key,
            lat: la,
            lon: lo,
            accuracy_m: None,
            time: opt(f, ts).and_then(parse_datetime),
            // The log has no speed column.
            speed_mps: None,
            signal_dbm: num(f, level).filter(|s| (-150.0..0.0).contains(s)),
            ta_m,
            psc: code.map(|c| c as u16),
            source: None,
        })
    }
}

fn wigle_row(cols: &Columns) -> impl FnMut(&[String]) -> Row {
    let c = |n: &str| cols.idx(n);
    let (mac, ssid, seen, rssi, lat, lon, acc, kind) = (
        c("mac"),
        c("ssid"),
        c("firstseen"),
        c("rssi"),
        c("currentlatitude"),
        c("currentlongitude"),
        c("accuracymeters"),
        c("type"),
    );
    move |f: &[String]| {
        match opt(f, kind) {
            Some(k) if k.eq_ignore_ascii_case("wifi") => {}
            Some(_) => return Row::Skip,
            None => return Row::Reject("no Type".into()),
        }
        if opt(f, ssid).is_some_and(opted_out) {
            return Row::Skip;
        }
        let Some(bssid) = opt(f, mac).and_then(parse_bssid) else {
            return Row::Reject("missing or invalid MAC".into());
        };
        let (la, lo) = match position(num(f, lat), num(f, lon)) {
            Ok(p) => p,
            Err(e) => return Row::Reject(e),
        };
        Row::Accept(Observation {
            key: StationKey::Wifi(bssid),
            lat: la,
            lon: lo,
            accuracy_m: num(f, acc).filter(|a| *a > 0.0),
            time: opt(f, seen).and_then(parse_datetime),
            speed_mps: None,
            signal_dbm: num(f, rssi).filter(|s| (-150.0..0.0).contains(s)),
            ta_m: None,
            psc: None,
            source: None,
        })
    }
}

/// Every accepted observation of `path` with its line number ([`read_file`]'s), and
/// the file's report: what an evaluation turns into requests whose truth is known.
pub fn read_observations(
    path: &Path,
    opts: &LearnOptions,
) -> Result<(FileReport, Vec<(u64, Observation)>), LearnError> {
    let mut out = Vec::new();
    let report = read_file(
        path,
        opts,
        &mut |line, o| out.push((line, o)),
        &mut |_, _| Ok(()),
    )?;
    Ok((report, out))
}

/// One sentence naming the accepted formats, for front ends' help and errors.
pub fn accepted_formats() -> String {
    format!(
        "accepted: OpenCelliD measurements ({OPENCELLID_HEADER}), G-NetTrack exports \
         (Timestamp,Longitude,Latitude,Speed,...,NetworkMode,...,LACHEX,RAWCELLID,...), \
         G-NetTrack Pro logs (tab-separated Timestamp,Longitude,Latitude,...,Operator,...,Node,\
         CellID,LAC,NetworkTech,Level,...,TA,...) and WiGLE CSV (a WigleWifi-1.4 line, then MAC,SSID,AuthMode,FirstSeen,Channel,\
         RSSI,CurrentLatitude,CurrentLongitude,AltitudeMeters,AccuracyMeters,Type), \
         plain or gzip; and the server's observations.sqlite (GPS submissions of /process)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_macs() {
        assert_eq!(parse_datetime("1970.01.01_00.00.01"), Some(1));
        assert_eq!(parse_datetime("2019-12-01 12:11:21"), Some(1_575_202_281));
        assert_eq!(parse_datetime("2019.12.01_12.11.21"), Some(1_575_202_281));
        assert_eq!(parse_datetime("yesterday"), None);
        assert_eq!(parse_bssid("00:11:22:aa:bb:cc"), Some(0x0011_22aa_bbcc));
        assert_eq!(parse_bssid("01:00:5e:00:00:01"), None);
        assert_eq!(parse_bssid("00:00:00:00:00:00"), None);
        assert!(opted_out("Home_nomap") && !opted_out("nomap_Home"));
    }

    #[test]
    fn quoted_fields() {
        let mut f = Vec::new();
        split_csv(r#"a,"b, ""c""",d"#, &mut f);
        assert_eq!(f, vec!["a", r#"b, "c""#, "d"]);
    }

    #[test]
    fn network_modes() {
        assert_eq!(radio_of_network_mode("5G"), Some(Radio::Lte));
        assert_eq!(radio_of_network_mode("HSPA+"), Some(Radio::Umts));
        assert_eq!(radio_of_network_mode("EDGE"), Some(Radio::Gsm));
        assert_eq!(radio_of_network_mode("NoService"), None);
    }
}
