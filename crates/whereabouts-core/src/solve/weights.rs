//! Signal strength as evidence of distance: cells' and APs' signal weights, a cell's
//! distance from its mast by its level, and an AP's band loss. With log-distance path loss
//! of exponent n, a signal stronger by D dB means a distance shorter by 10^(D/10n);
//! weighting by inverse squared distance gives weight = 10^(D / (5 n)). The fitted
//! exponents and levels are in [`super::params`].

use std::sync::OnceLock;

use super::params::{
    typical_serving_dbm, CELL_DISTANCE_DB_PER_DECADE, CELL_PATH_LOSS_EXPONENT,
    WIFI_PATH_LOSS_EXPONENT,
};
use crate::radio::Radio;

/// A level each radio's signal is measured against: its typical serving level
/// ([`typical_serving_dbm`]; CDMA, which has none, -90 dBm). Within one radio only the
/// levels' spacing matters (the weights are relative); across radios a cell heard at its
/// radio's typical serving level weighs alike, whatever scale its radio's level is read on
/// (GSM's carrier, UMTS's pilot, LTE's reference signal per resource element). With fixed
/// references 15 dB apart for GSM and LTE (their typical serving levels are 26 dB apart),
/// a GSM neighbour outweighed an LTE serving cell: on the second generator's LTE and UMTS
/// phones naming GSM neighbours too (`cells-mixed-radio`, held-out worlds 101..116) the
/// weighted mean's median error over ours went from 1.269 (worst world 1.200) to 1.420
/// (1.298), inside 63.6% -> 62.0%; Dakar's merged scans (three phones, two radios) held
/// 58.2% -> 59.6% inside (docs/experiments.md).
fn reference_dbm(radio: Radio) -> f64 {
    typical_serving_dbm(radio).unwrap_or(-90.0)
}

/// How far from its mast a device hearing a cell at `signal` is, as a multiple of the
/// distance from the mast to the cell's crowd estimate: 1 at the radio's typical serving
/// level, shorter when stronger, longer when weaker, by log-distance path loss. Kept
/// within 0.2 to 3: one level says little more.
pub fn cell_distance_factor(radio: Radio, signal: f64) -> Option<f64> {
    typical_serving_dbm(radio)?;
    Some(match level_index(signal) {
        Some(i) => tables().distance[radio as usize][i],
        None => distance_factor_of(radio, signal),
    })
}

fn distance_factor_of(radio: Radio, signal: f64) -> f64 {
    match typical_serving_dbm(radio) {
        Some(typical) => exp10((typical - signal) / CELL_DISTANCE_DB_PER_DECADE).clamp(0.2, 3.0),
        None => f64::NAN,
    }
}

/// Levels are reported in whole dBm: the three functions of a level here are tabled over
/// the whole dBm from `LEVEL_MIN` to 0, each entry computed by the function itself (so a
/// tabled value is the computed one, bit for bit), once per process, which saves an exp per
/// station; other levels (fractions, out of range, NaN) are computed.
const LEVEL_MIN: i32 = -200;
const LEVELS: usize = (1 - LEVEL_MIN) as usize;

struct Tables {
    /// By radio code, then level.
    cell: [[f64; LEVELS]; 6],
    distance: [[f64; LEVELS]; 6],
    wifi: [f64; LEVELS],
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Box<Tables>> = OnceLock::new();
    TABLES.get_or_init(|| {
        let level = |i: usize| (i as i32 + LEVEL_MIN) as f64;
        let mut t = Box::new(Tables {
            cell: [[0.0; LEVELS]; 6],
            distance: [[0.0; LEVELS]; 6],
            wifi: [0.0; LEVELS],
        });
        for radio in Radio::ALL {
            for i in 0..LEVELS {
                t.cell[radio as usize][i] = cell_weight_of(radio, level(i));
                t.distance[radio as usize][i] = distance_factor_of(radio, level(i));
            }
        }
        for i in 0..LEVELS {
            t.wifi[i] = wifi_weight_of(level(i));
        }
        t
    })
}

/// The table entry of a whole-dBm level within the tables.
fn level_index(signal: f64) -> Option<usize> {
    // A whole level is its own truncation; the cast is one instruction where `trunc` is a
    // call (x86-64 before SSE 4.1), and saturates or gives 0 for what no table holds.
    let level = signal as i32;
    if level as f64 == signal && (LEVEL_MIN..=0).contains(&level) {
        Some((level - LEVEL_MIN) as usize)
    } else {
        None
    }
}

/// 10^x through exp: the same value, at a fraction of `powf`'s cost.
fn exp10(x: f64) -> f64 {
    (x * std::f64::consts::LN_10).exp()
}

pub fn cell_signal_weight(radio: Radio, signal: Option<f64>) -> f64 {
    match signal {
        Some(s) => match level_index(s) {
            Some(i) => tables().cell[radio as usize][i],
            None => cell_weight_of(radio, s),
        },
        None => 1.0,
    }
}

fn cell_weight_of(radio: Radio, s: f64) -> f64 {
    exp10(((s - reference_dbm(radio)) / (5.0 * CELL_PATH_LOSS_EXPONENT)).clamp(-6.0, 6.0))
}

pub fn wifi_signal_weight(signal: Option<f64>) -> f64 {
    match signal {
        Some(s) => match level_index(s) {
            Some(i) => tables().wifi[i],
            None => wifi_weight_of(s),
        },
        None => 1.0,
    }
}

/// What an AP's band adds to its path loss over the 2.4 GHz band's, in whole dB (a prior:
/// physics): free-space loss grows as 20 log10 of the frequency, so at the same distance and
/// power a 5 GHz AP reads 6.5-7.7 dB weaker than a 2.4 GHz one (5,150-5,925 MHz against
/// 2,437), a 6 GHz one 7.8-9.3 dB. Added to a level, it reads every AP on the 2.4 GHz scale of
/// the weights. Whole dB keep the weights' table in use (the band's own spread is well under
/// the 5-8 dB that shadowing puts on one level). Frequencies outside the WiFi bands, or none,
/// add nothing.
pub fn wifi_band_loss_db(frequency_mhz: Option<f64>) -> f64 {
    match frequency_mhz {
        Some(f) if (4_900.0..5_925.0).contains(&f) => 7.0,
        Some(f) if (5_925.0..=7_125.0).contains(&f) => 9.0,
        _ => 0.0,
    }
}

fn wifi_weight_of(s: f64) -> f64 {
    exp10(((s + 80.0) / (5.0 * WIFI_PATH_LOSS_EXPONENT)).clamp(-6.0, 6.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stronger_cell_is_nearer_its_mast() {
        let at = |s| cell_distance_factor(Radio::Lte, s).unwrap();
        assert!((at(-99.0) - 1.0).abs() < 1e-12);
        // 80 dB a decade: 40 dB stronger is sqrt(10) times nearer.
        assert!((at(-59.0) - 10f64.powf(-0.5)).abs() < 1e-12);
        assert!(at(-110.0) > 1.0);
        // One level says little more than this.
        assert_eq!(at(-20.0), 0.2);
        assert_eq!(at(-180.0), 3.0);
        assert_eq!(cell_distance_factor(Radio::Cdma, -80.0), None);
    }

    #[test]
    fn tabled_levels_are_the_computed_ones() {
        for radio in Radio::ALL {
            for s in [-200.0, -140.0, -99.0, -85.0, -60.0, -0.0, 0.0] {
                let w = cell_signal_weight(radio, Some(s));
                assert_eq!(
                    w.to_bits(),
                    cell_weight_of(radio, s).to_bits(),
                    "{radio:?} {s}"
                );
                let d = cell_distance_factor(radio, s);
                assert_eq!(
                    d.map(f64::to_bits),
                    typical_serving_dbm(radio).map(|_| distance_factor_of(radio, s).to_bits())
                );
            }
        }
        for s in [-200.0, -80.0, -35.0, 0.0] {
            assert_eq!(
                wifi_signal_weight(Some(s)).to_bits(),
                wifi_weight_of(s).to_bits()
            );
        }
        // Fractions and levels beyond the tables are computed.
        assert_eq!(level_index(-80.5), None);
        assert_eq!(level_index(-201.0), None);
        assert_eq!(level_index(3.0), None);
        assert_eq!(level_index(f64::NAN), None);
        assert_eq!(level_index(-200.0), Some(0));
        assert_eq!(level_index(0.0), Some(200));
    }

    #[test]
    fn exp10_matches_powf() {
        for x in [-6.0, -1.5, 0.0, 0.3, 2.0, 6.0] {
            let (a, b) = (exp10(x), 10f64.powf(x));
            assert!((a - b).abs() <= b * 1e-12, "{x}: {a} vs {b}");
        }
    }
}
