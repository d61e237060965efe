use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

const HELP: &str = "\
whereabouts-sim: deterministic radio-environment simulator (SIMULATED DATA, mcc 1 test network)

USAGE:
  whereabouts-sim world --out DIR [--seed N] [--requests N] [--now UNIX] [--separate-masts SHARE | --family]
  whereabouts-sim walks --out DIR [--seed N] [--family]
  whereabouts-sim scale --rows N --out FILE [--gz] [--seed N]
  whereabouts-sim --help

world   Builds a simulated world of towers and WiFi APs around The Hague (NL) and writes
          DIR/cells.csv           crowdsourced cell database, OpenCelliD export format
          DIR/wifi.csv            crowdsourced WiFi database (bssid,lat,lon,range,samples,created,updated)
          DIR/scenarios/*.jsonl   {scenario, truth, request, note} per line; request is a /process body
          DIR/truth/*.csv         true positions and flags of every station (not for import)
          DIR/README.md           seed, region, counts
        --out DIR       output directory (created if needed)
        --seed N        u64 seed, default 1
        --requests N    requests per scenario, default 1000
        --now UNIX      scenario time in unix seconds, default 1780272000 (2026-06-01T00:00:00Z);
                        DB created/updated times and staleness are relative to it. An engine
                        that judges age by its clock needs --now near the time it runs.
        --separate-masts SHARE
                        share (0 to 1) of masts whose LTE and NR sectors stand on a mast of
                        their own nearby (0.15-0.4 of the inter-site distance), default 0:
                        every radio on every mast
        --family        a member of the world family: every model parameter (path loss,
                        shadowing, antennas, site layout and spacing, shared and separate
                        masts, the crowd's position and range estimates, sample counts,
                        defects, WiFi density and bands) drawn from the seed, written to
                        DIR/params.json; adds mnc 3, whose rows are its true tower positions,
                        and the scenario cells-known-towers. Without it: the reference world

walks   Builds the same world (no scenarios) and writes phones' walks through it:
          DIR/walks/walk-dDD-rRR-pP.csv  one walk (day DD, route RR, pass P), OpenCelliD
                                         measurement CSV: the serving cell every few seconds
                                         with its level and (on most walks) timing advance,
                                         at the GPS position
          DIR/walks.json                 how this world's walkers walk (drawn from the seed)
        Routes follow the streets; most are walked on several days. --seed and --family as
        for world.

scale   Streams an N-row OpenCelliD export of synthetic cells worldwide (constant memory),
        with a small share of duplicate keys and a few deliberately bad rows, which are
        counted on stderr.
        --rows N        number of data rows (the header is extra)
        --out FILE      output file, or - for stdout
        --gz            gzip the output (also implied by a FILE ending in .gz)
        --seed N        u64 seed, default 1

Same arguments -> byte-identical output. Exit codes: 0 ok, 1 I/O or generation error, 2 bad arguments.
";

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("whereabouts-sim: {msg}\nRun `whereabouts-sim --help` for usage.");
    ExitCode::from(2)
}

struct Args {
    cmd: String,
    out: Option<String>,
    seed: u64,
    requests: usize,
    rows: Option<u64>,
    gz: bool,
    now: i64,
    separate_masts: f64,
    family: bool,
}

fn parse_num<T: std::str::FromStr>(flag: &str, v: Option<String>) -> Result<T, String> {
    let v = v.ok_or_else(|| format!("{flag} needs a value"))?;
    let clean = v.replace('_', "");
    clean
        .parse::<T>()
        .map_err(|_| format!("{flag}: `{v}` is not a valid non-negative integer"))
}

fn parse(argv: Vec<String>) -> Result<Option<Args>, String> {
    let mut it = argv.into_iter();
    let cmd = match it.next() {
        None => return Err("missing command (world, walks or scale)".into()),
        Some(c) if c == "--help" || c == "-h" || c == "help" => return Ok(None),
        Some(c) if c == "world" || c == "scale" || c == "walks" => c,
        Some(c) => {
            return Err(format!(
                "unknown command `{c}` (expected world, walks or scale)"
            ))
        }
    };
    let mut a = Args {
        cmd,
        out: None,
        seed: 1,
        requests: 1000,
        rows: None,
        gz: false,
        now: whereabouts_sim::world::DEFAULT_NOW,
        separate_masts: 0.0,
        family: false,
    };
    while let Some(flag) = it.next() {
        let (flag, inline) = match flag.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (flag, None),
        };
        let mut val = || inline.clone().or_else(|| it.next());
        match (a.cmd.as_str(), flag.as_str()) {
            (_, "--help" | "-h") => return Ok(None),
            (_, "--out") => a.out = Some(val().ok_or("--out needs a value")?),
            (_, "--seed") => a.seed = parse_num("--seed", val())?,
            ("world", "--requests") => a.requests = parse_num("--requests", val())?,
            ("world", "--now") => a.now = parse_num("--now", val())?,
            ("world", "--separate-masts") => {
                let v = val().ok_or("--separate-masts needs a value")?;
                a.separate_masts = v
                    .parse::<f64>()
                    .ok()
                    .filter(|s| (0.0..=1.0).contains(s))
                    .ok_or_else(|| format!("--separate-masts: `{v}` is not a share from 0 to 1"))?;
            }
            ("world" | "walks", "--family") => a.family = true,
            ("scale", "--rows") => a.rows = Some(parse_num("--rows", val())?),
            ("scale", "--gz") => a.gz = true,
            (cmd, f) => return Err(format!("unknown option `{f}` for `{cmd}`")),
        }
    }
    if a.out.as_deref().is_none_or(str::is_empty) {
        return Err("--out is required".into());
    }
    if a.cmd == "scale" && a.rows.is_none() {
        return Err("scale needs --rows N".into());
    }
    if a.family && a.separate_masts > 0.0 {
        return Err("--separate-masts: a --family world draws its own share".into());
    }
    if a.cmd == "world" && a.requests > 1_000_000 {
        return Err("--requests: at most 1000000 per scenario".into());
    }
    Ok(Some(a))
}

fn run_world(a: &Args) -> Result<(), String> {
    let dir = PathBuf::from(a.out.as_ref().unwrap());
    let t0 = Instant::now();
    let progress = |m: &str| eprintln!("[{:6.2}s] {m}", t0.elapsed().as_secs_f64());
    let params = if a.family {
        whereabouts_sim::family::Params::draw(a.seed)
    } else {
        whereabouts_sim::family::Params::reference(a.separate_masts)
    };
    let files =
        whereabouts_sim::output::world_files(a.seed, a.requests, a.now, &params, &progress)?;
    for (name, bytes) in &files.files {
        let p = dir.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        std::fs::write(&p, bytes).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    progress(&format!(
        "wrote {} files to {}",
        files.files.len(),
        dir.display()
    ));
    Ok(())
}

fn run_walks(a: &Args) -> Result<(), String> {
    let dir = PathBuf::from(a.out.as_ref().unwrap());
    let params = if a.family {
        whereabouts_sim::family::Params::draw(a.seed)
    } else {
        whereabouts_sim::family::Params::reference(0.0)
    };
    let w = whereabouts_sim::world::World::generate(a.seed, a.now, &params);
    let walks = whereabouts_sim::walks::WalkParams::draw(a.seed);
    let mut files = whereabouts_sim::walks::walk_files(&w, &walks);
    files.push(("walks.json".into(), walks.to_json()));
    for (name, text) in &files {
        let p = dir.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        std::fs::write(&p, text).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    eprintln!("wrote {} walks to {}", files.len() - 1, dir.display());
    Ok(())
}

fn run_scale(a: &Args) -> Result<(), String> {
    let out = a.out.as_ref().unwrap();
    let gz = a.gz || Path::new(out).extension().is_some_and(|e| e == "gz");
    whereabouts_sim::scale::run(a.seed, a.rows.unwrap(), out, gz)
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1).collect()) {
        Ok(Some(a)) => a,
        Ok(None) => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(e) => return usage_error(&e),
    };
    let r = match args.cmd.as_str() {
        "world" => run_world(&args),
        "walks" => run_walks(&args),
        _ => run_scale(&args),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("whereabouts-sim: error: {e}");
            ExitCode::from(1)
        }
    }
}
