//! WiFi evidence: known access points heard together lie within a few hundred
//! metres of each other. APs are clustered; the largest cluster answers, and a
//! cluster of one never does (a real AP beside an unknown or spoofed one must not
//! leak the real AP's position).

use smallvec::SmallVec;

use super::lookup::SeenAp;
use super::query::{Answer, Fallback, Source};
use super::weights::wifi_signal_weight;
use super::AGED_AFTER_S;
use crate::geo::LocalFrame;

/// APs farther apart than this are not heard together: two clusters.
const CLUSTER_LINK_M: f64 = 500.0;
/// A member this far from the rest of its cluster, after the first estimate, has moved.
const OUTLIER_M: f64 = 250.0;
/// Scale from the weighted spread of the cluster to the accuracy radius; calibrated on the simulator.
pub const WIFI_ACCURACY_FACTOR: f64 = 0.8;
const MIN_WIFI_ACCURACY_M: f64 = 15.0;
const DEFAULT_AP_RANGE_M: f64 = 100.0;

/// One AP's working values, all in one array: a request's scratch is one stack buffer
/// filled in place (collecting several small vectors and moving them out of calls was a
/// tenth of a mixed request's instructions), and slices of it index without a check of
/// where the buffer lives.
#[derive(Clone, Copy)]
struct Point {
    x: f64,
    y: f64,
    /// The AP's signal weight (`wifi_signal_weight`), computed once: exp is the costliest
    /// step of a WiFi answer.
    signal_w: f64,
    /// Its weight in the centroid: the signal weight over the square root of its range.
    w: f64,
    range: f64,
    /// The root of the AP's single-linkage cluster (`largest_cluster`).
    root: usize,
    /// Per root: members and summed signal weight of its cluster.
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
            w: signal_w / range.max(20.0).sqrt(),
            range,
            root: i,
            count: 0,
            strength: 0.0,
            member: false,
            near: false,
        });
    }
    let pts = buf.as_mut_slice();
    let best = largest_cluster(pts)?;
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
    let var: f64 = members()
        .map(|(p, _)| p.w * ((p.x - px).powi(2) + (p.y - py).powi(2) + (p.range * 0.5).powi(2)))
        .sum::<f64>()
        / sw;
    let (lat, lon) = frame.to_latlon(px, py);
    let samples: u32 = members().map(|(_, a)| a.samples).sum();
    let newest = members().map(|(_, a)| a.updated).max().unwrap_or(0);
    let count = members().count();
    Some(Answer {
        lat,
        lon,
        accuracy_m: (var.sqrt() * WIFI_ACCURACY_FACTOR / (count as f64).sqrt().max(1.0).sqrt())
            .max(MIN_WIFI_ACCURACY_M),
        fallback: Fallback::None,
        aged: samples <= 1 || newest < now - AGED_AFTER_S,
        source: Source::Wifi,
    })
}

/// Single-linkage clusters; the one with most members wins, then the strongest. Returns
/// its root; every point's `root` is set.
///
/// Roots are kept for every AP and relabelled on a union (a handful of APs: a pass over
/// them costs less than walking a union-find forest for every link, which was most of the
/// clustering), and pairs already in one cluster skip the distance. A union puts i's
/// cluster under j's root, as the union-find did, so ties between clusters resolve alike.
fn largest_cluster(p: &mut [Point]) -> Option<usize> {
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
    (0..n).filter(|&r| p[r].count >= 2).max_by(|&a, &b| {
        p[a].count
            .cmp(&p[b].count)
            .then(p[a].strength.total_cmp(&p[b].strength))
    })
}
