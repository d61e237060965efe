//! Progress of the long-running file commands ([`import`](crate::import),
//! [`learn`](crate::learn), address imports): what a report says, and how often the
//! caller's callback hears one. Each command names its own phases; the rest is one.

use std::time::{Duration, Instant};

use serde::Serialize;

/// A progress report, given at most about ten times a second. `P` is the command's
/// phase ([`import::Phase`](crate::import::Phase), [`learn::LearnPhase`](crate::learn::LearnPhase)).
#[derive(Clone, Debug, Serialize)]
pub struct Progress<P> {
    pub file: String,
    pub bytes_done: u64,
    pub bytes_total: u64,
    /// Rows read from `file` so far while reading; what the phase counts otherwise
    /// (records merged, stations estimated).
    pub rows: u64,
    pub phase: P,
}

/// The callback answered `false`: the command stops and leaves the database as it was.
/// Each command's error type turns it into its own `Cancelled`.
#[derive(Debug)]
pub(crate) struct Cancelled;

/// Rate-limits the caller's progress callback and turns a `false` into `E`'s
/// cancellation (a command's error type, so that `?` needs no conversion).
pub(crate) struct Reporter<'a, P, E> {
    callback: &'a mut dyn FnMut(&Progress<P>) -> bool,
    last: Option<Instant>,
    error: std::marker::PhantomData<fn() -> E>,
}

const REPORT_EVERY: Duration = Duration::from_millis(100);

impl<'a, P, E: From<Cancelled>> Reporter<'a, P, E> {
    pub(crate) fn new(callback: &'a mut dyn FnMut(&Progress<P>) -> bool) -> Self {
        Reporter {
            callback,
            last: None,
            error: std::marker::PhantomData,
        }
    }

    /// `force` is for phase and file boundaries, which callers want to see even
    /// when the previous report was a moment ago.
    pub(crate) fn report(
        &mut self,
        force: bool,
        progress: impl FnOnce() -> Progress<P>,
    ) -> Result<(), E> {
        let now = Instant::now();
        if !force
            && self
                .last
                .is_some_and(|t| now.duration_since(t) < REPORT_EVERY)
        {
            return Ok(());
        }
        self.last = Some(now);
        if (self.callback)(&progress()) {
            Ok(())
        } else {
            Err(Cancelled.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Stopped;

    impl From<Cancelled> for Stopped {
        fn from(_: Cancelled) -> Self {
            Stopped
        }
    }

    fn at(rows: u64) -> Progress<u8> {
        Progress {
            file: "f".into(),
            bytes_done: rows,
            bytes_total: 10,
            rows,
            phase: 0,
        }
    }

    #[test]
    fn forced_reports_always_pass_and_others_wait_their_turn() {
        let mut seen = Vec::new();
        let mut callback = |p: &Progress<u8>| {
            seen.push(p.rows);
            true
        };
        {
            let mut r: Reporter<u8, Stopped> = Reporter::new(&mut callback);
            r.report(false, || at(1)).unwrap();
            // Within REPORT_EVERY of the first: dropped unless forced.
            r.report(false, || at(2)).unwrap();
            r.report(true, || at(3)).unwrap();
        }
        assert_eq!(seen, [1, 3]);
    }

    #[test]
    fn a_false_from_the_callback_is_the_commands_cancellation() {
        let mut callback = |_: &Progress<u8>| false;
        let mut r: Reporter<u8, Stopped> = Reporter::new(&mut callback);
        assert_eq!(r.report(true, || at(0)), Err(Stopped));
    }
}
