/**
 * The `whereabouts` command line: the user's front door. Each command lives in its own module.
 */
import { UsageError } from './usage.js';

const HELP = `whereabouts: offline cell/WiFi location engine

Usage:
  whereabouts locate [--db DIR] [--jsonl] [FILE|-]
      Reads a /process request (JSON) from FILE or standard input and prints the
      /process response. --jsonl: one request per line in, one response per line out.
      Without --db, the embedded demo database (SIMULATED stations, mcc 1) is used.
  whereabouts import --db DIR [--replace] [--simulated] FILE...
      Imports OpenCelliD/MLS cell exports (CSV, plain or .gz), WiFi station CSVs
      (bssid,lat,lon,range,samples,created,updated) and SQLite "cells" tables into DIR.
      Merges with the database already in DIR unless --replace.
      Address files (OpenAddresses CSV, plain or .gz; OpenStreetMap .osm.pbf), told
      apart by content, go to DIR/addresses.bin instead (see docs/geocoding.md).
      FILE - is standard input, and a named pipe is read as a file: both are taken
      for station data (for example: zcat cells.csv.gz | whereabouts import --db DIR -).
  whereabouts upgrade --db DIR
      Writes a station database of an older store format (5 to 7) again in the
      current one, from its own stations: learned and synced ones included, which
      re-importing the sources would lose. A current database is left as it is.
  whereabouts learn --db DIR [--mcc N --mnc N] [--block-days D] [--no-calibrate] FILE...
      Learns station positions from GPS-tagged observations: OpenCelliD measurement
      CSVs, G-NetTrack exports (no MCC/MNC inside: give --mcc/--mnc), G-NetTrack Pro
      logs (tab-separated, with Operator, Node/CellID and TA) and WiGLE CSVs
      (WiFi rows only; "_nomap" networks never stored), and merges them into DIR.
      Moved stations are withdrawn for --block-days (default 30). With 600+ requests in
      the files, a third (every third 10-minute block) is held out of a first run into a
      scratch copy to calibrate the radius (as calibrate does); DIR gets the whole run;
      --no-calibrate skips that. See docs/learning.md.
      FILE - is standard input, and a pipe is read as a file (CSV formats, plain or gzip).
      With --store postgres://... (or WHEREABOUTS_STORE_URL): learned into the newest
      generation of the shared store and published there (servers switch within a
      second); DIR is where it is built, and is brought to it too (docs/deploy.md).
  whereabouts calibrate --db DIR [--mcc N --mnc N] [--dry-run] [--json] FILE...
  whereabouts calibrate --db DIR --show [--json] | --reset
      Fits the accuracy radius to your own ground truth: GPS-tagged observation files
      (the formats of learn) or labelled requests (JSON lines of {"request", "truth"})
      are located with DIR, a factor on the radius per class of answer (what answered,
      radio, cells or APs known, station quality) is fitted on two thirds of the rows
      and the inside shares before and after are printed for the rest; the model is
      stored with DIR and used by every answer. --dry-run stores nothing; --show prints
      the stored model; --reset removes it. See docs/positioning.md.
  whereabouts learn --db DIR --contributions [--token TOKEN] [--store DIR2|postgres://...]
  whereabouts learn --db DIR --revert-token TOKEN [--observations FILE]
  whereabouts learn --db DIR --quarantine-token TOKEN | --release-token TOKEN
      What tokens gave the stations learned live from GPS submissions (JSON; with --store,
      named by label and masked token); take one token's part out again (and, with
      --observations, its rows out of the server's observations.sqlite); quarantine or
      release a token. TOKEN is the token or its tokenHash (or the 16-digit key listed).
      With --store postgres://...: the shared ledger of the newest publication (a revert
      also deletes the token's stored submissions), published again (docs/deploy.md).
      See docs/security.md.
  whereabouts sync --db DIR --from URL [--token T] [--sha256 HEX] [--attempts N]
      Brings DIR up to date. URL is an OpenCelliD/MLS cell export (http(s) URL or
      file, .csv or .csv.gz; full export or daily diff): downloaded resumably into
      DIR/.sync, checked (length, gzip CRC, --sha256 or a URL.sha256 sidecar) and
      merged in. Or a Whereabouts server (whereabouts+http://host:port, or an
      http(s) URL without a path): pulls the stations it changed since the last
      sync through GET /v2/sync; needs a token with scope "sync" (--token, or the
      WHEREABOUTS_SYNC_TOKEN variable). A re-run with nothing new changes nothing.
      What was applied is kept in DIR/sync-state.json. See docs/sync.md.
  whereabouts compact --db DIR [--store postgres://...]
      Folds the stations learned live (DIR/learned.sqlite: GPS submissions to a
      running server, Engine.learn) into a new database generation now; a server
      also does this by itself (docs/learning.md). Prints the new generation.
      With --store postgres://... (or WHEREABOUTS_STORE_URL): one learning round of the
      shared store now (every server's new GPS submissions folded and published, as
      the elected server does every --learn-interval), built in DIR (docs/deploy.md).
  whereabouts stats --db DIR [--json]
      What each network's own data says of its scale, as the database stores it:
      stored ranges and sightings, site spacing, sector offsets, learned cells (the
      solver scales by them; docs/positioning.md). --json prints the stored file.
  whereabouts serve [--db DIR] [--store DIR2|postgres://...] [--port N] [--host H] [--workers N]
      The HTTP service (POST /v2/process, GET /v2/balance, /v2/timezone, /v2/reverse,
      /v2/search, GET /v2/sync, GET /health; also at the .php paths). Default 127.0.0.1:8080, one worker per
      core (--workers 0: one process). Tokens and GPS submissions live in DIR, or
      DIR2 with --store (see "whereabouts token"); with --store postgres://... (or
      WHEREABOUTS_STORE_URL) tokens, balances, limits and GPS submissions live in
      PostgreSQL, shared by several servers; one of them (elected) folds the submissions
      into a station generation every --learn-interval seconds (default 300; 0: never
      this server) and publishes it, and every server switches to it (docs/deploy.md). SIGTERM/SIGINT finish requests in flight, then exit 0.
      Without --db: the embedded demo database, tokens in $XDG_DATA_HOME/whereabouts (or
      ~/.local/share/whereabouts), a demo key made on the first start, and the demo page's
      URL with it printed on standard error (npm start). The demo page is at / and /demo
      (with the map routes).
      Logs are JSON lines on standard output (--log-level, default info).
      --trust-proxy HOPS|ADDR,CIDR,... (bare: loopback) whose X-Forwarded-For to believe;
      --request-timeout MS (default 20000) --max-connections N (default 512 per worker)
      --body-limit BYTES --health-detail (pid, memory, counts on /health): docs/security.md.
      --remote-url URL (repeatable, one per region) --remote-mode fallback|remote-first
      [--remote-timeout MS] [--remote-accuracy M] [--remote-path /process.php]: ask
      another /process service (docs/remote.md); its token from WHEREABOUTS_REMOTE_TOKEN
      (or --remote-token, which other users can see in the process list).
      Maps (docs/maps.md): GET /v3/<theme>/<type>.json and tiles from --tiles FILE (an
      MBTiles of vector tiles; default: the embedded world basemap), --no-maps to leave
      them out; --public-url URL and --tile-url 'https://{s}.tiles.example.com'
      [--tile-subdomains a,b,c] as written into styles (default: the request's own
      address); --support-email ADDRESS for the error texts; --map-metering
      none|style|tile (default none); --raster-cache-mb N (default 64);
      --raster-cache-dir DIR keeps rendered tiles on disk too, across restarts and workers.
  whereabouts tiles build --from EXTRACT.osm.pbf --out FILE.mbtiles [--shapefiles DIR]
      Street-level vector tiles (OpenMapTiles schema, z0-14) of an OpenStreetMap extract,
      made by Debian's tilemaker with its OpenMapTiles configuration, for serve --tiles.
      Layers that need shapefiles (ocean, land cover) are left out unless DIR holds them.
  whereabouts token create|update|revoke|list --db DIR [...]
      Manages access tokens (balances, limits, scopes, referrer patterns, IP ranges,
      services, device slots, GPS). "whereabouts token --help" lists the settings.
  whereabouts timezone --lat X --lon Y [--timezones FILE]
      Prints the timezone at a point (name, short_name, offset_sec, now_in_dst).
  whereabouts reverse --lat X --lon Y [--zoom Z] [--accept-language L] [--places FILE]
                     [--addresses FILE]
      Prints the address at a point: country (zoom 0-4), state (5-7), county (8-9),
      city (10-18) from GeoNames places; NO_MATCHES 50 km or more from every place.
      With an address file: road (16-18), house number, suburb, postcode (17-18).
  whereabouts search [--limit N] [--countrycodes de,fr] [--viewbox L,R,T,B]
                     [--accept-language L] [--search FILE] QUERY...
      Prints the places matching QUERY ("münchen", "paris, texas", "londn"), best first:
      names in many languages, typos and "city, region, country" understood. --limit 1-50
      (default 10); --countrycodes restricts; --viewbox prefers places inside west,east,
      north,south longitudes/latitudes. NO_MATCHES (exit 1) when nothing matches.
  whereabouts staticmap --center LAT,LON --zoom Z [--size WxH] [--scale 1|2]
                        [--format png|jpg] [--markers M]... [--path P]... [--tiles FILE]
                        --out FILE
      Writes a static map image (the parameters of GET /v3/staticmap, docs/maps.md)
      drawn from the embedded basemap; without --center/--zoom the view fits the
      markers and paths. The format follows --out's extension unless --format.
  whereabouts eval [--db DIR] [--split files|time|kfold:K] [--mcc N --mnc N] [--sim SEED
                   [--requests N] [--family]] [--answers FILE] [--level-offset DB]
                   [--drop-levels cells|neighbours|wifi] [--json] [--report FILE.html] INPUT...
  whereabouts eval --compare A.json B.json
      Measures positioning: labelled requests (JSON lines of {"request", "truth",
      "scenario"}), GPS-tagged observation files (the formats of learn; with --split,
      learned on one part into a temporary database and tested on the rest) or a
      simulated world (--sim). Prints per scenario, radio and fallback the answered
      share, median, p68, p90, p95, max error and the share inside the stated radius,
      beside baselines on the same rows. --answers scores another system's responses;
      --level-offset moves every cell's level, as a device that reads them off would;
      --drop-levels takes the levels off every cell, off all but the first, or off
      every access point.
      See docs/eval.md.
  whereabouts --help | --version

Common options of locate:
  --land FILE        land polygons for border strictness (default: embedded Natural Earth)
  --no-land          disable border strictness data
  --ip-db FILE       MMDB for the IP fallback (repeatable; default: embedded country database)
  --now SECONDS      fixed clock for the 90-day "aged" rule

Exit codes: 0 ok; 1 a single request answered with status "error", or a runtime failure
(missing or corrupt database); 2 bad command-line usage.
`;

/**
 * Runs the CLI; resolves to the process exit code. Each command's module is loaded when it
 * runs: `serve` alone needs the HTTP stack and `token` the token store, and loading every
 * command's dependencies cost every call about 60 ms before it did anything.
 */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case undefined:
      case '-h':
      case '--help':
      case 'help':
        process.stdout.write(HELP);
        return command === undefined ? 2 : 0;
      case '--version':
      case '-v':
        process.stdout.write(`${await version()}\n`);
        return 0;
      case 'locate':
        return await (await import('./locate.js')).runLocate(rest);
      case 'import':
        return await (await import('./import.js')).runImport(rest);
      case 'learn':
        return await (await import('./learn.js')).runLearn(rest);
      case 'calibrate':
        return await (await import('./calibrate.js')).runCalibrate(rest);
      case 'compact':
        return await (await import('./compact.js')).runCompact(rest);
      case 'stats':
        return await (await import('./stats.js')).runStats(rest);
      case 'upgrade':
        return await (await import('./upgrade.js')).runUpgrade(rest);
      case 'token':
        return await (await import('./token.js')).runToken(rest);
      case 'serve':
        return await (await import('./serve.js')).runServe(rest);
      case 'timezone':
        return await (await import('./timezone.js')).runTimezone(rest);
      case 'reverse':
        return await (await import('./reverse.js')).runReverse(rest);
      case 'sync':
        return await (await import('./sync.js')).runSync(rest);
      case 'search':
        return await (await import('./search.js')).runSearch(rest);
      case 'eval':
        return await (await import('./eval.js')).runEvalCommand(rest);
      case 'tiles':
        return await (await import('./tiles.js')).runTiles(rest);
      case 'staticmap':
        return await (await import('./staticmap.js')).runStaticMap(rest);
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`whereabouts: ${err.message}\nRun "whereabouts --help" for usage.\n`);
      return 2;
    }
    process.stderr.write(`whereabouts: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

async function version(): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  const { join } = await import('node:path');
  const { packageRoot } = await import('../data-files.js');
  const pkg = JSON.parse(await readFile(join(packageRoot, 'package.json'), 'utf8')) as { version: string };
  return pkg.version;
}
