#!/usr/bin/env bash
# Every check and test of the project: Rust (fmt, clippy, doc links, cargo test) and TypeScript
# (biome, tsc, vitest). This is `npm test`, and what .ci/run runs.
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

step "vitest"
npx vitest run
