//! The files of `world`: the OpenCelliD-format cell export, the WiFi station
//! file, the scenario JSONL files, ground-truth tables and a README. Everything
//! is rendered into memory first, in a fixed order, so a test can compare bytes.

use std::fmt::Write as _;

use crate::family::Params;
use crate::geo::{self, dist, Env};
use crate::model::Radio;
use crate::scenarios::{self, format_bssid, Context, Scenario};
use crate::world::*;

pub const CELLS_HEADER: &str =
    "radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal";
pub const WIFI_HEADER: &str = "bssid,lat,lon,range,samples,created,updated";

pub struct Files {
    /// (path relative to the output directory, contents), in writing order.
    pub files: Vec<(String, Vec<u8>)>,
}

impl Files {
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.files
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.as_slice())
    }
}

pub fn cells_csv(w: &World) -> String {
    let mut idx: Vec<usize> = (0..w.cells.len())
        .filter(|&i| w.cells[i].db.is_some())
        .collect();
    idx.sort_by_key(|&i| {
        let c = &w.cells[i];
        (c.radio, c.mnc, c.lac, c.cid)
    });
    let mut out = String::with_capacity(idx.len() * 96);
    out.push_str(CELLS_HEADER);
    out.push('\n');
    for i in idx {
        let c = &w.cells[i];
        let r = c.db.as_ref().unwrap();
        let (lat, lon) = geo::to_latlon(r.x, r.y);
        let _ = writeln!(
            out,
            "{},{MCC},{},{},{},{},{lon:.6},{lat:.6},{},{},1,{},{},0",
            c.radio.upper(),
            c.mnc,
            c.lac,
            c.cid,
            c.unit.unwrap_or(0),
            r.range,
            r.samples,
            r.created,
            r.updated
        );
    }
    out
}

pub fn wifi_csv(w: &World) -> String {
    let mut idx: Vec<usize> = (0..w.aps.len())
        .filter(|&i| w.aps[i].db.is_some())
        .collect();
    idx.sort_by_key(|&i| w.aps[i].bssid);
    let mut out = String::with_capacity(idx.len() * 72);
    out.push_str(WIFI_HEADER);
    out.push('\n');
    for i in idx {
        let a = &w.aps[i];
        let r = a.db.as_ref().unwrap();
        let (lat, lon) = geo::to_latlon(r.x, r.y);
        let _ = writeln!(
            out,
            "{},{lat:.6},{lon:.6},{},{},{},{}",
            format_bssid(a.bssid),
            r.range,
            r.samples,
            r.created,
            r.updated
        );
    }
    out
}

fn db_error(r: &Option<DbRecord>, x: f64, y: f64) -> String {
    match r {
        Some(r) => format!("{:.1}", dist(r.x, r.y, x, y)),
        None => String::new(),
    }
}

/// True positions and the simulator's flags, for evaluating the database itself.
pub fn truth_cells_csv(w: &World) -> String {
    let mut out = String::from("radio,mcc,net,area,cell,unit,lon,lat,env,azimuth,omni,in_db,tower_missing,stale,samples,db_error_m\n");
    for c in &w.cells {
        let t = &w.towers[c.tower];
        let (lat, lon) = geo::to_latlon(t.x, t.y);
        let _ = writeln!(
            out,
            "{},{MCC},{},{},{},{},{lon:.6},{lat:.6},{},{},{},{},{},{},{},{}",
            c.radio.upper(),
            c.mnc,
            c.lac,
            c.cid,
            c.unit.unwrap_or(0),
            t.env.name(),
            c.azimuth.map_or(String::new(), |a| format!("{a:.1}")),
            t.omni as u8,
            c.db.is_some() as u8,
            t.missing as u8,
            c.db.as_ref().is_some_and(|r| r.stale(w.now)) as u8,
            c.db.as_ref().map_or(0, |r| r.samples),
            db_error(&c.db, t.x, t.y)
        );
    }
    out
}

pub fn truth_wifi_csv(w: &World) -> String {
    let mut out = String::from(
        "bssid,lat,lon,old_lat,old_lon,env,indoor,frequency,moved,in_db,stale,samples,db_error_m\n",
    );
    for a in &w.aps {
        let (lat, lon) = geo::to_latlon(a.x, a.y);
        let (olat, olon) = geo::to_latlon(a.old_x, a.old_y);
        let _ = writeln!(
            out,
            "{},{lat:.6},{lon:.6},{olat:.6},{olon:.6},{},{},{},{},{},{},{},{}",
            format_bssid(a.bssid),
            a.env.name(),
            a.indoor as u8,
            a.freq_mhz,
            a.moved as u8,
            a.db.is_some() as u8,
            a.db.as_ref().is_some_and(|r| r.stale(w.now)) as u8,
            a.db.as_ref().map_or(0, |r| r.samples),
            db_error(&a.db, a.x, a.y)
        );
    }
    out
}

pub struct Counts {
    pub lines: Vec<String>,
}

pub fn counts(w: &World) -> Counts {
    let mut lines = Vec::new();
    for &mnc in w.params.operators() {
        let mut parts = Vec::new();
        for env in Env::ALL {
            let n = w
                .towers
                .iter()
                .filter(|t| t.mnc == mnc && t.env == env)
                .count();
            parts.push(format!("{} {n}", env.name()));
        }
        let omni = w.towers.iter().filter(|t| t.mnc == mnc && t.omni).count();
        let missing = w
            .towers
            .iter()
            .filter(|t| t.mnc == mnc && t.missing)
            .count();
        let areas = w
            .towers
            .iter()
            .filter(|t| t.mnc == mnc)
            .map(|t| t.area)
            .max()
            .map_or(0, |a| a + 1);
        lines.push(format!(
            "towers mcc {MCC} mnc {mnc}: {} ({}); omni {omni}; missing from DB (new sites) {missing}; LAC/TAC areas {areas}",
            w.towers.iter().filter(|t| t.mnc == mnc).count(),
            parts.join(", ")
        ));
    }
    for radio in Radio::ALL {
        let all: Vec<&Cell> = w.cells.iter().filter(|c| c.radio == radio).collect();
        let db = all.iter().filter(|c| c.db.is_some()).count();
        let single = all
            .iter()
            .filter(|c| c.db.as_ref().is_some_and(|r| r.samples == 1))
            .count();
        let stale = all
            .iter()
            .filter(|c| c.db.as_ref().is_some_and(|r| r.stale(w.now)))
            .count();
        lines.push(format!(
            "{} cells: {} in the world, {db} in cells.csv, {} missing from it, {single} single-sample, {stale} stale (> 90 days)",
            radio.upper(),
            all.len(),
            all.len() - db
        ));
    }
    let db = w.aps.iter().filter(|a| a.db.is_some()).count();
    let moved = w.aps.iter().filter(|a| a.moved).count();
    let single = w
        .aps
        .iter()
        .filter(|a| a.db.as_ref().is_some_and(|r| r.samples == 1))
        .count();
    let stale = w
        .aps
        .iter()
        .filter(|a| a.db.as_ref().is_some_and(|r| r.stale(w.now)))
        .count();
    let by_env: Vec<String> = Env::ALL
        .iter()
        .map(|&e| {
            format!(
                "{} {}",
                e.name(),
                w.aps.iter().filter(|a| a.env == e).count()
            )
        })
        .collect();
    lines.push(format!(
        "WiFi APs: {} in the world ({}), {db} in wifi.csv, {} missing from it, {moved} moved after the DB was built, {single} single-sample, {stale} stale",
        w.aps.len(),
        by_env.join(", "),
        w.aps.len() - db
    ));
    Counts { lines }
}

/// Unix seconds as an ISO 8601 UTC timestamp (proleptic Gregorian calendar).
pub fn iso_utc(t: i64) -> String {
    let days = t.div_euclid(DAY);
    let secs = t.rem_euclid(DAY);
    // Civil date from days since 1970-01-01, counting in 400-year eras from 0000-03-01.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

fn readme(w: &World, requests: usize, scen_counts: &[(Scenario, usize)]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Whereabouts simulated world\n");
    let family = if w.params.family { " --family" } else { "" };
    let _ = writeln!(s, "**SIMULATED DATA: not real stations.** Generated by `whereabouts-sim world{family} --seed {} --requests {requests} --now {}`.", w.seed, w.now);
    let _ = writeln!(s, "Identical arguments produce byte-identical files.\n");
    let _ = writeln!(s, "- seed: {}", w.seed);
    let _ = writeln!(
        s,
        "- region: 40 x 40 km square centred on {:.2} N {:.2} E (lat {:.4}..{:.4}, lon {:.4}..{:.4}): The Hague, Delft, Leiden, Zoetermeer and the North Sea coast, South Holland, NL",
        geo::LAT0,
        geo::LON0,
        geo::to_latlon(0.0, -geo::HALF).0,
        geo::to_latlon(0.0, geo::HALF).0,
        geo::to_latlon(-geo::HALF, 0.0).1,
        geo::to_latlon(geo::HALF, 0.0).1
    );
    if w.params.family {
        let _ = writeln!(s, "- networks: mcc {MCC} (ITU test network), mnc 1 and 2 (crowd estimates), mnc {} (rows at the true tower positions, for `cells-known-towers`)", crate::family::KNOWN_MNC);
        let p = &w.params;
        let _ = writeln!(s, "- world family member: every model parameter was drawn from the seed; all of them are in `params.json`. In short: layout {}, spacing {:.0} / {:.0} / {:.0} m (urban / suburban / rural), path-loss exponent (LTE) {:.2} / {:.2} / {:.2}, shadowing {:.1} / {:.1} / {:.1} dB over {:.0} m, beamwidth {:.0} deg, front-to-back {:.0} dB, {}; crowd estimate {} with range {} (cells), {} with range {} (WiFi)",
            p.layout.name(), p.isd_m[0], p.isd_m[1], p.isd_m[2],
            p.pl_exponent[Radio::Lte as usize][0], p.pl_exponent[Radio::Lte as usize][1], p.pl_exponent[Radio::Lte as usize][2],
            p.shadow_sigma_db[0], p.shadow_sigma_db[1], p.shadow_sigma_db[2], p.shadow_grid_m,
            p.beamwidth_deg, p.front_to_back_db,
            match p.tilt { Some(t) => format!("downtilt {:.1} deg", t.downtilt_deg), None => "no downtilt".into() },
            p.cell_estimate.name(), p.cell_range.name(), p.ap_estimate.name(), p.ap_range.name());
    } else {
        let _ = writeln!(s, "- networks: mcc {MCC} (ITU test network), mnc 1 and 2");
    }
    let _ = writeln!(
        s,
        "- scenario time (`--now`): {} ({}); database ages are relative to it: `updated` more than 90 days before it is stale\n",
        w.now,
        iso_utc(w.now)
    );
    let _ = writeln!(s, "## Counts\n");
    for l in counts(w).lines {
        let _ = writeln!(s, "- {l}");
    }
    let _ = writeln!(s, "\n## Files\n");
    let _ = writeln!(s, "- `cells.csv`: OpenCelliD export format; positions are crowd estimates, not tower positions");
    let _ = writeln!(s, "- `wifi.csv`: `{WIFI_HEADER}`");
    let _ = writeln!(s, "- `truth/cells.csv`, `truth/wifi.csv`: true positions and flags of every station, including those missing from the database (not for import)");
    if w.params.family {
        let _ = writeln!(s, "- `params.json`: the world's drawn model parameters");
    }
    let _ = writeln!(s, "- `scenarios/<name>.jsonl`: one `{{\"scenario\",\"truth\",\"request\",\"note\"}}` object per line; `request` is a spec 2.2 `/process` body\n");
    let _ = writeln!(
        s,
        "| scenario | requests | what it stresses |\n|---|---|---|"
    );
    for (sc, n) in scen_counts {
        let _ = writeln!(s, "| {} | {n} | {} |", sc.name(), sc.describe());
    }
    let _ = writeln!(s, "\nImport: `whereabouts import --db DB cells.csv wifi.csv`. See docs/simulator.md for the model.");
    s
}

/// Builds every output file of `world` under `params` ([`Params::reference`] or
/// [`Params::draw`]). `progress` receives stage messages.
pub fn world_files(
    seed: u64,
    requests: usize,
    now: i64,
    params: &Params,
    progress: &dyn Fn(&str),
) -> Result<Files, String> {
    progress("generating towers, cells, access points and crowd database");
    let w = World::generate(seed, now, params);
    for l in counts(&w).lines {
        progress(&l);
    }
    let mut files = Files { files: Vec::new() };
    files
        .files
        .push(("cells.csv".into(), cells_csv(&w).into_bytes()));
    files
        .files
        .push(("wifi.csv".into(), wifi_csv(&w).into_bytes()));
    files
        .files
        .push(("truth/cells.csv".into(), truth_cells_csv(&w).into_bytes()));
    files
        .files
        .push(("truth/wifi.csv".into(), truth_wifi_csv(&w).into_bytes()));
    if params.family {
        files
            .files
            .push(("params.json".into(), params.to_json(seed).into_bytes()));
    }
    let ctx = Context::new(&w);
    let scenarios = Scenario::of_world(&ctx);
    // Each request has its own random stream, so scenarios can be built on
    // separate threads without changing a byte.
    let results: Vec<Result<String, String>> = std::thread::scope(|sc| {
        let handles: Vec<_> = scenarios
            .iter()
            .map(|&s| {
                let ctx = &ctx;
                sc.spawn(move || {
                    let mut out = String::new();
                    for i in 0..requests as u64 {
                        let line = scenarios::generate(ctx, seed, s, i)?;
                        scenarios::write_json(&mut out, &line);
                    }
                    Ok(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("scenario thread panicked"))
            .collect()
    });
    let mut scen_counts = Vec::new();
    for (s, r) in scenarios.iter().zip(results) {
        let text = r?;
        progress(&format!("scenario {}: {requests} requests", s.name()));
        scen_counts.push((*s, requests));
        files
            .files
            .push((format!("scenarios/{}.jsonl", s.name()), text.into_bytes()));
    }
    files.files.push((
        "README.md".into(),
        readme(&w, requests, &scen_counts).into_bytes(),
    ));
    Ok(files)
}

#[cfg(test)]
mod tests {
    #[test]
    fn iso_dates() {
        assert_eq!(super::iso_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::iso_utc(1_780_272_000), "2026-06-01T00:00:00Z");
        assert_eq!(super::iso_utc(951_782_400 + 3_661), "2000-02-29T01:01:01Z");
    }
}
