//! The multi-threaded batch answers as the sequential loop does, and the pool runs every
//! block of a job once.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use whereabouts_core::radio::Radio;

use whereabouts_core::solve::batch::{
    for_each_parallel, BlockPanicked, Blocks, LengthMismatch, Pool, MIN_PER_THREAD,
};
use whereabouts_core::solve::{Answer, CellObs, Locator, Options, Query, WifiObs};
use whereabouts_core::store::record::{cell_key, Estimated, Station, StationInfo};
use whereabouts_core::store::{BuildOptions, Database, DbBuilder};
use whereabouts_core::wire;

const NOW: i64 = 1_700_000_000;

/// SplitMix64: the fixture and the requests are functions of their indices.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn unit(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

fn info(lat: f64, lon: f64, range_m: u32, x: u64) -> StationInfo {
    StationInfo {
        lat,
        lon,
        range_m,
        samples: 1 + (x % 50) as u32,
        psc: None,
        created: NOW - 400 * 86_400,
        updated: NOW - (x % 200) as i64 * 86_400,
        estimated: Estimated::Averaged,
    }
}

const CELLS: u64 = 400;
const APS: u64 = 2_000;

/// LTE 262/1: CELLS cells in 4 TACs over a 0.2 degree square, three sectors to an eNB;
/// APs scattered over the same square.
fn fixture() -> (tempfile::TempDir, Locator) {
    let dir = tempfile::tempdir().unwrap();
    let mut b = DbBuilder::new(dir.path(), BuildOptions::default()).unwrap();
    // Built in id order; the builder takes them in key order, which ranks the ids.
    let mut cells = Vec::new();
    for tac in 0..4u32 {
        for k in 0..CELLS / 4 {
            let x = mix(tac as u64 * 1000 + k);
            cells.push(Station::new(
                cell_key(Radio::Lte, tac, cid(k)),
                &info(
                    52.4 + unit(x) * 0.2,
                    13.3 + unit(mix(x)) * 0.2,
                    300 + (x % 2000) as u32,
                    x,
                ),
            ));
        }
    }
    cells.sort_unstable_by_key(|s| s.key);
    for st in cells {
        b.push_cell(Radio::Lte, 262, 1, st).unwrap();
    }
    let mut aps: Vec<Station> = (0..APS)
        .map(|k| {
            let x = mix(k ^ 0xa9);
            Station::new(
                bssid(k),
                &info(52.4 + unit(x) * 0.2, 13.3 + unit(mix(x)) * 0.2, 50, x),
            )
        })
        .collect();
    aps.sort_unstable_by_key(|s| s.key);
    aps.dedup_by_key(|s| s.key);
    for s in aps {
        b.push_wifi(s).unwrap();
    }
    b.commit().unwrap();
    let db = Database::open(dir.path()).unwrap();
    (dir, Locator::new(db).with_now(NOW))
}

fn cid(k: u64) -> u64 {
    ((1000 + k / 3) << 8) | (k % 3)
}

fn bssid(k: u64) -> u64 {
    mix(k ^ 0xb551d) & 0xfcff_ffff_ffff
}

/// Requests of 0-4 cells and 0-10 APs, known and unknown, near and far apart: every path
/// of the solver (WiFi, cells, area fallback, no answer).
fn requests(n: u64) -> Vec<(Vec<CellObs>, Vec<WifiObs>)> {
    (0..n)
        .map(|i| {
            let r = mix(i);
            let cells = (0..r % 5)
                .map(|j| {
                    let x = mix(r ^ j);
                    CellObs {
                        radio: Some(Radio::Lte),
                        mcc: Some(262),
                        mnc: 1,
                        lac: (x % 4) as u32,
                        cid: cid((x >> 8) % (CELLS / 4 + 10)),
                        signal: Some(-70.0 - (x % 50) as f64),
                        asu: None,
                        ta: None,
                        psc: None,
                    }
                })
                .collect();
            let wifi = (0..(r >> 8) % 11)
                .map(|j| {
                    let x = mix(r ^ (j << 20));
                    WifiObs {
                        bssid: bssid(x % (APS + 200)),
                        signal: Some(-50.0 - (x % 40) as f64),
                        frequency: None,
                    }
                })
                .collect();
            (cells, wifi)
        })
        .collect()
}

#[test]
fn parallel_answers_equal_sequential_ones() {
    let (_dir, locator) = fixture();
    let reqs = requests(4 * MIN_PER_THREAD as u64 + 37);
    let queries: Vec<Query> = reqs
        .iter()
        .map(|(cells, wifi)| Query {
            cells,
            wifi,
            ip: None,
            options: Options::default(),
        })
        .collect();
    let sequential: Vec<Option<Answer>> = queries.iter().map(|q| locator.locate(q)).collect();
    let answered = sequential.iter().filter(|a| a.is_some()).count();
    // The fixture must exercise the solver, not only its misses.
    assert!(answered > queries.len() / 2, "{answered}");
    for threads in [0, 1, 2, 3, 4, 16] {
        let mut out = vec![None; queries.len()];
        locator
            .locate_many(&queries, NOW, threads, &mut out)
            .unwrap();
        assert_eq!(out, sequential, "{threads} threads");
    }
}

/// A request as the wire's encoder (src/native/wire.ts) writes it: a header, the cells, the
/// access points; NaN for an absent value. The default options, no IP.
fn encode(into: &mut Vec<f64>, cells: &[CellObs], wifi: &[WifiObs]) {
    let v = |o: Option<f64>| o.unwrap_or(f64::NAN);
    let o = Options::default();
    let flag = |b: bool| f64::from(u8::from(b));
    into.extend([
        cells.len() as f64,
        wifi.len() as f64,
        f64::from(o.lacf),
        flag(o.scf),
        flag(o.ipf),
        f64::from(o.bt),
        -1.0,
    ]);
    for c in cells {
        into.extend([
            c.radio.map_or(-1.0, |r| r as u8 as f64),
            c.mcc.map_or(-1.0, f64::from),
            f64::from(c.mnc),
            f64::from(c.lac),
            c.cid as f64,
            v(c.signal),
            v(c.asu),
            v(c.ta),
            v(c.psc.map(f64::from)),
        ]);
    }
    for w in wifi {
        into.extend([w.bssid as f64, v(w.signal), v(w.frequency)]);
    }
}

/// The wire's answers ([`wire::ANSWER`] numbers a request) equal the solver's, on one thread,
/// on several, and through the pool ([`wire::start_locate`]).
#[test]
fn wire_batches_answer_as_the_solver_does() {
    let (_dir, locator) = fixture();
    let reqs = requests(2 * MIN_PER_THREAD as u64 + 11);
    let mut input = Vec::new();
    let mut want = Vec::new();
    for (cells, wifi) in &reqs {
        encode(&mut input, cells, wifi);
        let q = Query {
            cells,
            wifi,
            ip: None,
            options: Options::default(),
        };
        want.push(locator.locate(&q));
    }
    let same = |out: &[f64]| {
        for (i, w) in want.iter().enumerate() {
            let a = &out[i * wire::ANSWER..(i + 1) * wire::ANSWER];
            match w {
                Some(w) => assert_eq!(
                    a,
                    [
                        1.0,
                        w.lat,
                        w.lon,
                        w.accuracy_m,
                        w.fallback as u8 as f64,
                        f64::from(u8::from(w.aged))
                    ],
                    "request {i}"
                ),
                None => assert_eq!(a[0], 0.0, "request {i}"),
            }
        }
    };
    let length = input.len();
    for threads in [1, 2, 0] {
        let mut buffer = input.clone();
        buffer.resize(length + reqs.len() * wire::ANSWER, -7.0);
        let n = wire::locate_into(
            &locator,
            &mut buffer,
            length,
            &[],
            threads,
            &mut wire::Scratch::default(),
        )
        .unwrap();
        assert_eq!(n, reqs.len());
        same(&buffer[length..]);
    }
    let pending = wire::start_locate(Arc::new(locator), &input, length, Vec::new(), 2).unwrap();
    let mut out = vec![-7.0; reqs.len() * wire::ANSWER];
    assert_eq!(pending.join(&mut out).unwrap(), reqs.len());
    same(&out);
}

#[test]
fn a_wire_batch_that_does_not_fit_its_buffer_fails() {
    let (_dir, locator) = fixture();
    let locator = Arc::new(locator);
    let mut input = Vec::new();
    encode(
        &mut input,
        &[],
        &[WifiObs {
            bssid: 1,
            signal: None,
            frequency: None,
        }],
    );
    let mut scratch = wire::Scratch::default();
    let length = input.len();
    let beyond = format!(
        "malformed request batch: length {} beyond the buffer's {length}",
        length + 1
    );
    assert_eq!(
        wire::locate_into(
            &locator,
            &mut input.clone(),
            length + 1,
            &[],
            1,
            &mut scratch
        ),
        Err(beyond.clone())
    );
    assert_eq!(
        wire::start_locate(Arc::clone(&locator), &input, length + 1, Vec::new(), 1).err(),
        Some(beyond)
    );
    let small = "malformed request batch: the answer buffer is too small".to_string();
    for threads in [1, 2] {
        assert_eq!(
            wire::locate_into(
                &locator,
                &mut input.clone(),
                length,
                &[],
                threads,
                &mut scratch
            ),
            Err(small.clone())
        );
    }
    let pending = wire::start_locate(locator, &input, length, Vec::new(), 1).unwrap();
    assert_eq!(pending.join(&mut [0.0; 5]), Err(small));
}

#[test]
fn chunks_cover_every_item_once_in_order() {
    let items: Vec<usize> = (0..3 * MIN_PER_THREAD + 5).collect();
    for threads in [1, 2, 3, 7] {
        let mut out = vec![usize::MAX; items.len()];
        for_each_parallel(&items, &mut out, threads, || (), |_, i, o| *o = *i * 2).unwrap();
        assert!(out.iter().enumerate().all(|(i, &o)| o == i * 2));
    }
}

/// Each thread makes its state once (a locator's database generation: taken per item, its
/// lock and reference count would be written by every thread for every request, and the
/// threads would slow each other down).
#[test]
fn each_thread_makes_its_state_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let items: Vec<usize> = (0..4 * MIN_PER_THREAD).collect();
    for threads in [1, 2, 4] {
        let made = AtomicUsize::new(0);
        let mut out = vec![0usize; items.len()];
        for_each_parallel(
            &items,
            &mut out,
            threads,
            || made.fetch_add(1, Ordering::Relaxed),
            |_, i, o| *o = *i + 1,
        )
        .unwrap();
        assert_eq!(made.load(Ordering::Relaxed), threads, "{threads} threads");
        assert!(out.iter().enumerate().all(|(i, &o)| o == i + 1));
    }
}

#[test]
fn lengths_must_match() {
    let (_dir, locator) = fixture();
    let mut out = vec![None; 2];
    assert_eq!(
        locator.locate_many(&[Query::default()], NOW, 2, &mut out),
        Err(LengthMismatch { queries: 1, out: 2 })
    );
}

/// A pool job writing `mix(i)` into slot i, counting how often each block ran; block
/// `panic_at` panics before writing.
struct Squares {
    out: Vec<AtomicU64>,
    runs: Vec<AtomicUsize>,
    panic_at: Option<usize>,
}

impl Squares {
    fn new(blocks: usize, panic_at: Option<usize>) -> Arc<Squares> {
        Arc::new(Squares {
            out: (0..blocks * 8).map(|_| AtomicU64::new(0)).collect(),
            runs: (0..blocks).map(|_| AtomicUsize::new(0)).collect(),
            panic_at,
        })
    }
}

impl Blocks for Squares {
    fn count(&self) -> usize {
        self.runs.len()
    }

    fn run(&self, block: usize) {
        self.runs[block].fetch_add(1, Ordering::Relaxed);
        assert_ne!(Some(block), self.panic_at, "the block meant to fail");
        for i in block * 8..(block + 1) * 8 {
            // Some work, so that threads take blocks side by side.
            let v = (0..200u64).fold(i as u64, |a, k| mix(a ^ k));
            self.out[i].store(v, Ordering::Relaxed);
        }
    }
}

fn expected(i: usize) -> u64 {
    (0..200u64).fold(i as u64, |a, k| mix(a ^ k))
}

#[test]
fn a_pool_job_runs_every_block_once_whatever_its_helpers() {
    for helpers in [0, 1, 3, 64] {
        let job = Squares::new(500, None);
        let ticket = Pool::global().start(Arc::clone(&job) as Arc<dyn Blocks>, helpers);
        // The caller goes on meanwhile, as a binding reading its next batch does.
        let busy = (0..10_000u64).fold(0, |a, k| mix(a ^ k));
        assert_ne!(busy, 0);
        assert_eq!(ticket.join(), Ok(()));
        assert!(
            job.runs.iter().all(|r| r.load(Ordering::Relaxed) == 1),
            "{helpers} helpers"
        );
        for (i, v) in job.out.iter().enumerate() {
            assert_eq!(
                v.load(Ordering::Relaxed),
                expected(i),
                "{helpers} helpers, slot {i}"
            );
        }
    }
}

#[test]
fn jobs_started_before_joining_and_from_several_threads_all_finish() {
    std::thread::scope(|s| {
        for t in 0..4 {
            s.spawn(move || {
                // Two jobs under way at once from each thread, as a pipelined batch has.
                let mut pending = Vec::new();
                for k in 0..20 {
                    let job = Squares::new(1 + (t * 7 + k) % 40, None);
                    let ticket = Pool::global().start(Arc::clone(&job) as Arc<dyn Blocks>, 2);
                    pending.push((job, ticket));
                    if pending.len() == 2 {
                        let (job, ticket) = pending.remove(0);
                        assert_eq!(ticket.join(), Ok(()));
                        assert!(job.runs.iter().all(|r| r.load(Ordering::Relaxed) == 1));
                    }
                }
                for (job, ticket) in pending {
                    assert_eq!(ticket.join(), Ok(()));
                    assert!(job.runs.iter().all(|r| r.load(Ordering::Relaxed) == 1));
                }
            });
        }
    });
}

#[test]
fn a_panicking_block_is_reported_at_the_join_and_the_others_still_run() {
    let job = Squares::new(100, Some(37));
    let ticket = Pool::global().start(Arc::clone(&job) as Arc<dyn Blocks>, 2);
    assert_eq!(ticket.join(), Err(BlockPanicked));
    assert!(job.runs.iter().all(|r| r.load(Ordering::Relaxed) == 1));
    assert_eq!(job.out[37 * 8].load(Ordering::Relaxed), 0);
    assert_eq!(job.out[38 * 8].load(Ordering::Relaxed), expected(38 * 8));
    // The pool's threads survived it.
    let next = Squares::new(50, None);
    let ticket = Pool::global().start(Arc::clone(&next) as Arc<dyn Blocks>, 2);
    assert_eq!(ticket.join(), Ok(()));
    assert!(next.runs.iter().all(|r| r.load(Ordering::Relaxed) == 1));
}

#[test]
fn an_empty_job_joins_at_once() {
    let job = Squares::new(0, None);
    assert_eq!(
        Pool::global().start(job as Arc<dyn Blocks>, 4).join(),
        Ok(())
    );
}

#[test]
fn the_pool_solves_before_the_join() {
    let job = Squares::new(500, None);
    let ticket = Pool::global().start(Arc::clone(&job) as Arc<dyn Blocks>, 1);
    // Nothing here takes a block: whatever ran before the join ran on a pool thread.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while job.runs[0].load(Ordering::Relaxed) == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(
        job.runs[0].load(Ordering::Relaxed),
        1,
        "no pool thread took the job"
    );
    assert_eq!(ticket.join(), Ok(()));
}
