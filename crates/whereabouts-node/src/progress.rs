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

/// Forwards a file command's progress (import, address import, learn) to JS, queued for the
/// JS thread so that the worker never blocks; never asks to cancel.
pub fn forward<P: Debug>(
    progress: Option<&ProgressFn>,
) -> impl FnMut(&whereabouts_core::progress::Progress<P>) -> bool + '_ {
    move |p| {
        if let Some(f) = progress {
            f.call(
                FileProgress {
                    file: p.file.clone(),
                    bytes_done: p.bytes_done as f64,
                    bytes_total: p.bytes_total as f64,
                    rows: p.rows as f64,
                    phase: format!("{:?}", p.phase),
                },
                ThreadsafeFunctionCallMode::NonBlocking,
            );
        }
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
