//! Signal strength as evidence of distance. With log-distance path loss of
//! exponent n, a signal stronger by D dB means a distance shorter by 10^(D/10n);
//! weighting by inverse squared distance gives weight = 10^(D / (5 n)).

use crate::radio::Radio;

/// Path-loss exponents typical of the environments cells and APs are heard in.
/// Cells: fitted on the simulator (bench/accuracy.ts); a steeper weight than n = 3.5
/// gives, because the strongest cells' estimates are also the best sampled.
const CELL_PATH_LOSS_EXPONENT: f64 = 2.8;
const WIFI_PATH_LOSS_EXPONENT: f64 = 3.0;

/// A level each radio's signal is measured against (the weights are relative,
/// so only the spacing matters: these keep the numbers near 1).
fn reference_dbm(radio: Radio) -> f64 {
    match radio {
        Radio::Gsm => -85.0,
        Radio::Cdma => -90.0,
        Radio::Umts => -95.0,
        Radio::Lte | Radio::Nbiot | Radio::Nr => -100.0,
    }
}

/// 10^x through exp: the same value, at a fraction of `powf`'s cost (which was a tenth of
/// a mixed request's instructions).
fn exp10(x: f64) -> f64 {
    (x * std::f64::consts::LN_10).exp()
}

pub fn cell_signal_weight(radio: Radio, signal: Option<f64>) -> f64 {
    match signal {
        Some(s) => {
            exp10(((s - reference_dbm(radio)) / (5.0 * CELL_PATH_LOSS_EXPONENT)).clamp(-6.0, 6.0))
        }
        None => 1.0,
    }
}

pub fn wifi_signal_weight(signal: Option<f64>) -> f64 {
    match signal {
        Some(s) => exp10(((s + 80.0) / (5.0 * WIFI_PATH_LOSS_EXPONENT)).clamp(-6.0, 6.0)),
        None => 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp10_matches_powf() {
        for x in [-6.0, -1.5, 0.0, 0.3, 2.0, 6.0] {
            let (a, b) = (exp10(x), 10f64.powf(x));
            assert!((a - b).abs() <= b * 1e-12, "{x}: {a} vs {b}");
        }
    }
}
