//! The k-way merge of sorted sources: spilled runs, the last in-memory run and,
//! when merging, the existing database (already in output order).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;

use super::rec::{Rec, WIFI_NET};
use super::runs::{write_run, RunFile, RunReader};

/// One sorted stream of (full key, record).
pub enum Source<'a> {
    File(RunReader),
    Mem(std::vec::IntoIter<Rec>),
    /// Keys are computed by the iterator: database stations may not fit `Rec::net`.
    Keyed(Box<dyn Iterator<Item = (u128, Rec)> + 'a>),
}

impl Source<'_> {
    #[inline]
    fn next(&mut self) -> io::Result<Option<(u128, Rec)>> {
        Ok(match self {
            Source::File(r) => r.next_rec()?.map(|r| (r.full_key(), r)),
            Source::Mem(it) => it.next().map(|r| (r.full_key(), r)),
            Source::Keyed(it) => it.next(),
        })
    }
}

/// Yields the records of all sources in full-key order; equal keys come out
/// adjacent, in no particular order among themselves.
pub struct Merger<'a> {
    sources: Vec<Source<'a>>,
    heads: Vec<Rec>,
    heap: BinaryHeap<Reverse<(u128, usize)>>,
}

impl<'a> Merger<'a> {
    pub fn new(mut sources: Vec<Source<'a>>) -> io::Result<Merger<'a>> {
        let mut heads = vec![Rec::default(); sources.len()];
        let mut heap = BinaryHeap::with_capacity(sources.len());
        for (i, s) in sources.iter_mut().enumerate() {
            if let Some((k, r)) = s.next()? {
                heads[i] = r;
                heap.push(Reverse((k, i)));
            }
        }
        Ok(Merger {
            sources,
            heads,
            heap,
        })
    }

    #[inline]
    pub fn next(&mut self) -> io::Result<Option<(u128, Rec)>> {
        let Some(mut top) = self.heap.peek_mut() else {
            return Ok(None);
        };
        let Reverse((key, i)) = *top;
        let rec = self.heads[i];
        match self.sources[i].next()? {
            Some((k, r)) => {
                self.heads[i] = r;
                // Replacing the top in place sifts once instead of a pop and a push.
                *top = Reverse((k, i));
            }
            None => {
                std::collections::binary_heap::PeekMut::pop(top);
            }
        }
        Ok(Some((key, rec)))
    }
}

/// Most runs merged at once: beyond this, open files and read buffers (256 KiB
/// each) would grow with the input, so runs are first merged in groups.
pub const MAX_FAN_IN: usize = 64;

/// Merges groups of runs into longer runs until at most `MAX_FAN_IN - reserve`
/// remain. Duplicates are not combined here, so the final result does not depend
/// on how many passes there were.
pub fn reduce_runs(
    mut runs: Vec<RunFile>,
    reserve: usize,
    dir: &std::path::Path,
) -> io::Result<Vec<RunFile>> {
    let limit = MAX_FAN_IN.saturating_sub(reserve).max(2);
    let mut generation = 0;
    while runs.len() > limit {
        let take = MAX_FAN_IN.min(runs.len() - limit + 1);
        let group: Vec<RunFile> = runs.drain(..take).collect();
        let sources = group
            .iter()
            .map(|r| RunReader::open(r).map(Source::File))
            .collect::<io::Result<Vec<_>>>()?;
        let mut m = Merger::new(sources)?;
        let path = dir.join(format!("pass-{generation:06}.bin"));
        generation += 1;
        let mut err = None;
        let iter = std::iter::from_fn(|| match m.next() {
            Ok(v) => v.map(|(_, r)| r),
            Err(e) => {
                err = Some(e);
                None
            }
        });
        let rows = write_run(&path, iter)?;
        if let Some(e) = err {
            return Err(e);
        }
        for r in group {
            let _ = std::fs::remove_file(&r.path);
        }
        runs.push(RunFile { path, rows });
    }
    Ok(runs)
}

/// Whether a full key is a WiFi key (see `rec::wifi_full_key`).
pub fn is_wifi(key: u128) -> bool {
    key >> 120 == 1
}

/// Splits a cell's full key into (radio code, mcc, mnc, key).
pub fn split_cell_key(key: u128) -> (u8, u16, u16, u64) {
    (
        (key >> 96) as u8,
        (key >> 80) as u16,
        (key >> 64) as u16,
        key as u64,
    )
}

const _: () = assert!(WIFI_NET == u32::MAX);
