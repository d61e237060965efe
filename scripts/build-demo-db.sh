#!/usr/bin/env bash
# Rebuilds the embedded demo data from the simulator (seed 1): data/demo-db (a station
# database of SIMULATED stations on the ITU test network, mcc 1, around The Hague) and
# data/demo-requests.jsonl (example /process requests for `npm start`). Station times are
# relative to 2026-11-21 (--now), so answers read as fresh until 90 days after that.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo run -q --release -p whereabouts-sim -- world --out "$work/sim" --seed 1 --requests 20 --now 1795219200
rm -rf data/demo-db
node bin/whereabouts.js import --quiet --simulated --db data/demo-db "$work/sim/cells.csv" "$work/sim/wifi.csv"
cp "$work/sim/README.md" data/demo-db/README.md

# Examples: one request of each scenario, an IP-fallback request and a malformed one.
{
  for s in wifi-urban cells-urban cells-rural single-cell lacf scf; do
    head -n 1 "$work/sim/scenarios/$s.jsonl" | node -e '
      let t = ""; process.stdin.on("data", (d) => (t += d)).on("end", () => {
        const l = JSON.parse(t); const r = l.request; delete r.address;
        process.stdout.write(JSON.stringify(r) + "\n");
      });'
  done
  echo '{"token":"demo","ip":"8.8.8.8","fallbacks":{"ipf":1}}'
  echo '{"token":"demo","cells":[{"radio":"gsm","mcc":1,"mnc":01,"lac":1,"cid":1}]}'
} > data/demo-requests.jsonl
echo "demo database: $(du -sh data/demo-db | cut -f1), $(wc -l < data/demo-requests.jsonl) example requests"
