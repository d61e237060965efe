//! Batches located on a thread of their own while JavaScript reads the next one: the
//! pipeline of `processBatch` on several threads. Reading and checking requests takes
//! about 0.5 us of JavaScript a request and can only run on the JavaScript thread; the
//! solve (about 1 us) then runs beside it instead of after it.
//!
//! One worker thread per engine, started by its first batch and ended when the engine is
//! closed or collected (its channel closes): starting a thread per batch cost about as much
//! as the overlap saved. A job owns copies of its requests and IP addresses (a JavaScript
//! buffer may not be read from another thread while JavaScript runs), and its answers
//! until `finish`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;

use whereabouts_core::solve::Locator;

use crate::wire;

/// The answers of a job: `ANSWER` numbers a request, and the number of requests.
type Answers = Result<(Vec<f64>, usize), String>;

/// A batch for the worker: the encoded requests, the IP addresses they index, the threads.
struct Job {
    locator: Arc<Locator>,
    input: Vec<f64>,
    ips: Vec<String>,
    threads: usize,
}

/// The worker thread of one engine and the batch it may be solving.
pub(crate) struct LocateWorker {
    jobs: Sender<Job>,
    answers: Receiver<Answers>,
    /// A job was sent and its answers not yet taken.
    pending: bool,
}

impl LocateWorker {
    /// Starts the worker thread.
    pub fn new() -> Result<LocateWorker, String> {
        let (jobs, inbox) = channel::<Job>();
        let (outbox, answers) = channel::<Answers>();
        std::thread::Builder::new()
            .name("whereabouts-locate".into())
            .spawn(move || {
                for job in inbox {
                    if outbox.send(locate(job)).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| format!("cannot start a locate thread: {e}"))?;
        Ok(LocateWorker {
            jobs,
            answers,
            pending: false,
        })
    }

    /// Hands the encoded requests of `input` (the layout of `wire.rs`) to the worker, to be
    /// solved over `threads` threads (the JavaScript thread reads the next batch meanwhile).
    /// A batch started before and never finished is waited for and dropped.
    pub fn start(
        &mut self,
        locator: Arc<Locator>,
        input: Vec<f64>,
        ips: Vec<String>,
        threads: usize,
    ) -> Result<(), String> {
        if self.pending {
            self.pending = false;
            self.answers.recv().map_err(|_| WORKER_GONE)?.ok();
        }
        self.jobs
            .send(Job {
                locator,
                input,
                ips,
                threads,
            })
            .map_err(|_| WORKER_GONE)?;
        self.pending = true;
        Ok(())
    }

    /// Waits for the answers of the batch started last and writes them to the front of
    /// `out`; returns the number of requests.
    pub fn finish(&mut self, out: &mut [f64]) -> Result<usize, String> {
        if !self.pending {
            return Err("no located batch to finish: call locateStart first".into());
        }
        self.pending = false;
        let (answers, n) = self.answers.recv().map_err(|_| WORKER_GONE)??;
        out.get_mut(..answers.len())
            .ok_or("the answer buffer is too small for the batch")?
            .copy_from_slice(&answers);
        Ok(n)
    }
}

const WORKER_GONE: &str = "internal error in locate: its thread has ended";

/// Solves one job, never panicking out of the worker.
fn locate(job: Job) -> Answers {
    let Job {
        locator,
        input,
        ips,
        threads,
    } = job;
    // room for the answers after the requests: a request holds at least a header
    let length = input.len();
    let mut buffer = input;
    buffer.resize(length + wire::ANSWER * length.div_ceil(wire::HEADER), 0.0);
    let located = catch_unwind(AssertUnwindSafe(|| {
        let mut scratch = wire::Scratch::default();
        wire::locate_into(&locator, &mut buffer, length, &ips, threads, &mut scratch)
    }));
    match located {
        Ok(Ok(n)) => {
            buffer.drain(..length);
            buffer.truncate(n * wire::ANSWER);
            Ok((buffer, n))
        }
        Ok(Err(message)) => Err(message),
        Err(_) => Err("internal error in locate".into()),
    }
}
