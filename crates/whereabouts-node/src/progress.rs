//! What the long-running file commands (import, learn) send back to JS: progress through a
//! threadsafe callback while they run on a worker thread, and rejected lines at the end.

use std::fmt::Debug;

use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;

#[napi(object)]
#[derive(Clone)]
pub struct FileProgress {
    pub file: String,
    pub bytes_done: f64,
    pub bytes_total: f64,
    pub rows: f64,
    pub phase: String,
}

#[napi(object)]
pub struct BadLine {
    pub line: f64,
    pub reason: String,
}

/// A JS callback `(progress) => void`, callable from any thread.
pub type ProgressFn = ThreadsafeFunction<FileProgress, (), FileProgress, Status, false>;

/// Queues one progress reading for the JS thread; never blocks the worker.
pub fn send(
    progress: Option<&ProgressFn>,
    file: &str,
    done: u64,
    total: u64,
    rows: u64,
    phase: impl Debug,
) {
    if let Some(f) = progress {
        f.call(
            FileProgress {
                file: file.to_string(),
                bytes_done: done as f64,
                bytes_total: total as f64,
                rows: rows as f64,
                phase: format!("{phase:?}"),
            },
            ThreadsafeFunctionCallMode::NonBlocking,
        );
    }
}

/// Forwards an import's progress (stations or addresses) to JS; never asks to cancel.
pub fn forward_import(
    progress: Option<&ProgressFn>,
) -> impl FnMut(&whereabouts_core::import::Progress) -> bool + '_ {
    move |p| {
        send(
            progress,
            &p.file,
            p.bytes_done,
            p.bytes_total,
            p.rows,
            p.phase,
        );
        true
    }
}

pub fn bad_lines(lines: Vec<(u64, String)>) -> Vec<BadLine> {
    lines
        .into_iter()
        .map(|(line, reason)| BadLine {
            line: line as f64,
            reason,
        })
        .collect()
}
