//! CSV input: the main thread reads (and inflates) blocks of whole lines and
//! hands them to parser threads; results come back tagged with their block
//! number and are applied in file order, so line numbers and the "first N bad
//! lines" are exactly those of a sequential read.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use super::levels::{has_advances, is_levels_header, read_levels};
use super::masts::{is_mast_header, read_masts, Rows};
use super::parse::{detect, explain_line, parse_line, Detected, Layout};
use super::rec::Rec;
use super::source::{accepted_formats, find_newline, push, Ctx};
use super::{FileReport, ImportError, Phase, Progress, SourceKind};

/// Bytes per block handed to a parser: big enough to amortise the hand-off,
/// small enough that a few blocks in flight cost little memory.
const BLOCK: usize = 1 << 20;
/// Longest line accepted; export rows are under 200 bytes.
pub const MAX_LINE: usize = 16 << 20;

struct Block {
    seq: u64,
    data: Vec<u8>,
}

/// The parser pipeline seen from the main thread: blocks go out numbered and their results
/// are applied strictly in order; buffers come back for reuse.
#[derive(Default)]
struct Flow {
    /// Results back from the parsers, by block number, not yet applied.
    pending: BTreeMap<u64, Parsed>,
    next_apply: u64,
    next_seq: u64,
    spare_data: Vec<Vec<u8>>,
    spare_recs: Vec<Vec<Rec>>,
}

/// One block's outcome; line numbers in `bad` count from the block's first line (0).
struct Parsed {
    seq: u64,
    lines: u64,
    rows: u64,
    rejected: u64,
    bad: Vec<(u64, String)>,
    recs: Vec<Rec>,
    data: Vec<u8>,
}

fn parse_block(layout: Layout, block: Block, max_bad: usize, recs: Vec<Rec>) -> Parsed {
    let mut p = Parsed {
        seq: block.seq,
        lines: 0,
        rows: 0,
        rejected: 0,
        bad: Vec::new(),
        recs,
        data: Vec::new(),
    };
    let mut rest: &[u8] = &block.data;
    while !rest.is_empty() {
        let (line, next) = match find_newline(rest) {
            Some(nl) => (&rest[..nl], &rest[nl + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        rest = next;
        let line_index = p.lines;
        p.lines += 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(|c| c.is_ascii_whitespace()) {
            continue;
        }
        p.rows += 1;
        match parse_line(layout, line) {
            Ok(r) => p.recs.push(r),
            Err(rej) => {
                p.rejected += 1;
                if p.bad.len() < max_bad {
                    p.bad.push((line_index, explain_line(rej, layout, line)));
                }
            }
        }
    }
    p.data = block.data;
    p
}

/// Parser threads per file: one per core up to four, or `WHEREABOUTS_IMPORT_THREADS`.
fn parser_threads() -> usize {
    std::env::var("WHEREABOUTS_IMPORT_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, 4)
}

fn read_some(reader: &mut dyn Read, buf: &mut Vec<u8>, name: &str) -> Result<usize, ImportError> {
    let old = buf.len();
    buf.resize(old + BLOCK, 0);
    let n = loop {
        match reader.read(&mut buf[old..]) {
            Ok(n) => break n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                buf.truncate(old);
                return Err(ImportError::Io(format!("{name}: {e}")));
            }
        }
    };
    buf.truncate(old + n);
    Ok(n)
}

fn too_long(name: &str, line_no: u64) -> ImportError {
    ImportError::Format(format!(
        "{name}: line {line_no} is longer than {} MiB: not a CSV export; {}",
        MAX_LINE >> 20,
        accepted_formats()
    ))
}

/// Reads a CSV file: layout from its first non-empty line, then its rows.
pub fn read_csv(
    reader: &mut dyn Read,
    name: &str,
    total: u64,
    counter: &dyn Fn() -> u64,
    ctx: &mut Ctx,
) -> Result<FileReport, ImportError> {
    let mut report = FileReport {
        file: name.to_string(),
        kind: SourceKind::CellCsv,
        rows: 0,
        accepted: 0,
        rejected: 0,
        bad_lines: Vec::new(),
    };
    let progress = |rows: u64| Progress {
        file: name.to_string(),
        bytes_done: counter(),
        bytes_total: total,
        rows,
        phase: Phase::Reading,
    };
    ctx.reporter.report(true, || progress(0))?;

    // The first non-empty line decides the layout; blank lines before it still count.
    let mut buf: Vec<u8> = Vec::with_capacity(BLOCK);
    let mut eof = false;
    let mut start = 0;
    let mut line_no = 0u64;
    let layout = loop {
        let rest = &buf[start..];
        let (line, used) = match find_newline(rest) {
            Some(nl) => (&rest[..nl], nl + 1),
            None if eof && !rest.is_empty() => (rest, rest.len()),
            None if eof => {
                return Err(ImportError::Format(format!(
                    "{name}: empty file; {}",
                    accepted_formats()
                )))
            }
            None => {
                if rest.len() >= MAX_LINE {
                    return Err(too_long(name, line_no + 1));
                }
                eof = read_some(reader, &mut buf, name)? == 0;
                continue;
            }
        };
        line_no += 1;
        let mut line = line.strip_suffix(b"\r").unwrap_or(line);
        if line_no == 1 {
            line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
        }
        if line.iter().all(|c| c.is_ascii_whitespace()) {
            start += used;
            continue;
        }
        // The learned files (a server's sync pages): read apart, row by row.
        let learned = if is_mast_header(line) {
            Some(SourceKind::MastCsv)
        } else if is_levels_header(line) {
            Some(SourceKind::LevelsCsv)
        } else {
            None
        };
        if let Some(kind) = learned {
            let rest = buf[start + used..].to_vec();
            let rows = Rows {
                head: &rest,
                name,
                line_no,
                counter,
                total,
                kind,
            };
            return if kind == SourceKind::MastCsv {
                read_masts(rows, reader, ctx)
            } else {
                read_levels(rows, reader, ctx, has_advances(line))
            };
        }
        match detect(line) {
            Detected::Header(l) => {
                start += used;
                break l;
            }
            Detected::Data(l) => {
                // The row is parsed with the others; the BOM, if any, must not be.
                if line_no == 1 && buf[start..].starts_with(b"\xef\xbb\xbf") {
                    start += 3;
                }
                line_no -= 1;
                break l;
            }
            Detected::Unknown => {
                let shown: String = String::from_utf8_lossy(line).chars().take(200).collect();
                return Err(ImportError::Format(format!(
                    "{name}: line {line_no}: unrecognised header {shown:?}; {}",
                    accepted_formats()
                )));
            }
        }
    };
    report.kind = match layout {
        Layout::Cell => SourceKind::CellCsv,
        Layout::Wifi => SourceKind::WifiCsv,
    };
    buf.drain(..start);

    let max_bad = ctx.opts.max_error_lines;
    let workers = parser_threads();
    let in_flight_max = 2 * workers;
    let (to_parsers, parser_in) = mpsc::sync_channel::<(Block, Vec<Rec>)>(in_flight_max);
    let parser_in = Arc::new(Mutex::new(parser_in));
    let (parser_out, results) = mpsc::channel::<Parsed>();

    std::thread::scope(|scope| -> Result<FileReport, ImportError> {
        for _ in 0..workers {
            let input = Arc::clone(&parser_in);
            let out = parser_out.clone();
            scope.spawn(move || loop {
                let job = match input.lock() {
                    Ok(rx) => rx.recv(),
                    Err(_) => return,
                };
                let Ok((block, recs)) = job else { return };
                if out.send(parse_block(layout, block, max_bad, recs)).is_err() {
                    return;
                }
            });
        }
        drop(parser_out);
        let mut flow = Flow::default();
        let apply = |p: Parsed,
                     report: &mut FileReport,
                     line_no: &mut u64,
                     ctx: &mut Ctx,
                     flow: &mut Flow|
         -> Result<(), ImportError> {
            for (rel, why) in p.bad {
                if report.bad_lines.len() < max_bad {
                    report.bad_lines.push((*line_no + 1 + rel, why));
                }
            }
            *line_no += p.lines;
            report.rows += p.rows;
            report.rejected += p.rejected;
            report.accepted += p.recs.len() as u64;
            let mut recs = p.recs;
            for r in recs.drain(..) {
                push(&mut ctx.runs, r, ctx.tmp)?;
            }
            flow.spare_recs.push(recs);
            let mut data = p.data;
            data.clear();
            flow.spare_data.push(data);
            let rows = report.rows;
            ctx.reporter.report(false, || progress(rows))
        };
        let receive =
            |block: bool, pending: &mut BTreeMap<u64, Parsed>| -> Result<bool, ImportError> {
                let got = if block {
                    results.recv().map_err(|_| ())
                } else {
                    results.try_recv().map_err(|_| ())
                };
                match got {
                    Ok(p) => {
                        pending.insert(p.seq, p);
                        Ok(true)
                    }
                    Err(()) if block => Err(ImportError::Io(format!(
                        "{name}: a parser thread stopped unexpectedly"
                    ))),
                    Err(()) => Ok(false),
                }
            };
        // Applies results in block order until at most `keep` blocks are in flight, waiting
        // for the parsers only while more are.
        let settle = |keep: u64,
                      flow: &mut Flow,
                      report: &mut FileReport,
                      line_no: &mut u64,
                      ctx: &mut Ctx|
         -> Result<(), ImportError> {
            loop {
                while let Some(p) = flow.pending.remove(&flow.next_apply) {
                    apply(p, report, line_no, ctx, flow)?;
                    flow.next_apply += 1;
                }
                if flow.next_seq - flow.next_apply <= keep {
                    return Ok(());
                }
                receive(true, &mut flow.pending)?;
            }
        };
        loop {
            if !eof && buf.len() < BLOCK {
                eof = read_some(reader, &mut buf, name)? == 0;
                if !eof {
                    continue;
                }
            }
            // Cut after the last newline; the partial line waits for more bytes.
            let cut = if eof {
                buf.len()
            } else {
                match buf.iter().rposition(|&c| c == b'\n') {
                    Some(i) => i + 1,
                    None if buf.len() >= MAX_LINE => {
                        // Apply what is in flight so that the line number is exact.
                        settle(0, &mut flow, &mut report, &mut line_no, ctx)?;
                        return Err(too_long(name, line_no + 1));
                    }
                    None => {
                        eof = read_some(reader, &mut buf, name)? == 0;
                        continue;
                    }
                }
            };
            if cut > 0 {
                let mut next = flow
                    .spare_data
                    .pop()
                    .unwrap_or_else(|| Vec::with_capacity(BLOCK * 2));
                next.extend_from_slice(&buf[cut..]);
                buf.truncate(cut);
                let data = std::mem::replace(&mut buf, next);
                let recs = flow.spare_recs.pop().unwrap_or_default();
                // Room for this block among those in flight.
                let keep = in_flight_max as u64 - 1;
                settle(keep, &mut flow, &mut report, &mut line_no, ctx)?;
                to_parsers
                    .send((
                        Block {
                            seq: flow.next_seq,
                            data,
                        },
                        recs,
                    ))
                    .map_err(|_| ImportError::Io(format!("{name}: parser threads stopped")))?;
                flow.next_seq += 1;
            }
            // Whatever is back already, without waiting.
            while receive(false, &mut flow.pending)? {}
            settle(u64::MAX, &mut flow, &mut report, &mut line_no, ctx)?;
            if eof {
                break;
            }
        }
        settle(0, &mut flow, &mut report, &mut line_no, ctx)?;
        drop(to_parsers);
        let rows = report.rows;
        ctx.reporter.report(true, || progress(rows))?;
        Ok(report)
    })
}
