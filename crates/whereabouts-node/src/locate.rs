//! Locating's hot call: a plain function `(buffer, length, ips, threads) => count` made once
//! per engine (`NativeEngine::locate_function`), over the batch wire format of
//! whereabouts-core's `wire`.
//!
//! Why not a `#[napi]` method: a class method costs napi-rs about 0.3 us a call before it
//! reaches our code (the receiver's unwrap and type-tag check, the borrow scope), a sixth of
//! a one-request `engine.process`. The function made here (napi-rs's
//! `create_function_from_closure`, no raw N-API: lib.rs says why) holds what it needs in its
//! closure, so a call is one `napi_get_cb_info`, one typed-array read, one number read and
//! one number back, and it reuses its observation vectors instead of allocating them per call.
//!
//! The function holds the engine's locator weakly: `close` still releases the database (its
//! maps, the overlay's SQLite file) once no batch thread holds it, and a later call fails with
//! "the engine is closed", as the class method did: it checks the engine's closed flag first,
//! since a pool thread may still hold the locator a moment after its batch ended.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use napi::bindgen_prelude::{Float64ArraySlice, Function, FunctionCallContext, Unknown};
use napi::{Env, Error, Result, Status, ValueType};
use whereabouts_core::solve::Locator;
use whereabouts_core::wire;

const USAGE: &str =
    "locate takes (buffer: Float64Array, length: number, ips: string[] | undefined, \
     threads: number | undefined)";

fn usage<E>(_: E) -> Error {
    Error::new(Status::InvalidArg, USAGE)
}

/// A JavaScript function `(buffer, length, ips, threads) => count` over `locator` (see
/// `NativeEngine::locate_function` for what it does), freed with the function.
pub(crate) fn locate_function<'env>(
    env: &'env Env,
    locator: &Arc<Locator>,
    closed: Arc<AtomicBool>,
) -> Result<Function<'env, (), u32>> {
    let locator: Weak<Locator> = Arc::downgrade(locator);
    // Only this function's calls use it, on the JavaScript thread, never reentrantly (a
    // locate runs no JavaScript); the RefCell states that rather than assuming it.
    let scratch = RefCell::new(wire::Scratch::default());
    env.create_function_from_closure("locate", move |ctx| call(&ctx, &locator, &closed, &scratch))
}

/// The function's body: arguments read, the batch located, errors thrown as JavaScript
/// errors (napi-rs's trampoline catches a panic).
fn call(
    ctx: &FunctionCallContext,
    locator: &Weak<Locator>,
    closed: &AtomicBool,
    scratch: &RefCell<wire::Scratch>,
) -> Result<u32> {
    let argument = |i: usize| -> Result<Option<Unknown>> {
        if i < ctx.length() {
            ctx.get::<Unknown>(i).map(Some)
        } else {
            Ok(None)
        }
    };
    let mut buffer: Float64ArraySlice = ctx.get(0).map_err(usage)?;
    let length: u32 = ctx.get(1).map_err(usage)?;
    let ips = match argument(2).map_err(usage)? {
        None => Vec::new(),
        Some(v) => match v.get_type().map_err(usage)? {
            ValueType::Undefined | ValueType::Null => Vec::new(),
            _ => ctx.get::<Vec<String>>(2).map_err(usage)?,
        },
    };
    let threads = match argument(3).map_err(usage)? {
        None => 1,
        Some(v) if v.get_type().map_err(usage)? == ValueType::Undefined => 1,
        Some(_) => ctx.get::<u32>(3).map_err(usage)? as usize,
    };
    let locator = Some(locator)
        .filter(|_| !closed.load(Ordering::Acquire))
        .and_then(Weak::upgrade)
        .ok_or_else(|| Error::new(Status::GenericFailure, "the engine is closed"))?;
    // SAFETY: the view is borrowed for this synchronous call, during which no JavaScript
    // runs; no other reference to its memory is alive.
    let buffer = unsafe { buffer.as_mut() };
    let mut scratch = scratch.borrow_mut();
    wire::locate_into(
        &locator,
        buffer,
        length as usize,
        &ips,
        threads,
        &mut scratch,
    )
    .map(|n| n as u32)
    .map_err(|m| Error::new(Status::GenericFailure, m))
}
