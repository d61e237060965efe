//! Many requests over several threads: a batch is cut into one contiguous chunk per
//! thread (`std::thread::scope`), the calling thread solving the first. Requests are
//! independent and the [`Locator`] is shared read-only, so the answers are those of the
//! sequential loop, in the same order.

use std::num::NonZeroUsize;
use std::sync::{Mutex, PoisonError};

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
/// uncontended lock per block.
const BLOCK: usize = 32;

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
