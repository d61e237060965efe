//! Test scenarios: a ground-truth position and the spec 2.2 `/process` request a
//! device there would send.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::geo::{self, dist, env_at, Env};
use crate::model::{self, Radio};
use crate::rng::{hash3, hash_str, Rng};
use crate::world::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scenario {
    WifiUrban,
    CellsUrban,
    CellsSuburban,
    CellsRural,
    SingleCell,
    Lacf,
    Scf,
    MovedAp,
    WifiFake,
    KnownTowers,
    LacfSite,
}

impl Scenario {
    pub const ALL: [Scenario; 9] = [
        Scenario::WifiUrban,
        Scenario::CellsUrban,
        Scenario::CellsSuburban,
        Scenario::CellsRural,
        Scenario::SingleCell,
        Scenario::Lacf,
        Scenario::Scf,
        Scenario::MovedAp,
        Scenario::WifiFake,
    ];

    /// The scenarios of a world: the reference ones, and in family worlds also
    /// `cells-known-towers` (on the operator whose towers are known exactly) and, where the
    /// crowd missed a sector of a site whose other sectors it reported, `lacf-site`.
    pub fn of_world(ctx: &Context) -> Vec<Scenario> {
        let mut v = Scenario::ALL.to_vec();
        let p = &ctx.w.params;
        if p.known_towers {
            v.push(Scenario::KnownTowers);
        }
        if p.family && !ctx.missing_sectors.is_empty() {
            v.push(Scenario::LacfSite);
        }
        v
    }

    pub fn name(self) -> &'static str {
        match self {
            Scenario::WifiUrban => "wifi-urban",
            Scenario::CellsUrban => "cells-urban",
            Scenario::CellsSuburban => "cells-suburban",
            Scenario::CellsRural => "cells-rural",
            Scenario::SingleCell => "single-cell",
            Scenario::Lacf => "lacf",
            Scenario::Scf => "scf",
            Scenario::MovedAp => "moved-ap",
            Scenario::WifiFake => "wifi-fake",
            Scenario::KnownTowers => "cells-known-towers",
            Scenario::LacfSite => "lacf-site",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Scenario::WifiUrban => "urban: serving + neighbour cells and 5-15 WiFi APs",
            Scenario::CellsUrban => "urban: serving + neighbour cells of one radio, no WiFi",
            Scenario::CellsSuburban => "suburban: serving + neighbour cells of one radio",
            Scenario::CellsRural => "rural: serving + neighbour cells of one radio",
            Scenario::SingleCell => "any zone: only the serving cell",
            Scenario::Lacf => "all reported cells are missing from the DB; other cells of the serving LAC/TAC are known",
            Scenario::Scf => "UMTS/LTE cids reported as their low 16 bits only",
            Scenario::MovedAp => "urban WiFi scan where 1-3 APs moved km away since the DB was built",
            Scenario::WifiFake => "one DB-known AP + one unknown/random AP; half with cells, half WiFi-only",
            Scenario::KnownTowers => "any zone: serving + 1-6 neighbour cells of the operator whose DB rows are its true tower positions",
            Scenario::LacfSite => "the serving cell is missing from the DB, other sectors of its site are known; all reported cells are missing",
        }
    }
}

#[derive(Clone, Debug)]
pub struct ReqCell {
    pub radio: Radio,
    pub mnc: u16,
    pub lac: u32,
    pub cid: u64,
    pub signal: i32,
    pub psc: Option<u16>,
    pub ta: Option<u32>,
    /// Index into World::cells (not serialised).
    pub cell: usize,
}

#[derive(Clone, Debug)]
pub struct ReqWifi {
    pub bssid: u64,
    pub signal: i32,
    pub frequency: Option<u32>,
    /// Index into World::aps, None for a fabricated AP (not serialised).
    pub ap: Option<usize>,
}

#[derive(Clone, Debug)]
pub struct Request {
    pub radio: Option<Radio>,
    pub mnc: Option<u16>,
    pub cells: Vec<ReqCell>,
    pub wifi: Vec<ReqWifi>,
}

#[derive(Clone, Debug)]
pub struct Line {
    pub scenario: Scenario,
    pub x: f64,
    pub y: f64,
    pub request: Request,
    pub note: String,
}

pub struct CellObs {
    pub cell: usize,
    pub signal: i32,
    pub dist: f64,
}

/// Every cell of `radio` on network `mnc` heard at (x, y), strongest first.
pub fn observe_cells(
    w: &World,
    x: f64,
    y: f64,
    mnc: u16,
    radio: Radio,
    rng: &mut Rng,
) -> Vec<CellObs> {
    let mut out = Vec::new();
    let sens = radio.sensitivity_dbm();
    for t in w.towers.iter().filter(|t| t.mnc == mnc) {
        let d = dist(x, y, t.x, t.y);
        if d > w.max_hear_range_m(radio, t.env) {
            continue;
        }
        for ci in t.cells.clone() {
            if w.cells[ci].radio != radio {
                continue;
            }
            let level = w.cell_level(ci, x, y) + rng.gauss() * w.params.cell_level_noise_db;
            if level >= sens {
                out.push(CellObs {
                    cell: ci,
                    signal: model::quantize(level, radio.signal_range()),
                    dist: d,
                });
            }
        }
    }
    out.sort_by_key(|o| (-o.signal, o.cell));
    out
}

/// Every AP heard at (x, y), strongest first: (ap index, signal).
pub fn observe_wifi(w: &World, x: f64, y: f64, rng: &mut Rng) -> Vec<(usize, i32)> {
    let mut near = Vec::new();
    w.aps_near(x, y, World::WIFI_SCAN_RADIUS_M, &mut near);
    let mut out = Vec::new();
    for &i in &near {
        let level =
            w.ap_level(i as usize, x, y, false) + rng.gauss() * w.params.wifi_level_noise_db;
        if level >= model::WIFI_SENSITIVITY_DBM {
            out.push((i as usize, model::quantize(level, model::WIFI_RANGE)));
        }
    }
    out.sort_by_key(|&(i, s)| (-s, i));
    out
}

fn device_radio(rng: &mut Rng, env: Env) -> Radio {
    let r = rng.f64();
    if r < 0.30 {
        Radio::Gsm
    } else if r < 0.50 {
        Radio::Umts
    } else if r < 0.95 || env == Env::Rural {
        Radio::Lte
    } else {
        Radio::Nr
    }
}

fn timing_advance(rng: &mut Rng, radio: Radio, d: f64) -> Option<u32> {
    let step = radio.ta_step_m()?;
    if !rng.chance(0.6) {
        return None;
    }
    Some(advance_at(rng, step, d))
}

/// The timing advance a phone `d` metres from its mast reports, in steps of `step` metres:
/// the nearest step, or one either side of it (each a third of the time).
pub fn advance_at(rng: &mut Rng, step: f64, d: f64) -> u32 {
    let ta = (d / step).round() as i64 + rng.int(-1, 1);
    ta.clamp(0, 63) as u32
}

fn req_cell(w: &World, o: &CellObs, ta: Option<u32>) -> ReqCell {
    let c = &w.cells[o.cell];
    ReqCell {
        radio: c.radio,
        mnc: c.mnc,
        lac: c.lac,
        cid: c.cid,
        signal: o.signal,
        psc: c.unit,
        ta,
        cell: o.cell,
    }
}

/// Serving cell plus up to `max_neigh` neighbours; TA on the serving cell only.
fn cell_list(w: &World, rng: &mut Rng, obs: &[CellObs], max_neigh: usize) -> Vec<ReqCell> {
    let mut out = Vec::new();
    for (i, o) in obs.iter().take(1 + max_neigh.min(6)).enumerate() {
        let ta = if i == 0 {
            timing_advance(rng, w.cells[o.cell].radio, o.dist)
        } else {
            None
        };
        out.push(req_cell(w, o, ta));
    }
    out
}

fn wifi_entry(w: &World, rng: &mut Rng, ai: usize, signal: i32) -> ReqWifi {
    let a = &w.aps[ai];
    let frequency = if rng.chance(0.7) {
        Some(a.freq_mhz)
    } else {
        None
    };
    ReqWifi {
        bssid: a.bssid,
        signal,
        frequency,
        ap: Some(ai),
    }
}

/// Top-level radio: the spec lists no `nr` there, so an NR device leaves it out
/// and names the radio in each cell.
fn top_radio(r: Radio) -> Option<Radio> {
    if r == Radio::Nr {
        None
    } else {
        Some(r)
    }
}

pub struct Context<'a> {
    w: &'a World,
    moved_urban: Vec<usize>,
    missing_towers: Vec<usize>,
    /// Cells the crowd missed on sites whose other sectors of the same radio it reported.
    missing_sectors: Vec<usize>,
    bssids: BTreeSet<u64>,
}

impl<'a> Context<'a> {
    pub fn new(w: &'a World) -> Context<'a> {
        let moved_urban = (0..w.aps.len())
            .filter(|&i| w.aps[i].moved && w.aps[i].env == Env::Urban && w.aps[i].db.is_some())
            .collect();
        let missing_towers = (0..w.towers.len())
            .filter(|&i| w.towers[i].missing)
            .collect();
        let missing_sectors = (0..w.cells.len())
            .filter(|&i| {
                let c = &w.cells[i];
                let t = &w.towers[c.tower];
                c.db.is_none()
                    && !t.missing
                    && t.cells.clone().any(|j| {
                        j != i
                            && w.cells[j].radio == c.radio
                            && w.cells[j].lac == c.lac
                            && w.cells[j].db.is_some()
                    })
            })
            .collect();
        let bssids = w.aps.iter().map(|a| a.bssid).collect();
        Context {
            w,
            moved_urban,
            missing_towers,
            missing_sectors,
            bssids,
        }
    }
}

fn zone_note(x: f64, y: f64) -> String {
    format!("env={}", env_at(x, y).name())
}

/// Generates request `i` of a scenario. Each request has its own random stream,
/// so counts can change without reshuffling the requests that stay.
pub fn generate(ctx: &Context, seed: u64, s: Scenario, i: u64) -> Result<Line, String> {
    let mut rng = Rng::new(hash3(seed, hash_str(s.name()), i));
    for _ in 0..5_000 {
        if let Some(l) = attempt(ctx, &mut rng, s) {
            return Ok(l);
        }
    }
    Err(format!(
        "scenario {}: could not build request {i} in 5000 attempts",
        s.name()
    ))
}

fn attempt(ctx: &Context, rng: &mut Rng, s: Scenario) -> Option<Line> {
    let w = ctx.w;
    let mut mnc = *rng.pick(&MNCS);
    if s == Scenario::KnownTowers {
        mnc = crate::family::KNOWN_MNC;
    }
    match s {
        Scenario::CellsUrban
        | Scenario::CellsSuburban
        | Scenario::CellsRural
        | Scenario::SingleCell
        | Scenario::KnownTowers => {
            let env = match s {
                Scenario::CellsUrban => Env::Urban,
                Scenario::CellsSuburban => Env::Suburban,
                Scenario::CellsRural => Env::Rural,
                _ => *rng.pick(&[
                    Env::Urban,
                    Env::Urban,
                    Env::Suburban,
                    Env::Suburban,
                    Env::Rural,
                ]),
            };
            let (x, y) = w.land.sample(rng, Some(env));
            let radio = device_radio(rng, env);
            let obs = observe_cells(w, x, y, mnc, radio, rng);
            if obs.is_empty() {
                return None;
            }
            let max_neigh = if s == Scenario::SingleCell {
                0
            } else {
                rng.int(2, 6) as usize
            };
            // Multi-cell: a scan with one known tower is the single-cell scenario's.
            if s == Scenario::KnownTowers && obs.len() < 2 {
                return None;
            }
            let cells = cell_list(w, rng, &obs, max_neigh);
            let note = format!(
                "{} radio={} heard={} serving_dist_m={:.0}",
                zone_note(x, y),
                radio.lower(),
                obs.len(),
                obs[0].dist
            );
            Some(Line {
                scenario: s,
                x,
                y,
                request: Request {
                    radio: top_radio(radio),
                    mnc: Some(mnc),
                    cells,
                    wifi: vec![],
                },
                note,
            })
        }
        Scenario::WifiUrban => {
            let (x, y) = w.land.sample(rng, Some(Env::Urban));
            let radio = if rng.chance(0.8) {
                Radio::Lte
            } else {
                device_radio(rng, Env::Urban)
            };
            let obs = observe_cells(w, x, y, mnc, radio, rng);
            let heard = observe_wifi(w, x, y, rng);
            // Family worlds with sparse or short-range WiFi accept scans of 3 APs.
            let min_aps = if w.params.family { 3 } else { 5 };
            if obs.is_empty() || heard.len() < min_aps {
                return None;
            }
            let k = heard.len().min(rng.int(5, 15) as usize);
            let nn = rng.int(2, 6) as usize;
            let cells = cell_list(w, rng, &obs, nn);
            let wifi: Vec<ReqWifi> = heard[..k]
                .iter()
                .map(|&(ai, sig)| wifi_entry(w, rng, ai, sig))
                .collect();
            let known = wifi
                .iter()
                .filter(|e| e.ap.is_some_and(|a| w.aps[a].db.is_some()))
                .count();
            let note = format!(
                "{} radio={} aps_heard={} aps_in_db={known}",
                zone_note(x, y),
                radio.lower(),
                heard.len()
            );
            Some(Line {
                scenario: s,
                x,
                y,
                request: Request {
                    radio: top_radio(radio),
                    mnc: Some(mnc),
                    cells,
                    wifi,
                },
                note,
            })
        }
        Scenario::MovedAp => {
            if ctx.moved_urban.is_empty() {
                return None;
            }
            let m = *rng.pick(&ctx.moved_urban);
            let (x, y) = (
                w.aps[m].x + rng.gauss() * 30.0,
                w.aps[m].y + rng.gauss() * 30.0,
            );
            if !w.land.is_land(x, y) {
                return None;
            }
            let heard = observe_wifi(w, x, y, rng);
            let is_moved = |ai: usize| w.aps[ai].moved && w.aps[ai].db.is_some();
            let moved: Vec<_> = heard
                .iter()
                .copied()
                .filter(|&(ai, _)| is_moved(ai))
                .take(3)
                .collect();
            let others: Vec<_> = heard
                .iter()
                .copied()
                .filter(|&(ai, _)| !w.aps[ai].moved)
                .collect();
            if moved.is_empty() || others.len() < 3 {
                return None;
            }
            let k = rng.int(5, 15) as usize;
            let mut pick: Vec<(usize, i32)> = moved.clone();
            pick.extend(others.iter().take(k.saturating_sub(moved.len()).max(2)));
            pick.sort_by_key(|&(i, s)| (-s, i));
            let radio = if rng.chance(0.8) {
                Radio::Lte
            } else {
                device_radio(rng, Env::Urban)
            };
            let obs = observe_cells(w, x, y, mnc, radio, rng);
            if obs.is_empty() {
                return None;
            }
            let nn = rng.int(2, 6) as usize;
            let cells = cell_list(w, rng, &obs, nn);
            let wifi: Vec<ReqWifi> = pick
                .iter()
                .map(|&(ai, sig)| wifi_entry(w, rng, ai, sig))
                .collect();
            let worst = moved
                .iter()
                .map(|&(ai, _)| {
                    let r = w.aps[ai].db.as_ref().unwrap();
                    dist(r.x, r.y, w.aps[ai].x, w.aps[ai].y)
                })
                .fold(0.0, f64::max);
            let note = format!(
                "{} moved_aps={} max_db_error_m={worst:.0}",
                zone_note(x, y),
                moved.len()
            );
            Some(Line {
                scenario: s,
                x,
                y,
                request: Request {
                    radio: top_radio(radio),
                    mnc: Some(mnc),
                    cells,
                    wifi,
                },
                note,
            })
        }
        Scenario::WifiFake => {
            let env = if rng.chance(0.7) {
                Env::Urban
            } else {
                Env::Suburban
            };
            let (x, y) = w.land.sample(rng, Some(env));
            let heard = observe_wifi(w, x, y, rng);
            let &(real, sig) = heard
                .iter()
                .find(|&&(ai, _)| w.aps[ai].db.is_some() && !w.aps[ai].moved)?;
            let fake = loop {
                let mut b = rng.next_u64() & 0xffff_ffff_ffff;
                // Half are privacy (locally administered) MACs, half look like real hardware.
                let privacy = rng.chance(0.5);
                b &= !(0x01u64 << 40);
                if privacy {
                    b |= 0x02u64 << 40;
                } else {
                    b &= !(0x02u64 << 40);
                }
                if !ctx.bssids.contains(&b) {
                    break b;
                }
            };
            let fake_sig = rng.int(-88, -55) as i32;
            let mut wifi = vec![
                wifi_entry(w, rng, real, sig),
                ReqWifi {
                    bssid: fake,
                    signal: fake_sig,
                    frequency: None,
                    ap: None,
                },
            ];
            if rng.chance(0.5) {
                wifi.swap(0, 1);
            }
            let with_cells = rng.chance(0.5);
            let (radio, cells) = if with_cells {
                let radio = device_radio(rng, env);
                let obs = observe_cells(w, x, y, mnc, radio, rng);
                if obs.is_empty() {
                    return None;
                }
                let nn = rng.int(0, 6) as usize;
                (top_radio(radio), cell_list(w, rng, &obs, nn))
            } else {
                (None, vec![])
            };
            let kind = if fake & (0x02u64 << 40) != 0 {
                "local"
            } else {
                "global"
            };
            let note = format!(
                "{} {} fake_bssid={kind} real_ap_dist_m={:.0}",
                zone_note(x, y),
                if with_cells {
                    "with-cells"
                } else {
                    "wifi-only"
                },
                dist(x, y, w.aps[real].x, w.aps[real].y)
            );
            let mnc_top = if with_cells { Some(mnc) } else { None };
            Some(Line {
                scenario: s,
                x,
                y,
                request: Request {
                    radio,
                    mnc: mnc_top,
                    cells,
                    wifi,
                },
                note,
            })
        }
        Scenario::Lacf => {
            if ctx.missing_towers.is_empty() {
                return None;
            }
            let ti = *rng.pick(&ctx.missing_towers);
            let t = &w.towers[ti];
            let radios: Vec<Radio> = [Radio::Gsm, Radio::Umts, Radio::Lte]
                .into_iter()
                .filter(|r| t.cells.clone().any(|ci| w.cells[ci].radio == *r))
                .collect();
            if radios.is_empty() {
                return None;
            }
            let radio = *rng.pick(&radios);
            let r = 0.35
                * if w.params.family {
                    w.params.isd(t.env, t.mnc)
                } else {
                    match t.env {
                        Env::Urban => 500.0,
                        Env::Suburban => 1_500.0,
                        Env::Rural => 5_000.0,
                    }
                };
            let (x, y) = (t.x + rng.range(-r, r), t.y + rng.range(-r, r));
            if !w.land.is_land(x, y) {
                return None;
            }
            let obs = observe_cells(w, x, y, t.mnc, radio, rng);
            let unknown: Vec<CellObs> = obs
                .into_iter()
                .filter(|o| w.cells[o.cell].db.is_none())
                .collect();
            let serving = unknown.first()?;
            if w.cells[serving.cell].tower != ti {
                return None;
            }
            let key = (radio, t.mnc, w.cells[serving.cell].lac);
            let known = w.db_cells_by_lac.get(&key).map_or(0, |v| v.len());
            if known == 0 {
                return None;
            }
            let nn = rng.int(0, 6) as usize;
            let cells = cell_list(w, rng, &unknown, nn);
            let note = format!(
                "{} radio={} lac_cells_in_db={known} serving_dist_m={:.0}",
                zone_note(x, y),
                radio.lower(),
                serving.dist
            );
            Some(Line {
                scenario: s,
                x,
                y,
                request: Request {
                    radio: Some(radio),
                    mnc: Some(t.mnc),
                    cells,
                    wifi: vec![],
                },
                note,
            })
        }
        Scenario::LacfSite => {
            let ci = *rng.pick(&ctx.missing_sectors);
            let c = &w.cells[ci];
            let t = &w.towers[c.tower];
            // Anywhere the missing sector serves: a box of 1.5 site spacings either way of its
            // mast holds all but the farthest of a sector's serving area.
            let r = 1.5 * w.params.isd(t.env, t.mnc);
            let (x, y) = (t.x + rng.range(-r, r), t.y + rng.range(-r, r));
            if !w.land.is_land(x, y) {
                return None;
            }
            let obs = observe_cells(w, x, y, t.mnc, c.radio, rng);
            if obs.first()?.cell != ci {
                return None;
            }
            let unknown: Vec<CellObs> = obs
                .into_iter()
                .filter(|o| w.cells[o.cell].db.is_none())
                .collect();
            let serving_dist = unknown[0].dist;
            let nn = rng.int(0, 6) as usize;
            let cells = cell_list(w, rng, &unknown, nn);
            let note = format!(
                "{} radio={} serving_dist_m={serving_dist:.0}",
                zone_note(x, y),
                c.radio.lower(),
            );
            Some(Line {
                scenario: s,
                x,
                y,
                request: Request {
                    radio: top_radio(c.radio),
                    mnc: Some(t.mnc),
                    cells,
                    wifi: vec![],
                },
                note,
            })
        }
        Scenario::Scf => {
            let env = *rng.pick(&[Env::Urban, Env::Suburban, Env::Rural]);
            let (x, y) = w.land.sample(rng, Some(env));
            let radio = if rng.chance(0.5) {
                Radio::Umts
            } else {
                Radio::Lte
            };
            let obs = observe_cells(w, x, y, mnc, radio, rng);
            let first = obs.first()?;
            w.cells[first.cell].db.as_ref()?;
            let nn = rng.int(0, 6) as usize;
            let mut cells = cell_list(w, rng, &obs, nn);
            for c in cells.iter_mut() {
                c.cid &= 0xffff;
            }
            let note = format!(
                "{} radio={} full_serving_cid={}",
                zone_note(x, y),
                radio.lower(),
                w.cells[first.cell].cid
            );
            Some(Line {
                scenario: s,
                x,
                y,
                request: Request {
                    radio: Some(radio),
                    mnc: Some(mnc),
                    cells,
                    wifi: vec![],
                },
                note,
            })
        }
    }
}

pub fn format_bssid(b: u64) -> String {
    let o = b.to_be_bytes();
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        o[2], o[3], o[4], o[5], o[6], o[7]
    )
}

fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// One JSONL line; the request object is exactly the spec 2.2 shape.
pub fn write_json(out: &mut String, l: &Line) {
    let (lat, lon) = geo::to_latlon(l.x, l.y);
    out.push_str("{\"scenario\":");
    json_str(out, l.scenario.name());
    let _ = write!(
        out,
        ",\"truth\":{{\"lat\":{lat:.7},\"lon\":{lon:.7}}},\"request\":{{\"token\":\"sim\""
    );
    let r = &l.request;
    if let Some(radio) = r.radio {
        let _ = write!(out, ",\"radio\":\"{}\"", radio.lower());
    }
    if let Some(mnc) = r.mnc {
        let _ = write!(out, ",\"mcc\":{MCC},\"mnc\":{mnc}");
    }
    if !r.cells.is_empty() {
        out.push_str(",\"cells\":[");
        for (i, c) in r.cells.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(
                out,
                "{{\"radio\":\"{}\",\"mcc\":{MCC},\"mnc\":{},\"lac\":{},\"cid\":{},\"signal\":{}",
                c.radio.lower(),
                c.mnc,
                c.lac,
                c.cid,
                c.signal
            );
            if let Some(p) = c.psc {
                let _ = write!(out, ",\"psc\":{p}");
            }
            if let Some(ta) = c.ta {
                let _ = write!(out, ",\"ta\":{ta}");
            }
            out.push('}');
        }
        out.push(']');
    }
    if !r.wifi.is_empty() {
        out.push_str(",\"wifi\":[");
        for (i, e) in r.wifi.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str("{\"bssid\":");
            json_str(out, &format_bssid(e.bssid));
            let _ = write!(out, ",\"signal\":{}", e.signal);
            if let Some(f) = e.frequency {
                let _ = write!(out, ",\"frequency\":{f}");
            }
            out.push('}');
        }
        out.push(']');
    }
    out.push_str(",\"address\":0},\"note\":");
    json_str(out, &l.note);
    out.push_str("}\n");
}
