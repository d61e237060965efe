//! World parameters: the reference world's fixed models, or a member of the world
//! family drawn from the seed (`world --family`). An engine fitted on one world can
//! learn that world's constants; a family varies every model an engine might
//! otherwise bake in (path loss, shadowing, antennas, site layout, how the crowd
//! estimates a position and a range, sample counts, defects, WiFi density and bands),
//! so a fit on some seeds can be judged on others.

use std::fmt::Write as _;

use crate::geo::Env;
use crate::model::{self, Radio};
use crate::rng::Rng;

/// How sites are laid out in a zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// A jittered hexagonal grid (the reference world's).
    Hex,
    /// Uniform random points at the same density.
    Random,
    /// Points on major roads (a coarse street grid) at the same density.
    Roads,
}

impl Layout {
    pub fn name(self) -> &'static str {
        match self {
            Layout::Hex => "hex",
            Layout::Random => "random",
            Layout::Roads => "roads",
        }
    }
}

/// How the crowd turns a station's sightings into a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Estimate {
    /// Mean of the sightings (OpenCelliD; the reference world's).
    Centroid,
    /// Mean weighted by received power (milliwatts).
    SignalWeighted,
    /// The sighting with the strongest level.
    Strongest,
}

impl Estimate {
    pub fn name(self) -> &'static str {
        match self {
            Estimate::Centroid => "centroid",
            Estimate::SignalWeighted => "signal-weighted",
            Estimate::Strongest => "strongest",
        }
    }
}

/// How the crowd states a station's range from its sightings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeKind {
    /// Distance from the estimate to the farthest sighting (OpenCelliD; the reference world's).
    Farthest,
    /// 90th percentile of the distances from the estimate.
    Quantile90,
    /// Twice the mean distance from the estimate.
    TwiceMean,
}

impl RangeKind {
    pub fn name(self) -> &'static str {
        match self {
            RangeKind::Farthest => "farthest",
            RangeKind::Quantile90 => "q90",
            RangeKind::TwiceMean => "twice-mean",
        }
    }
}

/// Vertical antenna pattern of a down-tilted panel on a mast.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tilt {
    pub downtilt_deg: f64,
    pub mast_height_m: f64,
    pub vertical_beamwidth_deg: f64,
}

/// Every model parameter of a world. Indexes: `[Env as usize]` for zones, `[Radio as usize]`
/// for radios.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Drawn from the family (`world --family`) rather than the reference world.
    pub family: bool,
    /// Path-loss exponent by radio and the tower's zone.
    pub pl_exponent: [[f64; 3]; 4],
    /// Standard deviation of a cell level's own noise in each measurement (fast fading and the
    /// phone's measurement error), independent per cell and sighting, dB.
    pub cell_level_noise_db: f64,
    /// The same for an AP's level, dB.
    pub wifi_level_noise_db: f64,
    /// The share of moved APs that moved within their neighbourhood (100 m to 3 km, a move
    /// across town or next door), where the rest went 3 to 12 km: a short move links in with
    /// the APs around its old place, a long one stands apart.
    pub ap_short_move_share: f64,
    /// Shadowing standard deviation by the tower's zone, dB.
    pub shadow_sigma_db: [f64; 3],
    /// Grid of the shadowing value noise: its correlation length, metres.
    pub shadow_grid_m: f64,
    /// Every site's EIRP is offset by a uniform draw in +-this, dB.
    pub eirp_spread_db: f64,
    /// Horizontal half-power beamwidth of sector panels, degrees.
    pub beamwidth_deg: f64,
    /// Front-to-back ratio (the pattern's floor), dB.
    pub front_to_back_db: f64,
    /// Share of omnidirectional sites by zone.
    pub omni_share: [f64; 3],
    /// Share of the sectored sites with 6 sectors rather than 3.
    pub six_sector_share: f64,
    /// Each sector's azimuth deviates from even spacing by a uniform draw in +-this, degrees.
    pub azimuth_jitter_deg: f64,
    /// Down-tilted panels with a vertical pattern; none in the reference world.
    pub tilt: Option<Tilt>,
    pub layout: Layout,
    /// Inter-site distance of operator 1 by zone, metres (operator 2: 1.15 times).
    pub isd_m: [f64; 3],
    /// Share of masts whose LTE and NR stand on a mast of their own.
    pub separate_masts: f64,
    /// Share of operator 2's sites on a mast of operator 1 (shared masts).
    pub shared_masts: f64,
    pub cell_estimate: Estimate,
    pub ap_estimate: Estimate,
    pub cell_range: RangeKind,
    pub ap_range: RangeKind,
    /// Share of crowd sightings taken on streets (the rest anywhere in reach).
    pub road_share: f64,
    /// Cell sample counts, log-uniform between these, by zone.
    pub cell_samples: [(f64, f64); 3],
    pub ap_samples: (f64, f64),
    pub single_sample_cell: f64,
    pub single_sample_ap: f64,
    pub stale_share: f64,
    pub tower_missing: f64,
    pub cell_missing: f64,
    pub ap_missing: f64,
    /// Share of sites moved after the crowd reported them (their DB rows show the old spot).
    pub tower_moved: f64,
    pub ap_moved: f64,
    /// Multiplies the mean gap between APs along streets (larger: sparser WiFi).
    pub ap_gap_factor: f64,
    /// Share of APs on 5 GHz (the rest on 2.4 GHz).
    pub wifi_5ghz_share: f64,
    /// WiFi path-loss exponent by zone.
    pub wifi_exponent: [f64; 3],
    /// A third operator (mnc 3) whose database rows are its towers' true positions, as an
    /// operator publishes them: the `cells-known-towers` scenario locates on it.
    pub known_towers: bool,
}

/// The known-towers operator of family worlds.
pub const KNOWN_MNC: u16 = 3;

impl Params {
    /// The reference world: the models docs/simulator.md describes. Its worlds are those of
    /// every earlier build, byte for byte.
    pub fn reference(separate_masts: f64) -> Params {
        let pl = [3.5, 3.0, 2.7];
        Params {
            family: false,
            pl_exponent: [pl; 4],
            cell_level_noise_db: model::CELL_FAST_FADING_DB,
            wifi_level_noise_db: model::WIFI_FAST_FADING_DB,
            ap_short_move_share: 0.0,
            shadow_sigma_db: [8.0, 7.0, 6.0],
            shadow_grid_m: 75.0,
            eirp_spread_db: 0.0,
            beamwidth_deg: 65.0,
            front_to_back_db: 25.0,
            omni_share: [0.0, 0.0, 0.35],
            six_sector_share: 0.0,
            azimuth_jitter_deg: 0.0,
            tilt: None,
            layout: Layout::Hex,
            isd_m: [500.0, 1_500.0, 5_500.0],
            separate_masts,
            shared_masts: 0.0,
            cell_estimate: Estimate::Centroid,
            ap_estimate: Estimate::Centroid,
            cell_range: RangeKind::Farthest,
            ap_range: RangeKind::Farthest,
            road_share: 1.0,
            cell_samples: [(8.0, 400.0), (4.0, 150.0), (2.0, 60.0)],
            ap_samples: (2.0, 60.0),
            single_sample_cell: 0.03,
            single_sample_ap: 0.10,
            stale_share: 0.10,
            tower_missing: 0.04,
            cell_missing: 0.03,
            ap_missing: 0.06,
            tower_moved: 0.0,
            ap_moved: 0.02,
            ap_gap_factor: 1.0,
            wifi_5ghz_share: 0.4,
            wifi_exponent: [3.1, 3.0, 3.0],
            known_towers: false,
        }
    }

    /// The family member of `seed`, from a stream of its own (the rest of the world draws
    /// from the same seed as ever).
    pub fn draw(seed: u64) -> Params {
        let mut r = Rng::stream(seed, "family");
        let mut pl_exponent = [[0.0; 3]; 4];
        // Zones differ in a consistent direction (denser clutter, steeper loss); each radio
        // gets its own offset, higher frequencies a little steeper on average.
        let zone_base = [r.range(3.2, 4.5), r.range(2.8, 4.0), r.range(2.5, 3.6)];
        for radio in Radio::ALL {
            let tilt = match radio {
                Radio::Gsm => -0.1,
                Radio::Umts | Radio::Lte => 0.0,
                Radio::Nr => 0.15,
            };
            for (z, base) in zone_base.iter().enumerate() {
                pl_exponent[radio as usize][z] = (base + tilt + r.range(-0.2, 0.2)).clamp(2.5, 4.5);
            }
        }
        let shadow_sigma_db = [r.range(4.0, 10.0), r.range(4.0, 10.0), r.range(4.0, 10.0)];
        let shadow_grid_m = r.log_uniform(30.0, 300.0);
        let eirp_spread_db = r.range(0.0, 6.0);
        let beamwidth_deg = r.range(45.0, 120.0);
        let front_to_back_db = r.range(10.0, 25.0);
        let omni_share = [r.range(0.0, 0.2), r.range(0.0, 0.3), r.range(0.0, 0.6)];
        let six_sector_share = if r.chance(0.3) {
            r.range(0.1, 0.5)
        } else {
            0.0
        };
        let azimuth_jitter_deg = r.range(0.0, 30.0);
        let tilt = if r.chance(0.6) {
            Some(Tilt {
                downtilt_deg: r.range(2.0, 10.0),
                mast_height_m: r.range(15.0, 50.0),
                vertical_beamwidth_deg: r.range(6.0, 14.0),
            })
        } else {
            None
        };
        let layout = *r.pick(&[Layout::Hex, Layout::Random, Layout::Roads]);
        // Spacing from 300 m in a dense city to 10 km in the country, zones ordered.
        let urban = r.log_uniform(300.0, 1_200.0);
        let suburban = urban * r.range(1.5, 4.0);
        let rural = (suburban * r.range(2.0, 5.0)).clamp(1_500.0, 10_000.0);
        let mut isd_m = [urban, suburban, rural];
        // Operators dimension their grids to cover: no spacing beyond 1.5 times an LTE
        // sector's boresight reach in the zone (without a shadowing margin), so steep path
        // loss brings denser sites rather than holes where a town hears only far towers.
        for (z, env) in Env::ALL.iter().enumerate() {
            let budget = Radio::Lte.eirp_dbm()
                - model::fspl_1m(Radio::Lte.freq_mhz())
                - model::clutter_loss_db(*env)
                - Radio::Lte.sensitivity_dbm();
            let reach = libm::pow(10.0, budget / (10.0 * pl_exponent[Radio::Lte as usize][z]));
            let floor = if *env == Env::Rural { 1_500.0 } else { 300.0 };
            isd_m[z] = isd_m[z].min(1.5 * reach).max(floor);
        }
        isd_m[1] = isd_m[1].min(isd_m[2]);
        isd_m[0] = isd_m[0].min(isd_m[1]);
        let separate_masts = if r.chance(0.5) {
            r.range(0.0, 0.6)
        } else {
            0.0
        };
        let shared_masts = if r.chance(0.5) {
            r.range(0.0, 0.7)
        } else {
            0.0
        };
        let estimates = [
            Estimate::Centroid,
            Estimate::SignalWeighted,
            Estimate::Strongest,
        ];
        let ranges = [
            RangeKind::Farthest,
            RangeKind::Quantile90,
            RangeKind::TwiceMean,
        ];
        let cell_estimate = *r.pick(&estimates);
        let ap_estimate = *r.pick(&estimates);
        let cell_range = *r.pick(&ranges);
        let ap_range = *r.pick(&ranges);
        let road_share = r.range(0.2, 1.0);
        let mut cell_samples = [(0.0, 0.0); 3];
        for (z, hi_max) in [500.0, 300.0, 150.0].iter().enumerate() {
            let lo = r.log_uniform(1.0, 10.0);
            let hi = r.log_uniform(lo.max(5.0) * 2.0, *hi_max);
            cell_samples[z] = (lo, hi);
        }
        let ap_lo = r.log_uniform(1.0, 5.0);
        let ap_samples = (ap_lo, r.log_uniform(10.0, 200.0));
        Params {
            family: true,
            pl_exponent,
            shadow_sigma_db,
            shadow_grid_m,
            eirp_spread_db,
            beamwidth_deg,
            front_to_back_db,
            omni_share,
            six_sector_share,
            azimuth_jitter_deg,
            tilt,
            layout,
            isd_m,
            separate_masts,
            shared_masts,
            cell_estimate,
            ap_estimate,
            cell_range,
            ap_range,
            road_share,
            cell_samples,
            ap_samples,
            single_sample_cell: r.range(0.0, 0.15),
            single_sample_ap: r.range(0.0, 0.3),
            stale_share: r.range(0.0, 0.3),
            tower_missing: r.range(0.01, 0.08),
            cell_missing: r.range(0.0, 0.08),
            ap_missing: r.range(0.0, 0.15),
            tower_moved: r.range(0.0, 0.04),
            ap_moved: r.range(0.005, 0.05),
            // Beyond these an urban scan hears too few APs to be a WiFi scan at all.
            ap_gap_factor: r.log_uniform(0.5, 1.5),
            wifi_5ghz_share: r.range(0.1, 0.8),
            wifi_exponent: [r.range(2.7, 3.3), r.range(2.6, 3.2), r.range(2.5, 3.1)],
            known_towers: true,
            // Drawn last, so that every draw above is that of worlds built before it. Phones
            // report a cell's level to within a few dB of each other (3GPP TS 36.133 allows
            // several dB of error, more between frequencies than within one), on top of the
            // fading a short average leaves.
            cell_level_noise_db: r.range(2.0, 6.0),
            wifi_level_noise_db: r.range(2.0, 6.0),
            // Drawn after the levels' noise, for the same reason.
            ap_short_move_share: r.range(0.0, 0.7),
        }
    }

    pub fn exponent(&self, radio: Radio, env: Env) -> f64 {
        self.pl_exponent[radio as usize][env as usize]
    }

    pub fn shadow_sigma(&self, env: Env) -> f64 {
        self.shadow_sigma_db[env as usize]
    }

    /// Inter-site distance per zone and operator: operator 2 runs a slightly sparser grid, as
    /// challengers do; the known-towers operator runs operator 1's.
    pub fn isd(&self, env: Env, mnc: u16) -> f64 {
        let base = self.isd_m[env as usize];
        if mnc == 2 {
            base * 1.15
        } else {
            base
        }
    }

    /// Horizontal pattern (TR 36.814 shape): `off_deg` is the angle off boresight.
    pub fn horizontal_gain_db(&self, off_deg: f64) -> f64 {
        let mut a = off_deg % 360.0;
        if a > 180.0 {
            a -= 360.0;
        } else if a < -180.0 {
            a += 360.0;
        }
        let bw = self.beamwidth_deg;
        -(12.0 * (a / bw) * (a / bw)).min(self.front_to_back_db)
    }

    /// Vertical pattern of a down-tilted panel seen from `d` metres away at ground level,
    /// with a 20 dB floor; 0 without tilt.
    pub fn vertical_gain_db(&self, d: f64) -> f64 {
        match self.tilt {
            None => 0.0,
            Some(t) => {
                let elev = libm::atan2(t.mast_height_m, d).to_degrees();
                let a = (elev - t.downtilt_deg) / t.vertical_beamwidth_deg;
                -(12.0 * a * a).min(20.0)
            }
        }
    }

    /// The operators of the world: two crowd-reported ones, and the known-towers one.
    pub fn operators(&self) -> &'static [u16] {
        if self.known_towers {
            &[1, 2, KNOWN_MNC]
        } else {
            &[1, 2]
        }
    }

    /// The parameters as JSON (numbers rounded to 4 decimals), for the world's `params.json`.
    pub fn to_json(&self, seed: u64) -> String {
        let mut s = String::new();
        let f = |x: f64| format!("{}", (x * 10_000.0).round() / 10_000.0);
        let zones = |v: &[f64; 3]| {
            format!(
                "{{\"urban\":{},\"suburban\":{},\"rural\":{}}}",
                f(v[0]),
                f(v[1]),
                f(v[2])
            )
        };
        let pair = |p: (f64, f64)| format!("[{},{}]", f(p.0), f(p.1));
        let _ = write!(
            s,
            "{{\n  \"seed\": {seed},\n  \"family\": {},\n",
            self.family
        );
        s.push_str("  \"path_loss_exponent\": {");
        for (i, radio) in Radio::ALL.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            let _ = write!(
                s,
                "\"{}\":{}",
                radio.lower(),
                zones(&self.pl_exponent[*radio as usize])
            );
        }
        s.push_str("},\n");
        let _ = writeln!(
            s,
            "  \"shadow_sigma_db\": {},",
            zones(&self.shadow_sigma_db)
        );
        let _ = writeln!(s, "  \"shadow_correlation_m\": {},", f(self.shadow_grid_m));
        let _ = writeln!(s, "  \"eirp_spread_db\": {},", f(self.eirp_spread_db));
        let _ = writeln!(s, "  \"beamwidth_deg\": {},", f(self.beamwidth_deg));
        let _ = writeln!(s, "  \"front_to_back_db\": {},", f(self.front_to_back_db));
        let _ = writeln!(s, "  \"omni_share\": {},", zones(&self.omni_share));
        let _ = writeln!(s, "  \"six_sector_share\": {},", f(self.six_sector_share));
        let _ = writeln!(
            s,
            "  \"azimuth_jitter_deg\": {},",
            f(self.azimuth_jitter_deg)
        );
        match self.tilt {
            None => s.push_str("  \"tilt\": null,\n"),
            Some(t) => {
                let _ = writeln!(
                    s,
                    "  \"tilt\": {{\"downtilt_deg\":{},\"mast_height_m\":{},\"vertical_beamwidth_deg\":{}}},",
                    f(t.downtilt_deg),
                    f(t.mast_height_m),
                    f(t.vertical_beamwidth_deg)
                );
            }
        }
        let _ = writeln!(s, "  \"layout\": \"{}\",", self.layout.name());
        let _ = writeln!(s, "  \"isd_m\": {},", zones(&self.isd_m));
        let _ = writeln!(s, "  \"separate_masts\": {},", f(self.separate_masts));
        let _ = writeln!(s, "  \"shared_masts\": {},", f(self.shared_masts));
        let _ = writeln!(s, "  \"cell_estimate\": \"{}\",", self.cell_estimate.name());
        let _ = writeln!(s, "  \"ap_estimate\": \"{}\",", self.ap_estimate.name());
        let _ = writeln!(s, "  \"cell_range\": \"{}\",", self.cell_range.name());
        let _ = writeln!(s, "  \"ap_range\": \"{}\",", self.ap_range.name());
        let _ = writeln!(s, "  \"road_share\": {},", f(self.road_share));
        let _ = writeln!(
            s,
            "  \"cell_samples\": {{\"urban\":{},\"suburban\":{},\"rural\":{}}},",
            pair(self.cell_samples[0]),
            pair(self.cell_samples[1]),
            pair(self.cell_samples[2])
        );
        let _ = writeln!(s, "  \"ap_samples\": {},", pair(self.ap_samples));
        for (k, v) in [
            ("single_sample_cell", self.single_sample_cell),
            ("single_sample_ap", self.single_sample_ap),
            ("stale_share", self.stale_share),
            ("tower_missing", self.tower_missing),
            ("cell_missing", self.cell_missing),
            ("ap_missing", self.ap_missing),
            ("tower_moved", self.tower_moved),
            ("ap_moved", self.ap_moved),
            ("ap_short_move_share", self.ap_short_move_share),
            ("ap_gap_factor", self.ap_gap_factor),
            ("wifi_5ghz_share", self.wifi_5ghz_share),
        ] {
            let _ = writeln!(s, "  \"{k}\": {},", f(v));
        }
        let _ = writeln!(
            s,
            "  \"cell_level_noise_db\": {},",
            f(self.cell_level_noise_db)
        );
        let _ = writeln!(
            s,
            "  \"wifi_level_noise_db\": {},",
            f(self.wifi_level_noise_db)
        );
        let _ = writeln!(s, "  \"wifi_exponent\": {},", zones(&self.wifi_exponent));
        let _ = writeln!(s, "  \"known_towers\": {}\n}}", self.known_towers);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_pattern_is_tr_36_814() {
        let p = Params::reference(0.0);
        assert_eq!(p.horizontal_gain_db(0.0), 0.0);
        assert!((p.horizontal_gain_db(32.5) + 3.0).abs() < 1e-9);
        assert_eq!(p.horizontal_gain_db(180.0), -25.0);
        assert_eq!(p.vertical_gain_db(100.0), 0.0);
    }

    #[test]
    fn tilt_loses_gain_far_and_near() {
        let mut p = Params::reference(0.0);
        p.tilt = Some(Tilt {
            downtilt_deg: 6.0,
            mast_height_m: 30.0,
            vertical_beamwidth_deg: 10.0,
        });
        // Main beam hits the ground at 30 / tan 6 deg, about 285 m.
        let at_beam = p.vertical_gain_db(285.0);
        assert!(at_beam > -0.1, "{at_beam}");
        assert!(p.vertical_gain_db(5_000.0) < -3.0);
        assert!(p.vertical_gain_db(10.0) <= -19.9);
    }
}
