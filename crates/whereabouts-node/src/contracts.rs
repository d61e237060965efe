//! The contracts JavaScript shares with Rust, from their one definition in whereabouts-core
//! (`wire`, `Radio`, `Fallback`): the numbers are exported by the addon (`WIRE_HEADER`...),
//! and all of them are rendered into `src/native/contracts.ts`, which the TypeScript side
//! imports (literal types, module constants: no lookup in the addon on the hot path).
//!
//! The test below fails when that file is not what this module renders;
//! `WHEREABOUTS_WRITE_CONTRACTS=1 cargo test -p whereabouts-node contracts` writes it.
//! test/contracts.test.ts fails when the built addon's constants disagree with the file.

use napi_derive::napi;
use whereabouts_core::wire;

/// Numbers of a request's header in the batch wire format (whereabouts-core's `wire`).
#[napi]
pub const WIRE_HEADER: u32 = wire::HEADER as u32;
/// Numbers of a cell in the batch wire format.
#[napi]
pub const WIRE_CELL: u32 = wire::CELL as u32;
/// Numbers of an access point in the batch wire format.
#[napi]
pub const WIRE_WIFI: u32 = wire::WIFI as u32;
/// Numbers of an answer in the batch wire format.
#[napi]
pub const WIRE_ANSWER: u32 = wire::ANSWER as u32;
/// The place part of a reverse key: place ids plus one are below it.
#[napi]
pub const REVERSE_KEY_PLACES: u32 = wire::KEY_PLACES;
/// The country code number of `AA` in a reverse key (`256 * first + second`).
#[napi]
pub const REVERSE_KEY_FIRST_CODE: u32 = wire::KEY_FIRST_CODE;
/// The country code number of `ZZ` in a reverse key.
#[napi]
pub const REVERSE_KEY_LAST_CODE: u32 = wire::KEY_LAST_CODE;

/// `src/native/contracts.ts` as it must read (biome's format).
#[cfg(test)]
fn typescript() -> String {
    use whereabouts_core::solve::Fallback;
    use whereabouts_core::Radio;

    let radios = Radio::ALL
        .iter()
        .map(|r| format!("{}: {}", r.name(), *r as u8))
        .collect::<Vec<_>>()
        .join(", ");
    let fallbacks = Fallback::ALL
        .iter()
        .enumerate()
        .map(|(code, f)| {
            assert_eq!(*f as usize, code, "fallback codes are indices");
            f.name()
                .map_or("undefined".to_string(), |n| format!("'{n}'"))
        })
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "\
/**
 * The contracts shared with the Rust side, generated from their one definition there
 * (crates/whereabouts-node/src/contracts.rs renders whereabouts-core's `wire`, `Radio` and
 * `Fallback`): do not edit. `cargo test -p whereabouts-node` fails when this file is stale;
 * `WHEREABOUTS_WRITE_CONTRACTS=1 cargo test -p whereabouts-node contracts` writes it again, and
 * test/contracts.test.ts fails when the built addon's constants disagree with it.
 */

/** Numbers of a request's header in the batch wire format: ncells, nwifi, lacf, scf, ipf, bt, ip index (-1: none). */
export const WIRE_HEADER = {header};
/** Numbers of a cell: radio (-1: unknown), mcc (-1: none), mnc, lac, cid, signal, asu, ta, psc (NaN: absent). */
export const WIRE_CELL = {cell};
/** Numbers of an access point: bssid, signal, frequency (NaN: absent). */
export const WIRE_WIFI = {wifi};
/** Numbers of an answer: found (1/0), lat, lon, accuracy, fallback (a code of {{@link FALLBACK_NAMES}}), aged (1/0). */
export const WIRE_ANSWER = {answer};

/** Radio codes (the core's `Radio` discriminants). */
export const RadioCode = {{ {radios} }} as const;

/** The names of the answer field `fallback`'s codes (the core's `Fallback`), none for 0. */
export const FALLBACK_NAMES = [{fallbacks}] as const;

/** The place part of a reverse key (`code * REVERSE_KEY_PLACES + placeId + 1`): ids plus one are below it. */
export const REVERSE_KEY_PLACES = {places};
/** The country code number (`256 * first + second` of its ASCII letters) of `AA` in a reverse key. */
export const REVERSE_KEY_FIRST_CODE = {first};
/** The country code number of `ZZ` in a reverse key. */
export const REVERSE_KEY_LAST_CODE = {last};
",
        header = WIRE_HEADER,
        cell = WIRE_CELL,
        wifi = WIRE_WIFI,
        answer = WIRE_ANSWER,
        places = REVERSE_KEY_PLACES,
        first = REVERSE_KEY_FIRST_CODE,
        last = REVERSE_KEY_LAST_CODE,
    )
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn contracts_ts_is_current() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../src/native/contracts.ts");
        let want = super::typescript();
        if std::env::var_os("WHEREABOUTS_WRITE_CONTRACTS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "src/native/contracts.ts is not what crates/whereabouts-node/src/contracts.rs renders: \
             run `WHEREABOUTS_WRITE_CONTRACTS=1 cargo test -p whereabouts-node contracts`"
        );
    }
}
