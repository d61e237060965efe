//! Many requests over several threads. Two ways:
//! - [`for_each_parallel`] cuts a batch into blocks that `std::thread::scope` threads and the
//!   calling thread take in turn, and returns when all are solved;
//! - a [`Pool`] keeps threads for jobs that run beside their caller: [`Pool::start`] returns at
//!   once, and [`Ticket::join`] solves what is left on the caller's thread and waits for the
//!   rest (a binding reads its next batch meanwhile).
//!
//! Requests are independent and the [`Locator`] is shared read-only, so the answers are those
//! of the sequential loop, in the same order.

use std::collections::VecDeque;
use std::num::NonZeroUsize;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};

use super::query::{Answer, Query};
use super::Locator;

/// Below this many requests a thread is not worth starting: a spawn and join cost about as
/// much as 20 to 50 mixed requests (1 µs each), so a chunk of this size keeps that to a
/// few percent.
pub const MIN_PER_THREAD: usize = 256;

/// The thread count used when a caller asks for 0: the machine's available parallelism
/// (1 when it cannot be read).
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, NonZeroUsize::get)
}

/// `queries` and `out` differ in length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LengthMismatch {
    pub queries: usize,
    pub out: usize,
}

impl std::fmt::Display for LengthMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} queries but room for {} answers",
            self.queries, self.out
        )
    }
}

impl std::error::Error for LengthMismatch {}

/// Items a thread takes at a time from what is left of a batch: about 30 µs of mixed
/// requests, so that threads finish within that of each other, whenever each started (a
/// thread spawned on an idle core of a VM starts 50 to 100 µs after the call), for one
/// uncontended lock per block. A [`Pool`] job's blocks are best this size too.
pub const BLOCK: usize = 32;

/// Calls `f(&mut state, items[i], &mut out[i])` for every i, over at most `threads` threads
/// (0: the [`default_threads`]), as many as give each [`MIN_PER_THREAD`] items or more. Each
/// thread makes its own `state` with `init` first (a locator's database generation: taken
/// per request, its lock and reference count would be written by every thread for every
/// request), then takes blocks of the remaining items until none are left; the calling thread
/// is one of them. The generic half of [`Locator::locate_many`], for callers whose items are
/// not yet queries (a binding decoding its wire format in each thread, without a decoded
/// copy of the whole batch).
pub fn for_each_parallel<I, O, S, N, F>(
    items: &[I],
    out: &mut [O],
    threads: usize,
    init: N,
    f: F,
) -> Result<(), LengthMismatch>
where
    I: Sync,
    O: Send,
    N: Fn() -> S + Sync,
    F: Fn(&mut S, &I, &mut O) + Sync,
{
    if items.len() != out.len() {
        return Err(LengthMismatch {
            queries: items.len(),
            out: out.len(),
        });
    }
    let threads = if threads == 0 {
        default_threads()
    } else {
        threads
    };
    let threads = threads.min(items.len() / MIN_PER_THREAD).max(1);
    if threads == 1 {
        let mut state = init();
        for (i, o) in items.iter().zip(out.iter_mut()) {
            f(&mut state, i, o);
        }
        return Ok(());
    }
    let blocks = Mutex::new(items.chunks(BLOCK).zip(out.chunks_mut(BLOCK)));
    let work = || {
        let mut state = init();
        loop {
            let block = blocks.lock().unwrap_or_else(PoisonError::into_inner).next();
            let Some((items, out)) = block else { break };
            for (i, o) in items.iter().zip(out.iter_mut()) {
                f(&mut state, i, o);
            }
        }
    };
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(work);
        }
        work();
    });
    Ok(())
}

impl Locator {
    /// Locates every query of `queries` into the same position of `out`, over at most
    /// `threads` threads (0: [`default_threads`]); the clock `now` is read once by the
    /// caller, as for [`Locator::locate_at`]. The answers equal those of calling
    /// `locate_at` on each query in turn. Fails only when the lengths differ.
    pub fn locate_many(
        &self,
        queries: &[Query<'_>],
        now: i64,
        threads: usize,
        out: &mut [Option<Answer>],
    ) -> Result<(), LengthMismatch> {
        for_each_parallel(
            queries,
            out,
            threads,
            || self.database(),
            |db, q, o| *o = self.locate_in(db, q, now),
        )
    }
}

/// Work cut into blocks that any thread may run, each once, in any order: a job of a
/// [`Pool`]. The job owns what it reads and writes, so that it may outlive the call that
/// started it.
pub trait Blocks: Send + Sync {
    /// How many blocks there are.
    fn count(&self) -> usize;
    /// Runs block `i` (`i < count()`); called once for each.
    fn run(&self, i: usize);
}

/// A job under way: its blocks, which to take next and how many have finished.
struct Job {
    work: Arc<dyn Blocks>,
    count: usize,
    next: AtomicUsize,
    done: AtomicUsize,
    /// Held only to wait for `done` or announce its last step, so no wake-up is lost.
    lock: Mutex<()>,
    finished: Condvar,
    panicked: AtomicBool,
}

impl Job {
    /// Runs blocks until none is left to take.
    fn help(&self) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.count {
                return;
            }
            // A panic would leave the block unfinished and its joiner waiting for ever: it
            // is counted as finished, and the join reports it.
            if catch_unwind(AssertUnwindSafe(|| self.work.run(i))).is_err() {
                self.panicked.store(true, Ordering::Relaxed);
            }
            if self.done.fetch_add(1, Ordering::AcqRel) + 1 == self.count {
                let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
                self.finished.notify_all();
            }
        }
    }
}

/// What the threads of a [`Pool`] wait on: one entry per helper a job asked for.
#[derive(Default)]
struct Queue {
    entries: VecDeque<Arc<Job>>,
    threads: usize,
}

/// Threads kept for batch jobs that run beside their caller: [`Pool::start`] returns at
/// once and the caller goes on (a binding reading the next batch) while the pool solves;
/// [`Ticket::join`] then runs what is left on the caller's thread too. Unlike
/// [`for_each_parallel`], no thread is started per call (a start and join cost 50 to 100 us
/// on a VM), and the job owns its data.
#[derive(Default)]
pub struct Pool {
    queue: Mutex<Queue>,
    wake: Condvar,
}

/// A job started on a [`Pool`]; [`Ticket::join`] waits for it. Dropped unjoined, the job
/// still runs to its end.
pub struct Ticket {
    job: Arc<Job>,
    pool: &'static Pool,
}

/// A block of a job panicked (its other blocks ran).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockPanicked;

impl std::fmt::Display for BlockPanicked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a block of a batch job panicked")
    }
}

impl std::error::Error for BlockPanicked {}

impl Pool {
    /// The process's pool. Its threads are started as jobs ask for them and then wait,
    /// idle, for the next job.
    pub fn global() -> &'static Pool {
        static POOL: OnceLock<Pool> = OnceLock::new();
        POOL.get_or_init(Pool::default)
    }

    /// Starts `work` on up to `helpers` of the pool's threads (started if the pool has
    /// fewer) and returns at once; the caller's thread joins in at [`Ticket::join`]. With
    /// no helpers, or when a thread cannot be started, the join runs it all.
    pub fn start(&'static self, work: Arc<dyn Blocks>, helpers: usize) -> Ticket {
        let count = work.count();
        let job = Arc::new(Job {
            work,
            count,
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            lock: Mutex::new(()),
            finished: Condvar::new(),
            panicked: AtomicBool::new(false),
        });
        let helpers = helpers.min(count);
        if helpers > 0 {
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            while queue.threads < helpers {
                let started = std::thread::Builder::new()
                    .name("whereabouts-batch".into())
                    .spawn(move || self.serve());
                if started.is_err() {
                    break;
                }
                queue.threads += 1;
            }
            for _ in 0..helpers {
                queue.entries.push_back(Arc::clone(&job));
            }
            drop(queue);
            // One wake-up an entry: on a machine of many cores, waking every idle thread for
            // a job of a few blocks would have most of them find the queue empty again.
            for _ in 0..helpers {
                self.wake.notify_one();
            }
        }
        Ticket { job, pool: self }
    }

    /// A pool thread: helps each job it is handed, for ever.
    fn serve(&self) {
        loop {
            let job = {
                let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
                loop {
                    if let Some(job) = queue.entries.pop_front() {
                        break job;
                    }
                    queue = self
                        .wake
                        .wait(queue)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            };
            job.help();
        }
    }
}

impl Ticket {
    /// Runs the job's untaken blocks on this thread, then waits for those other threads
    /// took. Err: a block panicked (the others ran).
    pub fn join(self) -> Result<(), BlockPanicked> {
        let job = &self.job;
        job.help();
        let mut guard = job.lock.lock().unwrap_or_else(PoisonError::into_inner);
        while job.done.load(Ordering::Acquire) < job.count {
            guard = job
                .finished
                .wait(guard)
                .unwrap_or_else(PoisonError::into_inner);
        }
        drop(guard);
        // Entries no thread took would keep the job's data until a thread came by.
        self.pool
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entries
            .retain(|j| !Arc::ptr_eq(j, job));
        if job.panicked.load(Ordering::Relaxed) {
            Err(BlockPanicked)
        } else {
            Ok(())
        }
    }
}
