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

type Members = SmallVec<[usize; 16]>;

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
    let xy: SmallVec<[(f64, f64); 16]> = aps.iter().map(|a| frame.to_xy(a.lat, a.lon)).collect();
    // Each AP's signal weight once: powf is the costliest step of a WiFi answer.
    let signal_w: SmallVec<[f64; 16]> = aps.iter().map(|a| wifi_signal_weight(a.signal)).collect();
    let cluster = largest_cluster(&xy, &signal_w)?;
    let weight = |i: usize| signal_w[i] / range_of(&aps[i]).max(20.0).sqrt();

    let centroid = |members: &[usize]| {
        let (mut sw, mut sx, mut sy) = (0.0, 0.0, 0.0);
        for &i in members {
            let w = weight(i);
            sw += w;
            sx += w * xy[i].0;
            sy += w * xy[i].1;
        }
        (sx / sw, sy / sw, sw)
    };
    let (px, py, _) = centroid(&cluster);
    // Drop members far from the others' consensus (moved APs that still link in).
    let kept: Members = cluster
        .iter()
        .copied()
        .filter(|&i| (xy[i].0 - px).powi(2) + (xy[i].1 - py).powi(2) <= OUTLIER_M * OUTLIER_M)
        .collect();
    let members = if kept.len() >= 2 { kept } else { cluster };
    let (px, py, sw) = centroid(&members);

    let var: f64 = members
        .iter()
        .map(|&i| {
            weight(i)
                * ((xy[i].0 - px).powi(2)
                    + (xy[i].1 - py).powi(2)
                    + (range_of(&aps[i]) * 0.5).powi(2))
        })
        .sum::<f64>()
        / sw;
    let (lat, lon) = frame.to_latlon(px, py);
    let samples: u32 = members.iter().map(|&i| aps[i].samples).sum();
    let newest = members.iter().map(|&i| aps[i].updated).max().unwrap_or(0);
    Some(Answer {
        lat,
        lon,
        accuracy_m: (var.sqrt() * WIFI_ACCURACY_FACTOR
            / (members.len() as f64).sqrt().max(1.0).sqrt())
        .max(MIN_WIFI_ACCURACY_M),
        fallback: Fallback::None,
        aged: samples <= 1 || newest < now - AGED_AFTER_S,
        source: Source::Wifi,
    })
}

/// Single-linkage clusters; the one with most members wins, then the strongest.
fn largest_cluster(xy: &[(f64, f64)], signal_w: &[f64]) -> Option<Members> {
    let n = xy.len();
    let mut parent: SmallVec<[usize; 16]> = (0..n).collect();
    fn root(p: &mut [usize], mut i: usize) -> usize {
        while p[i] != i {
            p[i] = p[p[i]];
            i = p[i];
        }
        i
    }
    let link2 = CLUSTER_LINK_M * CLUSTER_LINK_M;
    for i in 0..n {
        for j in i + 1..n {
            if (xy[i].0 - xy[j].0).powi(2) + (xy[i].1 - xy[j].1).powi(2) <= link2 {
                let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                parent[a] = b;
            }
        }
    }
    // Each AP's root once, then members and strength per root: scoring by re-walking the
    // forest for every pair of (root, AP) was the costliest part of a WiFi answer.
    let roots: SmallVec<[usize; 16]> = (0..n).map(|i| root(&mut parent, i)).collect();
    let mut count: SmallVec<[usize; 16]> = smallvec::smallvec![0; n];
    let mut strength: SmallVec<[f64; 16]> = smallvec::smallvec![0.0; n];
    for (i, &r) in roots.iter().enumerate() {
        count[r] += 1;
        strength[r] += signal_w[i];
    }
    let best = (0..n).filter(|&r| count[r] >= 2).max_by(|&a, &b| {
        count[a]
            .cmp(&count[b])
            .then(strength[a].total_cmp(&strength[b]))
    })?;
    Some((0..n).filter(|&i| roots[i] == best).collect())
}
