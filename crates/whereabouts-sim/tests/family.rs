//! World families (`world --family`): the drawn parameters are a pure function of the seed,
//! stay in their documented ranges and differ between seeds; the reference world is the one
//! of earlier builds, byte for byte; a family world's known-towers operator has its true
//! tower positions in the database.

use std::collections::BTreeMap;

use whereabouts_sim::family::{Params, KNOWN_MNC};
use whereabouts_sim::output::{world_files, Files};
use whereabouts_sim::rng::{hash2, hash_str};
use whereabouts_sim::world::DEFAULT_NOW;

/// A hash of every file's name and bytes, in writing order.
fn digest(files: &Files) -> u64 {
    let mut h = 0u64;
    for (name, bytes) in &files.files {
        h = hash2(h, hash_str(name));
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            h = hash2(h, u64::from_le_bytes(w));
        }
    }
    h
}

#[test]
fn the_reference_world_is_unchanged() {
    // Pinned from the build before world families existed: the demo database and every
    // published figure come from these worlds. A change here changes all of them.
    let f = world_files(11, 40, DEFAULT_NOW, &Params::reference(0.0), &|_| {}).unwrap();
    assert_eq!(f.files.len(), 14);
    assert!(f.get("params.json").is_none());
    assert_eq!(digest(&f), 0x378a_8600_0ecd_1b9a, "{:#x}", digest(&f));
}

#[test]
fn family_draws_are_deterministic_distinct_and_in_range() {
    let mut seen = BTreeMap::new();
    for seed in 0..300u64 {
        let p = Params::draw(seed);
        assert_eq!(p, Params::draw(seed), "seed {seed}");
        assert!(p.family && p.known_towers);
        for radio in p.pl_exponent {
            for n in radio {
                assert!((2.5..=4.5).contains(&n), "seed {seed}: exponent {n}");
            }
        }
        for s in p.shadow_sigma_db {
            assert!((4.0..=10.0).contains(&s), "seed {seed}: sigma {s}");
        }
        assert!((30.0..=300.0).contains(&p.shadow_grid_m));
        assert!((45.0..=120.0).contains(&p.beamwidth_deg));
        assert!((10.0..=25.0).contains(&p.front_to_back_db));
        assert!((0.0..=6.0).contains(&p.eirp_spread_db));
        assert!((0.0..=30.0).contains(&p.azimuth_jitter_deg));
        if let Some(t) = p.tilt {
            assert!((2.0..=10.0).contains(&t.downtilt_deg));
        }
        for (z, isd) in p.isd_m.iter().enumerate() {
            assert!((300.0..=10_000.0).contains(isd), "seed {seed}: isd {isd}");
            if z > 0 {
                assert!(*isd >= p.isd_m[z - 1], "seed {seed}: {:?}", p.isd_m);
            }
        }
        for (lo, hi) in p.cell_samples.iter().chain([&p.ap_samples]) {
            assert!(
                *lo >= 1.0 && lo < hi && *hi <= 500.0,
                "seed {seed}: {lo}..{hi}"
            );
        }
        for share in [
            p.separate_masts,
            p.shared_masts,
            p.road_share,
            p.single_sample_cell,
            p.single_sample_ap,
            p.stale_share,
            p.tower_missing,
            p.cell_missing,
            p.ap_missing,
            p.tower_moved,
            p.ap_moved,
            p.wifi_5ghz_share,
            p.six_sector_share,
        ] {
            assert!((0.0..=1.0).contains(&share), "seed {seed}: {share}");
        }
        assert!(p.omni_share.iter().all(|s| (0.0..=0.6).contains(s)));
        assert!((0.5..=1.5).contains(&p.ap_gap_factor));
        for noise in [p.cell_level_noise_db, p.wifi_level_noise_db] {
            assert!(
                (2.0..=6.0).contains(&noise),
                "seed {seed}: level noise {noise}"
            );
        }
        seen.insert(p.to_json(0), seed);
    }
    // Distinct seeds, distinct worlds; and every kind of layout, estimate and range appears.
    assert_eq!(seen.len(), 300);
    let all: String = seen.keys().cloned().collect();
    for kind in [
        "\"hex\"",
        "\"random\"",
        "\"roads\"",
        "\"centroid\"",
        "\"signal-weighted\"",
        "\"strongest\"",
        "\"farthest\"",
        "\"q90\"",
        "\"twice-mean\"",
        "\"tilt\": null",
        "\"downtilt_deg\"",
    ] {
        assert!(all.contains(kind), "{kind} never drawn");
    }
}

/// A small, quick family world (seed 106: 9 km rural spacing, few sites).
fn family_world() -> Files {
    world_files(106, 30, DEFAULT_NOW, &Params::draw(106), &|_| {}).unwrap()
}

#[test]
fn family_worlds_are_reproducible_and_carry_their_parameters() {
    let a = family_world();
    let b = family_world();
    assert_eq!(digest(&a), digest(&b));
    let params = std::str::from_utf8(a.get("params.json").unwrap()).unwrap();
    let v: serde_json::Value = serde_json::from_str(params).unwrap();
    assert_eq!(v["seed"], 106);
    assert_eq!(v["family"], true);
    let readme = std::str::from_utf8(a.get("README.md").unwrap()).unwrap();
    assert!(readme.contains("--family") && readme.contains("params.json"));
    let scen = std::str::from_utf8(a.get("scenarios/cells-known-towers.jsonl").unwrap()).unwrap();
    assert_eq!(scen.lines().count(), 30);
    // The reference world of the same seed is another world.
    let reference = world_files(106, 2, DEFAULT_NOW, &Params::reference(0.0), &|_| {}).unwrap();
    assert_ne!(reference.get("cells.csv"), a.get("cells.csv"));
}

#[test]
fn known_towers_are_in_the_database_at_their_true_positions() {
    let f = family_world();
    let rows = |name: &str| -> BTreeMap<String, (String, String)> {
        std::str::from_utf8(f.get(name).unwrap())
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|c| c[2] == KNOWN_MNC.to_string())
            .map(|c| (c[..5].join(","), (c[6].to_string(), c[7].to_string())))
            .collect()
    };
    let (db, truth) = (rows("cells.csv"), rows("truth/cells.csv"));
    assert!(db.len() > 100, "{}", db.len());
    assert_eq!(db, truth);
    let scen = std::str::from_utf8(f.get("scenarios/cells-known-towers.jsonl").unwrap()).unwrap();
    for line in scen.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let cells = v["request"]["cells"].as_array().unwrap();
        assert!(cells.len() >= 2, "{line}");
        for c in cells {
            assert_eq!(c["mnc"], KNOWN_MNC);
            let key = format!(
                "{},1,{},{},{}",
                c["radio"].as_str().unwrap().to_ascii_uppercase(),
                c["mnc"],
                c["lac"],
                c["cid"]
            );
            assert!(db.contains_key(&key), "{key}");
        }
    }
}
