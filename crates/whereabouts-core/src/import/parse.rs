//! Row parsing and validation. The exports this reads never quote fields, so the
//! fast path splits on commas and parses numbers by hand; a line with a quote
//! takes the careful path. Failures are small values until a caller decides to
//! keep the line's reason, so rejecting millions of rows allocates nothing.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::rec::{pack_net, unix_to_day, Rec, PSC_NONE, REC_LEARNED, WIFI_NET};
use crate::radio::Radio;
use crate::store::record::{cell_key, Estimated};

/// The OpenCelliD / MLS cell export header.
pub const CELL_HEADER: &str =
    "radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal";
/// The WiFi station file header.
pub const WIFI_HEADER: &str = "bssid,lat,lon,range,samples,created,updated";

const CELL_FIELDS: usize = 14;
const WIFI_FIELDS: usize = 7;
/// Room for a few more fields than any layout has, so that a count is reported.
const MAX_FIELDS: usize = 24;

/// Coverage radius assumed when a row gives none (or 0), per radio: the order of a
/// typical macro cell of that technology, erring large so that accuracy radii stay honest.
pub fn default_range_m(radio: Option<Radio>) -> u16 {
    match radio {
        Some(Radio::Gsm) => 3_000,
        Some(Radio::Cdma) => 5_000,
        Some(Radio::Umts) => 2_000,
        Some(Radio::Lte) => 1_500,
        Some(Radio::Nbiot) => 3_000,
        Some(Radio::Nr) => 500,
        None => 100, // WiFi
    }
}

/// Largest meaningful PSC/PCI per radio; GSM and CDMA have none.
pub fn max_psc(radio: Radio) -> Option<u16> {
    match radio {
        Radio::Umts => Some(511),
        Radio::Lte | Radio::Nbiot => Some(503),
        Radio::Nr => Some(1007),
        Radio::Gsm | Radio::Cdma => None,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    Cell,
    Wifi,
}

impl Layout {
    fn fields(self) -> usize {
        match self {
            Layout::Cell => CELL_FIELDS,
            Layout::Wifi => WIFI_FIELDS,
        }
    }
}

/// What a first line says about the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detected {
    Header(Layout),
    /// No header: the first line is already a row of this layout.
    Data(Layout),
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Radio,
    Mcc,
    Mnc,
    Lac,
    Cid,
    Lon,
    Lat,
    Range,
    Samples,
    Created,
    Updated,
    Bssid,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Field::Radio => "radio",
            Field::Mcc => "mcc",
            Field::Mnc => "mnc",
            Field::Lac => "lac",
            Field::Cid => "cid",
            Field::Lon => "lon",
            Field::Lat => "lat",
            Field::Range => "range",
            Field::Samples => "samples",
            Field::Created => "created",
            Field::Updated => "updated",
            Field::Bssid => "bssid",
        }
    }

    fn csv_index(self, layout: Layout) -> Option<usize> {
        Some(match (layout, self) {
            (Layout::Cell, Field::Radio) => 0,
            (Layout::Cell, Field::Mcc) => 1,
            (Layout::Cell, Field::Mnc) => 2,
            (Layout::Cell, Field::Lac) => 3,
            (Layout::Cell, Field::Cid) => 4,
            (Layout::Cell, Field::Lon) => 6,
            (Layout::Cell, Field::Lat) => 7,
            (Layout::Cell, Field::Range) => 8,
            (Layout::Cell, Field::Samples) => 9,
            (Layout::Cell, Field::Created) => 11,
            (Layout::Cell, Field::Updated) => 12,
            (Layout::Wifi, Field::Bssid) => 0,
            (Layout::Wifi, Field::Lat) => 1,
            (Layout::Wifi, Field::Lon) => 2,
            (Layout::Wifi, Field::Range) => 3,
            (Layout::Wifi, Field::Samples) => 4,
            (Layout::Wifi, Field::Created) => 5,
            (Layout::Wifi, Field::Updated) => 6,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    Missing,
    NotNumber,
    OutOfRange(i64),
    /// Valid text that names no known radio or no usable BSSID.
    Unknown,
    MulticastBssid,
}

/// Why a row was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reject {
    FieldCount {
        found: usize,
        expected: usize,
    },
    Bad {
        field: Field,
        problem: Problem,
    },
    NullIsland,
    UnbalancedQuote,
    /// SQLite: a `radio` column value that names no radio.
    SqliteRadio,
}

fn bad(field: Field, problem: Problem) -> Reject {
    Reject::Bad { field, problem }
}

/// Integers in cell/row fields before validation against the radio's ranges.
#[derive(Clone, Copy, Debug, Default)]
pub struct RawCell {
    pub mcc: i64,
    pub mnc: i64,
    pub lac: i64,
    pub cid: i64,
    pub psc: Option<i64>,
    pub lat_e7: i64,
    pub lon_e7: i64,
    pub range: Option<i64>,
    pub samples: Option<i64>,
    pub created: Option<i64>,
    pub updated: Option<i64>,
    /// From the export's `changeable` column: 0 marks a position that is not a crowd average
    /// (OpenCelliD's exact positions; the learned positions of our sync pages, `sync.rs`).
    pub estimated: Estimated,
}

fn check_position(lat_e7: i64, lon_e7: i64) -> Result<(), Reject> {
    if !(-900_000_000..=900_000_000).contains(&lat_e7) {
        return Err(bad(Field::Lat, Problem::OutOfRange(lat_e7)));
    }
    if !(-1_800_000_000..=1_800_000_000).contains(&lon_e7) {
        return Err(bad(Field::Lon, Problem::OutOfRange(lon_e7)));
    }
    if lat_e7 == 0 && lon_e7 == 0 {
        return Err(Reject::NullIsland);
    }
    Ok(())
}

fn common(
    radio: Option<Radio>,
    range: Option<i64>,
    samples: Option<i64>,
    created: Option<i64>,
    updated: Option<i64>,
) -> Result<(u16, u32, u16, u16), Reject> {
    let range_m = match range {
        None | Some(0) => default_range_m(radio),
        Some(r) if r < 0 => return Err(bad(Field::Range, Problem::OutOfRange(r))),
        Some(r) => r.min(u16::MAX as i64) as u16,
    };
    let samples = match samples {
        None => 0,
        Some(s) if s < 0 => return Err(bad(Field::Samples, Problem::OutOfRange(s))),
        Some(s) => s.min(u32::MAX as i64) as u32,
    };
    // One missing time takes the other, so that an unknown `created` does not
    // win every later min() as the epoch.
    let (created, updated) = match (created, updated) {
        (Some(c), Some(u)) => (c, u),
        (Some(t), None) | (None, Some(t)) => (t, t),
        (None, None) => (0, 0),
    };
    Ok((range_m, samples, unix_to_day(created), unix_to_day(updated)))
}

/// Checks a cell against its radio's ranges (spec table 2.3) and builds its record.
pub fn validate_cell(radio: Radio, c: &RawCell) -> Result<Rec, Reject> {
    if !(0..=999).contains(&c.mcc) {
        return Err(bad(Field::Mcc, Problem::OutOfRange(c.mcc)));
    }
    if !(0..=radio.max_mnc() as i64).contains(&c.mnc) {
        return Err(bad(Field::Mnc, Problem::OutOfRange(c.mnc)));
    }
    if !(0..=radio.max_lac() as i64).contains(&c.lac) {
        return Err(bad(Field::Lac, Problem::OutOfRange(c.lac)));
    }
    if !(0..=radio.max_cid() as i64).contains(&c.cid) {
        return Err(bad(Field::Cid, Problem::OutOfRange(c.cid)));
    }
    check_position(c.lat_e7, c.lon_e7)?;
    let (range_m, samples, created_day, updated_day) =
        common(Some(radio), c.range, c.samples, c.created, c.updated)?;
    // An impossible PSC/PCI says nothing about the cell itself: keep the cell.
    let psc = match (c.psc, max_psc(radio)) {
        (Some(p), Some(max)) if (0..=max as i64).contains(&p) => p as u16,
        _ => PSC_NONE,
    };
    let psc_learned = psc
        | match c.estimated {
            Estimated::Averaged => 0,
            Estimated::Learned => REC_LEARNED,
        };
    Ok(Rec {
        key: cell_key(radio, c.lac as u32, c.cid as u64),
        net: pack_net(radio, c.mcc as u16, c.mnc as u16),
        lat_e7: c.lat_e7 as i32,
        lon_e7: c.lon_e7 as i32,
        samples,
        range_m,
        created_day,
        updated_day,
        psc_learned,
    })
}

#[inline]
fn trim(mut b: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = b {
        if first.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = b {
        if last.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    b
}

/// An optional signed integer: `Ok(None)` for an empty field.
#[inline]
pub fn parse_int(b: &[u8]) -> Result<Option<i64>, ()> {
    let b = trim(b);
    let (neg, digits) = match b {
        [] => return Ok(None),
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, b),
    };
    if digits.is_empty() || digits.len() > 18 {
        return parse_int_slow(b);
    }
    let mut v: i64 = 0;
    for &d in digits {
        let d = d.wrapping_sub(b'0');
        if d > 9 {
            return parse_int_slow(b);
        }
        v = v * 10 + d as i64;
    }
    Ok(Some(if neg { -v } else { v }))
}

/// Integers written as decimals ("12.0") or too long for the fast path.
#[cold]
fn parse_int_slow(b: &[u8]) -> Result<Option<i64>, ()> {
    let s = std::str::from_utf8(b).map_err(|_| ())?;
    if let Ok(v) = s.parse::<i64>() {
        return Ok(Some(v));
    }
    if s.bytes().all(|c| c.is_ascii_digit()) && !s.is_empty() {
        return Ok(Some(i64::MAX)); // huge: out of every range
    }
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() && f.fract() == 0.0 => Ok(Some(f.clamp(-9e18, 9e18) as i64)),
        _ => Err(()),
    }
}

/// Decimal degrees to 1e-7 degrees, rounding half away from zero. Plain decimals
/// are converted exactly in integers; anything else (exponents) goes through f64.
#[inline]
pub fn parse_e7(b: &[u8]) -> Result<Option<i64>, ()> {
    let b = trim(b);
    let (neg, rest) = match b {
        [] => return Ok(None),
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, b),
    };
    let mut int: i64 = 0;
    let mut i = 0;
    while i < rest.len() && rest[i].is_ascii_digit() {
        if i >= 9 {
            return parse_e7_slow(b);
        }
        int = int * 10 + (rest[i] - b'0') as i64;
        i += 1;
    }
    let int_digits = i;
    let mut frac: i64 = 0;
    let mut frac_digits = 0;
    let mut round_up = false;
    if i < rest.len() && rest[i] == b'.' {
        i += 1;
        while i < rest.len() && rest[i].is_ascii_digit() {
            if frac_digits < 7 {
                frac = frac * 10 + (rest[i] - b'0') as i64;
            } else if frac_digits == 7 {
                round_up = rest[i] >= b'5';
            }
            frac_digits += 1;
            i += 1;
        }
    }
    if i != rest.len() || (int_digits == 0 && frac_digits == 0) {
        return parse_e7_slow(b);
    }
    for _ in frac_digits.min(7)..7 {
        frac *= 10;
    }
    let v = int * 10_000_000 + frac + round_up as i64;
    Ok(Some(if neg { -v } else { v }))
}

#[cold]
fn parse_e7_slow(b: &[u8]) -> Result<Option<i64>, ()> {
    let s = std::str::from_utf8(b).map_err(|_| ())?;
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() => Ok(Some((f * 1e7).round().clamp(-9e18, 9e18) as i64)),
        _ => Err(()),
    }
}

/// A BSSID as 12 hex digits, bare, in six pairs joined by `:` or `-`, or in three
/// quads joined by `.`.
pub fn parse_bssid(b: &[u8]) -> Option<u64> {
    let b = trim(b);
    let hex = |c: u8| match c {
        b'0'..=b'9' => Some((c - b'0') as u64),
        b'a'..=b'f' => Some((c - b'a' + 10) as u64),
        b'A'..=b'F' => Some((c - b'A' + 10) as u64),
        _ => None,
    };
    let (sep, every) = match b.len() {
        12 => (0u8, 0usize),
        17 if matches!(b[2], b':' | b'-') => (b[2], 2),
        14 if b[4] == b'.' => (b'.', 4),
        _ => return None,
    };
    let mut v = 0u64;
    let mut digits = 0;
    for (i, &c) in b.iter().enumerate() {
        if every != 0 && (i + 1) % (every + 1) == 0 {
            if c != sep {
                return None;
            }
            continue;
        }
        v = v << 4 | hex(c)?;
        digits += 1;
    }
    (digits == 12).then_some(v)
}

/// Splits on commas. Returns the number of fields, which may exceed `out.len()`
/// (the extra fields are counted, not stored).
#[inline]
fn split_fields<'a>(line: &'a [u8], out: &mut [&'a [u8]; MAX_FIELDS]) -> usize {
    let mut n = 0;
    let mut start = 0;
    for (i, &c) in line.iter().enumerate() {
        if c == b',' {
            if n < MAX_FIELDS {
                out[n] = &line[start..i];
            }
            n += 1;
            start = i + 1;
        }
    }
    if n < MAX_FIELDS {
        out[n] = &line[start..];
    }
    n + 1
}

/// RFC 4180 fields, for the rare line that quotes.
pub(crate) fn split_quoted(line: &[u8]) -> Result<Vec<Vec<u8>>, Reject> {
    let mut fields = Vec::new();
    let mut cur = Vec::new();
    let mut in_quotes = false;
    let mut i = 0;
    while i < line.len() {
        let c = line[i];
        if in_quotes {
            if c == b'"' {
                if line.get(i + 1) == Some(&b'"') {
                    cur.push(b'"');
                    i += 1;
                } else {
                    in_quotes = false;
                }
            } else {
                cur.push(c);
            }
        } else if c == b'"' {
            in_quotes = true;
        } else if c == b',' {
            fields.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
        i += 1;
    }
    if in_quotes {
        return Err(Reject::UnbalancedQuote);
    }
    fields.push(cur);
    Ok(fields)
}

fn num(field: Field, b: &[u8]) -> Result<Option<i64>, Reject> {
    parse_int(b).map_err(|_| bad(field, Problem::NotNumber))
}

fn required(field: Field, v: Option<i64>) -> Result<i64, Reject> {
    v.ok_or(bad(field, Problem::Missing))
}

fn deg(field: Field, b: &[u8]) -> Result<i64, Reject> {
    parse_e7(b)
        .map_err(|_| bad(field, Problem::NotNumber))?
        .ok_or(bad(field, Problem::Missing))
}

/// Ranges are integers in these exports, but a decimal costs nothing to accept.
fn range(b: &[u8]) -> Result<Option<i64>, Reject> {
    match parse_int(b) {
        Ok(v) => Ok(v),
        Err(()) => match parse_e7(b) {
            Ok(Some(e7)) => Ok(Some((e7 + 5_000_000).div_euclid(10_000_000))),
            _ => Err(bad(Field::Range, Problem::NotNumber)),
        },
    }
}

fn cell_fields(f: &[&[u8]]) -> Result<Rec, Reject> {
    let radio = std::str::from_utf8(f[0])
        .ok()
        .and_then(Radio::parse)
        .ok_or(bad(Field::Radio, Problem::Unknown))?;
    let raw = RawCell {
        mcc: required(Field::Mcc, num(Field::Mcc, f[1])?)?,
        mnc: required(Field::Mnc, num(Field::Mnc, f[2])?)?,
        lac: required(Field::Lac, num(Field::Lac, f[3])?)?,
        cid: required(Field::Cid, num(Field::Cid, f[4])?)?,
        // A malformed unit is as good as none: it only refines the cell.
        psc: parse_int(f[5]).ok().flatten(),
        lon_e7: deg(Field::Lon, f[6])?,
        lat_e7: deg(Field::Lat, f[7])?,
        range: range(f[8])?,
        samples: num(Field::Samples, f[9])?,
        created: num(Field::Created, f[11])?,
        updated: num(Field::Updated, f[12])?,
        estimated: if f[10] == b"0" {
            Estimated::Learned
        } else {
            Estimated::Averaged
        },
    };
    validate_cell(radio, &raw)
}

fn wifi_fields(f: &[&[u8]]) -> Result<Rec, Reject> {
    let bssid = parse_bssid(f[0]).ok_or(bad(Field::Bssid, Problem::Unknown))?;
    if bssid & (1 << 40) != 0 {
        // The group bit: a multicast or broadcast address is never an AP's.
        return Err(bad(Field::Bssid, Problem::MulticastBssid));
    }
    if bssid == 0 {
        return Err(bad(Field::Bssid, Problem::Unknown));
    }
    let lat_e7 = deg(Field::Lat, f[1])?;
    let lon_e7 = deg(Field::Lon, f[2])?;
    check_position(lat_e7, lon_e7)?;
    let (range_m, samples, created_day, updated_day) = common(
        None,
        range(f[3])?,
        num(Field::Samples, f[4])?,
        num(Field::Created, f[5])?,
        num(Field::Updated, f[6])?,
    )?;
    Ok(Rec {
        key: bssid,
        net: WIFI_NET,
        lat_e7: lat_e7 as i32,
        lon_e7: lon_e7 as i32,
        samples,
        range_m,
        created_day,
        updated_day,
        psc_learned: PSC_NONE,
    })
}

fn parse_fields(layout: Layout, f: &[&[u8]], n: usize) -> Result<Rec, Reject> {
    if n != layout.fields() {
        return Err(Reject::FieldCount {
            found: n,
            expected: layout.fields(),
        });
    }
    match layout {
        Layout::Cell => cell_fields(f),
        Layout::Wifi => wifi_fields(f),
    }
}

/// Parses one line (without its line ending) of a file of `layout`.
#[inline]
pub fn parse_line(layout: Layout, line: &[u8]) -> Result<Rec, Reject> {
    if line.contains(&b'"') {
        return parse_quoted(layout, line);
    }
    let mut f: [&[u8]; MAX_FIELDS] = [&[]; MAX_FIELDS];
    let n = split_fields(line, &mut f);
    parse_fields(layout, &f, n)
}

#[cold]
fn parse_quoted(layout: Layout, line: &[u8]) -> Result<Rec, Reject> {
    let owned = split_quoted(line)?;
    let f: Vec<&[u8]> = owned.iter().map(|v| v.as_slice()).collect();
    parse_fields(layout, &f, f.len())
}

fn header_fields(line: &[u8]) -> Vec<String> {
    let line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
    String::from_utf8_lossy(line)
        .split(',')
        .map(|s| s.trim().trim_matches('"').to_ascii_lowercase())
        .collect()
}

/// Whether `line` is the header `expected` (a BOM, quotes, spaces and case aside).
pub(crate) fn is_header(line: &[u8], expected: &str) -> bool {
    same_header(&header_fields(line), expected)
}

fn same_header(found: &[String], expected: &str) -> bool {
    found.len() == expected.split(',').count()
        && found
            .iter()
            .zip(expected.split(','))
            .all(|(a, b)| a.eq_ignore_ascii_case(b))
}

/// Decides a CSV file's layout from its first non-empty line.
pub fn detect(first_line: &[u8]) -> Detected {
    let h = header_fields(first_line);
    if same_header(&h, CELL_HEADER) {
        return Detected::Header(Layout::Cell);
    }
    if same_header(&h, WIFI_HEADER) {
        return Detected::Header(Layout::Wifi);
    }
    // Headerless: only when the line is a valid row, so that a misspelt header is
    // reported as such rather than as one bad row among many.
    let line = first_line
        .strip_prefix(b"\xef\xbb\xbf")
        .unwrap_or(first_line);
    if parse_line(Layout::Cell, line).is_ok() {
        return Detected::Data(Layout::Cell);
    }
    if parse_line(Layout::Wifi, line).is_ok() {
        return Detected::Data(Layout::Wifi);
    }
    Detected::Unknown
}

fn range_text(field: Field, radio: Option<Radio>) -> Cow<'static, str> {
    match (field, radio) {
        (Field::Mcc, _) => "0..=999".into(),
        (Field::Mnc, Some(r)) => format!("0..={} for {r}", r.max_mnc()).into(),
        (Field::Lac, Some(r)) => format!("0..={} for {r}", r.max_lac()).into(),
        (Field::Cid, Some(r)) => format!("0..={} for {r}", r.max_cid()).into(),
        (Field::Lat, _) => "-90..=90".into(),
        (Field::Lon, _) => "-180..=180".into(),
        (Field::Range | Field::Samples, _) => ">= 0".into(),
        _ => "the valid range".into(),
    }
}

/// A human-readable reason. `fields` are the row's raw fields when it came from
/// CSV (to quote the offending text); `radio` the row's radio when known.
pub fn explain(
    rej: Reject,
    layout: Layout,
    fields: Option<&[&[u8]]>,
    radio: Option<Radio>,
) -> String {
    let mut s = String::new();
    match rej {
        Reject::FieldCount { found, expected } => {
            let _ = write!(s, "expected {expected} fields, found {found}");
        }
        Reject::NullIsland => s.push_str("position (0, 0) is a placeholder, not a location"),
        Reject::UnbalancedQuote => s.push_str("unbalanced double quote"),
        Reject::SqliteRadio => s.push_str("radio: unknown radio name"),
        Reject::Bad { field, problem } => {
            let raw = fields
                .zip(field.csv_index(layout))
                .and_then(|(f, i)| f.get(i))
                .map(|b| String::from_utf8_lossy(trim(b)).into_owned());
            let quoted = raw.map(|r| format!(" {r:?}")).unwrap_or_default();
            let name = field.name();
            let _ = match problem {
                Problem::Missing => write!(s, "{name}: missing"),
                Problem::NotNumber => write!(s, "{name}: not a number{quoted}"),
                Problem::Unknown if field == Field::Radio => write!(
                    s,
                    "radio: unknown{quoted} (expected GSM, UMTS, LTE, CDMA, NR or NBIOT)"
                ),
                Problem::Unknown => write!(s, "{name}: not a valid value{quoted}"),
                Problem::MulticastBssid => {
                    write!(s, "{name}: multicast/broadcast address{quoted}")
                }
                Problem::OutOfRange(v) => {
                    let shown = match field {
                        Field::Lat | Field::Lon => format!("{}", v as f64 / 1e7),
                        _ => v.to_string(),
                    };
                    write!(
                        s,
                        "{name}: {shown} out of range {}",
                        range_text(field, radio)
                    )
                }
            };
        }
    }
    s
}

/// [`explain`] for a CSV line: re-splits it to quote the offending field.
pub fn explain_line(rej: Reject, layout: Layout, line: &[u8]) -> String {
    let owned = split_quoted(line).unwrap_or_default();
    let f: Vec<&[u8]> = owned.iter().map(|v| v.as_slice()).collect();
    let radio = match layout {
        Layout::Cell => f
            .first()
            .and_then(|r| std::str::from_utf8(r).ok())
            .and_then(Radio::parse),
        Layout::Wifi => None,
    };
    explain(rej, layout, Some(&f), radio)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn degrees_are_exact_and_round_half_away() {
        assert_eq!(parse_e7(b"52.5200066"), Ok(Some(525_200_066)));
        assert_eq!(parse_e7(b"-8.47059875"), Ok(Some(-84_705_988)));
        assert_eq!(parse_e7(b"-8.47059874"), Ok(Some(-84_705_987)));
        assert_eq!(parse_e7(b"13"), Ok(Some(130_000_000)));
        assert_eq!(parse_e7(b".5"), Ok(Some(5_000_000)));
        assert_eq!(parse_e7(b"1.5e1"), Ok(Some(150_000_000)));
        assert_eq!(parse_e7(b""), Ok(None));
        assert!(parse_e7(b"nan").is_err());
        assert!(parse_e7(b"-").is_err());
        assert!(parse_e7(b"1.2.3").is_err());
    }

    #[test]
    fn integers() {
        assert_eq!(parse_int(b" 42 "), Ok(Some(42)));
        assert_eq!(parse_int(b"-1"), Ok(Some(-1)));
        assert_eq!(parse_int(b"12.0"), Ok(Some(12)));
        assert_eq!(parse_int(b"99999999999999999999999"), Ok(Some(i64::MAX)));
        assert!(parse_int(b"12a").is_err());
        assert!(parse_int(b"1.5").is_err());
    }

    #[test]
    fn bssid_forms() {
        let v = 0x0011_22aa_bbcc;
        for s in [
            "00:11:22:aa:bb:cc",
            "00-11-22-AA-BB-CC",
            "0011.22aa.bbcc",
            "001122aabbcc",
        ] {
            assert_eq!(parse_bssid(s.as_bytes()), Some(v), "{s}");
        }
        for s in [
            "00:11-22:aa:bb:cc",
            "0011.22aa:bbcc",
            "001122aabbc",
            "00112g2aabbcc",
            "00:11:22:aa:bb:c:",
        ] {
            assert_eq!(parse_bssid(s.as_bytes()), None, "{s}");
        }
    }

    #[test]
    fn quoted_lines_take_the_careful_path() {
        let plain = parse_line(
            Layout::Wifi,
            b"001122aabbcc,52.5,13.4,50,3,1600000000,1700000000",
        );
        let quoted = parse_line(
            Layout::Wifi,
            b"\"00:11:22:aa:bb:cc\",\"52.5\",13.4,50,3,1600000000,1700000000",
        );
        assert_eq!(plain, quoted);
        assert!(plain.is_ok());
        assert_eq!(
            parse_line(Layout::Wifi, b"\"001122aabbcc,52.5"),
            Err(Reject::UnbalancedQuote)
        );
    }

    #[test]
    fn detects_headers_and_headerless_rows() {
        assert_eq!(
            detect(CELL_HEADER.as_bytes()),
            Detected::Header(Layout::Cell)
        );
        assert_eq!(
            detect(b"\xef\xbb\xbfBSSID, Lat, Lon,Range,Samples,Created,Updated"),
            Detected::Header(Layout::Wifi)
        );
        assert_eq!(
            detect(b"GSM,262,1,100,1,,13.4,52.5,1000,3,1,1600000000,1700000000,0"),
            Detected::Data(Layout::Cell)
        );
        assert_eq!(detect(b"radio,mcc,mnc,lac,cid"), Detected::Unknown);
    }
}
