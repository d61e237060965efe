//! The batch wire format shared with `src/native.ts`: requests as one flat
//! `Float64Array` (a JS number holds a 36-bit cell id or a 48-bit BSSID exactly),
//! answers as six numbers each, written after the requests in the same buffer
//! (`locate_into` splits it). NaN marks an absent optional value.
//!
//! request: ncells, nwifi, lacf, scf, ipf, bt, ip index (-1: none)
//!   then ncells x (radio|-1, mcc|-1, mnc, lac, cid, signal, asu, ta, psc)
//!   then nwifi  x (bssid, signal, frequency)
//! answer:  found (1/0), lat, lon, accuracy, fallback (0 none, 1 lacf, 2 scf, 3 ipf), aged (1/0)

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use whereabouts_core::radio::Radio;
use whereabouts_core::solve::batch::{
    default_threads, for_each_parallel, Blocks, Pool, Ticket, BLOCK,
};
use whereabouts_core::solve::{CellObs, Locator, Options, Query, WifiObs};
use whereabouts_core::store::Database;

pub const HEADER: usize = 7;
pub const CELL: usize = 9;
pub const WIFI: usize = 3;
pub const ANSWER: usize = 6;

fn opt(v: f64) -> Option<f64> {
    (!v.is_nan()).then_some(v)
}

fn int(v: f64, max: f64, what: &str) -> Result<u64, String> {
    // Whole when the truncated value converts back to it (every `max` is under 2^53, and NaN
    // fails the range): `fract` is a call of libm's `trunc` on the baseline x86-64 target,
    // 1.5% of a request's native time with 9 to 30 numbers read per request.
    if v >= 0.0 && v <= max && (v as u64) as f64 == v {
        Ok(v as u64)
    } else {
        Err(format!("malformed request batch: {what} = {v}"))
    }
}

/// Observation vectors reused from batch to batch (a one-request call would otherwise
/// allocate two per call).
#[derive(Default)]
pub struct Scratch {
    cells: Vec<CellObs>,
    wifi: Vec<WifiObs>,
}

thread_local! {
    /// A batch thread's observation vectors: the threads `for_each_parallel` spawns are new
    /// for each call, so theirs live for one chunk; the calling thread and the pool's
    /// threads keep theirs from call to call.
    static THREAD_SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Locates the requests encoded in `buffer[..length]` and writes their answers into
/// `buffer[length..]`; returns the number of requests. `threads` above 1 spreads a batch
/// over that many threads (0: the machine's parallelism), each taking at least
/// [`whereabouts_core::solve::batch::MIN_PER_THREAD`] requests, so small batches stay on the calling thread.
pub fn locate_into(
    locator: &Locator,
    buffer: &mut [f64],
    length: usize,
    ips: &[String],
    threads: usize,
    scratch: &mut Scratch,
) -> Result<usize, String> {
    if length > buffer.len() {
        return Err(format!(
            "malformed request batch: length {length} beyond the buffer's {}",
            buffer.len()
        ));
    }
    let (input, out) = buffer.split_at_mut(length);
    if threads == 1 {
        locate_batch(locator, input, ips, out, scratch)
    } else {
        locate_parallel(locator, input, ips, out, threads)
    }
}

/// Where one request of a batch starts, and what its header says.
struct Header {
    ncells: usize,
    nwifi: usize,
    options: Options,
    ip: Option<usize>,
    /// The body's first number.
    body: usize,
    /// One past the body's last number: where the next request starts.
    end: usize,
}

fn read_header(input: &[f64], at: usize) -> Result<Header, String> {
    let h = input
        .get(at..at + HEADER)
        .ok_or("malformed request batch: truncated header")?;
    let ncells = int(h[0], 1024.0, "ncells")? as usize;
    let nwifi = int(h[1], 1024.0, "nwifi")? as usize;
    let options = Options {
        lacf: int(h[2], 2.0, "lacf")? as u8,
        scf: h[3] == 1.0,
        ipf: h[4] == 1.0,
        bt: int(h[5], 2.0, "bt")? as u8,
    };
    let ip = if h[6] >= 0.0 {
        Some(int(h[6], u32::MAX as f64, "ip index")? as usize)
    } else {
        None
    };
    let body = at + HEADER;
    let end = body + ncells * CELL + nwifi * WIFI;
    if end > input.len() {
        return Err("malformed request batch: truncated body".into());
    }
    Ok(Header {
        ncells,
        nwifi,
        options,
        ip,
        body,
        end,
    })
}

/// Every request's header, in order: where each starts, so that threads can take any.
fn read_headers(input: &[f64]) -> Result<Vec<Header>, String> {
    let mut headers = Vec::new();
    let mut at = 0;
    while at < input.len() {
        let h = read_header(input, at)?;
        at = h.end;
        headers.push(h);
    }
    Ok(headers)
}

/// Locates the request whose header is `h` in `db` (the caller's generation of the
/// locator's database), decoding its observations into `scratch`.
fn locate_one(
    locator: &Locator,
    db: &Database,
    input: &[f64],
    h: &Header,
    ips: &[String],
    now: i64,
    scratch: &mut Scratch,
) -> Result<[f64; ANSWER], String> {
    let ip = match h.ip {
        Some(i) => Some(
            ips.get(i)
                .ok_or("malformed request batch: ip index")?
                .as_str(),
        ),
        None => None,
    };
    let body = &input[h.body..h.end];
    let Scratch { cells, wifi } = scratch;
    cells.clear();
    wifi.clear();
    for c in body[..h.ncells * CELL].chunks_exact(CELL) {
        cells.push(CellObs {
            radio: if c[0] < 0.0 {
                None
            } else {
                Some(Radio::from_code(int(c[0], 5.0, "radio")? as u8).ok_or("radio")?)
            },
            mcc: if c[1] < 0.0 {
                None
            } else {
                Some(int(c[1], 999.0, "mcc")? as u16)
            },
            mnc: int(c[2], 32767.0, "mnc")? as u16,
            lac: int(c[3], 16_777_215.0, "lac")? as u32,
            cid: int(c[4], 68_719_476_735.0, "cid")?,
            signal: opt(c[5]),
            asu: opt(c[6]),
            ta: opt(c[7]),
            psc: opt(c[8]).map(|p| p as u16),
        });
    }
    debug_assert_eq!(body.len() - h.ncells * CELL, h.nwifi * WIFI);
    for w in body[h.ncells * CELL..].chunks_exact(WIFI) {
        wifi.push(WifiObs {
            bssid: int(w[0], 281_474_976_710_655.0, "bssid")?,
            signal: opt(w[1]),
            frequency: opt(w[2]),
        });
    }
    let q = Query {
        cells,
        wifi,
        ip,
        options: h.options,
    };
    Ok(match locator.locate_in(db, &q, now) {
        Some(a) => [
            1.0,
            a.lat,
            a.lon,
            a.accuracy_m,
            a.fallback as u8 as f64,
            if a.aged { 1.0 } else { 0.0 },
        ],
        None => [0.0, f64::NAN, f64::NAN, f64::NAN, 0.0, 0.0],
    })
}

/// Locates every request of `input` in turn and writes its answer into `out`; returns the
/// number of requests. `out` must hold `ANSWER` numbers per request.
fn locate_batch(
    locator: &Locator,
    input: &[f64],
    ips: &[String],
    out: &mut [f64],
    scratch: &mut Scratch,
) -> Result<usize, String> {
    let mut n = 0;
    // One clock reading per batch: the `aged` rule works in days.
    let now = locator.now();
    let db = locator.database();
    let mut at = 0;
    while at < input.len() {
        let h = read_header(input, at)?;
        let answer = locate_one(locator, &db, input, &h, ips, now, scratch)?;
        out.get_mut(n * ANSWER..(n + 1) * ANSWER)
            .ok_or("malformed request batch: the answer buffer is too small")?
            .copy_from_slice(&answer);
        at = h.end;
        n += 1;
    }
    Ok(n)
}

/// [`locate_batch`] over several threads: the headers are read first (where each request
/// starts), then the requests are decoded and solved in contiguous chunks, one a thread.
fn locate_parallel(
    locator: &Locator,
    input: &[f64],
    ips: &[String],
    out: &mut [f64],
    threads: usize,
) -> Result<usize, String> {
    let now = locator.now();
    let headers = read_headers(input)?;
    let n = headers.len();
    let (answers, _) = out
        .get_mut(..n * ANSWER)
        .ok_or("malformed request batch: the answer buffer is too small")?
        .as_chunks_mut::<ANSWER>();
    // Decoding errors mean a broken encoder, never bad input (JavaScript validated it): the
    // first one found is reported and the batch fails, as it does on one thread.
    let failure: Mutex<Option<String>> = Mutex::new(None);
    for_each_parallel(
        &headers,
        answers,
        threads,
        || locator.database(),
        |db, h, answer| {
            let located = THREAD_SCRATCH.with(|scratch| {
                locate_one(locator, db, input, h, ips, now, &mut scratch.borrow_mut())
            });
            match located {
                Ok(a) => *answer = a,
                Err(e) => {
                    let mut first = failure.lock().unwrap_or_else(|p| p.into_inner());
                    first.get_or_insert(e);
                }
            }
        },
    )
    .map_err(|e| e.to_string())?;
    match failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(n),
    }
}

/// A batch started by [`start_locate`]: it owns a copy of its requests, so that JavaScript
/// may fill its buffer with the next batch meanwhile (a start, the copy included, costs about
/// 3% of the solve: 8.7 us against 295 us for 256 of the simulator's mixed requests).
struct WireJob {
    locator: Arc<Locator>,
    db: Arc<Database>,
    input: Vec<f64>,
    headers: Vec<Header>,
    ips: Vec<String>,
    now: i64,
    /// The answers' numbers as bits: threads write disjoint requests', without a lock.
    answers: Box<[AtomicU64]>,
    /// The first decoding error (a broken encoder, never bad input).
    failure: Mutex<Option<String>>,
}

impl Blocks for WireJob {
    fn count(&self) -> usize {
        self.headers.len().div_ceil(BLOCK)
    }

    fn run(&self, block: usize) {
        let first = block * BLOCK;
        let last = (first + BLOCK).min(self.headers.len());
        THREAD_SCRATCH.with(|scratch| {
            let scratch = &mut scratch.borrow_mut();
            for (i, h) in self.headers.iter().enumerate().take(last).skip(first) {
                let located = locate_one(
                    &self.locator,
                    &self.db,
                    &self.input,
                    h,
                    &self.ips,
                    self.now,
                    scratch,
                );
                match located {
                    Ok(answer) => {
                        for (slot, v) in self.answers[i * ANSWER..].iter().zip(answer) {
                            slot.store(v.to_bits(), Ordering::Relaxed);
                        }
                    }
                    Err(e) => {
                        let mut first = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
                        first.get_or_insert(e);
                    }
                }
            }
        });
    }
}

/// A batch being located on the pool's threads ([`start_locate`]); [`Pending::join`] waits
/// for its answers.
pub struct Pending {
    job: Arc<WireJob>,
    ticket: Ticket,
}

/// Starts locating the requests encoded in `buffer[..length]` on up to `threads - 1` of the
/// process's batch threads (0: the machine's parallelism) and returns at once: the caller
/// reads its next batch while this one is solved, and joins in at [`Pending::join`]. The
/// answers are those [`locate_into`] gives.
pub fn start_locate(
    locator: Arc<Locator>,
    buffer: &[f64],
    length: usize,
    ips: Vec<String>,
    threads: usize,
) -> Result<Pending, String> {
    let input = buffer
        .get(..length)
        .ok_or_else(|| {
            format!(
                "malformed request batch: length {length} beyond the buffer's {}",
                buffer.len()
            )
        })?
        .to_vec();
    let headers = read_headers(&input)?;
    let answers = (0..headers.len() * ANSWER)
        .map(|_| AtomicU64::new(0))
        .collect();
    let threads = if threads == 0 {
        default_threads()
    } else {
        threads
    };
    let job = Arc::new(WireJob {
        now: locator.now(),
        db: locator.database(),
        locator,
        input,
        headers,
        ips,
        answers,
        failure: Mutex::new(None),
    });
    let ticket = Pool::global().start(Arc::clone(&job) as Arc<dyn Blocks>, threads - 1);
    Ok(Pending { job, ticket })
}

impl Pending {
    /// Solves what no thread has taken yet on this thread, waits for the rest, and writes
    /// the answers into `out` ([`ANSWER`] numbers per request, in order); returns the
    /// number of requests.
    pub fn join(self, out: &mut [f64]) -> Result<usize, String> {
        self.ticket
            .join()
            .map_err(|_| "internal error in locate".to_string())?;
        let job = self.job;
        if let Some(e) = job
            .failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            return Err(e);
        }
        let out = out
            .get_mut(..job.answers.len())
            .ok_or("malformed request batch: the answer buffer is too small")?;
        for (o, a) in out.iter_mut().zip(job.answers.iter()) {
            *o = f64::from_bits(a.load(Ordering::Relaxed));
        }
        Ok(job.headers.len())
    }
}

#[cfg(test)]
mod tests {
    use super::int;

    #[test]
    fn a_number_is_read_only_when_whole_and_in_range() {
        for (v, want) in [
            (0.0, Some(0)),
            (-0.0, Some(0)),
            (7.0, Some(7)),
            (1024.0, Some(1024)),
        ] {
            assert_eq!(int(v, 1024.0, "x").ok(), want, "{v}");
        }
        for v in [
            -1.0,
            0.5,
            1023.999,
            1025.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            let e = int(v, 1024.0, "x").unwrap_err();
            assert!(e.starts_with("malformed request batch: x = "), "{e}");
        }
        let widest = 281_474_976_710_655.0;
        assert_eq!(int(widest, widest, "bssid"), Ok(281_474_976_710_655));
        assert!(int(widest - 0.5, widest, "bssid").is_err());
    }
}
