//! WiFi evidence: known access points heard together lie within a few hundred
//! metres of each other. APs are clustered; the largest cluster answers, and a
//! cluster of one never does (a real AP beside an unknown or spoofed one must not
//! leak the real AP's position).

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

pub fn solve(aps: &[SeenAp], now: i64) -> Option<Answer> {
    if aps.len() < 2 {
        return None;
    }
    let frame = LocalFrame::new(aps[0].lat, aps[0].lon);
    let xy: Vec<(f64, f64)> = aps.iter().map(|a| frame.to_xy(a.lat, a.lon)).collect();
    let cluster = largest_cluster(aps, &xy)?;

    let weight = |i: usize| {
        let a = &aps[i];
        let r = if a.range_m > 0.0 {
            a.range_m
        } else {
            DEFAULT_AP_RANGE_M
        };
        wifi_signal_weight(a.signal) / r.max(20.0).sqrt()
    };
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
    let (mut px, mut py, _) = centroid(&cluster);
    // Drop members far from the others' consensus (moved APs that still link in).
    let kept: Vec<usize> = cluster
        .iter()
        .copied()
        .filter(|&i| (xy[i].0 - px).hypot(xy[i].1 - py) <= OUTLIER_M)
        .collect();
    let members = if kept.len() >= 2 { kept } else { cluster };
    let (cx, cy, sw) = centroid(&members);
    px = cx;
    py = cy;

    let var: f64 = members
        .iter()
        .map(|&i| {
            let r = if aps[i].range_m > 0.0 {
                aps[i].range_m
            } else {
                DEFAULT_AP_RANGE_M
            };
            weight(i) * ((xy[i].0 - px).powi(2) + (xy[i].1 - py).powi(2) + (r * 0.5).powi(2))
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
fn largest_cluster(aps: &[SeenAp], xy: &[(f64, f64)]) -> Option<Vec<usize>> {
    let n = aps.len();
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(p: &mut [usize], mut i: usize) -> usize {
        while p[i] != i {
            p[i] = p[p[i]];
            i = p[i];
        }
        i
    }
    for i in 0..n {
        for j in i + 1..n {
            if (xy[i].0 - xy[j].0).hypot(xy[i].1 - xy[j].1) <= CLUSTER_LINK_M {
                let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                parent[a] = b;
            }
        }
    }
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    for i in 0..n {
        let r = root(&mut parent, i);
        match groups.iter_mut().find(|(g, _)| *g == r) {
            Some((_, m)) => m.push(i),
            None => groups.push((r, vec![i])),
        }
    }
    let strength = |m: &Vec<usize>| {
        m.iter()
            .map(|&i| wifi_signal_weight(aps[i].signal))
            .sum::<f64>()
    };
    groups
        .into_iter()
        .map(|(_, m)| m)
        .filter(|m| m.len() >= 2)
        .max_by(|a, b| {
            a.len()
                .cmp(&b.len())
                .then(strength(a).total_cmp(&strength(b)))
        })
}
