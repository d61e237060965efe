//! The labelled-polygon index on hand-made files whose answers can be checked on paper:
//! points inside, outside, in holes, in whole-quad fills, across the antimeridian, the
//! nearest polygon from outside, and damaged files.

use whereabouts_core::polygons::{Hit, PolygonError, PolygonIndex};

const MAGIC: &[u8; 8] = b"WBTEST01";

/// A ring in degrees (lon, lat); the file's lattice step is 1e-5 degree.
type Ring = Vec<(f64, f64)>;

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// One leaf: features as (label, rings), in the encoding of `polygons.rs`.
fn leaf(features: &[(u32, Vec<Ring>)]) -> Vec<u8> {
    let mut b = Vec::new();
    varint(&mut b, features.len() as u64);
    for (label, rings) in features {
        varint(&mut b, u64::from(*label));
        varint(&mut b, rings.len() as u64);
        for ring in rings {
            varint(&mut b, ring.len() as u64);
            let (mut px, mut py) = (0i64, 0i64);
            for &(lon, lat) in ring {
                let x = ((lon + 180.0) / 1e-5).round() as i64;
                let y = ((lat + 90.0) / 1e-5).round() as i64;
                for d in [x - px, y - py] {
                    varint(&mut b, ((d << 1) ^ (d >> 63)) as u64);
                }
                (px, py) = (x, y);
            }
        }
    }
    b
}

/// A whole file: label names, nodes (child entries: tag in the low 2 bits), leaves.
fn file(names: &[&str], nodes: &[[u32; 4]], leaves: &[Vec<u8>]) -> Vec<u8> {
    let pad = |b: &mut Vec<u8>| b.resize(b.len().div_ceil(4) * 4, 0);
    let mut name_bytes = Vec::new();
    for n in names {
        name_bytes.push(n.len() as u8);
        name_bytes.extend(n.as_bytes());
    }
    let blob: Vec<u8> = leaves.concat();
    let mut b = MAGIC.to_vec();
    for v in [1u32, 48] {
        b.extend(v.to_le_bytes());
    }
    b.extend(1e-5f64.to_le_bytes());
    let n_leaves = leaves.len() as u32;
    for v in [
        names.len() as u32,
        name_bytes.len() as u32,
        nodes.len() as u32,
        n_leaves,
        blob.len() as u32,
        0,
    ] {
        b.extend(v.to_le_bytes());
    }
    b.extend(&name_bytes);
    pad(&mut b);
    for n in nodes {
        for e in n {
            b.extend(e.to_le_bytes());
        }
    }
    let mut at = 0u32;
    b.extend(at.to_le_bytes());
    for l in leaves {
        at += l.len() as u32;
        b.extend(at.to_le_bytes());
    }
    b.extend(&blob);
    pad(&mut b);
    let mut h: u32 = 0x811c_9dc5;
    for w in b.chunks_exact(4) {
        h = (h ^ u32::from_le_bytes([w[0], w[1], w[2], w[3]])).wrapping_mul(0x0100_0193);
    }
    b.extend(h.to_le_bytes());
    b
}

const OUTSIDE: u32 = 0;
fn fill(label: u32) -> u32 {
    (label << 2) | 1
}
fn node(i: u32) -> u32 {
    (i << 2) | 2
}
fn leaf_entry(i: u32) -> u32 {
    (i << 2) | 3
}

fn square(lon0: f64, lat0: f64, lon1: f64, lat1: f64) -> Ring {
    vec![(lon0, lat0), (lon1, lat0), (lon1, lat1), (lon0, lat1)]
}

/// Root quads: a (NE) a leaf with "A" (a square 10..20 E, 10..20 N with a hole 14..16) and
/// "B" touching the antimeridian (175 E..180, 0..5 N); b (NW) a node whose four children are
/// a fill of "C" (NE), outside (NW), a leaf with "B"'s other half (-180..-175, 0..5 N) (SW)
/// and outside (SE);
/// c (SW) outside; d (SE) a fill of "A".
fn sample() -> PolygonIndex {
    let a = leaf(&[
        (
            0,
            vec![
                square(10.0, 10.0, 20.0, 20.0),
                square(14.0, 14.0, 16.0, 16.0),
            ],
        ),
        (1, vec![square(175.0, 0.0, 180.0, 5.0)]),
    ]);
    let b = leaf(&[(1, vec![square(-180.0, 0.0, -175.0, 5.0)])]);
    let nodes = [
        [leaf_entry(0), node(1), OUTSIDE, fill(0)],
        [fill(2), OUTSIDE, leaf_entry(1), OUTSIDE],
    ];
    PolygonIndex::from_bytes(file(&["A", "B", "C"], &nodes, &[a, b]), MAGIC, "test index")
        .expect("the sample opens")
}

#[test]
fn points_inside_outside_and_in_holes() {
    let p = sample();
    assert_eq!(p.hit(12.0, 12.0), Hit::Label(0));
    assert_eq!(p.hit(15.0, 15.0), Hit::Outside, "in the hole");
    assert_eq!(p.hit(14.0, 13.9), Hit::Label(0), "just beside the hole");
    assert_eq!(p.hit(30.0, 30.0), Hit::Outside);
    assert_eq!(p.hit(-30.0, -30.0), Hit::Outside, "an outside quad");
    assert_eq!(p.hit(-30.0, 30.0), Hit::Label(0), "a fill quad");
    // the NW node: its NE child (45..90 N, 90 W..0) is a fill of C
    assert_eq!(p.hit(60.0, -45.0), Hit::Label(2));
}

#[test]
fn the_antimeridian_splits_a_polygon_in_two_halves() {
    let p = sample();
    assert_eq!(p.hit(2.0, 179.5), Hit::Label(1));
    assert_eq!(p.hit(2.0, -179.5), Hit::Label(1));
    assert_eq!(
        p.hit(2.0, 180.0),
        Hit::Label(1),
        "clamped into the root box"
    );
    assert_eq!(p.hit(6.0, 179.5), Hit::Outside);
}

#[test]
fn nearest_polygon_from_outside() {
    let p = sample();
    let km_per_deg = 111.195;
    // 0.02 degree north of A's top edge at 12 E: 2.2 km
    let (label, d) = p
        .nearest_label(20.02, 12.0, 5_000.0)
        .expect("A within 5 km");
    assert_eq!(label, 0);
    assert!((d / 1000.0 - 0.02 * km_per_deg).abs() < 0.01, "{d}");
    assert_eq!(p.nearest_label(20.1, 12.0, 5_000.0), None, "11 km away");
    // in the hole, 1 degree from its edges
    assert_eq!(p.nearest_label(15.0, 15.0, 200_000.0).map(|n| n.0), Some(0));
    // across the antimeridian: 0.02 degree east of -175 at 2 N is B's east half
    let (label, d) = p.nearest_label(2.0, -174.98, 5_000.0).expect("B");
    assert_eq!(label, 1);
    assert!(d < 2_300.0, "{d}");
    // north of B's west half, at 5.01 N 179.999 E: the edge of its east half is 1.1 km away
    assert_eq!(
        p.nearest_label(5.01, 179.999, 2_000.0).map(|n| n.0),
        Some(1)
    );
    // a fill quad counts as a polygon: 0.01 degree west of 0 E at 30 S
    assert_eq!(p.nearest_label(-30.0, -0.01, 5_000.0).map(|n| n.0), Some(0));
    assert_eq!(p.nearest_label(f64::NAN, 0.0, 5_000.0), None);
}

#[test]
fn nearest_point_leaves_out_the_cuts_along_a_quad() {
    // Quad a (0..90 N, 0..180 E) is all "A" but for a bay, 0..10 E x 10..20 N, that
    // reaches its west side; quad b, west of it, is sea. The leaf holds A as the builder
    // writes such a piece: a ring around the whole quad and the bay's ring, both with edges
    // along the quad's west side, where there is water on both sides.
    let q = super_quad_ring();
    let a = leaf(&[(0, vec![q, square(0.0, 10.0, 10.0, 20.0)])]);
    let p = PolygonIndex::from_bytes(
        file(&["A"], &[[leaf_entry(0), OUTSIDE, OUTSIDE, OUTSIDE]], &[a]),
        MAGIC,
        "test index",
    )
    .expect("opens");
    assert_eq!(p.hit(16.0, 0.5), Hit::Outside, "in the bay");
    // The nearest coast from 16 N 0.5 E is the bay's north shore, 4 degrees north, not
    // the quad's side 0.5 degree west.
    let n = p.nearest(16.0, 0.5, 1e6).expect("the bay's shore");
    let km_per_deg = 111.195;
    assert_eq!(n.label, 0);
    assert!((n.dist_m / 1000.0 - 4.0 * km_per_deg).abs() < 0.5, "{n:?}");
    assert!(n.east_m.abs() < 1.0 && n.north_m > 0.0, "{n:?}");
    assert!((n.north_m - n.dist_m).abs() < 1e-6);
    // nearest_label agrees
    assert_eq!(p.nearest_label(16.0, 0.5, 1e6), Some((0, n.dist_m)));
}

/// A ring around root quad a (0..89.9999 N, 0..179.9999 E), as the builder closes a polygon
/// that covers it.
fn super_quad_ring() -> Ring {
    square(0.0, 0.0, 179.9999, 89.9999)
}

#[test]
fn damaged_files_are_refused() {
    let a = leaf(&[(0, vec![square(10.0, 10.0, 20.0, 20.0)])]);
    let good = file(
        &["A"],
        &[[leaf_entry(0), OUTSIDE, OUTSIDE, OUTSIDE]],
        std::slice::from_ref(&a),
    );
    assert!(PolygonIndex::from_bytes(good.clone(), MAGIC, "test index").is_ok());
    assert!(PolygonIndex::from_bytes(good, b"WBOTHER1", "test index").is_err());
    // a label beyond the name table
    let bad_label = file(
        &["A"],
        &[[fill(3), OUTSIDE, OUTSIDE, OUTSIDE]],
        std::slice::from_ref(&a),
    );
    let e = PolygonIndex::from_bytes(bad_label, MAGIC, "test index").unwrap_err();
    assert!(
        matches!(e, PolygonError::Corrupt(ref m) if m.contains("out of range")),
        "{e}"
    );
    // a node that points back at itself would loop forever
    let cycle = file(
        &["A"],
        &[[node(0), OUTSIDE, OUTSIDE, OUTSIDE]],
        std::slice::from_ref(&a),
    );
    assert!(PolygonIndex::from_bytes(cycle, MAGIC, "test index").is_err());
    // a leaf whose feature names a missing label
    let b = leaf(&[(5, vec![square(10.0, 10.0, 20.0, 20.0)])]);
    let bad_leaf = file(&["A"], &[[leaf_entry(0), OUTSIDE, OUTSIDE, OUTSIDE]], &[b]);
    assert!(PolygonIndex::from_bytes(bad_leaf, MAGIC, "test index").is_err());
}
