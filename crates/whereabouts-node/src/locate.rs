//! Locating's hot call: a plain N-API function `(buffer, length, ips, threads) => count` made once
//! per engine (`NativeEngine::locate_function`), over the batch wire format of whereabouts-core's `wire`.
//!
//! Why not a `#[napi]` method: see `function.rs`; with the arguments' conversion the class
//! method cost about 0.5 us a call, a sixth of a one-request `engine.process`. The function
//! made here holds what it needs as its own data pointer, so
//! a call is one `napi_get_cb_info`, one typed-array read, one number read and one number
//! back, and it reuses its observation vectors instead of allocating them per call.
//!
//! The function holds the engine's locator weakly: `close` still releases the database (its
//! maps, the overlay's SQLite file) at once, and a later call fails with "the engine is
//! closed", as the class method did.

use std::cell::RefCell;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::{Arc, Weak};

use napi::bindgen_prelude::FromNapiValue;
use napi::{sys, Error, Result, Status};
use whereabouts_core::solve::Locator;

use crate::function::{bound_function, callback_args, throw};
use whereabouts_core::wire;

/// What a locate call needs: the engine's locator, and vectors reused from call to call.
pub(crate) struct LocateData {
    locator: Weak<Locator>,
    /// Only this function's calls use it, on the JavaScript thread, never reentrantly (a
    /// locate runs no JavaScript); the RefCell states that rather than assuming it.
    scratch: RefCell<wire::Scratch>,
}

/// A JavaScript function `(buffer, length, ips, threads) => count` over `locator` (see
/// `NativeEngine::locate_function` for what it does), freed with the function.
pub(crate) fn locate_function(
    env: sys::napi_env,
    locator: &Arc<Locator>,
) -> Result<sys::napi_value> {
    let data = LocateData {
        locator: Arc::downgrade(locator),
        scratch: RefCell::new(wire::Scratch::default()),
    };
    bound_function(env, "locate", data, call)
}

const USAGE: &str =
    "locate takes (buffer: Float64Array, length: number, ips: string[] | undefined, \
     threads: number | undefined)";

/// The function's body: arguments read, the batch located, errors thrown as JavaScript
/// errors (never a panic across N-API).
unsafe extern "C" fn call(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: the env and info of this callback
    let Some((argv, data)) = (unsafe { callback_args::<4>(env, info) }) else {
        return throw(env, USAGE);
    };
    let mut kind = sys::TypedarrayType::uint8_array;
    let mut count = 0usize;
    let mut values: *mut c_void = ptr::null_mut();
    let mut length = 0u32;
    // SAFETY: N-API calls with a valid env; missing arguments read as undefined, which the
    // typed-array and number reads refuse.
    let read = unsafe {
        sys::napi_get_typedarray_info(
            env,
            argv[0],
            &mut kind,
            &mut count,
            &mut values,
            ptr::null_mut(),
            ptr::null_mut(),
        ) == sys::Status::napi_ok
            && kind == sys::TypedarrayType::float64_array
            && sys::napi_get_value_uint32(env, argv[1], &mut length) == sys::Status::napi_ok
    };
    if !read {
        return throw(env, USAGE);
    }
    // SAFETY: a valid env and argument (undefined when not passed)
    let ips = match unsafe { read_ips(env, argv[2]) } {
        Ok(ips) => ips,
        Err(_) => return throw(env, USAGE),
    };
    // SAFETY: a valid env and argument (undefined when not passed)
    let threads = match unsafe { read_threads(env, argv[3]) } {
        Ok(threads) => threads,
        Err(_) => return throw(env, USAGE),
    };
    // SAFETY: `data` is the box of `locate_function`, alive while the function is.
    let data = unsafe { &*data.cast::<LocateData>() };
    let Some(locator) = data.locator.upgrade() else {
        return throw(env, "the engine is closed");
    };
    let buffer: &mut [f64] = if count == 0 || values.is_null() {
        &mut []
    } else {
        // SAFETY: N-API gave the view's element pointer and count; the view is borrowed for
        // this synchronous call only and no JavaScript runs meanwhile.
        unsafe { std::slice::from_raw_parts_mut(values.cast::<f64>(), count) }
    };
    let located = catch_unwind(AssertUnwindSafe(|| {
        let mut scratch = data.scratch.borrow_mut();
        wire::locate_into(
            &locator,
            buffer,
            length as usize,
            &ips,
            threads,
            &mut scratch,
        )
    }));
    match located {
        Ok(Ok(n)) => {
            let mut out = ptr::null_mut();
            // SAFETY: a plain number from a valid env
            match unsafe { sys::napi_create_uint32(env, n as u32, &mut out) } {
                sys::Status::napi_ok => out,
                _ => throw(env, "napi_create_uint32 failed"),
            }
        }
        Ok(Err(message)) => throw(env, &message),
        Err(_) => throw(env, "internal error in locate"),
    }
}

/// The IP list argument: undefined or null for none (almost every call), else strings.
unsafe fn read_ips(env: sys::napi_env, value: sys::napi_value) -> Result<Vec<String>> {
    let mut kind = sys::ValueType::napi_undefined;
    // SAFETY: a valid env and value
    let status = unsafe { sys::napi_typeof(env, value, &mut kind) };
    if status != sys::Status::napi_ok {
        return Err(Error::new(Status::InvalidArg, USAGE));
    }
    if kind == sys::ValueType::napi_undefined || kind == sys::ValueType::napi_null {
        return Ok(Vec::new());
    }
    // SAFETY: as above; the conversion checks that it is an array of strings
    unsafe { Vec::<String>::from_napi_value(env, value) }
}

/// The thread count argument: undefined for 1 (the one-request calls), else a whole number
/// (0: the machine's parallelism).
unsafe fn read_threads(env: sys::napi_env, value: sys::napi_value) -> Result<usize> {
    let mut kind = sys::ValueType::napi_undefined;
    // SAFETY: a valid env and value
    if unsafe { sys::napi_typeof(env, value, &mut kind) } != sys::Status::napi_ok {
        return Err(Error::new(Status::InvalidArg, USAGE));
    }
    if kind == sys::ValueType::napi_undefined {
        return Ok(1);
    }
    let mut threads = 0u32;
    // SAFETY: as above; a non-number is refused by the call
    if unsafe { sys::napi_get_value_uint32(env, value, &mut threads) } != sys::Status::napi_ok {
        return Err(Error::new(Status::InvalidArg, USAGE));
    }
    Ok(threads as usize)
}
