//! The crowdsourced database: what a user importing an OpenCelliD-style export
//! would have. Each station's position is the mean of GPS-tagged sightings taken
//! where people go (streets, a few favourite spots), never its true position.

use crate::family::{Estimate, Params, RangeKind, KNOWN_MNC};
use crate::geo::{self, dist};
use crate::model::{self, Radio};
use crate::rng::{hash3, hash_str, Rng};
use crate::world::*;

fn radio_code(r: Radio) -> u64 {
    r as u64
}

/// Sightings are taken where the station is reported comfortably, not at the
/// edge of hearing: crowdsourcing apps mostly log serving cells and strong APs.
const CELL_REPORT_MARGIN_DB: f64 = 10.0;
/// Serving area of a cell for crowd reports, as a share of the inter-site distance.
const SERVING_REACH: f64 = 0.7;
const WIFI_REPORT_MARGIN_DB: f64 = 5.0;

pub fn build_database(w: &mut World) {
    let seed = w.seed;
    let p = w.params.clone();
    let n_cells = w.cells.len();
    for ci in 0..n_cells {
        let c = &w.cells[ci];
        let t = &w.towers[c.tower];
        let mut rng = Rng::new(hash3(
            seed,
            hash_str("crowd-cell"),
            (radio_code(c.radio) << 60) ^ ((c.mnc as u64) << 48) ^ c.cid,
        ));
        if c.mnc == KNOWN_MNC {
            w.cells[ci].db = Some(known_tower_record(w.now, &mut rng, t, &p));
            continue;
        }
        if t.missing || rng.chance(p.cell_missing) {
            continue;
        }
        let single = rng.chance(p.single_sample_cell);
        let n = if single {
            1
        } else {
            let (lo, hi) = p.cell_samples[t.env as usize];
            (rng.log_uniform(lo, hi).round() as usize).max(1)
        };
        // Most sightings are logged where the cell serves: around where its
        // level beats the boresight level at SERVING_REACH of the inter-site
        // distance. A minority are neighbour reports, heard much farther out.
        let n_exp = p.exponent(c.radio, t.env);
        let base = c.radio.eirp_dbm() + t.eirp_offset_db
            - model::fspl_1m(c.radio.freq_mhz())
            - model::clutter_loss_db(t.env);
        let serve_thr = base - 10.0 * n_exp * libm::log10(SERVING_REACH * p.isd(t.env, t.mnc));
        let neigh_thr = (c.radio.sensitivity_dbm() + CELL_REPORT_MARGIN_DB).min(serve_thr);
        let reach_for = |thr: f64| {
            libm::pow(10.0, (base - thr + p.shadow_sigma(t.env)) / (10.0 * n_exp))
                .clamp(200.0, 15_000.0)
        };
        let (serve_reach, neigh_reach) = (reach_for(serve_thr), reach_for(neigh_thr));
        let n_neigh = if n > 1 {
            (n as f64 * rng.range(0.0, 0.3)).round() as usize
        } else {
            0
        };
        let (tx, ty) = (t.x, t.y);
        let heard_above = |thr: f64| {
            move |w: &World, x: f64, y: f64, rng: &mut Rng| {
                let level = w.cell_level(ci, x, y) + rng.gauss() * w.params.cell_level_noise_db;
                (level >= thr).then_some(level)
            }
        };
        let mut pts = sightings(
            w,
            &mut rng,
            tx,
            ty,
            serve_reach,
            40.0,
            n - n_neigh,
            heard_above(serve_thr),
        );
        if n_neigh > 0 {
            pts.extend(sightings(
                w,
                &mut rng,
                tx,
                ty,
                neigh_reach,
                40.0,
                n_neigh,
                heard_above(neigh_thr),
            ));
        }
        let mut rec = record(
            w.now,
            &mut rng,
            &pts,
            50.0,
            &p,
            p.cell_estimate,
            p.cell_range,
        );
        // A site moved since: the crowd's rows still show where it stood.
        if t.moved_by != (0.0, 0.0) {
            rec.x -= t.moved_by.0;
            rec.y -= t.moved_by.1;
        }
        w.cells[ci].db = Some(rec);
    }
    for ai in 0..w.aps.len() {
        let a = &w.aps[ai];
        let mut rng = Rng::new(hash3(seed, hash_str("crowd-ap"), a.bssid));
        if rng.chance(p.ap_missing) {
            continue;
        }
        let n = if rng.chance(p.single_sample_ap) {
            1
        } else {
            (rng.log_uniform(p.ap_samples.0, p.ap_samples.1).round() as usize).max(1)
        };
        let thr = model::WIFI_SENSITIVITY_DBM + WIFI_REPORT_MARGIN_DB;
        let budget =
            a.eirp_dbm - model::fspl_1m(a.freq_mhz as f64) - thr + model::WIFI_SHADOW_SIGMA_DB;
        let reach =
            libm::pow(10.0, budget / (10.0 * p.wifi_exponent[a.env as usize])).clamp(30.0, 300.0);
        let (ox, oy) = (a.old_x, a.old_y);
        let pts = sightings(w, &mut rng, ox, oy, reach, 10.0, n, |w, x, y, rng| {
            let level = w.ap_level(ai, x, y, true) + rng.gauss() * w.params.wifi_level_noise_db;
            (level >= thr).then_some(level)
        });
        let mut rec = record(w.now, &mut rng, &pts, 10.0, &p, p.ap_estimate, p.ap_range);
        if w.aps[ai].moved {
            // The last report predates the move.
            let upd = w.now - rng.int(20, 400) * DAY - rng.int(0, DAY - 1);
            rec.updated = upd;
            rec.created = rec.created.min(upd - rng.int(0, 200) * DAY);
        }
        w.aps[ai].db = Some(rec);
    }
}

/// The row of a known-towers operator's cell: its tower's true position, as the operator
/// publishes it, with the zone's spacing as its range; recent and well sampled.
fn known_tower_record(now: i64, rng: &mut Rng, t: &Tower, p: &Params) -> DbRecord {
    let updated = now - rng.int(1, 30) * DAY;
    DbRecord {
        x: t.x,
        y: t.y,
        range: p.isd(t.env, t.mnc).round() as u32,
        samples: 100,
        created: updated - 365 * DAY,
        updated,
    }
}

/// A sighting: where, and the level the station was heard at there (minus infinity
/// when it was reported from beside the station without a level).
type Sighting = (f64, f64, f64);

/// Draws `n` accepted sightings around (sx, sy): half from 1-3 hot spots where
/// people gather, half from random points in reach, on streets (a family world may
/// take some anywhere). Biased on purpose: the mean of such points drifts toward
/// streets and hot spots, as real crowdsourced estimates do.
#[allow(clippy::too_many_arguments)]
fn sightings(
    w: &World,
    rng: &mut Rng,
    sx: f64,
    sy: f64,
    reach: f64,
    spot_sigma: f64,
    n: usize,
    heard: impl Fn(&World, f64, f64, &mut Rng) -> Option<f64>,
) -> Vec<Sighting> {
    let road_share = w.params.road_share;
    let disk = |rng: &mut Rng, r: f64| {
        let rr = r * libm::sqrt(rng.f64());
        let a = rng.range(0.0, std::f64::consts::TAU);
        let (x, y) = (sx + rr * libm::cos(a), sy + rr * libm::sin(a));
        if road_share < 1.0 && !rng.chance(road_share) {
            return (x, y);
        }
        geo::snap_to_street(x, y, rng.chance(0.5))
    };
    let nspots = rng.int(1, 3) as usize;
    let spots: Vec<(f64, f64)> = (0..nspots).map(|_| disk(rng, reach * 0.6)).collect();
    let mut pts = Vec::with_capacity(n);
    let mut tries = 0;
    while pts.len() < n && tries < 40 * n + 40 {
        tries += 1;
        let (x, y) = if rng.chance(0.5) {
            let s = rng.pick(&spots);
            (
                s.0 + rng.gauss() * spot_sigma,
                s.1 + rng.gauss() * spot_sigma,
            )
        } else {
            disk(rng, reach)
        };
        if !w.land.is_land(x, y) {
            continue;
        }
        if let Some(level) = heard(w, x, y, rng) {
            pts.push((x, y, level));
        }
    }
    // A station nobody could hear from a street still got into the database
    // somehow (a parked car, a courtyard): report it from right beside it.
    while pts.len() < n.min(3) {
        let (x, y) = (sx + rng.gauss() * spot_sigma, sy + rng.gauss() * spot_sigma);
        pts.push((x, y, f64::NEG_INFINITY));
    }
    pts
}

/// The crowd's position of a station from its sightings, by the world's estimate kind.
fn estimate(pts: &[Sighting], kind: Estimate) -> (f64, f64) {
    let k = pts.len() as f64;
    let mean = || {
        (
            pts.iter().map(|p| p.0).sum::<f64>() / k,
            pts.iter().map(|p| p.1).sum::<f64>() / k,
        )
    };
    let strongest = pts.iter().map(|p| p.2).fold(f64::NEG_INFINITY, f64::max);
    if kind == Estimate::Centroid || strongest == f64::NEG_INFINITY {
        return mean();
    }
    match kind {
        Estimate::Strongest => {
            let s = pts.iter().find(|p| p.2 == strongest).unwrap();
            (s.0, s.1)
        }
        _ => {
            // Milliwatts relative to the strongest sighting.
            let (mut sw, mut sx, mut sy) = (0.0, 0.0, 0.0);
            for p in pts {
                let wgt = libm::pow(10.0, (p.2 - strongest) / 10.0);
                sw += wgt;
                sx += wgt * p.0;
                sy += wgt * p.1;
            }
            (sx / sw, sy / sw)
        }
    }
}

/// The crowd's range of a station: how far its sightings lie from its estimate.
fn range_of(pts: &[Sighting], x: f64, y: f64, kind: RangeKind) -> f64 {
    match kind {
        RangeKind::Farthest => pts.iter().map(|p| dist(x, y, p.0, p.1)).fold(0.0, f64::max),
        RangeKind::TwiceMean => {
            2.0 * pts.iter().map(|p| dist(x, y, p.0, p.1)).sum::<f64>() / pts.len() as f64
        }
        RangeKind::Quantile90 => {
            let mut d: Vec<f64> = pts.iter().map(|p| dist(x, y, p.0, p.1)).collect();
            d.sort_by(f64::total_cmp);
            d[((d.len() - 1) as f64 * 0.9).round() as usize]
        }
    }
}

fn record(
    now: i64,
    rng: &mut Rng,
    pts: &[Sighting],
    min_range: f64,
    p: &Params,
    kind: Estimate,
    range_kind: RangeKind,
) -> DbRecord {
    let (mx, my) = estimate(pts, kind);
    let cover = range_of(pts, mx, my, range_kind);
    let range = cover.ceil().max(min_range) as u32;
    let stale = rng.chance(p.stale_share);
    let updated = if stale {
        now - rng.int(91, 900) * DAY - rng.int(0, DAY - 1)
    } else {
        now - rng.int(1, 80) * DAY - rng.int(0, DAY - 1)
    };
    let created = if pts.len() == 1 {
        updated
    } else {
        updated - rng.int(0, 2_000) * DAY - rng.int(0, DAY - 1)
    };
    DbRecord {
        x: mx,
        y: my,
        range,
        samples: pts.len() as u32,
        created,
        updated,
    }
}
