#!/usr/bin/env bash
# The whole test suite: the docs' names checked against the repository
# (scripts/check-docs.py), unit, integration, property and end-to-end tests
# (including the HTML report opened in headless Chromium), then the loom
# model checks of the engine's update/flush races.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== docs name only what exists"; python3 scripts/check-docs.py

# The HTML report test drives a real browser: Debian's chromium.
if ! command -v chromium >/dev/null 2>&1; then
    echo "== installing chromium (needed by the HTML report test)"
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

# The exporter's promtool and end-to-end tests run Debian's Prometheus. Once
# it is installed they must run (not skip); if it cannot be, they skip and
# say why.
if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
    echo "== installing prometheus (needed by the hierstat-exporter tests)"
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    { $SUDO apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq prometheus >/dev/null; } ||
        echo "== could not install prometheus: the exporter's Prometheus tests will skip"
fi
if command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; then
    export HIERSTAT_EXPORTER_REQUIRE_PROMETHEUS=1
fi

echo "== cargo test --workspace"
cargo test --workspace

# The estimates' table against measured CPU time, its CI part (a minute):
# the weights are a release build's, so it runs optimized
# (crates/sim/tests/it/estimate_table.rs; MMLAB_ESTIMATE_FULL=1 for all of it).
echo "== estimate table, CI part (release)"
cargo test --release -p sim --test it estimate

echo "== loom model checks (hierstat)"
LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}" \
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
    cargo test -p hierstat --lib --test loom --release
