//! Site masts from timing advances: where a site's antennas stand, fitted from the GPS-tagged
//! sightings of its sectors that carry a timing advance. An advance says how far from the
//! mast the device was (a ring of one step, 78 m on LTE, 553 m on GSM), so the point whose
//! distances to the sightings best match their advances is the mast, where the sightings
//! alone only say where the devices were.
//!
//! The solver reads a learned cell's site mast as its sector's origin: a serving cell's own
//! advance then puts the device on the line from the mast through the cell's learned
//! position, at the advance's distance (`solve::cells`), which is what the rings tell of a
//! held-out row that the learned position alone does not (docs/positioning.md, "Learned
//! masts"). The masts are stored with the database generation, per network, in its
//! statistics file (`store::netstats`), and carried from one generation to the next while a
//! learned cell of their site remains.

use std::collections::BTreeMap;

use super::{Observation, StationKey};
use crate::geo::LocalFrame;
use crate::sites::SiteKey;
use crate::store::netstats::LearnedMast;
use crate::store::record::{day_start, key_cid};

/// The site whose mast `o` is evidence for: a sighting with a timing advance of a cell of a
/// radio with sites and advance steps, from the operator's own data. Not a token's
/// submission: its caps are per station, and a mast, which every sector of a site and every
/// row with an advance read, is not.
pub fn mast_site(o: &Observation) -> Option<SiteKey> {
    if o.ta_m.is_none() || o.source.is_some() {
        return None;
    }
    let StationKey::Cell {
        radio,
        mcc,
        mnc,
        key,
    } = o.key
    else {
        return None;
    };
    radio.ta_step_m()?;
    SiteKey::of_cell(radio, mcc, mnc, key_cid(radio, key))
}

/// Fewest sightings with an advance a mast is fitted from: two rings cross in two points, a
/// few more on a walk or a drive past the site pick one (a prior, not fitted).
pub const MIN_SIGHTINGS: usize = 5;

/// The fit is kept when half its sightings lie within this many steps of their ring: the
/// rings agree on one point, to the step a reported advance may be off by (a prior: the
/// standard's quantum, and the lag and rounding of real reports). A log whose advances are
/// all one value (a logger that writes 0 on every row) or that are not distances from one
/// point fails it.
pub const MAX_MEDIAN_RESIDUAL_STEPS: f64 = 1.0;

/// The sightings of a site used for one fit: evenly thinned beyond this many (a bound on a
/// learn run's time; a few thousand rings pin a mast as well as a million).
const MAX_FIT_SIGHTINGS: usize = 2_000;

/// The masts of every site whose sightings in `obs` ([`mast_site`]) carry enough advances
/// ([`MIN_SIGHTINGS`], two distinct advances or more, [`MAX_MEDIAN_RESIDUAL_STEPS`]).
/// `progress` hears how many of how many such sightings were fitted from so far (none
/// first); its error stops the fit. A mast's `updated` is the day of its newest sighting
/// (`now` for sightings without a time), as a learned cell's is.
pub fn fit_masts<E>(
    obs: &[Observation],
    now: i64,
    progress: &mut dyn FnMut(u64, u64) -> Result<(), E>,
) -> Result<BTreeMap<SiteKey, LearnedMast>, E> {
    let mut by_site: BTreeMap<SiteKey, Vec<&Observation>> = BTreeMap::new();
    let mut total = 0;
    for o in obs {
        if let Some(site) = mast_site(o) {
            by_site.entry(site).or_default().push(o);
            total += 1;
        }
    }
    let mut out = BTreeMap::new();
    let mut done = 0;
    progress(done, total)?;
    for (site, sightings) in by_site {
        let step = site
            .radio
            .ta_step_m()
            .expect("mast_site keeps radios with steps");
        if let Some(m) = fit_site(site.site, &sightings, step, now) {
            out.insert(site, m);
        }
        done += sightings.len() as u64;
        progress(done, total)?;
    }
    Ok(out)
}

/// One site's mast from its sightings with an advance, or None when they do not pin one.
fn fit_site(site: u64, sightings: &[&Observation], step: f64, now: i64) -> Option<LearnedMast> {
    if sightings.len() < MIN_SIGHTINGS {
        return None;
    }
    let first = sightings[0].ta_m?;
    if sightings.iter().all(|o| o.ta_m == Some(first)) {
        return None;
    }
    let stride = sightings.len().div_ceil(MAX_FIT_SIGHTINGS);
    let frame = LocalFrame::new(sightings[0].lat, sightings[0].lon);
    // Each sighting's position and the middle of its advance's step (an observation states
    // the step's near edge, `Observation::ta_m`).
    let rings: Vec<(f64, f64, f64)> = sightings
        .iter()
        .step_by(stride)
        .filter_map(|o| {
            let (x, y) = frame.to_xy(o.lat, o.lon);
            Some((x, y, o.ta_m? + step / 2.0))
        })
        .collect();
    let (x, y) = fit_rings(&rings, step)?;
    let mut residuals: Vec<f64> = rings
        .iter()
        .map(|&(rx, ry, d)| ((x - rx).hypot(y - ry) - d).abs())
        .collect();
    residuals.sort_by(f64::total_cmp);
    if residuals[residuals.len() / 2] > MAX_MEDIAN_RESIDUAL_STEPS * step {
        return None;
    }
    let (lat, lon) = frame.to_latlon(x, y);
    Some(LearnedMast {
        site,
        lat,
        lon,
        sightings: sightings.len().min(u32::MAX as usize) as u32,
        updated: day_start(sightings.iter().map(|o| o.time.unwrap_or(now)).max()?),
    })
}

/// The point whose distances to the rings' centres best match their radii, under a Cauchy
/// loss of scale one `step` (a sighting whose advance lags pulls little): Levenberg-Marquardt
/// from the centres' mean and from points one median radius around it, the best end kept
/// (two rings cross twice; a walk along one street leaves a mirror image).
fn fit_rings(rings: &[(f64, f64, f64)], step: f64) -> Option<(f64, f64)> {
    let n = rings.len() as f64;
    let cx = rings.iter().map(|r| r.0).sum::<f64>() / n;
    let cy = rings.iter().map(|r| r.1).sum::<f64>() / n;
    let mut radii: Vec<f64> = rings.iter().map(|r| r.2).collect();
    radii.sort_by(f64::total_cmp);
    let reach = radii[radii.len() / 2].max(step);
    let cost = |x: f64, y: f64| -> f64 {
        rings
            .iter()
            .map(|&(rx, ry, d)| {
                let u = ((x - rx).hypot(y - ry) - d) / step;
                (1.0 + u * u).ln()
            })
            .sum()
    };
    let mut starts = vec![(cx, cy)];
    for k in 0..8 {
        let a = k as f64 * std::f64::consts::FRAC_PI_4;
        starts.push((cx + reach * a.cos(), cy + reach * a.sin()));
    }
    let mut best: Option<(f64, f64, f64)> = None;
    for (mut x, mut y) in starts {
        let mut c = cost(x, y);
        let mut lambda = 1e-3;
        for _ in 0..100 {
            // Normal equations of the reweighted least squares, 2x2.
            let (mut a11, mut a12, mut a22, mut b1, mut b2) = (0.0, 0.0, 0.0, 0.0, 0.0);
            for &(rx, ry, d) in rings {
                let (dx, dy) = (x - rx, y - ry);
                let dist = dx.hypot(dy).max(1e-6);
                let (jx, jy) = (dx / dist, dy / dist);
                let r = dist - d;
                let w = 1.0 / (1.0 + (r / step).powi(2));
                a11 += w * jx * jx;
                a12 += w * jx * jy;
                a22 += w * jy * jy;
                b1 += w * jx * r;
                b2 += w * jy * r;
            }
            let (d11, d22) = (a11 * (1.0 + lambda), a22 * (1.0 + lambda));
            let det = d11 * d22 - a12 * a12;
            if det.abs() < 1e-12 {
                break;
            }
            let sx = -(d22 * b1 - a12 * b2) / det;
            let sy = -(d11 * b2 - a12 * b1) / det;
            let trial = cost(x + sx, y + sy);
            if trial < c {
                (x, y, c) = (x + sx, y + sy, trial);
                lambda = (lambda / 3.0).max(1e-9);
                if sx.hypot(sy) < 0.01 {
                    break;
                }
            } else {
                lambda *= 4.0;
                if lambda > 1e9 {
                    break;
                }
            }
        }
        if x.is_finite() && y.is_finite() && best.is_none_or(|b| c < b.2) {
            best = Some((x, y, c));
        }
    }
    best.map(|(x, y, _)| (x, y))
}

/// Adds masts fitted now to those a build keeps (`DbBuilder::learned_masts`), each merged
/// with the site's earlier one ([`merge`]).
pub fn keep(kept: &mut BTreeMap<SiteKey, LearnedMast>, fitted: &BTreeMap<SiteKey, LearnedMast>) {
    for (site, m) in fitted {
        keep_one(kept, *site, *m);
    }
}

/// Adds one mast to `kept`, merged with the site's earlier one ([`merge`]). The site's radio
/// must have advance steps (every fitted or imported mast's has).
pub fn keep_one(kept: &mut BTreeMap<SiteKey, LearnedMast>, site: SiteKey, m: LearnedMast) {
    let step = site
        .radio
        .ta_step_m()
        .expect("masts are fitted where advances are");
    kept.entry(site)
        .and_modify(|old| *old = merge(*old, m, step))
        .or_insert(m);
}

/// A site's mast from an earlier generation and one fitted now: their mean weighted by
/// sightings when they agree within two steps, else the one fitted from more sightings (a
/// mirror image, or a mast that moved; the raw sightings of earlier runs are not kept to
/// refit from).
pub fn merge(old: LearnedMast, new: LearnedMast, step: f64) -> LearnedMast {
    let frame = LocalFrame::new(old.lat, old.lon);
    let (x, y) = frame.to_xy(new.lat, new.lon);
    let total = old.sightings.saturating_add(new.sightings);
    if x.hypot(y) <= 2.0 * step {
        let w = new.sightings as f64 / total.max(1) as f64;
        let (lat, lon) = frame.to_latlon(w * x, w * y);
        return LearnedMast {
            site: old.site,
            lat,
            lon,
            sightings: total,
            updated: old.updated.max(new.updated),
        };
    }
    let updated = old.updated.max(new.updated);
    let kept = if new.sightings >= old.sightings {
        new
    } else {
        old
    };
    LearnedMast { updated, ..kept }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::radio::Radio;
    use crate::store::record::cell_key;

    /// The learn run's clock.
    const NOW: i64 = 1_800_000_000;

    /// Sightings of LTE cell `cid` at (x, y) metres from the frame's origin, each with the
    /// advance a mast at `mast` gives (its step's near edge, as `read` stores it).
    fn sightings(cid: u64, mast: (f64, f64), points: &[(f64, f64)]) -> Vec<Observation> {
        let frame = LocalFrame::new(14.7, -17.4);
        points
            .iter()
            .map(|&(x, y)| {
                let (lat, lon) = frame.to_latlon(x, y);
                let d = (x - mast.0).hypot(y - mast.1);
                let ta = (d / 78.12).floor();
                let key = StationKey::Cell {
                    radio: Radio::Lte,
                    mcc: 608,
                    mnc: 2,
                    key: cell_key(Radio::Lte, 701, cid),
                };
                Observation {
                    ta_m: Some(ta * 78.12),
                    ..Observation::bare(key, lat, lon)
                }
            })
            .collect()
    }

    fn fit(obs: &[Observation]) -> BTreeMap<SiteKey, LearnedMast> {
        fit_masts::<()>(obs, NOW, &mut |_, _| Ok(())).unwrap()
    }

    fn offset_m(m: &LearnedMast, mast: (f64, f64)) -> f64 {
        let frame = LocalFrame::new(14.7, -17.4);
        let (x, y) = frame.to_xy(m.lat, m.lon);
        (x - mast.0).hypot(y - mast.1)
    }

    #[test]
    fn the_rings_of_two_sectors_meet_at_their_mast() {
        let mast = (300.0, -200.0);
        // Two sectors of eNB 1032 (cells 1 and 2), seen along two streets.
        let mut obs = sightings(
            1032 << 8 | 1,
            mast,
            &(0..20)
                .map(|i| (i as f64 * 40.0, 200.0))
                .collect::<Vec<_>>(),
        );
        obs.extend(sightings(
            1032 << 8 | 2,
            mast,
            &(0..20)
                .map(|i| (900.0, -600.0 + i as f64 * 40.0))
                .collect::<Vec<_>>(),
        ));
        obs.sort_by_key(|o| o.key);
        // Sightings without a time count as seen now; the mast changed on its newest's day.
        obs[3].time = Some(NOW + 86_400 + 5);
        let masts = fit(&obs);
        assert_eq!(masts.len(), 1);
        let (site, m) = masts.iter().next().unwrap();
        assert_eq!(site.site, 1032 << 8);
        assert_eq!(m.sightings, 40);
        assert_eq!(m.updated, day_start(NOW + 86_400));
        // Within a fraction of a step, though each advance is a whole step.
        assert!(offset_m(m, mast) < 40.0, "{}", offset_m(m, mast));
    }

    #[test]
    fn advances_that_do_not_pin_a_mast_give_none() {
        let points: Vec<(f64, f64)> = (0..20).map(|i| (i as f64 * 40.0, 200.0)).collect();
        // Too few.
        assert!(fit(&sightings(1, (0.0, 0.0), &points[..4])).is_empty());
        // All one advance: a logger that writes 0 on every row.
        let mut zeros = sightings(1, (0.0, 0.0), &points);
        for o in &mut zeros {
            o.ta_m = Some(0.0);
        }
        assert!(fit(&zeros).is_empty());
        // Advances that are no distances from one point: rings that disagree by several steps.
        let mut noise = sightings(1, (0.0, 0.0), &points);
        for (i, o) in noise.iter_mut().enumerate() {
            o.ta_m = Some(((i * 7919) % 23) as f64 * 78.12);
        }
        assert!(fit(&noise).is_empty());
        // Submitted by a token: not the operator's own data.
        let mut submitted = sightings(1, (0.0, 0.0), &points);
        for o in &mut submitted {
            o.source = Some(super::super::Source::of("ab", None));
        }
        assert!(fit(&submitted).is_empty());
        assert_eq!(fit(&sightings(1, (0.0, 0.0), &points)).len(), 1);
        // Without advances: nothing.
        let mut none = sightings(1, (0.0, 0.0), &points);
        for o in &mut none {
            o.ta_m = None;
        }
        assert!(fit(&none).is_empty());
    }

    #[test]
    fn masts_of_two_runs_agree_or_the_better_sampled_wins() {
        let frame = LocalFrame::new(14.7, -17.4);
        let at = |x: f64, y: f64, n: u32| {
            let (lat, lon) = frame.to_latlon(x, y);
            LearnedMast {
                site: 7,
                lat,
                lon,
                sightings: n,
                updated: NOW - n as i64 * 86_400,
            }
        };
        let m = merge(at(0.0, 0.0, 30), at(100.0, 0.0, 10), 78.12);
        assert_eq!(m.sightings, 40);
        // Changed on the newer one's day, whichever way the merge went.
        assert_eq!(m.updated, NOW - 10 * 86_400);
        assert!((offset_m(&m, (25.0, 0.0))) < 0.01);
        // A kilometre apart (a mirror image): the better sampled one, with every sighting.
        let m = merge(at(0.0, 0.0, 30), at(1_000.0, 0.0, 10), 78.12);
        assert!(offset_m(&m, (0.0, 0.0)) < 0.01 && m.sightings == 30);
        assert_eq!(m.updated, NOW - 10 * 86_400);
        let m = merge(at(0.0, 0.0, 30), at(1_000.0, 0.0, 50), 78.12);
        assert!(offset_m(&m, (1_000.0, 0.0)) < 0.01);
    }
}
