#!/usr/bin/env bash
# Every check and test of the project: Rust (fmt, clippy, doc links, cargo test) and TypeScript
# (biome, tsc, vitest, with a throwaway PostgreSQL for the PostgreSQL store's tests). This is `npm test`, and what .ci/run runs.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "build (native addon and TypeScript; incremental)"
npm run --silent build

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings

step "cargo doc (broken or private doc links fail)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

step "biome (lint + format check)"
npx biome check src test bench scripts

step "tsc (src, test, bench)"
npx tsc -p tsconfig.check.json

step "cargo test"
cargo test --workspace --quiet

step "PostgreSQL test cluster (scripts/pg-test-cluster.sh; WHEREABOUTS_TEST_PG_URL)"
# A caller's own server is used as given; else a throwaway cluster lives for the vitest run.
if [ -z "${WHEREABOUTS_TEST_PG_URL:-}" ]; then
  pg_dir=$(mktemp -d)
  trap 'bash scripts/pg-test-cluster.sh stop "$pg_dir"' EXIT
  WHEREABOUTS_TEST_PG_URL=$(bash scripts/pg-test-cluster.sh start "$pg_dir" | tail -n 1)
  export WHEREABOUTS_TEST_PG_URL
fi
echo "$WHEREABOUTS_TEST_PG_URL"

step "vitest"
npx vitest run
