//! Plain N-API functions bound to Rust data, for `reverse.rs`'s hot call: raw N-API, kept for
//! the gain measured in lib.rs's notes over napi-rs's `create_function_from_closure` (whose
//! trampoline allocates the argument list on every call). Like that API, it skips napi-rs's
//! class method machinery (about 0.3 us a call on this VM: the receiver's unwrap and type-tag
//! check, the borrow scope and its registration). A bound function's data is its own
//! pointer, freed by its finalizer when the function is collected.

use std::ffi::{c_char, c_void};
use std::ptr;

use napi::{sys, Error, Result, Status};

/// The signature of a bound function's body.
pub(crate) type Body =
    unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value;

/// A JavaScript function named `name` running `body` with `data` as its data pointer
/// (`napi_get_cb_info` gives it back), `data` freed with the function.
pub(crate) fn bound_function<T>(
    env: sys::napi_env,
    name: &str,
    data: T,
    body: Body,
) -> Result<sys::napi_value> {
    let data = Box::into_raw(Box::new(data));
    let mut function = ptr::null_mut();
    // SAFETY: `env` is the calling callback's; `data` stays valid until the finalizer,
    // which N-API runs once, after the function is collected.
    unsafe {
        let status = sys::napi_create_function(
            env,
            name.as_ptr().cast::<c_char>(),
            name.len() as isize,
            Some(body),
            data.cast::<c_void>(),
            &mut function,
        );
        if status != sys::Status::napi_ok {
            drop(Box::from_raw(data));
            return Err(Error::new(
                Status::GenericFailure,
                "napi_create_function failed",
            ));
        }
        let status = sys::napi_add_finalizer(
            env,
            function,
            data.cast::<c_void>(),
            Some(finalize::<T>),
            ptr::null_mut(),
            ptr::null_mut(),
        );
        if status != sys::Status::napi_ok {
            // the function exists but nothing would free the data: leak it rather than
            // free what the function may still read
            return Err(Error::new(
                Status::GenericFailure,
                "napi_add_finalizer failed",
            ));
        }
    }
    Ok(function)
}

unsafe extern "C" fn finalize<T>(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the box made in `bound_function` for this `T`, finalized once.
    drop(unsafe { Box::from_raw(data.cast::<T>()) });
}

/// Throws a JavaScript `Error` with `message`; the callback then returns no value.
pub(crate) fn throw(env: sys::napi_env, message: &str) -> sys::napi_value {
    let message = std::ffi::CString::new(message.replace('\0', " ")).unwrap_or_default();
    // SAFETY: a valid env and a NUL-terminated message
    unsafe { sys::napi_throw_error(env, ptr::null(), message.as_ptr()) };
    ptr::null_mut()
}

/// A bound function's `N` arguments (undefined where fewer were passed) and its data
/// pointer; None when N-API cannot give them.
///
/// # Safety
/// `env` and `info` must be the ones N-API passed to the running callback.
pub(crate) unsafe fn callback_args<const N: usize>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> Option<([sys::napi_value; N], *mut c_void)> {
    let mut argc = N;
    let mut argv = [ptr::null_mut(); N];
    let mut data = ptr::null_mut();
    // SAFETY: the caller's env and info; N-API fills at most `argc` arguments
    let status = unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            &mut argc,
            argv.as_mut_ptr(),
            ptr::null_mut(),
            &mut data,
        )
    };
    (status == sys::Status::napi_ok).then_some((argv, data))
}
