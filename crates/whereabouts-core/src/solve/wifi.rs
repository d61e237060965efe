//! WiFi evidence: known access points heard together lie within a few hundred
//! metres of each other. APs are clustered; the cluster of the most routers answers,
//! and a cluster of one AP never does (a real AP beside an unknown or spoofed one must not
//! leak the real AP's position). Its members, less those far from the first centroid,
//! give a weighted centroid and a radius from their spread (at least the error their
//! estimates share), wider when some APs were left out; the fitted constants are in
//! [`super::params`].

use smallvec::SmallVec;

use super::lookup::SeenAp;
use super::params::{
    CLUSTER_LINK_M, DEFAULT_AP_RANGE_M, MIN_WIFI_ACCURACY_M, OUTLIER_M, WIFI_ACCURACY_FACTOR,
    WIFI_DISAGREED_SCALE, WIFI_MIN_SPREAD_SHARE, WIFI_SHARED_ERROR_M,
};
use super::query::{Answer, Fallback, Source};
use super::weights::wifi_signal_weight;
use super::AGED_AFTER_S;
use crate::geo::LocalFrame;

/// One AP's working values, all in one array: a request's scratch is one stack buffer
/// filled in place (rather than several small vectors moved out of calls), and slices of it
/// index without a check of where the buffer lives.
#[derive(Clone, Copy)]
struct Point {
    x: f64,
    y: f64,
    /// The AP's signal weight (`wifi_signal_weight`), computed once: exp is the costliest
    /// step of a WiFi answer.
    signal_w: f64,
    /// Its weight in the centroid (`centroid_weight`): the signal weight times the fourth
    /// root of the estimate's samples over the square root of its range.
    w: f64,
    range: f64,
    /// The root of the AP's single-linkage cluster (`largest_cluster`).
    root: usize,
    /// Per root: members and their summed signal weight.
    count: usize,
    strength: f64,
    member: bool,
    /// A member near the first centroid.
    near: bool,
}

fn range_of(a: &SeenAp) -> f64 {
    if a.range_m > 0.0 {
        a.range_m
    } else {
        DEFAULT_AP_RANGE_M
    }
}

/// An AP's weight in the centroid. The signal says how near the AP is; the estimate's
/// samples and range say how far to trust where the database puts it (an estimate from more
/// observations is nearer the AP; a wide range is a spread-out crowd). The weight is
/// samples^(1/4) / range^(1/2), the exponents fitted on the simulator's wifi-urban scenario
/// (`npx tsx bench/accuracy.ts`); two square roots, where a power would be a call of `powf`
/// per AP.
fn centroid_weight(signal_w: f64, samples: u32, range: f64) -> f64 {
    signal_w * (f64::from(samples.max(1)).sqrt() / range.max(20.0)).sqrt()
}

pub fn solve(aps: &[SeenAp], now: i64) -> Option<Answer> {
    if aps.len() < 2 {
        return None;
    }
    let frame = LocalFrame::new(aps[0].lat, aps[0].lon);
    let mut buf: SmallVec<[Point; 16]> = SmallVec::new();
    for (i, a) in aps.iter().enumerate() {
        let (x, y) = frame.to_xy(a.lat, a.lon);
        let signal_w = wifi_signal_weight(a.signal);
        let range = range_of(a);
        buf.push(Point {
            x,
            y,
            signal_w,
            w: centroid_weight(signal_w, a.samples, range),
            range,
            root: i,
            count: 0,
            strength: 0.0,
            member: false,
            near: false,
        });
    }
    let pts = buf.as_mut_slice();
    let best = largest_cluster(pts, aps)?;
    for p in pts.iter_mut() {
        p.member = p.root == best;
    }

    // Sums in AP order, as every other pass: the answer does not depend on the scratch.
    let centroid = |pts: &[Point]| {
        let (mut sw, mut sx, mut sy) = (0.0, 0.0, 0.0);
        for p in pts.iter().filter(|p| p.member) {
            sw += p.w;
            sx += p.w * p.x;
            sy += p.w * p.y;
        }
        (sx / sw, sy / sw, sw)
    };
    let (px, py, _) = centroid(pts);
    // Drop members far from the others' consensus (moved APs that still link in).
    let near = |p: &Point| (p.x - px).powi(2) + (p.y - py).powi(2) <= OUTLIER_M * OUTLIER_M;
    let mut kept = 0;
    for p in pts.iter_mut() {
        p.near = p.member && near(p);
        kept += p.near as usize;
    }
    if kept >= 2 {
        for p in pts.iter_mut() {
            p.member = p.near;
        }
    }
    let (px, py, sw) = centroid(pts);

    let members = || pts.iter().zip(aps).filter(|(p, _)| p.member);
    // Two parts, in quadrature: how far the device is from the members' centroid, which
    // their spread around it stands for (at least a share of their reach: members lying
    // together say nothing of it), and how far their estimates lie from the APs: an estimate
    // from n sightings spread over a reach of half its range is off by about reach / sqrt(n)
    // (the standard error of their mean). The second part alone shrinks with samples, so a
    // crowd whose ranges grow with its sightings (the farthest one) does not widen the radius.
    let (mut spread, mut reach, mut estimates) = (0.0, 0.0, 0.0);
    for (p, a) in members() {
        let r2 = (p.range * 0.5).powi(2);
        spread += p.w * ((p.x - px).powi(2) + (p.y - py).powi(2));
        reach += p.w * r2;
        estimates += p.w * r2 / f64::from(a.samples.max(1));
    }
    let var = (spread.max(WIFI_MIN_SPREAD_SHARE * reach) + estimates) / sw;
    let (lat, lon) = frame.to_latlon(px, py);
    let samples: u32 = members().map(|(_, a)| a.samples).sum();
    let newest = members().map(|(_, a)| a.updated).max().unwrap_or(0);
    let count = members().count();
    let root_count = (count as f64).sqrt().max(1.0).sqrt();
    let spread_radius = var.sqrt() * WIFI_ACCURACY_FACTOR / root_count;
    // The crowd's estimates of APs heard together share much of their error (the same passes
    // saw them), which their spread cannot show: at least the geometric mean of the members'
    // range (root mean square, weighted) and a length, over the same root of their count.
    let shared = (2.0 * (reach / sw).sqrt() * WIFI_SHARED_ERROR_M).sqrt() / root_count;
    // With two members either one's leaving would move the answer onto the other, as far as
    // they lie apart: their spread already measures that.
    let pull = if count >= 3 {
        largest_pull(pts, (px, py), sw)
    } else {
        0.0
    };
    // APs left out (another cluster, or beyond the outlier cut): the scan disagreed with
    // itself, and the members' agreement says less.
    let disagreed = if count < aps.len() {
        WIFI_DISAGREED_SCALE
    } else {
        1.0
    };
    Some(Answer {
        lat,
        lon,
        accuracy_m: (disagreed * spread_radius.max(pull))
            .max(shared)
            .max(MIN_WIFI_ACCURACY_M),
        fallback: Fallback::None,
        aged: samples <= 1 || newest < now - AGED_AFTER_S,
        source: Source::Wifi,
        ring: false,
        level: false,
    })
}

/// The most any one member alone moved the members' centroid (px, py) (their weights summing
/// to `sw`): member i's leaving would move it by w_i / (sw - w_i) times its distance from
/// it. Asked with three members or more. The spread's radius trusts the members' agreement,
/// divided by the root of their number; a moved AP that still links in (a router taken across
/// the street or town, heard strongest where it now stands) pulls the answer toward its old
/// place by more than that. No factor: the answer rests on that one AP by as much as it moved
/// it.
fn largest_pull(pts: &[Point], (px, py): (f64, f64), sw: f64) -> f64 {
    // Squared, one root at the end: a hypot per member cost more than the rest of the pass.
    pts.iter()
        .filter(|p| p.member && p.w < sw)
        .map(|p| {
            let share = p.w / (sw - p.w);
            share * share * ((p.x - px).powi(2) + (p.y - py).powi(2))
        })
        .fold(0.0, f64::max)
        .sqrt()
}

/// The router a BSSID belongs to, as far as its address tells: one router's 2.4 and 5 GHz
/// radios and its further networks (a guest network, a mesh's backhaul) take addresses that
/// differ in the last hex digit, or in the locally administered bit of the first octet.
/// The address without those bits, folded to 32 bits (its low 32 bits and its vendor's high
/// 12: two routers of a scan fold alike about once in four billion pairs).
pub(super) fn router_of(bssid: u64) -> u32 {
    let key = bssid & !0xf & !(0x02 << 40);
    (key >> 4) as u32 ^ (key >> 36) as u32
}

/// Single-linkage clusters; the one with most routers wins, then the one with most members,
/// then the strongest. Returns its root; every point's `root` is set. Routers, not BSSIDs,
/// vote: a moved dual-band router is two BSSIDs where it was, as many as two routers that
/// stayed where the device is, and heard stronger it would win; a cluster of one BSSID still
/// never answers.
///
/// Roots are kept for every AP and relabelled on a union (a handful of APs: a pass over
/// them costs less than walking a union-find forest for every link), and pairs already in
/// one cluster skip the distance. A union puts i's cluster under j's root, so ties between
/// clusters resolve as a union-find's would.
fn largest_cluster(p: &mut [Point], aps: &[SeenAp]) -> Option<usize> {
    let n = p.len();
    let link2 = CLUSTER_LINK_M * CLUSTER_LINK_M;
    for i in 0..n {
        for j in i + 1..n {
            let (a, b) = (p[i].root, p[j].root);
            if a != b && (p[i].x - p[j].x).powi(2) + (p[i].y - p[j].y).powi(2) <= link2 {
                for q in p.iter_mut().filter(|q| q.root == a) {
                    q.root = b;
                }
            }
        }
    }
    // Members and strength per root, in AP order.
    for i in 0..n {
        let r = p[i].root;
        p[r].count += 1;
        p[r].strength += p[i].signal_w;
    }
    let mut answering = (0..n).filter(|&r| p[r].count >= 2);
    let first = answering.next()?;
    if answering.next().is_none() {
        return Some(first);
    }
    // Two clusters or more could answer (most scans are one): routers per root.
    let mut routers: SmallVec<[usize; 16]> = SmallVec::from_elem(0, n);
    for i in 0..n {
        let (r, router) = (p[i].root, aps[i].router);
        if p[r].count >= 2 && !(0..i).any(|j| p[j].root == r && aps[j].router == router) {
            routers[r] += 1;
        }
    }
    (0..n).filter(|&r| p[r].count >= 2).max_by(|&a, &b| {
        routers[a]
            .cmp(&routers[b])
            .then(p[a].count.cmp(&p[b].count))
            .then(p[a].strength.total_cmp(&p[b].strength))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ap(lon: f64, samples: u32) -> SeenAp {
        SeenAp {
            // A router of its own for every place.
            router: router_of(((lon * 1e7) as u64) << 4),
            lat: 52.0,
            lon,
            range_m: 60.0,
            samples,
            updated: 0,
            signal: Some(-75.0),
        }
    }

    #[test]
    fn a_better_sampled_estimate_pulls_the_answer() {
        // Two APs about 70 m apart, heard alike: the answer leans to the one whose estimate
        // rests on more observations, by the fourth root of the ratio (16 vs 1: 2 to 1).
        let a = solve(&[ap(4.0, 16), ap(4.001, 1)], 0).unwrap();
        let share_of_first = (4.001 - a.lon) / 0.001;
        assert!(
            (share_of_first - 2.0 / 3.0).abs() < 1e-6,
            "{share_of_first}"
        );
        // Alike, they meet halfway.
        let b = solve(&[ap(4.0, 5), ap(4.001, 5)], 0).unwrap();
        assert!((b.lon - 4.0005).abs() < 1e-9);
    }

    #[test]
    fn the_radius_covers_the_largest_pull_of_one_member() {
        // Five APs within a few metres and one 200 m east heard far stronger (a router moved
        // across the street, heard where it stands): the answer leans its way, and the radius
        // is at least how far it moved the answer from the others' centroid.
        let east = 4.0 + 200.0 / 68_470.0;
        let mut aps: Vec<SeenAp> = (0..5).map(|i| ap(4.0 + f64::from(i) * 1e-5, 20)).collect();
        aps.push(SeenAp {
            signal: Some(-40.0),
            ..ap(east, 20)
        });
        let a = solve(&aps, 0).unwrap();
        let frame = LocalFrame::new(52.0, 4.0);
        let (ax, _) = frame.to_xy(a.lat, a.lon);
        let (ox, _) = frame.to_xy(52.0, 4.0 + 2e-5);
        let pull = ax - ox;
        assert!(pull > 50.0, "{pull}");
        assert!((a.accuracy_m - pull).abs() < 1.0, "{} {pull}", a.accuracy_m);
        // The same APs heard alike: the spread's radius, well under that pull.
        aps[5].signal = aps[0].signal;
        let b = solve(&aps, 0).unwrap();
        assert!(b.accuracy_m < pull / 2.0, "{}", b.accuracy_m);
    }

    #[test]
    fn routers_vote_not_bssids() {
        // A dual-band router heard strongest (its two BSSIDs differ in the last hex digit),
        // exported 2 km from two APs of other routers heard beside it: the two routers answer,
        // not the one router's two BSSIDs, however strong.
        let far = 4.0 + 2_000.0 / 68_470.0;
        let strong = |bssid: u64| SeenAp {
            router: router_of(bssid),
            signal: Some(-45.0),
            ..ap(far, 20)
        };
        let aps = [
            strong(0x00_1a_2b_3c_4d_50),
            strong(0x00_1a_2b_3c_4d_54),
            ap(4.0, 20),
            ap(4.0 + 1e-4, 20),
        ];
        let a = solve(&aps, 0).unwrap();
        assert!((a.lon - 4.00005).abs() < 1e-6, "{}", a.lon);
        // A virtual BSSID (the locally administered bit set) is the same router too.
        let aps = [
            strong(0x00_1a_2b_3c_4d_50),
            strong(0x02_1a_2b_3c_4d_50),
            aps[2],
            aps[3],
        ];
        assert!((solve(&aps, 0).unwrap().lon - 4.00005).abs() < 1e-6);
        // Two routers there against two here: the stronger cluster wins, as before.
        let aps = [
            strong(0x00_1a_2b_3c_4d_50),
            strong(0x00_1a_2b_3c_4e_50),
            aps[2],
            aps[3],
        ];
        assert!((solve(&aps, 0).unwrap().lon - far).abs() < 1e-6);
    }

    #[test]
    fn a_scan_whose_aps_disagree_claims_a_wider_radius() {
        // Three APs 100 m apart in a row, then the same three and a fourth 5 km away
        // (a router taken across town): the far one is left out, the answer is the same, and
        // the radius is wider by the scale.
        let near: Vec<SeenAp> = (0..3)
            .map(|i| ap(4.0 + f64::from(i) * 1.5e-3, 20))
            .collect();
        let mut with_far = near.clone();
        with_far.push(ap(4.0 + 5_000.0 / 68_470.0, 20));
        let (a, b) = (solve(&near, 0).unwrap(), solve(&with_far, 0).unwrap());
        assert!((a.lat - b.lat).abs() < 1e-12 && (a.lon - b.lon).abs() < 1e-12);
        assert!(a.accuracy_m > MIN_WIFI_ACCURACY_M * 1.1, "{}", a.accuracy_m);
        let ratio = b.accuracy_m / a.accuracy_m;
        assert!((ratio - WIFI_DISAGREED_SCALE).abs() < 1e-9, "{ratio}");
    }

    #[test]
    fn the_radius_is_the_members_spread_and_their_estimates_error() {
        let r = |aps: &[SeenAp]| solve(aps, 0).unwrap().accuracy_m;
        let fourth_root_2 = 2f64.sqrt().sqrt();
        // Two well-sampled APs 400 m apart (range 60 m, reach 30 m): their spread, 200 m.
        let (a, b) = (ap(4.0, 100), ap(4.0 + 400.0 / 68_470.0, 100));
        let spread = LocalFrame::new(52.0, 4.0).to_xy(52.0, b.lon).0 / 2.0;
        let want = (spread.powi(2) + 30f64.powi(2) / 100.0).sqrt() * WIFI_ACCURACY_FACTOR;
        assert!(
            (r(&[a, b]) - want / fourth_root_2).abs() < 1e-6,
            "{}",
            r(&[a, b])
        );
        // Estimates from one sighting each are off by their whole reach.
        let (a1, b1) = (SeenAp { samples: 1, ..a }, SeenAp { samples: 1, ..b });
        let want = (spread.powi(2) + 30f64.powi(2)).sqrt() * WIFI_ACCURACY_FACTOR;
        assert!((r(&[a1, b1]) - want / fourth_root_2).abs() < 1e-6);
        // One router's two BSSIDs lie together (range 400 m): their spread is nothing, and
        // the radius is the larger of a share of their reach and the error their estimates
        // share, the geometric mean of their range and `WIFI_SHARED_ERROR_M`.
        let (c, d) = (
            SeenAp {
                range_m: 400.0,
                ..ap(4.0, 10_000)
            },
            SeenAp {
                range_m: 400.0,
                ..ap(4.0, 10_000)
            },
        );
        let spread_share = (WIFI_MIN_SPREAD_SHARE * 200f64.powi(2) + 200f64.powi(2) / 10_000.0)
            .sqrt()
            * WIFI_ACCURACY_FACTOR;
        let shared = (400.0 * WIFI_SHARED_ERROR_M).sqrt();
        assert!(
            (r(&[c, d]) - spread_share.max(shared) / fourth_root_2).abs() < 1e-6,
            "{}",
            r(&[c, d])
        );
        // The same at 10 m: the least a WiFi answer claims.
        let narrow = |x: SeenAp| SeenAp { range_m: 10.0, ..x };
        assert_eq!(r(&[narrow(c), narrow(d)]), MIN_WIFI_ACCURACY_M);
    }

    #[test]
    fn aps_heard_together_claim_the_error_their_estimates_share() {
        // Four APs of one building (range 100 m, 50 samples each, 2 m apart at most): their
        // spread says a few metres; the radius is the geometric mean of their range and
        // `WIFI_SHARED_ERROR_M` over the fourth root of their count, and it grows with the root
        // of their range.
        let building = |range_m: f64| -> Vec<SeenAp> {
            (0..4)
                .map(|i| SeenAp {
                    range_m,
                    ..ap(4.0 + f64::from(i) * 1e-5, 50)
                })
                .collect()
        };
        let a = solve(&building(100.0), 0).unwrap();
        let want = (100.0 * WIFI_SHARED_ERROR_M).sqrt() / 2f64.sqrt();
        assert!(
            (a.accuracy_m - want).abs() < 1e-6,
            "{} {want}",
            a.accuracy_m
        );
        let b = solve(&building(400.0), 0).unwrap();
        assert!((b.accuracy_m / a.accuracy_m - 2.0).abs() < 1e-6);
    }
}
