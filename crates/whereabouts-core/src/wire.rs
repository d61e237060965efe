//! The numbers that cross to JavaScript: the batch wire format of the locate calls and the
//! reverse key. This module is their one definition: the Node binding (whereabouts-node)
//! only converts N-API values and calls it, exports the constants to JavaScript, and
//! renders them into `src/native/contracts.ts` (a cargo test there fails when that file is
//! stale; a vitest test, when the built addon disagrees with it).
//!
//! Requests go down as one flat `f64` buffer (a JS number holds a 36-bit cell id or a 48-bit
//! BSSID exactly), answers come back as [`ANSWER`] numbers each, written after the requests
//! in the same buffer ([`locate_into`] splits it). NaN marks an absent optional value.
//!
//! ```text
//! request: ncells, nwifi, lacf, scf, ipf, bt, ip index (-1: none)          HEADER numbers
//!   then ncells x (radio|-1, mcc|-1, mnc, lac, cid, signal, asu, ta, psc)  CELL numbers each
//!   then nwifi  x (bssid, signal, frequency)                               WIFI numbers each
//! answer:  found (1/0), lat, lon, accuracy, fallback (Fallback code), aged (1/0)
//! ```
//!
//! `radio` is a [`Radio`] code and `fallback` a [`Fallback`] code (their discriminants).
//! Decoding errors mean a broken encoder (JavaScript validates requests), so they are
//! reported with what was wrong, never by a panic.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::radio::Radio;
use crate::solve::batch::{default_threads, for_each_parallel, Blocks, Pool, Ticket, BLOCK};
use crate::solve::{Answer, CellObs, Fallback, Locator, Options, Query, WifiObs};
use crate::store::Database;

/// Numbers of a request's header: ncells, nwifi, lacf, scf, ipf, bt, ip index.
pub const HEADER: usize = 7;
/// Numbers of a cell: radio, mcc, mnc, lac, cid, signal, asu, ta, psc.
pub const CELL: usize = 9;
/// Numbers of an access point: bssid, signal, frequency.
pub const WIFI: usize = 3;
/// Numbers of an answer: found, lat, lon, accuracy, fallback, aged.
pub const ANSWER: usize = 6;

/// The place part of a reverse key: place ids plus one are below it (see [`reverse_key`]).
pub const KEY_PLACES: u32 = 1 << 24;

/// The code number of a two-letter country code in a reverse key: `256 * first + second`.
pub const fn country_code_number(code: [u8; 2]) -> u32 {
    code[0] as u32 * 256 + code[1] as u32
}

/// The smallest country code number a reverse key holds (`AA`): codes are two of A-Z.
pub const KEY_FIRST_CODE: u32 = country_code_number(*b"AA");
/// The largest country code number a reverse key holds (`ZZ`).
pub const KEY_LAST_CODE: u32 = country_code_number(*b"ZZ");

/// The reverse key of a country and its place (an id, for `place(id)`), or of a country
/// without a place: `code * KEY_PLACES + id + 1`, or `code * KEY_PLACES`, with `code` the
/// [`country_code_number`]. The key of no answer is -1, which no country makes.
pub fn reverse_key(country_code: &str, place: Option<usize>) -> Result<f64, String> {
    let code = match country_code.as_bytes() {
        &[a, b] if a.is_ascii_uppercase() && b.is_ascii_uppercase() => country_code_number([a, b]),
        _ => {
            return Err(format!(
                "country code {country_code:?} does not fit a reverse key"
            ))
        }
    };
    let place = match place {
        // checked, not assumed: places.bin could grow
        Some(id) if id + 1 < KEY_PLACES as usize => (id + 1) as f64,
        Some(id) => return Err(format!("place id {id} does not fit a reverse key")),
        None => 0.0,
    };
    Ok(f64::from(code) * f64::from(KEY_PLACES) + place)
}

/// The largest radio code.
const MAX_RADIO: f64 = (Radio::ALL.len() - 1) as f64;

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
/// [`crate::solve::batch::MIN_PER_THREAD`] requests, so small batches stay on the calling thread.
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

/// The calibration rows of the requests encoded in `input` (the layout of [`locate_into`]'s
/// requests), `truth[i]` (lat, lon) being where the device of request i was: for each request
/// its class in the radius model and its error over the radius the solver gives without a
/// model ([`Locator::radius_sample`]); None for a request with no answer.
pub fn radius_samples(
    locator: &Locator,
    input: &[f64],
    ips: &[String],
    truth: &[(f64, f64)],
) -> Result<Vec<Option<(crate::calibration::RadiusClass, f64)>>, String> {
    let now = locator.now();
    let db = locator.database();
    let mut scratch = Scratch::default();
    let mut out = Vec::with_capacity(truth.len());
    let mut at = 0;
    while at < input.len() {
        let h = read_header(input, at)?;
        let &(lat, lon) = truth
            .get(out.len())
            .ok_or("radius samples: more requests than truths")?;
        let q = decode(input, &h, ips, &mut scratch)?;
        out.push(locator.radius_sample(&db, &q, now).map(|(a, class)| {
            let error = crate::geo::distance_m(a.lat, a.lon, lat, lon);
            (class, error / a.accuracy_m)
        }));
        at = h.end;
    }
    if out.len() != truth.len() {
        return Err(format!(
            "radius samples: {} requests but {} truths",
            out.len(),
            truth.len()
        ));
    }
    Ok(out)
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

/// The query of the request whose header is `h`, its observations decoded into `scratch`.
fn decode<'a>(
    input: &[f64],
    h: &Header,
    ips: &'a [String],
    scratch: &'a mut Scratch,
) -> Result<Query<'a>, String> {
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
                Some(Radio::from_code(int(c[0], MAX_RADIO, "radio")? as u8).ok_or("radio")?)
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
    Ok(Query {
        cells,
        wifi,
        ip,
        options: h.options,
    })
}

/// The [`ANSWER`] numbers of an answer, or of none.
fn encode(answer: Option<Answer>) -> [f64; ANSWER] {
    match answer {
        Some(a) => [
            1.0,
            a.lat,
            a.lon,
            a.accuracy_m,
            a.fallback as u8 as f64,
            if a.aged { 1.0 } else { 0.0 },
        ],
        None => [
            0.0,
            f64::NAN,
            f64::NAN,
            f64::NAN,
            Fallback::None as u8 as f64,
            0.0,
        ],
    }
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
    let q = decode(input, h, ips, scratch)?;
    Ok(encode(locator.locate_in(db, &q, now)))
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
    use super::*;

    const NAN: f64 = f64::NAN;

    /// A batch of two requests: two cells (LTE, then no radio and no mcc) and an access point
    /// with an IP, then one access point alone.
    fn batch() -> Vec<f64> {
        let mut b = vec![2.0, 1.0, 1.0, 1.0, 1.0, 2.0, 0.0];
        b.extend([
            3.0,
            262.0,
            1.0,
            4711.0,
            68_719_476_735.0,
            -80.0,
            NAN,
            3.0,
            NAN,
        ]);
        b.extend([-1.0, -1.0, 32767.0, 7.0, 9.0, NAN, NAN, NAN, 100.0]);
        b.extend([281_474_976_710_655.0, -60.0, 2412.0]);
        b.extend([0.0, 1.0, 0.0, 0.0, 0.0, 0.0, -1.0]);
        b.extend([1.0, NAN, NAN]);
        b
    }

    fn err_of(input: &[f64]) -> String {
        let ips = ["192.0.2.1".to_string()];
        let mut scratch = Scratch::default();
        let mut at = 0;
        while at < input.len() {
            let h = match read_header(input, at) {
                Ok(h) => h,
                Err(e) => return e,
            };
            if let Err(e) = decode(input, &h, &ips, &mut scratch) {
                return e;
            }
            at = h.end;
        }
        panic!("decoded")
    }

    #[test]
    fn a_batch_decodes_to_its_queries() {
        let input = batch();
        let headers = read_headers(&input).unwrap();
        assert_eq!(headers.len(), 2);
        assert_eq!(headers[0].body, HEADER);
        assert_eq!(headers[0].end, HEADER + 2 * CELL + WIFI);
        assert_eq!(headers[1].end, input.len());
        let ips = ["192.0.2.1".to_string()];
        let mut scratch = Scratch::default();
        let q = decode(&input, &headers[0], &ips, &mut scratch).unwrap();
        assert_eq!(q.ip, Some("192.0.2.1"));
        assert_eq!(
            (q.options.lacf, q.options.scf, q.options.ipf, q.options.bt),
            (1, true, true, 2)
        );
        assert_eq!(q.cells.len(), 2);
        let c = &q.cells[0];
        assert_eq!(
            (c.radio, c.mcc, c.mnc, c.lac, c.cid),
            (Some(Radio::Lte), Some(262), 1, 4711, 68_719_476_735)
        );
        assert_eq!(
            (c.signal, c.asu, c.ta, c.psc),
            (Some(-80.0), None, Some(3.0), None)
        );
        let c = &q.cells[1];
        assert_eq!(
            (c.radio, c.mcc, c.mnc, c.psc),
            (None, None, 32767, Some(100))
        );
        assert_eq!(q.wifi.len(), 1);
        assert_eq!(q.wifi[0].bssid, 281_474_976_710_655);
        assert_eq!(
            (q.wifi[0].signal, q.wifi[0].frequency),
            (Some(-60.0), Some(2412.0))
        );
        let q = decode(&input, &headers[1], &ips, &mut scratch).unwrap();
        assert_eq!((q.ip, q.cells.len(), q.wifi.len()), (None, 0, 1));
        assert_eq!((q.wifi[0].bssid, q.wifi[0].signal), (1, None));
        assert!(read_headers(&[]).unwrap().is_empty());
    }

    #[test]
    fn a_malformed_batch_says_what_is_wrong() {
        let good = batch();
        let with = |at: usize, v: f64| {
            let mut b = good.clone();
            b[at] = v;
            b
        };
        let cell = HEADER;
        for (input, want) in [
            (
                good[..3].to_vec(),
                "malformed request batch: truncated header",
            ),
            (
                good[..HEADER + 2].to_vec(),
                "malformed request batch: truncated body",
            ),
            (with(0, 1025.0), "malformed request batch: ncells = 1025"),
            (with(1, 0.5), "malformed request batch: nwifi = 0.5"),
            (with(2, 3.0), "malformed request batch: lacf = 3"),
            (with(5, NAN), "malformed request batch: bt = NaN"),
            (with(6, 1.0), "malformed request batch: ip index"),
            (with(6, 0.5), "malformed request batch: ip index = 0.5"),
            (with(cell, 6.0), "malformed request batch: radio = 6"),
            (
                with(cell + 1, 1000.0),
                "malformed request batch: mcc = 1000",
            ),
            (with(cell + 2, NAN), "malformed request batch: mnc = NaN"),
            (
                with(cell + 3, 16_777_216.0),
                "malformed request batch: lac = 16777216",
            ),
            (with(cell + 4, -2.0), "malformed request batch: cid = -2"),
            (
                with(HEADER + 2 * CELL, 2f64.powi(48)),
                "malformed request batch: bssid = 281474976710656",
            ),
        ] {
            assert_eq!(err_of(&input), want);
        }
    }

    #[test]
    fn answers_are_encoded_in_their_layout() {
        let a = Answer {
            lat: 52.5,
            lon: 13.4,
            accuracy_m: 250.0,
            fallback: Fallback::Scf,
            aged: true,
            source: crate::solve::Source::Cells,
            ring: false,
            level: false,
        };
        assert_eq!(encode(Some(a)), [1.0, 52.5, 13.4, 250.0, 2.0, 1.0]);
        let none = encode(None);
        assert_eq!((none[0], none[4], none[5]), (0.0, 0.0, 0.0));
        assert!(none[1..4].iter().all(|v| v.is_nan()));
    }

    #[test]
    fn reverse_keys_hold_the_country_and_the_place() {
        assert_eq!(KEY_FIRST_CODE, 65 * 256 + 65);
        assert_eq!(KEY_LAST_CODE, 90 * 256 + 90);
        let de = f64::from(country_code_number(*b"DE"));
        assert_eq!(reverse_key("DE", Some(0)), Ok(de * 16_777_216.0 + 1.0));
        assert_eq!(reverse_key("DE", None), Ok(de * 16_777_216.0));
        let last = KEY_PLACES as usize - 2;
        assert_eq!(
            reverse_key("ZZ", Some(last)),
            Ok(f64::from(KEY_LAST_CODE) * 16_777_216.0 + 16_777_215.0)
        );
        assert_eq!(
            reverse_key("DE", Some(last + 1)),
            Err("place id 16777215 does not fit a reverse key".to_string())
        );
        assert!(reverse_key("de", None).is_err());
        assert!(reverse_key("D", None).is_err());
    }

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
