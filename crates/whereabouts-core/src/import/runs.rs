//! Sorted runs: rows are gathered into buffers of `run_rows`, and a worker thread
//! sorts each full buffer and spills it to a temp file while parsing fills the
//! next one. At most two buffers exist, so memory is bounded by `run_rows`
//! whatever the input size. The last buffer is never spilled: it is merged from
//! memory.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

use super::rec::{Rec, REC_BYTES};

/// A spilled, sorted run.
#[derive(Debug)]
pub struct RunFile {
    pub path: PathBuf,
    pub rows: u64,
}

pub struct Runs {
    run_rows: usize,
    cur: Vec<Rec>,
    allocated: usize,
    to_worker: Option<SyncSender<Vec<Rec>>>,
    from_worker: Receiver<Vec<Rec>>,
    worker: Option<JoinHandle<io::Result<Vec<RunFile>>>>,
    /// Rows handed to the worker.
    pub spilled_rows: u64,
}

fn io_err(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Writes sorted records to `path`.
pub fn write_run(path: &Path, recs: impl Iterator<Item = Rec>) -> io::Result<u64> {
    let file = File::create(path).map_err(|e| io_err(path, e))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut b = [0u8; REC_BYTES];
    let mut n = 0;
    for r in recs {
        r.encode(&mut b);
        out.write_all(&b).map_err(|e| io_err(path, e))?;
        n += 1;
    }
    out.flush().map_err(|e| io_err(path, e))?;
    Ok(n)
}

impl Runs {
    /// `dir` receives the run files; it must exist and outlive the runs.
    pub fn new(dir: &Path, run_rows: usize) -> io::Result<Runs> {
        let run_rows = run_rows.max(1);
        let (to_worker, worker_in) = mpsc::sync_channel::<Vec<Rec>>(0);
        let (worker_out, from_worker) = mpsc::channel::<Vec<Rec>>();
        let dir = dir.to_path_buf();
        let worker = std::thread::Builder::new()
            .name("import-sort".into())
            .spawn(move || -> io::Result<Vec<RunFile>> {
                let mut runs = Vec::new();
                for mut buf in worker_in {
                    buf.sort_unstable_by_key(Rec::sort_key);
                    let path = dir.join(format!("run-{:06}.bin", runs.len()));
                    let rows = write_run(&path, buf.drain(..))?;
                    runs.push(RunFile { path, rows });
                    // The parser may have finished and gone; then nobody needs the buffer.
                    let _ = worker_out.send(buf);
                }
                Ok(runs)
            })?;
        Ok(Runs {
            run_rows,
            cur: Vec::new(),
            allocated: 0,
            to_worker: Some(to_worker),
            from_worker,
            worker: Some(worker),
            spilled_rows: 0,
        })
    }

    #[inline]
    pub fn push(&mut self, r: Rec) -> io::Result<()> {
        if self.cur.capacity() == 0 {
            self.cur = Vec::with_capacity(self.run_rows.min(1 << 16));
            self.allocated = 1;
        }
        self.cur.push(r);
        if self.cur.len() >= self.run_rows {
            self.spill()?;
        }
        Ok(())
    }

    /// Rows held in memory, not yet spilled.
    pub fn pending(&self) -> usize {
        self.cur.len()
    }

    fn spill(&mut self) -> io::Result<()> {
        let next = if self.allocated < 2 {
            self.allocated += 1;
            Vec::with_capacity(self.run_rows)
        } else {
            match self.from_worker.recv() {
                Ok(b) => b,
                Err(_) => return Err(self.worker_failure()),
            }
        };
        let full = std::mem::replace(&mut self.cur, next);
        self.spilled_rows += full.len() as u64;
        let sent = self.to_worker.as_ref().map(|t| t.send(full));
        if !matches!(sent, Some(Ok(()))) {
            return Err(self.worker_failure());
        }
        Ok(())
    }

    /// The worker stopped early: its error, or a generic one if it panicked.
    fn worker_failure(&mut self) -> io::Error {
        self.to_worker = None;
        match self.worker.take().map(|w| w.join()) {
            Some(Ok(Err(e))) => e,
            _ => io::Error::other("the sorting thread stopped unexpectedly"),
        }
    }

    /// Waits for the worker; returns the spilled runs and the last buffer, sorted.
    pub fn finish(mut self) -> io::Result<(Vec<RunFile>, Vec<Rec>)> {
        self.to_worker = None;
        let runs = match self.worker.take().map(|w| w.join()) {
            Some(Ok(r)) => r?,
            _ => return Err(io::Error::other("the sorting thread stopped unexpectedly")),
        };
        let mut last = std::mem::take(&mut self.cur);
        last.sort_unstable_by_key(Rec::sort_key);
        Ok((runs, last))
    }
}

impl Drop for Runs {
    fn drop(&mut self) {
        // Let the worker finish what it holds before the temp dir goes away.
        self.to_worker = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

/// Reads a run file back in large blocks.
pub struct RunReader {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    left: u64,
}

const READ_RECS: usize = 8192;

impl RunReader {
    pub fn open(run: &RunFile) -> io::Result<RunReader> {
        Ok(RunReader {
            file: File::open(&run.path).map_err(|e| io_err(&run.path, e))?,
            path: run.path.clone(),
            buf: vec![0; READ_RECS * REC_BYTES],
            pos: 0,
            len: 0,
            left: run.rows,
        })
    }

    pub fn next_rec(&mut self) -> io::Result<Option<Rec>> {
        if self.pos == self.len {
            if self.left == 0 {
                return Ok(None);
            }
            let want = (self.left.min(READ_RECS as u64) as usize) * REC_BYTES;
            self.file
                .read_exact(&mut self.buf[..want])
                .map_err(|e| io_err(&self.path, e))?;
            self.pos = 0;
            self.len = want;
        }
        let r = Rec::decode(&self.buf[self.pos..self.pos + REC_BYTES]);
        self.pos += REC_BYTES;
        if self.pos == self.len {
            self.left -= (self.len / REC_BYTES) as u64;
        }
        Ok(Some(r))
    }
}
