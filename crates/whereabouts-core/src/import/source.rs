//! Reading one input file: detecting what it is, then feeding its rows to the runs.

use std::fs::{self, File};
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use flate2::read::MultiGzDecoder;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use super::csv::read_csv;
use super::levels::{LEVELS_ADVANCES_HEADER, LEVELS_HEADER};
use super::masts::MAST_HEADER;
use super::parse::{
    self, explain, Field, Layout, Problem, RawCell, Reject, CELL_HEADER, WIFI_HEADER,
};
use super::rec::Rec;
use super::runs::Runs;
use super::{FileReport, ImportError, ImportOptions, Phase, Progress, Reporter, SourceKind};
use crate::radio::Radio;
use crate::store::record::Estimated;

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";
pub(crate) const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Counts bytes read from the file itself (compressed bytes for gzip), for progress.
/// The count is shared through an atomic so that the reader may move to another thread.
pub(crate) struct Counting<R> {
    pub(crate) inner: R,
    pub(crate) n: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n.fetch_add(k as u64, Ordering::Relaxed);
        Ok(k)
    }
}

/// An opened input: its (inflated) bytes, the count of bytes read from disk, the file size.
pub(crate) type OpenedText = (Box<dyn Read + Send>, Arc<AtomicU64>, u64);

/// A text file as a stream of its (inflated, if gzip) bytes, with a counter of the bytes
/// read from disk and the file's size, for progress.
pub(crate) fn open_text(path: &Path) -> Result<OpenedText, ImportError> {
    let input = open_input(path)?;
    let (n, total) = (input.counter, input.length);
    let (magic, rest) = peek(input.reader, 2).map_err(|e| io_err(path, e))?;
    let reader: Box<dyn Read + Send> = if magic == GZIP_MAGIC {
        Box::new(MultiGzDecoder::new(BufReader::with_capacity(1 << 18, rest)))
    } else {
        Box::new(rest)
    };
    Ok((reader, n, total))
}

/// The path that names standard input, as on most command lines.
pub const STANDARD_INPUT: &str = "-";

/// Why `path` cannot be streamed, if it cannot: standard input, a file and a pipe (a named
/// pipe, `<(...)`) stream alike; a directory or a missing path does not.
pub(crate) fn unstreamable(path: &Path) -> Option<String> {
    let ok = path.as_os_str() == STANDARD_INPUT || fs::metadata(path).is_ok_and(|m| !m.is_dir());
    (!ok).then(|| format!("{}: not a readable file", path.display()))
}

/// How reports name an input: its path, or "standard input".
pub(crate) fn input_name(path: &Path) -> String {
    if path.as_os_str() == STANDARD_INPUT {
        "standard input".into()
    } else {
        path.display().to_string()
    }
}

/// An input opened for streaming: a file, a pipe, or standard input.
pub(crate) struct Input {
    /// Its bytes as stored (compressed, if gzip), counted into `counter` as they are read.
    pub(crate) reader: Counting<Box<dyn Read + Send>>,
    pub(crate) counter: Arc<AtomicU64>,
    /// Its size; 0 when unknown (a pipe, standard input).
    pub(crate) length: u64,
    /// Its modification time, unix seconds; 0 when none.
    pub(crate) mtime: i64,
}

/// Opens `path`, or standard input for [`STANDARD_INPUT`], for streaming: the importer's
/// and the learner's one way in.
pub(crate) fn open_input(path: &Path) -> Result<Input, ImportError> {
    let counter = Arc::new(AtomicU64::new(0));
    let (inner, length, mtime): (Box<dyn Read + Send>, u64, i64) =
        if path.as_os_str() == STANDARD_INPUT {
            // read through the process's own descriptor: Node hands a child's input over a
            // socket, which /dev/stdin cannot open
            (Box::new(io::stdin()), 0, 0)
        } else {
            let file = File::open(path).map_err(|e| io_err(path, e))?;
            let meta = file.metadata().map_err(|e| io_err(path, e))?;
            let mtime = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs() as i64);
            let length = if meta.is_file() { meta.len() } else { 0 };
            (Box::new(file), length, mtime)
        };
    let reader = Counting {
        inner,
        n: counter.clone(),
    };
    Ok(Input {
        reader,
        counter,
        length,
        mtime,
    })
}

/// A reader whose first bytes were read ahead, then handed back in front of the rest.
pub(crate) type Peeked<R> = io::Chain<io::Cursor<Vec<u8>>, R>;

/// The first `len` bytes of `r` (fewer at its end) and a reader of all of it, those bytes
/// first. Sniffing a format this way, instead of seeking back, reads a pipe too (a named
/// pipe, `/dev/stdin`, a shell's `<(zcat ...)`).
pub(crate) fn peek<R: Read>(mut r: R, len: usize) -> io::Result<(Vec<u8>, Peeked<R>)> {
    let mut head = vec![0u8; len];
    let got = read_full(&mut r, &mut head)?;
    head.truncate(got);
    Ok((head.clone(), io::Cursor::new(head).chain(r)))
}

pub(crate) fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// What one file is being read into, and how progress is told.
pub struct Ctx<'a, 'b> {
    pub opts: &'a ImportOptions,
    /// `None` when only checking: rows are parsed and validated, then dropped.
    pub runs: Option<&'a mut Runs>,
    /// Where a learned-mast file's masts go; `None` when only checking.
    pub masts: Option<&'a mut super::masts::ReadMasts>,
    /// Where a learned-level file's levels go; `None` when only checking.
    pub levels: Option<&'a mut super::levels::ReadLevels>,
    pub reporter: &'a mut Reporter<'b>,
    pub tmp: &'a Path,
}

pub(crate) fn io_err(path: &Path, e: io::Error) -> ImportError {
    ImportError::Io(format!("{}: {e}", path.display()))
}

pub fn accepted_formats() -> String {
    format!(
        "accepted: an OpenCelliD/MLS cell export with the header `{CELL_HEADER}` (or the same \
         columns without a header line), a WiFi file with the header `{WIFI_HEADER}`, a \
         learned-mast file with the header `{MAST_HEADER}`, a learned-level file with the \
         header `{LEVELS_HEADER}` or `{LEVELS_ADVANCES_HEADER}` (each plain or \
         gzip-compressed), \
         or a SQLite database with a `cells` table \
         (mcc, mnc, lac, cid, longitude, latitude, accuracy, samples)"
    )
}

/// Imports one file into the runs, detecting its kind by content.
pub fn import_file(path: &Path, ctx: &mut Ctx) -> Result<FileReport, ImportError> {
    let name = input_name(path);
    let input = open_input(path)?;
    let (counter, total, mtime) = (input.counter, input.length, input.mtime);
    let (magic, rest) = peek(input.reader, SQLITE_MAGIC.len()).map_err(|e| io_err(path, e))?;
    let sqlite_aside = |mut from: &mut dyn Read, ctx: &mut Ctx| {
        // SQLite needs random access: a compressed or piped database is written out next
        // to the runs first.
        let unpacked = ctx.tmp.join("unpacked.sqlite");
        let mut out = File::create(&unpacked).map_err(|e| io_err(&unpacked, e))?;
        io::copy(&mut from, &mut out).map_err(|e| io_err(path, e))?;
        drop(out);
        let r = read_sqlite(&unpacked, &name, total, mtime, ctx);
        let _ = std::fs::remove_file(&unpacked);
        r
    };
    if magic == SQLITE_MAGIC {
        if total > 0 {
            drop(rest);
            return read_sqlite(path, &name, total, mtime, ctx);
        }
        return sqlite_aside(&mut { rest }, ctx);
    }
    if magic.starts_with(&GZIP_MAGIC) {
        let gz = MultiGzDecoder::new(BufReader::with_capacity(1 << 18, rest));
        let (head, mut inflated) = peek(gz, SQLITE_MAGIC.len()).map_err(|e| io_err(path, e))?;
        if head == SQLITE_MAGIC {
            return sqlite_aside(&mut inflated, ctx);
        }
        return read_csv(
            &mut inflated,
            &name,
            total,
            &|| counter.load(Ordering::Relaxed),
            ctx,
        );
    }
    let mut reader = rest;
    read_csv(
        &mut reader,
        &name,
        total,
        &|| counter.load(Ordering::Relaxed),
        ctx,
    )
}

/// The first `\n`, eight bytes at a time: lines average 80 bytes, so a bytewise
/// scan was a visible share of the parse.
#[inline]
pub(super) fn find_newline(hay: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    const NL: u64 = ONES * b'\n' as u64;
    let mut chunks = hay.chunks_exact(8);
    let mut base = 0;
    for c in &mut chunks {
        let x = u64::from_le_bytes(c.try_into().expect("8 bytes")) ^ NL;
        // Nonzero iff some byte of x is zero; the lowest flagged byte is exact.
        let found = x.wrapping_sub(ONES) & !x & HIGHS;
        if found != 0 {
            return Some(base + (found.trailing_zeros() / 8) as usize);
        }
        base += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&c| c == b'\n')
        .map(|i| base + i)
}

pub(crate) fn keep_bad(
    report: &mut FileReport,
    max: usize,
    line: u64,
    why: impl FnOnce() -> String,
) {
    report.rejected += 1;
    if report.bad_lines.len() < max {
        report.bad_lines.push((line, why()));
    }
}

#[inline]
pub(super) fn push(runs: &mut Option<&mut Runs>, r: Rec, tmp: &Path) -> Result<(), ImportError> {
    match runs {
        Some(runs) => runs.push(r).map_err(|e| io_err(tmp, e)),
        None => Ok(()),
    }
}

fn sql_int(v: ValueRef, field: Field) -> Result<Option<i64>, Reject> {
    let not_number = Reject::Bad {
        field,
        problem: Problem::NotNumber,
    };
    match v {
        ValueRef::Null => Ok(None),
        ValueRef::Integer(i) => Ok(Some(i)),
        ValueRef::Real(f) if f.is_finite() => Ok(Some(f.round().clamp(-9e18, 9e18) as i64)),
        ValueRef::Text(t) => parse::parse_int(t)
            .or_else(|_| {
                parse::parse_e7(t).map(|v| v.map(|e7| (e7 + 5_000_000).div_euclid(10_000_000)))
            })
            .map_err(|_| not_number),
        _ => Err(not_number),
    }
}

fn sql_e7(v: ValueRef, field: Field) -> Result<i64, Reject> {
    let not_number = Reject::Bad {
        field,
        problem: Problem::NotNumber,
    };
    let e7 = match v {
        ValueRef::Integer(i) => Some(i.saturating_mul(10_000_000)),
        ValueRef::Real(f) if f.is_finite() => Some((f * 1e7).round().clamp(-9e18, 9e18) as i64),
        ValueRef::Text(t) => parse::parse_e7(t).map_err(|_| not_number)?,
        ValueRef::Null => None,
        _ => return Err(not_number),
    };
    e7.ok_or(Reject::Bad {
        field,
        problem: Problem::Missing,
    })
}

fn need(field: Field, v: Option<i64>) -> Result<i64, Reject> {
    v.ok_or(Reject::Bad {
        field,
        problem: Problem::Missing,
    })
}

/// The radio of a SQLite row: its own `radio` column, else the caller's choice,
/// else GSM for 16-bit cell ids and UMTS beyond (these tables mostly hold 2G/3G).
fn sqlite_radio(col: Option<ValueRef>, cid: i64, assumed: Option<Radio>) -> Result<Radio, Reject> {
    if let Some(ValueRef::Text(t)) = col {
        return std::str::from_utf8(t)
            .ok()
            .and_then(Radio::parse)
            .ok_or(Reject::SqliteRadio);
    }
    if let Some(ValueRef::Integer(_) | ValueRef::Real(_) | ValueRef::Blob(_)) = col {
        return Err(Reject::SqliteRadio);
    }
    Ok(assumed.unwrap_or(if cid <= 0xffff {
        Radio::Gsm
    } else {
        Radio::Umts
    }))
}

fn read_sqlite(
    path: &Path,
    name: &str,
    total: u64,
    mtime: i64,
    ctx: &mut Ctx,
) -> Result<FileReport, ImportError> {
    let sql_err = |e: rusqlite::Error| ImportError::Io(format!("{name}: {e}"));
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql_err)?;
    let mut columns: Vec<String> = Vec::new();
    {
        let mut st = conn
            .prepare("SELECT name FROM pragma_table_info('cells')")
            .map_err(sql_err)?;
        let mut rows = st.query([]).map_err(sql_err)?;
        while let Some(r) = rows.next().map_err(sql_err)? {
            columns.push(r.get::<_, String>(0).map_err(sql_err)?.to_ascii_lowercase());
        }
    }
    if columns.is_empty() {
        return Err(ImportError::Format(format!(
            "{name}: SQLite database without a `cells` table; {}",
            accepted_formats()
        )));
    }
    const NEEDED: [&str; 8] = [
        "mcc",
        "mnc",
        "lac",
        "cid",
        "longitude",
        "latitude",
        "accuracy",
        "samples",
    ];
    let missing: Vec<&str> = NEEDED
        .iter()
        .copied()
        .filter(|c| !columns.iter().any(|h| h == c))
        .collect();
    if !missing.is_empty() {
        return Err(ImportError::Format(format!(
            "{name}: table `cells` lacks column(s) {}; it needs {}",
            missing.join(", "),
            NEEDED.join(", ")
        )));
    }
    let has_radio = columns.iter().any(|c| c == "radio");
    let max_rowid: i64 = conn
        .query_row("SELECT coalesce(max(rowid), 0) FROM cells", [], |r| {
            r.get(0)
        })
        .unwrap_or(0);
    let cols = format!(
        "mcc, mnc, lac, cid, longitude, latitude, accuracy, samples{}",
        if has_radio { ", radio" } else { "" }
    );
    // Tables WITHOUT ROWID have no rowid to report: count rows instead.
    let (mut st, by_rowid) = match conn.prepare(&format!("SELECT rowid, {cols} FROM cells")) {
        Ok(st) => (st, true),
        Err(_) => (
            conn.prepare(&format!("SELECT 0, {cols} FROM cells"))
                .map_err(sql_err)?,
            false,
        ),
    };
    let mut report = FileReport {
        file: name.to_string(),
        kind: SourceKind::SqliteCells,
        rows: 0,
        accepted: 0,
        rejected: 0,
        bad_lines: Vec::new(),
    };
    let progress = |rows: u64, rowid: i64| Progress {
        file: name.to_string(),
        bytes_done: if max_rowid > 0 {
            (total as f64 * (rowid as f64 / max_rowid as f64).clamp(0.0, 1.0)) as u64
        } else {
            0
        },
        bytes_total: total,
        rows,
        phase: Phase::Reading,
    };
    ctx.reporter.report(true, || progress(0, 0))?;
    let mut rows = st.query([]).map_err(sql_err)?;
    let max_bad = ctx.opts.max_error_lines;
    while let Some(row) = rows.next().map_err(sql_err)? {
        report.rows += 1;
        let rowid = if by_rowid {
            row.get_ref(0)
                .ok()
                .and_then(|v| v.as_i64().ok())
                .unwrap_or(0)
        } else {
            report.rows as i64
        };
        let v = |i: usize| row.get_ref(i).unwrap_or(ValueRef::Null);
        let mut radio = None;
        let parsed = (|| {
            let raw = RawCell {
                mcc: need(Field::Mcc, sql_int(v(1), Field::Mcc)?)?,
                mnc: need(Field::Mnc, sql_int(v(2), Field::Mnc)?)?,
                lac: need(Field::Lac, sql_int(v(3), Field::Lac)?)?,
                cid: need(Field::Cid, sql_int(v(4), Field::Cid)?)?,
                psc: None,
                lon_e7: sql_e7(v(5), Field::Lon)?,
                lat_e7: sql_e7(v(6), Field::Lat)?,
                range: sql_int(v(7), Field::Range)?,
                samples: sql_int(v(8), Field::Samples)?,
                created: Some(mtime),
                updated: Some(mtime),
                // Android's cell caches hold the platform's crowd estimates.
                estimated: Estimated::Averaged,
            };
            let r = sqlite_radio(has_radio.then(|| v(9)), raw.cid, ctx.opts.sqlite_radio)?;
            radio = Some(r);
            parse::validate_cell(r, &raw)
        })();
        match parsed {
            Ok(rec) => {
                report.accepted += 1;
                push(&mut ctx.runs, rec, ctx.tmp)?;
            }
            Err(rej) => keep_bad(&mut report, max_bad, rowid as u64, || {
                explain(rej, Layout::Cell, None, radio)
            }),
        }
        if report.rows.is_multiple_of(8192) {
            let n = report.rows;
            ctx.reporter.report(false, || progress(n, rowid))?;
        }
    }
    let n = report.rows;
    ctx.reporter.report(true, || progress(n, max_rowid))?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    #[test]
    fn find_newline_matches_a_plain_scan() {
        let text: Vec<u8> = (0..300u32)
            .map(|i| {
                if i % 37 == 5 || i % 91 == 0 {
                    b'\n'
                } else {
                    (i % 200) as u8 + 11
                }
            })
            .collect();
        for start in 0..text.len() {
            let hay = &text[start..];
            assert_eq!(
                super::find_newline(hay),
                hay.iter().position(|&c| c == b'\n'),
                "from {start}"
            );
        }
        assert_eq!(super::find_newline(b""), None);
    }
}
