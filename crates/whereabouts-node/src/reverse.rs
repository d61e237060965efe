//! Reverse geocoding's hot call: the reverse key of a point (`NativeEngine::reverse_key`
//! documents it) from a plain N-API function made once per engine
//! (`NativeEngine::reverse_key_function`).
//!
//! Why not a `#[napi]` method: napi-rs spends about 0.3 us of this VM's time on any class
//! method call before it reaches our code (`function.rs`), a quarter of the whole lookup. Why
//! raw N-API rather than napi-rs's function API: lib.rs's notes (the measured gain).
//! The function made here holds its data (the engine's places and countries, shared) as the
//! function's own data pointer, so a call is one `napi_get_cb_info`, three number reads and
//! one number back. The data is freed by the function's finalizer; the engine's `close` does
//! not end it, so a function outliving its engine still answers (JavaScript checks that the
//! engine is open).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::Arc;

use napi::{sys, Result};
use whereabouts_core::countries::CountryIndex;
use whereabouts_core::places::PlaceIndex;

use crate::function::{bound_function, callback_args, throw};

/// What a reverse lookup needs: an engine's places and (optional) country polygons.
pub(crate) struct ReverseData {
    pub places: Arc<PlaceIndex>,
    pub countries: Option<Arc<CountryIndex>>,
}

/// The reverse key of a point at `zoom`: see `NativeEngine::reverse_key`.
pub(crate) fn key(
    places: &PlaceIndex,
    countries: Option<&CountryIndex>,
    lat: f64,
    lon: f64,
    zoom: u32,
) -> Result<f64> {
    let zoom = zoom.min(u8::MAX as u32) as u8;
    let (code, place) = match countries {
        Some(countries) => match places.reverse_id_with(countries, lat, lon, zoom) {
            Some((code, place)) => (code, place.map(|(id, _)| id)),
            None => return Ok(-1.0),
        },
        None => match places.reverse(lat, lon, zoom) {
            Some(p) => (p.country_code, Some(p.id)),
            None => return Ok(-1.0),
        },
    };
    whereabouts_core::wire::reverse_key(code, place).map_err(crate::err)
}

/// A JavaScript function `(lat, lon, zoom) => key` over `data`, freed with the function.
pub(crate) fn key_function(env: sys::napi_env, data: ReverseData) -> Result<sys::napi_value> {
    bound_function(env, "reverseKey", data, call)
}

/// The function's body: arguments read, the lookup, errors thrown as JavaScript errors
/// (never a panic across N-API).
unsafe extern "C" fn call(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    const USAGE: &str = "reverseKey takes (lat: number, lon: number, zoom: number)";
    // SAFETY: the env and info of this callback
    let Some((argv, data)) = (unsafe { callback_args::<3>(env, info) }) else {
        return throw(env, USAGE);
    };
    let mut lat = 0.0;
    let mut lon = 0.0;
    let mut zoom = 0u32;
    // SAFETY: number reads with a valid env, which refuse the undefined of a missing argument
    let read = unsafe {
        sys::napi_get_value_double(env, argv[0], &mut lat) == sys::Status::napi_ok
            && sys::napi_get_value_double(env, argv[1], &mut lon) == sys::Status::napi_ok
            && sys::napi_get_value_uint32(env, argv[2], &mut zoom) == sys::Status::napi_ok
    };
    if !read {
        return throw(env, USAGE);
    }
    // SAFETY: `data` is the box of `key_function`, alive while the function is.
    let data = unsafe { &*data.cast::<ReverseData>() };
    let lookup = || key(&data.places, data.countries.as_deref(), lat, lon, zoom);
    match catch_unwind(AssertUnwindSafe(lookup)) {
        Ok(Ok(key)) => {
            let mut out = ptr::null_mut();
            // SAFETY: a plain number from a valid env
            match unsafe { sys::napi_create_double(env, key, &mut out) } {
                sys::Status::napi_ok => out,
                _ => throw(env, "napi_create_double failed"),
            }
        }
        Ok(Err(e)) => throw(env, &e.reason),
        Err(_) => throw(env, "internal error in reverse"),
    }
}
