/**
 * The contracts shared with the Rust side, generated from their one definition there
 * (crates/whereabouts-node/src/contracts.rs renders whereabouts-core's `wire`, `Radio` and
 * `Fallback`): do not edit. `cargo test -p whereabouts-node` fails when this file is stale;
 * `WHEREABOUTS_WRITE_CONTRACTS=1 cargo test -p whereabouts-node contracts` writes it again, and
 * test/contracts.test.ts fails when the built addon's constants disagree with it.
 */

/** Numbers of a request's header in the batch wire format: ncells, nwifi, lacf, scf, ipf, bt, ip index (-1: none). */
export const WIRE_HEADER = 7;
/** Numbers of a cell: radio (-1: unknown), mcc (-1: none), mnc, lac, cid, signal, asu, ta, psc (NaN: absent). */
export const WIRE_CELL = 9;
/** Numbers of an access point: bssid, signal, frequency (NaN: absent). */
export const WIRE_WIFI = 3;
/** Numbers of an answer: found (1/0), lat, lon, accuracy, fallback (a code of {@link FALLBACK_NAMES}), aged (1/0). */
export const WIRE_ANSWER = 6;

/** Radio codes (the core's `Radio` discriminants). */
export const RadioCode = { gsm: 0, cdma: 1, umts: 2, lte: 3, nbiot: 4, nr: 5 } as const;

/** The names of the answer field `fallback`'s codes (the core's `Fallback`), none for 0. */
export const FALLBACK_NAMES = [undefined, 'lacf', 'scf', 'ipf'] as const;

/** The place part of a reverse key (`code * REVERSE_KEY_PLACES + placeId + 1`): ids plus one are below it. */
export const REVERSE_KEY_PLACES = 16777216;
/** The country code number (`256 * first + second` of its ASCII letters) of `AA` in a reverse key. */
export const REVERSE_KEY_FIRST_CODE = 16705;
/** The country code number of `ZZ` in a reverse key. */
export const REVERSE_KEY_LAST_CODE = 23130;
