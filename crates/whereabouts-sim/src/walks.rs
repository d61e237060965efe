//! Walks: GPS-tagged traces of phones walking the street grid and logging their serving cell,
//! as OpenCelliD measurement CSV, one file a walk. People walk the same streets again, so most
//! routes are walked on several days (the same shadowing, other fading, GPS error and side of
//! the street), and some once. Learning some walks and locating the others is the
//! learned-cells check for traces with timing advance (`bench/traces.ts --set walks`).
//!
//! What varies between worlds is drawn from the seed ([`WalkParams`]); what a walk records
//! follows the world's own radio model (`World::cell_level`), as every scenario does.

use std::fmt::Write as _;

use crate::geo::{from_uv, street_every, to_uv, Env, STREET_SPACING_M};
use crate::model::Radio;
use crate::rng::{hash3, hash_str, Rng};
use crate::scenarios::{advance_at, observe_cells};
use crate::world::{World, DAY, MCC, MNCS};

/// The OpenCelliD measurement CSV header (`whereabouts learn` reads it).
pub const HEADER: &str =
    "mcc,mnc,lac,cellid,lat,lon,signal,measured_at,rating,speed,direction,act,ta,psc,tac,pci,sid,nid,bid";

/// A phone keeps its serving cell until another is this much stronger (handover hysteresis).
const HANDOVER_DB: i32 = 3;
/// Walking speed, metres a second.
const SPEED_MPS: f64 = 1.4;

/// How one world's walkers walk and log, drawn from its seed.
#[derive(Clone, Debug)]
pub struct WalkParams {
    /// Routes walked.
    pub routes: usize,
    /// Share of routes walked only once.
    pub once_share: f64,
    /// Passes of a route walked again: 2 to this many.
    pub max_passes: i64,
    /// Share of walks whose phone reports a timing advance on its rows.
    pub advance_share: f64,
    /// The GPS error of a walk (standard deviation per axis, metres) lies in this range.
    pub gps_sigma_m: (f64, f64),
    /// Seconds between logged rows.
    pub interval_s: f64,
    /// A route's length lies in this range, metres.
    pub length_m: (f64, f64),
    /// Share of routes on GSM (the rest LTE).
    pub gsm_share: f64,
}

impl WalkParams {
    pub fn draw(seed: u64) -> WalkParams {
        let mut r = Rng::stream(seed, "walks");
        WalkParams {
            routes: r.int(8, 16) as usize,
            once_share: r.range(0.1, 0.5),
            max_passes: r.int(3, 6),
            advance_share: r.range(0.5, 1.0),
            gps_sigma_m: (r.range(2.0, 5.0), r.range(6.0, 15.0)),
            interval_s: r.range(2.0, 8.0),
            length_m: (r.range(800.0, 1_500.0), r.range(2_000.0, 4_000.0)),
            gsm_share: r.range(0.0, 0.3),
        }
    }

    pub fn to_json(&self) -> String {
        format!(
            "{{\"routes\": {}, \"once_share\": {:.3}, \"max_passes\": {}, \"advance_share\": {:.3}, \
             \"gps_sigma_m\": [{:.1}, {:.1}], \"interval_s\": {:.1}, \"length_m\": [{:.0}, {:.0}], \
             \"gsm_share\": {:.3}}}\n",
            self.routes,
            self.once_share,
            self.max_passes,
            self.advance_share,
            self.gps_sigma_m.0,
            self.gps_sigma_m.1,
            self.interval_s,
            self.length_m.0,
            self.length_m.1,
            self.gsm_share,
        )
    }
}

/// A route: points along the streets every `step` metres, starting at an intersection, turning
/// at intersections, never leaving land.
fn route(w: &World, rng: &mut Rng, env: Env, length_m: f64, step: f64) -> Vec<(f64, f64)> {
    let spacing = STREET_SPACING_M * street_every(env) as f64;
    let (x0, y0) = w.land.sample(rng, Some(env));
    let (u0, v0) = to_uv(x0, y0);
    let (mut u, mut v) = (
        (u0 / spacing).round() * spacing,
        (v0 / spacing).round() * spacing,
    );
    // Directions in the street grid: +u, +v, -u, -v.
    const DIRS: [(f64, f64); 4] = [(1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0)];
    let mut dir = rng.below(4) as usize;
    let mut out = vec![from_uv(u, v)];
    let mut walked = 0.0;
    let mut carry = 0.0;
    while walked < length_m {
        let blocks = rng.int(1, 4) as f64;
        let (du, dv) = DIRS[dir];
        let (eu, ev) = (u + du * blocks * spacing, v + dv * blocks * spacing);
        let (ex, ey) = from_uv(eu, ev);
        if !w.land.is_land(ex, ey) {
            dir = (dir + 2) % 4;
            continue;
        }
        let seg = blocks * spacing;
        let mut s = step - carry;
        while s <= seg {
            out.push(from_uv(u + du * s, v + dv * s));
            s += step;
        }
        carry = seg - (s - step);
        (u, v) = (eu, ev);
        walked += seg;
        // Straight on, left or right; never back.
        let turn = rng.f64();
        dir = if turn < 0.4 {
            dir
        } else if turn < 0.7 {
            (dir + 1) % 4
        } else {
            (dir + 3) % 4
        };
    }
    out
}

/// One world's walk files: (file name, CSV text), named by day and route so that names sort
/// in time order.
pub fn walk_files(w: &World, p: &WalkParams) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for ri in 0..p.routes {
        let mut rng = Rng::new(hash3(w.seed, hash_str("walk-route"), ri as u64));
        let env = if rng.chance(0.6) {
            Env::Urban
        } else {
            Env::Suburban
        };
        let radio = if rng.chance(p.gsm_share) {
            Radio::Gsm
        } else {
            Radio::Lte
        };
        let mnc = *rng.pick(&MNCS);
        let length = rng.range(p.length_m.0, p.length_m.1);
        let points = route(w, &mut rng, env, length, SPEED_MPS * p.interval_s);
        let passes = if rng.chance(p.once_share) {
            1
        } else {
            rng.int(2, p.max_passes)
        };
        for pass in 0..passes {
            let mut rng = Rng::new(hash3(
                w.seed,
                hash_str("walk-pass"),
                (ri as u64) << 8 | pass as u64,
            ));
            let day = rng.int(1, 60);
            let start = w.now - day * DAY + rng.int(7 * 3_600, 21 * 3_600);
            let sigma = rng.range(p.gps_sigma_m.0, p.gps_sigma_m.1);
            let advances = rng.chance(p.advance_share);
            // The side of the street this walk keeps to.
            let side = (rng.range(-8.0, 8.0), rng.range(-8.0, 8.0));
            let mut csv = String::from(HEADER);
            csv.push('\n');
            let mut serving: Option<usize> = None;
            for (i, &(x, y)) in points.iter().enumerate() {
                let (x, y) = (x + side.0, y + side.1);
                let obs = observe_cells(w, x, y, mnc, radio, &mut rng);
                let Some(best) = obs.first() else {
                    serving = None;
                    continue;
                };
                let kept = serving
                    .and_then(|s| obs.iter().find(|o| o.cell == s))
                    .filter(|o| o.signal + HANDOVER_DB >= best.signal);
                let o = kept.unwrap_or(best);
                serving = Some(o.cell);
                let c = &w.cells[o.cell];
                let ta = match (advances, radio.ta_step_m()) {
                    (true, Some(step)) => advance_at(&mut rng, step, o.dist).to_string(),
                    _ => String::new(),
                };
                let (lat, lon) =
                    crate::geo::to_latlon(x + rng.gauss() * sigma, y + rng.gauss() * sigma);
                let t_ms = (start as f64 + i as f64 * p.interval_s) * 1_000.0;
                let (lac, tac, pci) = match radio {
                    Radio::Lte => (
                        String::new(),
                        c.lac.to_string(),
                        c.unit.map_or(String::new(), |u| u.to_string()),
                    ),
                    _ => (c.lac.to_string(), String::new(), String::new()),
                };
                let _ = writeln!(
                    csv,
                    "{MCC},{mnc},{lac},{},{lat:.6},{lon:.6},{},{t_ms:.0},10,{SPEED_MPS},0,{},{ta},,{tac},{pci},,,",
                    c.cid,
                    o.signal,
                    radio.upper(),
                );
            }
            files.push((
                format!("walks/walk-d{:02}-r{ri:02}-p{pass}.csv", 60 - day),
                csv,
            ));
        }
    }
    files.sort();
    files
}
