//! Checks on the files of `world`, read back the way a consumer would: CSV text
//! and JSON parsed by serde_json, not the simulator's own structures.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde_json::Value;
use whereabouts_sim::family::Params;
use whereabouts_sim::output::{world_files, Files, CELLS_HEADER, WIFI_HEADER};
use whereabouts_sim::world::DEFAULT_NOW;

const SEED: u64 = 11;
const REQUESTS: usize = 60;

fn files() -> &'static Files {
    static F: OnceLock<Files> = OnceLock::new();
    F.get_or_init(|| {
        world_files(
            SEED,
            REQUESTS,
            DEFAULT_NOW,
            &Params::reference(0.0),
            &|_| {},
        )
        .unwrap()
    })
}

fn text(name: &str) -> &'static str {
    std::str::from_utf8(files().get(name).unwrap_or_else(|| panic!("no {name}"))).unwrap()
}

fn csv(name: &str) -> Vec<BTreeMap<String, String>> {
    let mut lines = text(name).lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), header.len(), "{name}: {l}");
            header
                .iter()
                .zip(f)
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn scenario(name: &str) -> Vec<Value> {
    text(&format!("scenarios/{name}.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const SCENARIOS: [&str; 9] = [
    "wifi-urban",
    "cells-urban",
    "cells-suburban",
    "cells-rural",
    "single-cell",
    "lacf",
    "scf",
    "moved-ap",
    "wifi-fake",
];

type CellKey = (String, String, String, String);

fn key(radio: &str, mnc: &str, lac: &str, cid: &str) -> CellKey {
    (
        radio.to_ascii_uppercase(),
        mnc.to_string(),
        lac.to_string(),
        cid.to_string(),
    )
}

fn db_cells() -> BTreeMap<CellKey, BTreeMap<String, String>> {
    csv("cells.csv")
        .into_iter()
        .map(|r| (key(&r["radio"], &r["net"], &r["area"], &r["cell"]), r))
        .collect()
}

fn truth_cells() -> BTreeMap<CellKey, BTreeMap<String, String>> {
    csv("truth/cells.csv")
        .into_iter()
        .map(|r| (key(&r["radio"], &r["net"], &r["area"], &r["cell"]), r))
        .collect()
}

fn db_wifi() -> BTreeMap<String, BTreeMap<String, String>> {
    csv("wifi.csv")
        .into_iter()
        .map(|r| (r["bssid"].clone(), r))
        .collect()
}

fn cell_key(c: &Value) -> CellKey {
    key(
        c["radio"].as_str().unwrap(),
        &c["mnc"].to_string(),
        &c["lac"].to_string(),
        &c["cid"].to_string(),
    )
}

/// Metres between two WGS 84 points (equirectangular; fine at these distances).
fn metres(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    let k = 111_195.08;
    let dx = (lon2 - lon1) * k * ((lat1 + lat2) / 2.0).to_radians().cos();
    let dy = (lat2 - lat1) * k;
    (dx * dx + dy * dy).sqrt()
}

fn num(v: &BTreeMap<String, String>, k: &str) -> f64 {
    v[k].parse().unwrap()
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let again = world_files(
        SEED,
        REQUESTS,
        DEFAULT_NOW,
        &Params::reference(0.0),
        &|_| {},
    )
    .unwrap();
    assert_eq!(files().files.len(), again.files.len());
    for ((n1, b1), (n2, b2)) in files().files.iter().zip(&again.files) {
        assert_eq!(n1, n2);
        assert!(b1 == b2, "{n1} differs between two runs with the same seed");
    }
    let other = world_files(SEED + 1, 2, DEFAULT_NOW, &Params::reference(0.0), &|_| {}).unwrap();
    assert_ne!(other.get("cells.csv"), files().get("cells.csv"));
}

#[test]
fn csv_headers_exact_and_rows_sane() {
    assert_eq!(text("cells.csv").lines().next().unwrap(), CELLS_HEADER);
    assert_eq!(CELLS_HEADER, "radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal");
    assert_eq!(text("wifi.csv").lines().next().unwrap(), WIFI_HEADER);
    assert_eq!(WIFI_HEADER, "bssid,lat,lon,range,samples,created,updated");
    let cells = csv("cells.csv");
    assert!((2_000..20_000).contains(&cells.len()), "{}", cells.len());
    for r in &cells {
        assert!(["GSM", "UMTS", "LTE", "NR"].contains(&r["radio"].as_str()));
        assert_eq!(r["mcc"], "1");
        assert!(r["net"] == "1" || r["net"] == "2");
        assert_eq!(r["changeable"], "1");
        assert_eq!(r["averageSignal"], "0");
        assert!(r["lat"].split('.').nth(1).unwrap().len() >= 6);
        assert!(r["lon"].split('.').nth(1).unwrap().len() >= 6);
        let (lat, lon) = (num(r, "lat"), num(r, "lon"));
        assert!(
            (51.9..52.35).contains(&lat) && (4.0..4.75).contains(&lon),
            "{r:?}"
        );
        assert!(num(r, "updated") >= num(r, "created"));
        let cid: u64 = r["cell"].parse().unwrap();
        let unit: u64 = r["unit"].parse().unwrap();
        match r["radio"].as_str() {
            "GSM" => assert!(cid <= 65_535 && unit == 0),
            "UMTS" => assert!(cid <= 268_435_455 && unit <= 511),
            "LTE" => assert!(cid <= 268_435_455 && unit <= 503),
            _ => assert!(cid <= 68_719_476_735 && unit <= 1007),
        }
    }
    let wifi = csv("wifi.csv");
    assert!((15_000..40_000).contains(&wifi.len()), "{}", wifi.len());
    let mut prev = String::new();
    for r in &wifi {
        let b = &r["bssid"];
        assert_eq!(b.len(), 17);
        assert!(b
            .chars()
            .all(|c| c == ':' || c.is_ascii_digit() || ('a'..='f').contains(&c)));
        let first = u8::from_str_radix(&b[..2], 16).unwrap();
        assert_eq!(
            first & 0x03,
            0,
            "{b}: not a globally administered unicast address"
        );
        assert!(*b > prev, "wifi.csv sorted and unique");
        prev = b.clone();
    }
    // Well under 2 MB once imported: the CSVs themselves stay near that.
    assert!(text("cells.csv").len() + text("wifi.csv").len() < 3_000_000);
    assert!(text("README.md").contains("SIMULATED DATA: not real stations"));
}

#[test]
fn every_request_is_spec_exact() {
    let top_keys: BTreeSet<&str> =
        ["token", "radio", "mcc", "mnc", "cells", "wifi", "address"].into();
    let cell_keys: BTreeSet<&str> =
        ["radio", "mcc", "mnc", "lac", "cid", "signal", "psc", "ta"].into();
    let wifi_keys: BTreeSet<&str> = ["bssid", "signal", "frequency"].into();
    for name in SCENARIOS {
        let lines = scenario(name);
        assert_eq!(lines.len(), REQUESTS, "{name}");
        for l in &lines {
            assert_eq!(l["scenario"], name);
            let (lat, lon) = (
                l["truth"]["lat"].as_f64().unwrap(),
                l["truth"]["lon"].as_f64().unwrap(),
            );
            assert!((51.9..52.35).contains(&lat) && (4.0..4.75).contains(&lon));
            let r = l["request"].as_object().unwrap();
            for k in r.keys() {
                assert!(top_keys.contains(k.as_str()), "{name}: key {k}");
            }
            assert_eq!(r["token"], "sim");
            assert_eq!(r["address"], 0);
            if let Some(radio) = r.get("radio") {
                assert!(["gsm", "umts", "lte"].contains(&radio.as_str().unwrap()));
            }
            if let Some(m) = r.get("mcc") {
                assert_eq!(m, 1);
                assert!(r["mnc"] == 1 || r["mnc"] == 2);
            }
            let cells = r
                .get("cells")
                .map(|c| c.as_array().unwrap().clone())
                .unwrap_or_default();
            let wifi = r
                .get("wifi")
                .map(|c| c.as_array().unwrap().clone())
                .unwrap_or_default();
            assert!(r.contains_key("cells") || r.contains_key("wifi"));
            if r.contains_key("cells") {
                assert!(
                    (1..=7).contains(&cells.len()),
                    "{name}: {} cells",
                    cells.len()
                );
            }
            if r.contains_key("wifi") {
                assert!((2..=15).contains(&wifi.len()), "{name}: {} aps", wifi.len());
            }
            for (i, c) in cells.iter().enumerate() {
                let c = c.as_object().unwrap();
                for k in c.keys() {
                    assert!(cell_keys.contains(k.as_str()), "{name}: cell key {k}");
                }
                let radio = c["radio"].as_str().unwrap();
                let lac = c["lac"].as_u64().unwrap();
                let cid = c["cid"].as_u64().unwrap();
                let sig = c["signal"].as_i64().unwrap();
                assert_eq!(c["mcc"], 1);
                let (lac_max, cid_max, sig_range, psc_max, ta_ok) = match radio {
                    "gsm" => (65_533, 65_535, (-113, -51), None, true),
                    "umts" => (65_533, 268_435_455, (-121, -25), Some(511), false),
                    "lte" => (65_533, 268_435_455, (-137, -45), Some(503), true),
                    "nr" => (16_777_215, 68_719_476_735, (-140, -44), Some(1007), false),
                    r => panic!("radio {r}"),
                };
                assert!(lac <= lac_max && cid <= cid_max);
                assert!(
                    (sig_range.0..=sig_range.1).contains(&sig),
                    "{name}: {radio} signal {sig}"
                );
                match (psc_max, c.get("psc")) {
                    (Some(m), Some(p)) => assert!(p.as_u64().unwrap() <= m),
                    (None, Some(_)) => panic!("psc on gsm"),
                    _ => {}
                }
                if let Some(ta) = c.get("ta") {
                    assert!(ta_ok, "{name}: ta on {radio}");
                    assert_eq!(i, 0, "ta only on the serving cell");
                    assert!(ta.as_u64().unwrap() <= 63);
                }
            }
            for e in &wifi {
                let e = e.as_object().unwrap();
                for k in e.keys() {
                    assert!(wifi_keys.contains(k.as_str()), "{name}: wifi key {k}");
                }
                let s = e["signal"].as_i64().unwrap();
                assert!((-113..=-51).contains(&s));
                let b = e["bssid"].as_str().unwrap();
                assert_eq!(b.len(), 17);
            }
            if name == "single-cell" {
                assert_eq!(cells.len(), 1);
            }
            if name.starts_with("cells-")
                || name == "single-cell"
                || name == "lacf"
                || name == "scf"
            {
                assert!(wifi.is_empty());
                let radios: BTreeSet<&str> =
                    cells.iter().map(|c| c["radio"].as_str().unwrap()).collect();
                assert_eq!(radios.len(), 1, "{name}: cells of one radio");
            }
            if name == "wifi-urban" {
                assert!((5..=15).contains(&wifi.len()));
                assert!(!cells.is_empty());
            }
            if name == "scf" {
                assert!(cells.iter().all(|c| c["cid"].as_u64().unwrap() <= 0xffff));
            }
        }
    }
}

#[test]
fn serving_cell_is_strongest_and_ta_matches_distance() {
    let truth = truth_cells();
    let mut with_ta = 0;
    for name in [
        "cells-urban",
        "cells-suburban",
        "cells-rural",
        "single-cell",
        "wifi-urban",
    ] {
        for l in scenario(name) {
            let cells = l["request"]["cells"].as_array().unwrap();
            let sig: Vec<i64> = cells
                .iter()
                .map(|c| c["signal"].as_i64().unwrap())
                .collect();
            assert!(
                sig.windows(2).all(|w| w[0] >= w[1]),
                "{name}: serving first, then by level: {sig:?}"
            );
            let c = &cells[0];
            let Some(ta) = c.get("ta") else { continue };
            with_ta += 1;
            let t = &truth[&cell_key(c)];
            let d = metres(
                l["truth"]["lat"].as_f64().unwrap(),
                l["truth"]["lon"].as_f64().unwrap(),
                num(t, "lat"),
                num(t, "lon"),
            );
            let step = if c["radio"] == "gsm" { 553.5 } else { 78.12 };
            let ta = ta.as_u64().unwrap() as f64;
            if ta == 63.0 {
                assert!(d >= 61.5 * step, "{name}: ta 63 at {d} m");
            } else {
                assert!(
                    (ta * step - d).abs() <= 1.5 * step + 1.0,
                    "{name}: ta {ta} at {d:.0} m"
                );
            }
        }
    }
    assert!(with_ta > 20, "{with_ta}");
}

#[test]
fn missing_and_moved_stations_differ_from_the_db() {
    let db = db_cells();
    let truth = truth_cells();
    let mut missing = 0;
    for (k, t) in &truth {
        let in_db = t["in_db"] == "1";
        assert_eq!(in_db, db.contains_key(k), "{k:?}");
        if t["tower_missing"] == "1" {
            assert!(!in_db);
        }
        if !in_db {
            missing += 1;
        }
    }
    assert!(missing > 50, "{missing}");
    let dbw = db_wifi();
    let mut moved = 0;
    for t in csv("truth/wifi.csv") {
        let rec = dbw.get(&t["bssid"]);
        assert_eq!(t["in_db"] == "1", rec.is_some());
        if t["moved"] == "1" {
            moved += 1;
            // The world has it several km from where the old DB says it is.
            assert!(
                metres(
                    num(&t, "lat"),
                    num(&t, "lon"),
                    num(&t, "old_lat"),
                    num(&t, "old_lon")
                ) >= 3_000.0
            );
            if let Some(r) = rec {
                assert!(
                    metres(num(&t, "lat"), num(&t, "lon"), num(r, "lat"), num(r, "lon")) >= 2_000.0
                );
            }
        }
    }
    assert!(moved > 100, "{moved}");
    // moved-ap requests really contain 1-3 APs whose DB position is km off.
    for l in scenario("moved-ap") {
        let (lat, lon) = (
            l["truth"]["lat"].as_f64().unwrap(),
            l["truth"]["lon"].as_f64().unwrap(),
        );
        let far = l["request"]["wifi"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| dbw.get(e["bssid"].as_str().unwrap()))
            .filter(|r| metres(lat, lon, num(r, "lat"), num(r, "lon")) > 2_000.0)
            .count();
        assert!((1..=3).contains(&far), "{far} far APs");
    }
}

#[test]
fn lacf_cells_are_unknown_but_their_area_is_known() {
    let db = db_cells();
    for l in scenario("lacf") {
        let cells = l["request"]["cells"].as_array().unwrap();
        for c in cells {
            assert!(!db.contains_key(&cell_key(c)), "lacf reports a known cell");
        }
        let (r, m, a, _) = cell_key(&cells[0]);
        assert!(
            db.keys()
                .any(|(r2, m2, a2, _)| *r2 == r && *m2 == m && *a2 == a),
            "no known cell in the serving area"
        );
    }
}

#[test]
fn scf_short_ids_resolve_within_their_area() {
    let db = db_cells();
    for l in scenario("scf") {
        let c = &l["request"]["cells"][0];
        let (r, m, a, cid) = cell_key(c);
        let matches = db
            .keys()
            .filter(|(r2, m2, a2, c2)| {
                *r2 == r
                    && *m2 == m
                    && *a2 == a
                    && c2.parse::<u64>().unwrap() & 0xffff == cid.parse::<u64>().unwrap()
            })
            .count();
        assert_eq!(matches, 1, "serving short cid {cid} in {r}/{m}/{a}");
    }
}

#[test]
fn wifi_fake_has_exactly_one_known_ap() {
    let dbw = db_wifi();
    let truth: BTreeSet<String> = csv("truth/wifi.csv")
        .into_iter()
        .map(|r| r["bssid"].clone())
        .collect();
    for l in scenario("wifi-fake") {
        let wifi = l["request"]["wifi"].as_array().unwrap();
        assert_eq!(wifi.len(), 2);
        let known = wifi
            .iter()
            .filter(|e| dbw.contains_key(e["bssid"].as_str().unwrap()))
            .count();
        assert_eq!(known, 1);
        let in_world = wifi
            .iter()
            .filter(|e| truth.contains(e["bssid"].as_str().unwrap()))
            .count();
        assert_eq!(
            in_world, 1,
            "the fake AP must not exist in the world either"
        );
    }
}

/// The share of an operator's LTE masts (true positions) with no GSM sector on them.
fn lte_masts_without_gsm(files: &Files) -> f64 {
    let truth = std::str::from_utf8(files.get("truth/cells.csv").unwrap()).unwrap();
    let mut gsm = BTreeSet::new();
    let mut lte = BTreeSet::new();
    for line in truth.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let mast = (f[2].to_string(), f[6].to_string(), f[7].to_string());
        match f[0] {
            "GSM" => gsm.insert(mast),
            "LTE" => lte.insert(mast),
            _ => false,
        };
    }
    lte.iter().filter(|m| !gsm.contains(*m)).count() as f64 / lte.len() as f64
}

#[test]
fn separated_masts_put_lte_apart_from_gsm_in_the_share_asked() {
    assert_eq!(lte_masts_without_gsm(files()), 0.0);
    let apart = world_files(SEED, 2, DEFAULT_NOW, &Params::reference(0.3), &|_| {}).unwrap();
    let share = lte_masts_without_gsm(&apart);
    // A draw per mast (about 700 here: 0.3 give or take 0.04 at two standard deviations);
    // masts whose LTE would land in the sea keep their radios together.
    assert!((0.24..=0.36).contains(&share), "{share}");
}
