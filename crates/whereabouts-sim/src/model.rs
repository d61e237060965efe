//! Radio propagation: the radios' frequencies, powers and measurement ranges
//! (spec 2.3/2.4), log-distance free-space intercepts, clutter, and spatially
//! correlated shadowing noise. What a world family varies (exponents, shadowing
//! sigma and correlation, antenna patterns) is in [`crate::family::Params`].

use crate::geo::Env;
use crate::rng::hash3;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Radio {
    Gsm,
    Umts,
    Lte,
    Nr,
}

impl Radio {
    pub const ALL: [Radio; 4] = [Radio::Gsm, Radio::Umts, Radio::Lte, Radio::Nr];

    pub fn upper(self) -> &'static str {
        match self {
            Radio::Gsm => "GSM",
            Radio::Umts => "UMTS",
            Radio::Lte => "LTE",
            Radio::Nr => "NR",
        }
    }

    pub fn lower(self) -> &'static str {
        match self {
            Radio::Gsm => "gsm",
            Radio::Umts => "umts",
            Radio::Lte => "lte",
            Radio::Nr => "nr",
        }
    }

    /// Carrier frequency, MHz: GSM 900, UMTS 2100, LTE 1800, NR n78.
    pub fn freq_mhz(self) -> f64 {
        match self {
            Radio::Gsm => 900.0,
            Radio::Umts => 2_100.0,
            Radio::Lte => 1_800.0,
            Radio::Nr => 3_500.0,
        }
    }

    /// EIRP on boresight of the quantity each radio reports: GSM RSSI is the
    /// whole 200 kHz carrier (43 dBm + 15 dBi - losses); UMTS RSCP is the CPICH
    /// (33 dBm + 17 dBi - 3); LTE and NR RSRP are per resource element
    /// (46 dBm over 1200 subcarriers + 17 dBi; NR adds beamforming gain).
    pub fn eirp_dbm(self) -> f64 {
        match self {
            Radio::Gsm => 55.0,
            Radio::Umts => 47.0,
            Radio::Lte => 32.0,
            Radio::Nr => 35.0,
        }
    }

    /// Weakest level a phone reports the cell at.
    pub fn sensitivity_dbm(self) -> f64 {
        match self {
            Radio::Gsm => -104.0,
            Radio::Umts => -115.0,
            Radio::Lte => -125.0,
            Radio::Nr => -125.0,
        }
    }

    /// The signal range of spec 2.3.
    pub fn signal_range(self) -> (i32, i32) {
        match self {
            Radio::Gsm => (-113, -51),
            Radio::Umts => (-121, -25),
            Radio::Lte => (-137, -45),
            Radio::Nr => (-140, -44),
        }
    }

    /// Metres per timing-advance step, for radios where the spec allows `ta`.
    pub fn ta_step_m(self) -> Option<f64> {
        match self {
            Radio::Gsm => Some(553.5),
            Radio::Lte => Some(78.12),
            _ => None,
        }
    }
}

pub const WIFI_RANGE: (i32, i32) = (-113, -51);
pub const WIFI_SENSITIVITY_DBM: f64 = -90.0;

/// Free-space path loss at 1 m: the intercept of the log-distance model.
pub fn fspl_1m(freq_mhz: f64) -> f64 {
    20.0 * libm::log10(freq_mhz) - 27.55
}

/// Building/vehicle/body loss at the receiver, which sits in that zone.
pub fn clutter_loss_db(env: Env) -> f64 {
    match env {
        Env::Urban => 12.0,
        Env::Suburban => 8.0,
        Env::Rural => 4.0,
    }
}

pub const WIFI_SHADOW_GRID_M: f64 = 20.0;
pub const WIFI_SHADOW_SIGMA_DB: f64 = 5.0;
/// The reference world's level noise per measurement, cells and APs (`Params::cell_level_noise_db`,
/// `Params::wifi_level_noise_db`), dB.
pub const CELL_FAST_FADING_DB: f64 = 2.0;
pub const WIFI_FAST_FADING_DB: f64 = 3.0;

pub const WIFI_WALL_LOSS_DB: f64 = 6.0;

/// Omni antennas have less gain than a sector panel.
pub const OMNI_GAIN_DB: f64 = -4.0;

/// Bearing from (ax, ay) to (bx, by), degrees clockwise from north.
pub fn bearing_deg(ax: f64, ay: f64, bx: f64, by: f64) -> f64 {
    let b = libm::atan2(bx - ax, by - ay).to_degrees();
    if b < 0.0 {
        b + 360.0
    } else {
        b
    }
}

/// Unit-variance value noise: independent normals on a square grid (one set per
/// station key), blended with smoothstep weights and divided by the weights'
/// norm so the variance is exactly 1 everywhere, not only at grid nodes. Nearby
/// points share most of their value, which is what makes the shadowing
/// spatially correlated rather than per-measurement noise.
pub fn value_noise(key: u64, x: f64, y: f64, grid: f64) -> f64 {
    let fx = x / grid;
    let fy = y / grid;
    let gx = fx.floor();
    let gy = fy.floor();
    let tx = fx - gx;
    let ty = fy - gy;
    let sx = tx * tx * (3.0 - 2.0 * tx);
    let sy = ty * ty * (3.0 - 2.0 * ty);
    let (ix, iy) = (gx as i64, gy as i64);
    let g = |dx: i64, dy: i64| approx_normal(hash3(key, (ix + dx) as u64, (iy + dy) as u64));
    let w = [
        (1.0 - sx) * (1.0 - sy),
        sx * (1.0 - sy),
        (1.0 - sx) * sy,
        sx * sy,
    ];
    let v = w[0] * g(0, 0) + w[1] * g(1, 0) + w[2] * g(0, 1) + w[3] * g(1, 1);
    let norm = libm::sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2] + w[3] * w[3]);
    v / norm
}

/// Sum of four 16-bit uniforms, rescaled to unit variance (Irwin-Hall): a
/// near-normal value without logarithms, bounded at +-3.46 sigma, which suits
/// shadowing and is the bulk of the world's arithmetic.
#[inline]
fn approx_normal(h: u64) -> f64 {
    let s = (h & 0xffff) + ((h >> 16) & 0xffff) + ((h >> 32) & 0xffff) + (h >> 48);
    (s as f64 / 65_536.0 - 2.0) * 1.732_050_807_568_877_2
}

/// Rounds a level to whole dBm and clamps it into the spec's range.
pub fn quantize(dbm: f64, range: (i32, i32)) -> i32 {
    (dbm.round() as i32).clamp(range.0, range.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_noise_is_correlated_and_unit() {
        let (mut s2, mut near) = (0.0, 0.0);
        let n = 20_000;
        for i in 0..n {
            let x = (i % 200) as f64 * 37.3;
            let y = (i / 200) as f64 * 41.9;
            let a = value_noise(9, x, y, 75.0);
            let b = value_noise(9, x + 5.0, y, 75.0);
            s2 += a * a;
            near += (a - b).abs();
        }
        let var = s2 / n as f64;
        assert!((var - 1.0).abs() < 0.1, "{var}");
        assert!(near / (n as f64) < 0.2);
    }
}
