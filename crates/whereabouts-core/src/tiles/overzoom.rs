//! Vector tiles past the tileset's deepest zoom: the ancestor tile's features magnified to the
//! child tile, clipped to it and a buffer around it, and encoded again. Points outside are
//! dropped, lines are cut into the pieces inside, polygon rings are clipped
//! (Sutherland-Hodgman, which keeps their winding).

use super::mvt::{Feature, GeomType, Tile};

type Pt = (f32, f32);

/// The child `(cx, cy)` (each from 0 to `2^d - 1`) of `tile`, `d` zoom levels deeper, with
/// `buffer` tile units kept around it.
pub fn child(tile: &Tile, d: u8, cx: u32, cy: u32, buffer: f32) -> Tile {
    let k = (1u32 << d) as f32;
    let layers = tile
        .layers
        .iter()
        .map(|layer| {
            let e = layer.extent as f32;
            let (ox, oy) = (cx as f32 * e, cy as f32 * e);
            let (lo, hi) = (-buffer, e + buffer);
            let map = |&(x, y): &Pt| (x * k - ox, y * k - oy);
            let features = layer
                .features
                .iter()
                .filter_map(|f| {
                    let parts: Vec<Vec<Pt>> = match f.kind {
                        GeomType::Point => f
                            .parts
                            .iter()
                            .filter_map(|p| p.first().map(map))
                            .filter(|&(x, y)| x >= lo && x <= hi && y >= lo && y <= hi)
                            .map(|p| vec![p])
                            .collect(),
                        GeomType::LineString => f
                            .parts
                            .iter()
                            .flat_map(|p| clip_line(&p.iter().map(map).collect::<Vec<_>>(), lo, hi))
                            .collect(),
                        GeomType::Polygon => f
                            .parts
                            .iter()
                            .map(|p| clip_ring(p.iter().map(map).collect(), lo, hi))
                            .filter(|r| r.len() >= 3)
                            .collect(),
                        GeomType::Unknown => vec![],
                    };
                    (!parts.is_empty()).then(|| f.with_parts(parts))
                })
                .collect::<Vec<Feature>>();
            layer.with_features(features)
        })
        .filter(|l| !l.features.is_empty())
        .collect();
    Tile { layers }
}

/// A polyline cut to the square `[lo, hi]²`: the pieces inside, in order.
fn clip_line(line: &[Pt], lo: f32, hi: f32) -> Vec<Vec<Pt>> {
    let mut out: Vec<Vec<Pt>> = vec![];
    let mut cur: Vec<Pt> = vec![];
    for w in line.windows(2) {
        match clip_segment(w[0], w[1], lo, hi) {
            Some((a, b)) => {
                if cur.last() != Some(&a) {
                    if cur.len() > 1 {
                        out.push(std::mem::take(&mut cur));
                    }
                    cur = vec![a];
                }
                cur.push(b);
                // A segment leaving the square ends its piece.
                if b != w[1] {
                    out.push(std::mem::take(&mut cur));
                }
            }
            None => {
                if cur.len() > 1 {
                    out.push(std::mem::take(&mut cur));
                }
                cur.clear();
            }
        }
    }
    if cur.len() > 1 {
        out.push(cur);
    }
    out
}

/// Liang-Barsky: the part of segment `a`-`b` inside the square, if any.
fn clip_segment(a: Pt, b: Pt, lo: f32, hi: f32) -> Option<(Pt, Pt)> {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let (mut t0, mut t1) = (0.0f32, 1.0f32);
    for (p, q) in [
        (-dx, a.0 - lo),
        (dx, hi - a.0),
        (-dy, a.1 - lo),
        (dy, hi - a.1),
    ] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let r = q / p;
            if p < 0.0 {
                t0 = t0.max(r);
            } else {
                t1 = t1.min(r);
            }
        }
    }
    if t0 > t1 {
        return None;
    }
    let at = |t: f32| {
        if t == 0.0 {
            a
        } else if t == 1.0 {
            b
        } else {
            (a.0 + t * dx, a.1 + t * dy)
        }
    };
    Some((at(t0), at(t1)))
}

/// A ring clipped to the square `[lo, hi]²` (Sutherland-Hodgman, edge by edge).
fn clip_ring(ring: Vec<Pt>, lo: f32, hi: f32) -> Vec<Pt> {
    let mut pts = ring;
    // (axis, bound, keep when coordinate >= bound)
    for (axis, bound, above) in [(0, lo, true), (0, hi, false), (1, lo, true), (1, hi, false)] {
        if pts.is_empty() {
            break;
        }
        let coord = |p: &Pt| if axis == 0 { p.0 } else { p.1 };
        let inside = |p: &Pt| {
            if above {
                coord(p) >= bound
            } else {
                coord(p) <= bound
            }
        };
        let mut out = Vec::with_capacity(pts.len() + 4);
        for i in 0..pts.len() {
            let (a, b) = (pts[(i + pts.len() - 1) % pts.len()], pts[i]);
            let cross = |a: Pt, b: Pt| {
                let t = (bound - coord(&a)) / (coord(&b) - coord(&a));
                (a.0 + t * (b.0 - a.0), a.1 + t * (b.1 - a.1))
            };
            match (inside(&a), inside(&b)) {
                (true, true) => out.push(b),
                (true, false) => out.push(cross(a, b)),
                (false, true) => {
                    out.push(cross(a, b));
                    out.push(b);
                }
                (false, false) => {}
            }
        }
        pts = out;
    }
    pts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clips_rings_lines_and_points() {
        let ring = vec![(-10.0, -10.0), (20.0, -10.0), (20.0, 20.0), (-10.0, 20.0)];
        let clipped = clip_ring(ring, 0.0, 10.0);
        assert_eq!(clipped.len(), 4);
        assert!(clipped
            .iter()
            .all(|&(x, y)| (0.0..=10.0).contains(&x) && (0.0..=10.0).contains(&y)));
        assert!(clip_ring(vec![(20.0, 20.0), (30.0, 20.0), (30.0, 30.0)], 0.0, 10.0).is_empty());
        // In, out, in again: two pieces.
        let line = vec![(1.0, 5.0), (5.0, 5.0), (15.0, 5.0), (15.0, 8.0), (5.0, 8.0)];
        let pieces = clip_line(&line, 0.0, 10.0);
        assert_eq!(
            pieces,
            vec![
                vec![(1.0, 5.0), (5.0, 5.0), (10.0, 5.0)],
                vec![(10.0, 8.0), (5.0, 8.0)]
            ]
        );
    }

    #[test]
    fn magnifies_the_ancestor_into_its_child() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/basemap.mbtiles");
        let set = super::super::tileset::Tileset::open(&path).unwrap();
        let z7 = set.decoded(7, 65, 42).unwrap().unwrap();
        // z10 child with The Hague.
        let t = child(&z7, 3, 524 - 65 * 8, 338 - 42 * 8, 64.0);
        let again = Tile::decode(&t.encode()).unwrap();
        let water = again.layer("water").expect("sea off The Hague");
        for f in &water.features {
            for p in f.parts.iter().flatten() {
                assert!(
                    (-64.0..=4160.0).contains(&p.0) && (-64.0..=4160.0).contains(&p.1),
                    "{p:?}"
                );
            }
        }
    }
}
